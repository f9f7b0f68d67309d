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
import pytest

from bert_tf import backend
from bert_tf.training import engines
from bert_tf.training import trainer as trainer_lib
from bert_tf.training.engines import tensorflow_engine

from runner_harness import runner_environment

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


def test_a_backend_without_an_engine_is_refused_in_one_line(tmp_path,
                                                            monkeypatch):
    monkeypatch.setattr(backend, "name", lambda: "torch")
    config = trainer_lib.TrainerConfig(output_dir=str(tmp_path))
    with pytest.raises(ValueError) as error:
        engines.create(object(), config, None)
    assert str(error.value) == (
        "KERAS_BACKEND=torch: the trainer runs on the tensorflow and jax "
        "backends")


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
