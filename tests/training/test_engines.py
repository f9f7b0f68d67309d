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
