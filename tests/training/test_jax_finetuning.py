"""Fine-tuning on Keras' JAX backend against the same run on TensorFlow.

`run_classifier.py` runs as a user runs it, once with `KERAS_BACKEND=jax`
and once on TensorFlow (the reference: its steps are checked against
Google's graph elsewhere), from the same initial checkpoint (encoder and
classifier head), on the same data, without dropout, with the same seeded shuffle of the same records.
The classifier head's dropout is switched off (the encoder's by its
config). The losses of all 20 steps (warmup, decay, clipping and weight decay
included), the checkpoints and the predictions must agree; the TensorFlow
backend must read and predict with the JAX run's checkpoint, and a JAX run
resumed from its step-10 checkpoint must end where the uninterrupted one
ends.
"""

import importlib.util
import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import checkpoints
from runner_harness import REPO_ROOT, runner_environment

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("jax") is None,
    reason="jax is not installed (pip install -e .[test])")

NUM_STEPS = 20
LEARNING_RATE = 2e-3
# Measured on this project's 2-core CPU: the largest difference of the 20
# steps' losses was 7.6e-6, of the weights after 20 steps (at a learning
# rate of 2e-3) 4.4e-5: float32 round-off of sums taken in another order,
# grown by training. The bounds leave room for other CPUs' kernels.
LOSS_TOLERANCE = 5e-5
WEIGHT_TOLERANCE = 3e-4
PROBABILITY_TOLERANCE = 1e-5

# Words of the tiny model's vocabulary (a real sentiment set would be
# mostly [UNK] to it): one set of words per label.
POSITIVE = ["music rather home", "Army Institute River", "research right",
            "Spanish higher music", "home making research"]
NEGATIVE = ["remains represented served", "Council First House",
            "appellate appointed", "behind below served", "plant play scale"]


def _write_tsv(path, rows):
    path.write_text("sentence\tlabel\n" + "".join(
        f"{text}\t{label}\n" for text, label in rows))


@pytest.fixture(scope="module")
def workspace(tmp_path_factory, cased_tiny_dir):
    """A dropout-free tiny BERT whose checkpoint has a classifier head, and
    a small sentiment set."""
    root = tmp_path_factory.mktemp("jax_finetuning")
    config = json.loads((cased_tiny_dir / "bert_config.json").read_text())
    config.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    (root / "bert_config.json").write_text(json.dumps(config))
    shutil.copy(cased_tiny_dir / "vocab.txt", root / "vocab.txt")
    with checkpoints.open_checkpoint(cased_tiny_dir) as tensors:
        weights = {name: np.asarray(tensors[name]) for name in tensors}
    generator = np.random.default_rng(7)
    weights["output_weights"] = generator.normal(
        0.0, 0.02, [2, config["hidden_size"]]).astype(np.float32)
    weights["output_bias"] = np.zeros([2], np.float32)
    checkpoints.save_checkpoint(weights, str(root / "init" / "model.ckpt"))
    data = root / "data"
    data.mkdir()
    rows = [(text, 1) for text in POSITIVE] + [(text, 0) for text in NEGATIVE]
    _write_tsv(data / "train.tsv", rows + [(" ".join(reversed(t.split())), l)
                                          for t, l in rows])
    _write_tsv(data / "dev.tsv", rows)
    _write_tsv(data / "test.tsv", list(reversed(rows)))
    return root


# run_classifier.py as a user runs it, but with the classifier head's
# dropout (Google's fixed 0.1 on the pooled output) off: dropout masks are
# random draws, which no two backends draw alike.
_WITHOUT_HEAD_DROPOUT = (
    "import runpy, sys; from bert_tf.modeling import heads; "
    "heads.CLASSIFIER_DROPOUT = 0.0; sys.argv[0] = 'run_classifier.py'; "
    "runpy.run_path('run_classifier.py', run_name='__main__')")


def _run(workspace, backend, output_dir, *flags):
    environment = runner_environment(KERAS_BACKEND=backend,
                                     JAX_PLATFORMS="cpu")
    process = subprocess.run(
        [sys.executable, "-c", _WITHOUT_HEAD_DROPOUT,
         f"--vocab_file={workspace / 'vocab.txt'}",
         f"--bert_config_file={workspace / 'bert_config.json'}",
         "--task_name=generic", f"--data_dir={workspace / 'data'}",
         f"--init_checkpoint={workspace / 'init' / 'model.ckpt'}",
         "--do_lower_case=false", "--max_seq_length=16",
         "--train_batch_size=20", f"--num_train_epochs={NUM_STEPS}",
         f"--learning_rate={LEARNING_RATE}", "--log_steps=1",
         "--save_checkpoints_steps=10", "--keep_checkpoint_max=0",
         "--seed=3", f"--output_dir={output_dir}", *flags],
        cwd=REPO_ROOT, env=environment, capture_output=True, text=True,
        timeout=600)
    assert process.returncode == 0, process.stderr[-5000:]
    return process


