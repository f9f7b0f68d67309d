"""`bert_tf.backend` and the engines the trainer runs its steps on.

The engines' numbers are checked where they are used: the TensorFlow
engine by the trainer's tests (`test_trainer.py`, resumes, accumulation),
the JAX engine against the TensorFlow one (`test_jax_finetuning.py`). Here:
which engine runs, what each refuses, and that the backend question is
asked in one place.
"""

import pathlib
import re
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

from bert_tf import backend
from bert_tf import checkpoints
from bert_tf.training import optimization
from bert_tf.training import engines
from bert_tf.training import trainer as trainer_lib
from bert_tf.training.engines import eager_engine
from bert_tf.training.engines import tensorflow_engine

from modeling_harness import tiny_bert_config
from pretraining_harness import ArrayPretrainingTask, make_pretraining_arrays
from runner_harness import REPO_ROOT, runner_environment

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "bert_tf"


def test_backend_module_names_the_backend_and_its_devices():
    assert backend.name() == keras.backend.backend() == backend.TENSORFLOW
    devices = backend.devices()
    # The test machines have no accelerator the tests may use: the CPU.
    assert devices and all(isinstance(d, str) for d in devices)
    assert devices[0].startswith(("cpu:", "gpu:", "tpu:"))


def test_only_the_backend_module_asks_keras_which_backend():
    comparison = re.compile(
        r"keras\.backend\.backend\(\)\s*(==|!=)|KERAS_BACKEND\"?\]?\s*(==|!=)")
    offenders = [
        str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")
        if path.name != "backend.py"
        and comparison.search(path.read_text(encoding="utf-8"))]
    assert offenders == []


def test_trainer_has_no_backend_branches():
    source = (PACKAGE / "training" / "trainer.py").read_text(encoding="utf-8")
    for backend_specific in ("on_jax", "backend.name(", "keras.backend.backend",
                             "import jax", "jax_engine", "tensorflow_engine",
                             "TPUStrategy", "MultiWorkerMirroredStrategy",
                             "tf.function(", "@tf.function",
                             "strategy.run("):
        assert backend_specific not in source, backend_specific


def test_tensorflow_backend_gets_the_tensorflow_engine(tmp_path):
    config = trainer_lib.TrainerConfig(output_dir=str(tmp_path))
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    engine = engines.create(object(), config, tf.distribute.get_strategy())
    assert isinstance(engine, tensorflow_engine.TensorFlowEngine)
    assert engine.num_replicas == 1 and engine.is_chief
    assert engine.one_process


def test_other_backends_evaluate_and_predict_eagerly(tmp_path, monkeypatch):
    """A backend without a training engine (PyTorch) gets the eager one:
    it evaluates and predicts as the TensorFlow engine does, on the same
    checkpoint, and refuses training in one line. (Run here on TensorFlow's
    tensors, with the backend's name made "torch": the engine uses only
    `keras.ops` and the task's own functions.)"""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    arrays = make_pretraining_arrays(11, seed=4)

    def trainer(name, init_checkpoint=None, optimizer_factory=None):
        return trainer_lib.Trainer(
            ArrayPretrainingTask(tiny_bert_config(), arrays,
                                 init_checkpoint=init_checkpoint),
            trainer_lib.TrainerConfig(
                output_dir=str(tmp_path / name), train_batch_size=4,
                eval_batch_size=4, max_eval_steps=None),
            optimizer_factory=optimizer_factory)

    def evaluate_and_predict(trainer):
        chunks = list(trainer.predict(tf.data.Dataset.from_tensor_slices(
            arrays), 4, num_examples=11))
        return trainer.evaluate(), {
            key: np.concatenate([chunk[key] for chunk in chunks])
            for key in chunks[0]}

    reference = trainer("tensorflow")
    assert isinstance(reference.engine, tensorflow_engine.TensorFlowEngine)
    weights = checkpoints.save_checkpoint(
        {name: variable.numpy() for name, variable in
         reference.task.checkpoint_variables(reference.model).items()},
        str(tmp_path / "weights.ckpt"))
    expected_results, expected_rows = evaluate_and_predict(reference)

    monkeypatch.setattr(backend, "name", lambda: "torch")
    eager = trainer("torch", init_checkpoint=weights)
    assert isinstance(eager.engine, eager_engine.EagerEngine)
    assert eager.engine.compilation_in_words() == (
        "torch, eager (evaluation and prediction only)")
    results, rows = evaluate_and_predict(eager)
    assert sorted(results) == sorted(expected_results)
    for key, value in expected_results.items():
        np.testing.assert_allclose(results[key], value, rtol=1e-6, atol=1e-6,
                                   err_msg=key)
    assert sorted(rows) == sorted(expected_rows)
    for key, value in expected_rows.items():
        assert len(value) == 11
        np.testing.assert_allclose(rows[key], value, rtol=1e-5, atol=1e-6,
                                   err_msg=key)
    with pytest.raises(ValueError) as error:
        trainer("train", optimizer_factory=lambda: (
            optimization.create_optimizer("adamw", 1e-3, 10, 1)))
    assert str(error.value) == (
        "KERAS_BACKEND=torch: training runs on the tensorflow and jax "
        "backends (torch evaluates and predicts)")


