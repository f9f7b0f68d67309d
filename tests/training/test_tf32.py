"""float32 means float32: the runners forbid TF32 unless --allow_tf32.

Reference: TensorFlow's own switch,
`tf.config.experimental.tensor_float_32_execution_enabled()`, read after
the runner's flags are applied.
"""

from absl import flags
import pytest
import tensorflow as tf

from bert_tf import finetuning
from bert_tf.finetuning import runtime
from bert_tf.runners import flags as runner_flags


@pytest.fixture
def restore_tf32():
    before = tf.config.experimental.tensor_float_32_execution_enabled()
    yield
    tf.config.experimental.enable_tensor_float_32_execution(before)


def _parsed(*arguments):
    flag_values = flags.FlagValues()
    runner_flags.define_config_flags(finetuning.RunConfig, flag_values)
    flag_values(["runner.py", *arguments])
    return flag_values


def test_runner_default_disables_tf32(restore_tf32):
    tf.config.experimental.enable_tensor_float_32_execution(True)
    runtime.make_strategy(_parsed())
    assert not tf.config.experimental.tensor_float_32_execution_enabled()


def test_allow_tf32_enables_it(restore_tf32):
    tf.config.experimental.enable_tensor_float_32_execution(False)
    runtime.make_strategy(_parsed("--allow_tf32"))
    assert tf.config.experimental.tensor_float_32_execution_enabled()