@pytest.fixture(scope="module")
def runs(workspace):
    """The output directories of the TensorFlow and the JAX run."""
    outputs = {}
    for backend in ("tensorflow", "jax"):
        outputs[backend] = workspace / f"out_{backend}"
        _run(workspace, backend, outputs[backend], "--do_train", "--do_eval",
             "--do_predict")
    return outputs


def _scalars(output_dir, tag):
    """`{step: value}` of a training summary."""
    values = {}
    for path in tf.io.gfile.glob(str(output_dir / "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                if value.tag == tag:
                    values[event.step] = float(
                        tf.make_ndarray(value.tensor))
    return values


def _weights(prefix):
    with checkpoints.open_checkpoint(prefix) as tensors:
        return {name: np.asarray(tensors[name]) for name in tensors}


def _probabilities(output_dir):
    return np.loadtxt(output_dir / "test_results.tsv", delimiter="\t")


def test_jax_losses_are_tensorflows_over_20_steps(runs):
    reference = _scalars(runs["tensorflow"], "loss")
    losses = _scalars(runs["jax"], "loss")
    assert sorted(reference) == list(range(1, NUM_STEPS + 1))
    assert sorted(losses) == sorted(reference)
    steps = sorted(reference)
    reference = np.array([reference[step] for step in steps])
    losses = np.array([losses[step] for step in steps])
    np.testing.assert_allclose(losses, reference, rtol=0,
                               atol=LOSS_TOLERANCE)
    # It learned: the set is easy, the last loss far below the first.
    assert losses[-1] < 0.5 * losses[0]
    # Google's schedule (warmup to step 2, then linear decay), the same
    # float32 rates.
    assert _scalars(runs["jax"], "learning_rate") == _scalars(
        runs["tensorflow"], "learning_rate")


def test_jax_checkpoint_is_tensorflows(runs):
    """Google's names, shapes and dtypes (model, `adam_m`/`adam_v`,
    `global_step`), and the same values."""
    reference = _weights(runs["tensorflow"] / f"model.ckpt-{NUM_STEPS}")
    weights = _weights(runs["jax"] / f"model.ckpt-{NUM_STEPS}")
    # Each backend keeps its own dropout generator's state (another shape),
    # under a name of its own beside Google's.
    assert "training/dropout_random_state" in reference
    assert weights.pop("training/keras_dropout_seed_state").shape == (2,)
    reference.pop("training/dropout_random_state")
    assert sorted(weights) == sorted(reference)
    for name, value in reference.items():
        assert weights[name].shape == value.shape, name
        assert weights[name].dtype == value.dtype, name
        np.testing.assert_allclose(weights[name], value, rtol=0,
                                   atol=WEIGHT_TOLERANCE, err_msg=name)
    assert int(weights["global_step"]) == NUM_STEPS
    # The head trained away from its start.
    initial = _weights(str(runs["jax"].parent / "init" / "model.ckpt"))
    assert np.abs(weights["output_weights"]
                  - initial["output_weights"]).max() > 1e-3


def test_jax_evaluation_and_predictions_are_tensorflows(runs):
    np.testing.assert_allclose(_probabilities(runs["jax"]),
                               _probabilities(runs["tensorflow"]), rtol=0,
                               atol=PROBABILITY_TOLERANCE)
    results = {}
    for backend, output_dir in runs.items():
        lines = (output_dir / "eval_results.txt").read_text().splitlines()
        results[backend] = dict(line.split(" = ") for line in lines)
    assert sorted(results["jax"]) == sorted(results["tensorflow"])
    assert results["jax"]["global_step"] == str(NUM_STEPS)
    assert float(results["jax"]["eval_accuracy"]) == float(
        results["tensorflow"]["eval_accuracy"])
    assert abs(float(results["jax"]["eval_loss"]) - float(
        results["tensorflow"]["eval_loss"])) < LOSS_TOLERANCE


def test_tensorflow_predicts_with_the_jax_checkpoint(runs, workspace):
    copy = workspace / "jax_read_by_tensorflow"
    shutil.copytree(runs["jax"], copy)
    (copy / "test_results.tsv").unlink()
    _run(workspace, "tensorflow", copy, "--do_predict")
    np.testing.assert_allclose(_probabilities(copy),
                               _probabilities(runs["jax"]), rtol=0,
                               atol=PROBABILITY_TOLERANCE)


def test_jax_run_resumes_from_its_checkpoint(runs, workspace):
    """The step-10 checkpoint alone (what a run killed after it leaves)
    resumes to the uninterrupted run's weights."""
    resumed = workspace / "jax_resumed"
    shutil.copytree(runs["jax"], resumed)
    for path in resumed.glob(f"model.ckpt-{NUM_STEPS}.*"):
        path.unlink()
    checkpoints.write_checkpoint_state(str(resumed), "model.ckpt-10",
                                       ["model.ckpt-10"])
    process = _run(workspace, "jax", resumed, "--do_train")
    assert "Resuming from" in process.stderr
    reference = _weights(runs["jax"] / f"model.ckpt-{NUM_STEPS}")
    weights = _weights(resumed / f"model.ckpt-{NUM_STEPS}")
    for name, value in reference.items():
        np.testing.assert_allclose(weights[name], value, rtol=0, atol=1e-6,
                                   err_msg=name)