def test_jax_engine_refusals_and_checkpoint_step(tmp_path):
    # A fresh process: the backend is fixed when keras is first imported.
    script = textwrap.dedent(f"""
        import numpy as np
        import tensorflow as tf
        from bert_tf import backend
        from bert_tf.training import engines
        from bert_tf.training import trainer as trainer_lib
        from bert_tf.training.engines import jax_engine

        assert backend.name() == backend.JAX, backend.name()
        # multi_worker_mirrored, before JAX computes anything: a cluster
        # JAX cannot run is refused in one line; without TF_CONFIG (and
        # no cluster JAX detects) this process is the whole job.
        import json, os
        from bert_tf.training import distribution
        os.environ["TF_CONFIG"] = json.dumps({{
            "cluster": {{"worker": ["127.0.0.1:1"], "evaluator": ["b:2"]}},
            "task": {{"type": "worker", "index": 0}}}})
        try:
            distribution.get_distribution_strategy("multi_worker_mirrored")
        except distribution.DistributionError as error:
            print(error)
        else:
            raise AssertionError("not refused")
        del os.environ["TF_CONFIG"]
        alone = distribution.get_distribution_strategy("multi_worker_mirrored")
        assert isinstance(alone, distribution.JaxProcesses), alone
        config = trainer_lib.TrainerConfig(output_dir={str(tmp_path)!r})
        engine = engines.create(object(), config, alone)
        assert (engine.num_replicas, engine.is_chief, engine.one_process) == (
            1, True, True)
        print(engine.compilation_in_words())
        engine = engines.create(object(), config, tf.distribute.get_strategy())
        assert isinstance(engine, jax_engine.JaxEngine)
        assert engine.step_variable().dtype == "int32"
        values = engine.checkpoint_values({{"global_step": np.int32(7)}})
        assert values["global_step"].dtype == np.int64, values
        assert values["global_step"] == 7
        for config, strategy in (
                (trainer_lib.TrainerConfig(output_dir={str(tmp_path)!r},
                                           dtype="mixed_float16"),
                 tf.distribute.get_strategy()),
                (config, tf.distribute.OneDeviceStrategy("/cpu:0"))):
            try:
                engines.create(object(), config, strategy)
            except ValueError as error:
                print(error)
            else:
                raise AssertionError("not refused")
        """)
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True,
        env=runner_environment(KERAS_BACKEND="jax"), timeout=300,
        check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.splitlines() == [
        "--distribution_strategy=multi_worker_mirrored on KERAS_BACKEND=jax: "
        "TF_CONFIG's cluster lists the job 'evaluator'; on JAX every "
        "process trains: list them under 'chief' and 'worker'",
        "JAX (the whole step jit-compiled, one device)",
        "--dtype=mixed_float16: on KERAS_BACKEND=jax training runs in "
        "float32 or mixed_bfloat16 (float16 needs the TensorFlow backend's "
        "loss scaling)",
        "--distribution_strategy: on KERAS_BACKEND=jax a run uses one "
        "device (default), every local device (mirrored) or the devices of "
        "every process (multi_worker_mirrored)"]


# -- the JAX engine's training calls: donation, reading one step behind ------

# One JAX process (`python -c`): a tiny pretraining model (dropout on, so
# that the dropout generator's state is part of what must come out right)
# trained by `JaxEngine.train_steps` on batches of which the fourth has a
# NaN prediction weight. The reference is the same steps taken one call
# each (`num_steps=1`): a call of one step reads its loss before anything
# else runs, which is what every step did before the engine read one step
# behind.
_ONE_STEP_BEHIND_SCRIPT = """
import math
import numpy as np
from bert_tf.config import BertConfig
from bert_tf.pretraining import task as pretraining
from bert_tf.training import optimization
from bert_tf.training.engines import jax_engine
from bert_tf.training.trainer_config import TrainerConfig

SEQ, PREDICTIONS, BATCH, NAN_STEP = 16, 4, 4, 4
config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2,
                    num_attention_heads=2, intermediate_size=64,
                    max_position_embeddings=SEQ)
task = pretraining.PretrainingTask(config, pretraining.PretrainingDataConfig(
    input_patterns=("(arrays)",), max_seq_length=SEQ,
    max_predictions_per_seq=PREDICTIONS))
engine = jax_engine.JaxEngine(task, TrainerConfig(
    output_dir="(nothing is written)", train_batch_size=BATCH, seed=1))
engine.build(lambda: optimization.create_optimizer(
    "adamw", 1e-2, num_train_steps=100, num_warmup_steps=0))

rng = np.random.default_rng(0)
def batch(index):
    # Batch i has (i % 4) + 1 predictions per example: the metric sum
    # `masked_lm_weight` tells which batch a step trained on.
    weights = (np.arange(PREDICTIONS) <= index % PREDICTIONS).astype(
        np.float32)
    return {
        "input_ids": rng.integers(5, 100, [BATCH, SEQ]).astype(np.int32),
        "input_mask": np.ones([BATCH, SEQ], np.int32),
        "segment_ids": np.zeros([BATCH, SEQ], np.int32),
        "masked_lm_positions": np.tile(np.arange(1, PREDICTIONS + 1,
                                                 dtype=np.int32), [BATCH, 1]),
        "masked_lm_ids": rng.integers(5, 100, [BATCH, PREDICTIONS]).astype(
            np.int32),
        "masked_lm_weights": np.tile(weights, [BATCH, 1]),
        "next_sentence_labels": rng.integers(0, 2, [BATCH, 1]).astype(
            np.int32)}
batches = [batch(index) for index in range(7)]
batches[NAN_STEP - 1]["masked_lm_weights"][0, 0] = np.nan

variables = (list(engine.model.variables) + list(engine.optimizer.variables)
             + [engine.dropout_generator.state])
def values():
    return [np.array(variable.value) for variable in variables]
start = values()
def restart():
    for variable, value in zip(variables, start):
        variable.assign(value)

class Batches:
    def __init__(self, batches):
        self.batches, self.taken = iter(batches), 0
    def __iter__(self):
        return self
    def __next__(self):
        batch = next(self.batches)
        self.taken += 1
        return batch
class StopRequest:
    # The trainer's SIGTERM flag, here set once it has been read `after`
    # times (before the step `after` + 1).
    def __init__(self, after=None):
        self.reads, self.after = 0, after
    @property
    def requested(self):
        self.reads += 1
        return self.after is not None and self.reads > self.after
never = StopRequest()

def same(left, right):
    assert len(left) == len(right)
    for a, b, variable in zip(left, right, variables):
        np.testing.assert_array_equal(a, b, err_msg=variable.path)

# The reference: one step per call, the state after each.
reference_states, reference_totals = [start], []
iterator = Batches(batches)
for _ in range(NAN_STEP):
    totals, steps_run, loss = engine.train_steps(iterator, 1, never)
    assert steps_run == 1
    reference_states.append(values())
    reference_totals.append(totals)
assert math.isnan(loss) and not any(
    math.isnan(t["loss"]) for t in reference_totals[:-1])
# The NaN step was applied: its weights are NaN, as a step's update is.
assert np.isnan(reference_states[NAN_STEP][0]).any()

# Several steps per call: the call ends after the NaN step, with its
# state, its count and the sums of its steps.
restart()
iterator = Batches(batches)
before = [variable.value for variable in engine.model.trainable_variables]
totals, steps_run, loss = engine.train_steps(iterator, 6, never)
assert steps_run == NAN_STEP and math.isnan(loss), (steps_run, loss)
same(values(), reference_states[NAN_STEP])
expected = {name: sum(t[name] for t in reference_totals)
            for name in totals}
assert sorted(totals) == sorted(expected)
for name in totals:
    assert totals[name] == expected[name] or (
        math.isnan(totals[name]) and math.isnan(expected[name])), name
# The step after it was started, its batch taken; the next call on the
# same iterator trains on that batch first.
assert iterator.taken == NAN_STEP + 1
# The weights were donated: the arrays read at the start are gone.
assert all(array.is_deleted() for array in before)
print("stops after the non-finite step")

totals, steps_run, _ = engine.train_steps(iterator, 1, never)
assert steps_run == 1 and iterator.taken == NAN_STEP + 1
assert totals["masked_lm_weight"] == BATCH * (NAN_STEP % PREDICTIONS + 1)
print("the next call starts with the held-back batch")

# A stop request before the third step: two steps, their state.
restart()
totals, steps_run, loss = engine.train_steps(
    Batches(batches), 6, StopRequest(after=2))
assert steps_run == 2 and loss == reference_totals[1]["loss"]
same(values(), reference_states[2])
# The variables hold live values: evaluation runs on them.
sums, _ = engine.eval_step(batches[0], lambda features, outputs: {})
assert math.isfinite(float(sums["loss"]))
print("stops where asked")

# The input ends: the steps before count, then StopIteration; unless the
# last of them had a non-finite loss, which ends the call as before.
restart()
try:
    engine.train_steps(Batches(batches[:3]), 6, never)
except StopIteration:
    same(values(), reference_states[3])
else:
    raise AssertionError("StopIteration was not raised")
restart()
totals, steps_run, loss = engine.train_steps(
    Batches(batches[:NAN_STEP]), 6, never)
assert steps_run == NAN_STEP and math.isnan(loss)
same(values(), reference_states[NAN_STEP])
print("the end of the input")
"""


def test_jax_training_call_reads_one_step_behind_with_the_same_result():
    """`JaxSteps.train_steps` starts step k + 1 before it reads step k's
    loss, and donates the state to each step; the calls still end as
    before: after a NaN loss with that step's state (weights, optimizer
    slots, step count, dropout generator), count and sums, the next call
    on the iterator starting with the batch after it; at a stop request;
    at the end of the input. No warning is printed."""
    result = subprocess.run(
        [sys.executable, "-c", _ONE_STEP_BEHIND_SCRIPT], capture_output=True,
        text=True, cwd=REPO_ROOT, env=runner_environment(
            KERAS_BACKEND="jax", JAX_PLATFORMS="cpu"),
        timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines() == [
        "stops after the non-finite step",
        "the next call starts with the held-back batch",
        "stops where asked", "the end of the input"]
    assert "warn" not in result.stderr.lower(), result.stderr[-3000:]
