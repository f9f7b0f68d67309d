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
ends. The JAX run is also the reference of the data parallel ones: over two
devices of one process (`mirrored`) and over two processes joined by
`jax.distributed` (`multi_worker_mirrored`, TF_CONFIG), at the same global
batch.

`run_tagging.py` (softmax and CRF), `run_multiple_choice.py`,
`run_classifier.py --multi_label` and `run_squad.py` are checked the same
way on a few steps each: the losses, the evaluation and the predictions.

The runs of the other runners are made by two processes, one per backend
(Keras picks its backend once per process), started together: each calls
the runners' `run` in turn, in process (`runner_harness.run_in_process`),
this file's `__main__` (`python test_jax_finetuning.py BACKEND PLAN`): one
`import` of TensorFlow (and JAX) for all of them.
"""

import importlib
import importlib.util
import json
import pathlib
import random
import shutil
import socket
import sys

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import checkpoints
from runner_harness import finish_processes, read_eval_results
from runner_harness import run_in_process, script_environment
from runner_harness import read_checkpoint, read_summary_scalars
from runner_harness import start_on_backend

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("jax") is None,
    reason="jax is not installed (pip install -e .[test])")

NUM_STEPS = 20
# The reference first.
BACKENDS = ("tensorflow", "jax")
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


def _without_head_dropout(script):
    """Python code that runs `script` as a user runs it, but with the
    heads' dropout (Google's fixed 0.1 on the classifier's pooled output,
    the tagger's tokens) off: dropout masks are random draws, which no two
    backends draw alike."""
    return ("import runpy, sys; from bert_tf.modeling import heads; "
            f"heads.CLASSIFIER_DROPOUT = 0.0; sys.argv[0] = {script!r}; "
            f"runpy.run_path({script!r}, run_name='__main__')")


def _common_flags(workspace, output_dir):
    """Every run's: the dropout-free tiny BERT (cased), the output."""
    return [f"--vocab_file={workspace / 'vocab.txt'}",
            f"--bert_config_file={workspace / 'bert_config.json'}",
            "--do_lower_case=false", f"--output_dir={output_dir}"]


def _start_script(script, workspace, backend, output_dir, *flags):
    """`script` on `backend`, as a user runs it, started
    (`start_on_backend`)."""
    return start_on_backend(
        [sys.executable, "-c", _without_head_dropout(script),
         *_common_flags(workspace, output_dir), *flags],
        backend, output_dir.parent / f"{output_dir.name}.stderr")


def _classifier_flags(workspace):
    """run_classifier.py's run of `NUM_STEPS` steps (without its phases)."""
    return ["--task_name=generic", f"--data_dir={workspace / 'data'}",
            f"--init_checkpoint={workspace / 'init' / 'model.ckpt'}",
            "--max_seq_length=16",
            "--train_batch_size=20", f"--num_train_epochs={NUM_STEPS}",
            f"--learning_rate={LEARNING_RATE}", "--log_steps=1",
            "--save_checkpoints_steps=10", "--keep_checkpoint_max=0",
            "--seed=3"]


def _start(workspace, backend, output_dir, *flags):
    """run_classifier.py's run of `NUM_STEPS` steps, started."""
    return _start_script("run_classifier.py", workspace, backend,
                         output_dir, *_classifier_flags(workspace), *flags)


def _run(workspace, backend, output_dir, *flags):
    """`_start`'s run to its end; returns its stderr."""
    return finish_processes(_start(workspace, backend, output_dir, *flags))[0]


@pytest.fixture(scope="module")
def runs(workspace):
    """The output directories of the TensorFlow and the JAX run."""
    outputs = {backend: workspace / f"out_{backend}" for backend in BACKENDS}
    # Both at once: the two CPU cores this runs on are otherwise half idle
    # while each process imports and traces.
    finish_processes(*[_start(workspace, backend, outputs[backend],
                              "--do_train", "--do_eval", "--do_predict")
                       for backend in BACKENDS])
    return outputs


def _probabilities(output_dir):
    return np.loadtxt(output_dir / "test_results.tsv", delimiter="\t")


def test_jax_losses_are_tensorflows_over_20_steps(runs):
    reference = read_summary_scalars(runs["tensorflow"], "loss")
    losses = read_summary_scalars(runs["jax"], "loss")
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
    assert read_summary_scalars(runs["jax"], "learning_rate") == read_summary_scalars(
        runs["tensorflow"], "learning_rate")


def test_jax_checkpoint_is_tensorflows(runs):
    """Google's names, shapes and dtypes (model, `adam_m`/`adam_v`,
    `global_step`), and the same values."""
    reference = read_checkpoint(runs["tensorflow"] / f"model.ckpt-{NUM_STEPS}")
    weights = read_checkpoint(runs["jax"] / f"model.ckpt-{NUM_STEPS}")
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
    initial = read_checkpoint(str(runs["jax"].parent / "init" / "model.ckpt"))
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
    import run_classifier
    copy = workspace / "jax_read_by_tensorflow"
    shutil.copytree(runs["jax"], copy)
    (copy / "test_results.tsv").unlink()
    # In this process (TensorFlow's backend): prediction has no dropout.
    run_in_process(run_classifier, *_common_flags(workspace, copy),
                   *_classifier_flags(workspace), "--do_predict")
    np.testing.assert_allclose(_probabilities(copy),
                               _probabilities(runs["jax"]), rtol=0,
                               atol=PROBABILITY_TOLERANCE)


@pytest.mark.extended(reason=(
    "resuming on JAX; the default run resumes a SIGKILLed run on TensorFlow "
    "(test_fault_injection) and reads the JAX run's checkpoint on "
    "TensorFlow"))
def test_jax_run_resumes_from_its_checkpoint(runs, workspace):
    """The step-10 checkpoint alone (what a run killed after it leaves)
    resumes to the uninterrupted run's weights."""
    resumed = workspace / "jax_resumed"
    shutil.copytree(runs["jax"], resumed)
    for path in resumed.glob(f"model.ckpt-{NUM_STEPS}.*"):
        path.unlink()
    checkpoints.write_checkpoint_state(str(resumed), "model.ckpt-10",
                                       ["model.ckpt-10"])
    stderr = _run(workspace, "jax", resumed, "--do_train")
    assert "Resuming from" in stderr
    reference = read_checkpoint(runs["jax"] / f"model.ckpt-{NUM_STEPS}")
    weights = read_checkpoint(resumed / f"model.ckpt-{NUM_STEPS}")
    for name, value in reference.items():
        np.testing.assert_allclose(weights[name], value, rtol=0, atol=1e-6,
                                   err_msg=name)


# Measured on this project's 2-core CPU: the 2-device run's losses of the 20
# steps differ from the 1-device run's by at most 1.2e-7 (its evaluation
# loss by 1.3e-7, its probabilities by 2e-7), its checkpoint after 20 steps
# by 1.5e-6 (an `adam_m` slot): the gradients' sums over the batch taken in
# two halves, then added. The bounds leave room for other CPUs' kernels.
DATA_PARALLEL_LOSS_TOLERANCE = 1e-6
DATA_PARALLEL_WEIGHT_TOLERANCE = 1e-5


@pytest.mark.extended(reason=(
    "a third JAX run; the default run checks the one-device JAX run against "
    "TensorFlow"))
def test_jax_mirrored_over_two_devices_is_the_one_device_run(runs,
                                                             workspace):
    """`--distribution_strategy=mirrored` on JAX splits each global batch
    over every local device (two CPU devices here): the same losses,
    weights, evaluation and predictions as the one-device run of the same
    global batch."""
    output_dir = workspace / "jax_two_devices"
    process = start_on_backend(
        [sys.executable, "-c", _without_head_dropout("run_classifier.py"),
         *_common_flags(workspace, output_dir), *_classifier_flags(workspace),
         "--distribution_strategy=mirrored", "--do_train", "--do_eval",
         "--do_predict"],
        "jax", workspace / "jax_two_devices.stderr",
        XLA_FLAGS="--xla_force_host_platform_device_count=2")
    stderr, = finish_processes(process)
    assert ("2 replicas, global batch 20 (10 per replica)" in stderr
            and "data parallel over 2 devices" in stderr), stderr[-3000:]
    _assert_data_parallel_losses(output_dir, runs["jax"])
    reference = read_checkpoint(runs["jax"] / f"model.ckpt-{NUM_STEPS}")
    weights = read_checkpoint(output_dir / f"model.ckpt-{NUM_STEPS}")
    assert sorted(weights) == sorted(reference)
    for name, value in reference.items():
        np.testing.assert_allclose(weights[name], value, rtol=0,
                                   atol=DATA_PARALLEL_WEIGHT_TOLERANCE,
                                   err_msg=name)
    np.testing.assert_allclose(_probabilities(output_dir),
                               _probabilities(runs["jax"]), rtol=0,
                               atol=PROBABILITY_TOLERANCE)
    expected = read_eval_results(runs["jax"])
    results = read_eval_results(output_dir)
    assert results["eval_accuracy"] == expected["eval_accuracy"]
    assert abs(results["eval_loss"] - expected["eval_loss"]) < (
        DATA_PARALLEL_LOSS_TOLERANCE)


def _assert_data_parallel_losses(output_dir, reference_dir):
    """The summaries' losses of every step equal the reference run's to
    DATA_PARALLEL_LOSS_TOLERANCE."""
    reference = read_summary_scalars(reference_dir, "loss")
    losses = read_summary_scalars(output_dir, "loss")
    assert sorted(losses) == sorted(reference) == list(
        range(1, NUM_STEPS + 1))
    np.testing.assert_allclose(
        [losses[step] for step in sorted(losses)],
        [reference[step] for step in sorted(reference)],
        rtol=0, atol=DATA_PARALLEL_LOSS_TOLERANCE)


def _free_ports(count):
    """`count` TCP ports of 127.0.0.1 that nothing listens on now."""
    probes = []
    try:
        for _ in range(count):
            probe = socket.socket()
            probe.bind(("127.0.0.1", 0))
            probes.append(probe)
        return [probe.getsockname()[1] for probe in probes]
    finally:
        for probe in probes:
            probe.close()


def _start_two_processes(workspace, outputs, stderr_suffix, *phases):
    """run_classifier.py started on JAX as two processes of one job
    (`multi_worker_mirrored`, TF_CONFIG's workers on free 127.0.0.1
    ports), process i writing to `outputs[i]`; `phases` are its --do_*
    flags."""
    workers = [f"127.0.0.1:{port}" for port in _free_ports(2)]
    processes = []
    for index, output_dir in enumerate(outputs):
        tf_config = {"cluster": {"worker": workers},
                     "task": {"type": "worker", "index": index}}
        processes.append(start_on_backend(
            [sys.executable, "-c", _without_head_dropout("run_classifier.py"),
             *_common_flags(workspace, output_dir),
             *_classifier_flags(workspace),
             "--distribution_strategy=multi_worker_mirrored", *phases],
            "jax", workspace / f"jax_process_{index}{stderr_suffix}.stderr",
            TF_CONFIG=json.dumps(tf_config)))
    return processes


# The two processes' run differs from the one-process run as the 2-device
# run does (measured on this project's 2-core CPU: losses 1.2e-7,
# probabilities 2e-7, evaluation loss 1.3e-7, checkpoint 1.5e-6 in an
# `adam_m` slot), so it is held to the same DATA_PARALLEL_* bounds.


@pytest.mark.extended(reason=(
    "two JAX processes (60-100 s on 2 shared cores); the default run "
    "checks the one-process JAX run against TensorFlow and the cluster "
    "spec's refusals (test_distribution, test_engines)"))
def test_jax_two_processes_are_the_one_process_run(runs, workspace):
    """`--distribution_strategy=multi_worker_mirrored` on JAX: two
    processes on 127.0.0.1 (one CPU device each), joined by
    `jax.distributed` from TF_CONFIG as TensorFlow's workers are, give the
    one-process run's losses, weights, evaluation and predictions at the
    same global batch. Only the chief writes the checkpoints, summaries,
    results and run description (each process is given its own
    --output_dir, so that a write by the other would show); the TensorFlow
    backend predicts with its checkpoint, Google's names read back by
    `tf.train.load_checkpoint`."""
    outputs = [workspace / f"jax_process_{index}" for index in range(2)]
    stderr, _ = finish_processes(*_start_two_processes(
        workspace, outputs, "", "--do_train", "--do_eval", "--do_predict"))
    assert ("2 replicas, global batch 20 (10 per replica)" in stderr
            and "data parallel over 2 devices of 2 processes" in stderr
            ), stderr[-3000:]
    chief = outputs[0]
    _assert_data_parallel_losses(chief, runs["jax"])
    reference = read_checkpoint(runs["jax"] / f"model.ckpt-{NUM_STEPS}")
    reader = tf.train.load_checkpoint(str(chief / f"model.ckpt-{NUM_STEPS}"))
    names = reader.get_variable_to_shape_map()
    assert sorted(names) == sorted(reference)
    for name, value in reference.items():
        np.testing.assert_allclose(reader.get_tensor(name), value, rtol=0,
                                   atol=DATA_PARALLEL_WEIGHT_TOLERANCE,
                                   err_msg=name)
    assert int(reader.get_tensor("global_step")) == NUM_STEPS
    np.testing.assert_allclose(_probabilities(chief),
                               _probabilities(runs["jax"]), rtol=0,
                               atol=PROBABILITY_TOLERANCE)
    expected = read_eval_results(runs["jax"])
    results = read_eval_results(chief)
    assert results["eval_accuracy"] == expected["eval_accuracy"]
    assert abs(results["eval_loss"] - expected["eval_loss"]) < (
        DATA_PARALLEL_LOSS_TOLERANCE)
    # Written once: the other process wrote only the records it reads.
    written = {path.name for path in chief.iterdir()}
    assert {f"model.ckpt-{NUM_STEPS}.index", "model.ckpt-10.index",
            "checkpoint", "eval_results.txt", "test_results.tsv",
            "bert_tf_run.json"} <= written, written
    assert any(name.startswith("events.out.tfevents") for name in written)
    assert sorted(path.name for path in outputs[1].iterdir()) == [
        "eval.tf_record", "predict.tf_record", "train.tf_record"]

    import run_classifier
    copy = workspace / "two_processes_read_by_tensorflow"
    shutil.copytree(chief, copy)
    (copy / "test_results.tsv").unlink()
    run_in_process(run_classifier, *_common_flags(workspace, copy),
                   *_classifier_flags(workspace), "--do_predict")
    np.testing.assert_allclose(_probabilities(copy), _probabilities(chief),
                               rtol=0, atol=PROBABILITY_TOLERANCE)

    # Resumed with a directory each that holds different checkpoints (the
    # chief's finished run; none): one line, not JAX's traceback.
    processes = _start_two_processes(workspace, outputs, "_resumed",
                                     "--do_train")
    for process in processes:
        process.wait(timeout=600)
    for process, start in zip(processes, (NUM_STEPS, 0)):
        stderr = process.stderr_path.read_text()
        assert process.returncode == 1, stderr[-3000:]
        assert "Traceback" not in stderr, stderr[-3000:]
        assert (f"the processes found different checkpoints (this one of "
                f"step {start}) in their --output_dir") in stderr, (
                    stderr[-3000:])


# -- the other fine-tuning runners ---------------------------------------------
# Extended (`pytest --extended`; .ci/run runs them): the default run checks
# run_classifier.py on JAX (above) and these runners on TensorFlow.
OTHER_RUNNERS_ON_JAX = pytest.mark.extended(reason=(
    "the other runners on JAX; the default run checks run_classifier.py on "
    "JAX and these runners on TensorFlow"))
# Each runs a few steps on JAX and on TensorFlow (the reference) from the
# same checkpoint (the dropout-free tiny BERT and a head drawn once), on the
# same tiny set in the same seeded order, then evaluates and predicts: the
# per-step losses, `eval_results.txt` and the predictions must agree, the
# losses within LOSS_TOLERANCE, the probabilities within
# PROBABILITY_TOLERANCE. Measured on this project's 2-core CPU, the largest
# differences were:
#   tagging (softmax): losses 1.8e-7; eval_loss 0; the same predictions;
#   tagging (CRF): losses 9.5e-7; eval_loss 7e-7; the same predictions;
#   multiple choice: losses 1.3e-6; eval_loss 1.2e-6; probabilities 1.0e-6;
#   multi-label: losses 6e-8; eval_loss 1e-7; probabilities 2.7e-7;
#   SQuAD: losses 2.4e-7; the same answers and n-best lists, n-best
#     probabilities 1.3e-8, start logits 3.0e-5, end logits 2.0e-6;
# counts of right predictions (accuracy, F1, exact match) the same.
TASK_FLAGS = ["--learning_rate=2e-3", "--log_steps=1", "--seed=3",
              "--keep_checkpoint_max=0"]
PLACES = ["India", "China", "Canada"]
PERSONS = ["William", "Huxley"]
FILLER = ("thus Most home making music rather Army River algae analysis "
          "death live third higher research right south central movement "
          "person possible rate words written").split()


def _task_workspace(workspace, name, heads):
    """`workspace/name`: a directory for one runner's data, and its initial
    checkpoint `init/model.ckpt`: the encoder, and `heads` ({name: shape})
    drawn once from a normal distribution of Google's initializer's scale
    (0.02), so that both backends start from the same head."""
    root = workspace / name
    (root / "data").mkdir(parents=True)
    weights = read_checkpoint(str(workspace / "init" / "model.ckpt"))
    for head in ("output_weights", "output_bias"):
        del weights[head]  # The classifier's, of another shape.
    generator = np.random.default_rng(11)
    for head, shape in heads.items():
        weights[head] = generator.normal(0.0, 0.02, shape).astype(np.float32)
    checkpoints.save_checkpoint(weights, str(root / "init" / "model.ckpt"))
    return root


def _conll(path, sentences):
    path.write_text("-DOCSTART- -X- -X- O\n\n" + "".join(
        "".join(f"{word} NN O {tag}\n" for word, tag in sentence) + "\n"
        for sentence in sentences))


def _tagged_sentence(rng, length):
    words = []
    for _ in range(length):
        draw = rng.random()
        if draw < 0.2:
            words.append((rng.choice(PERSONS), "B-PER"))
        elif draw < 0.35:
            words.append((rng.choice(PLACES), "B-LOC"))
        else:
            words.append((rng.choice(FILLER), "O"))
    return words


def _tagging_task(workspace, use_crf):
    """(program, data root, flags) of a tagging run, its data written."""
    labels = ["B-LOC", "B-PER", "O"]
    heads = {"output_weights": [len(labels), 32], "output_bias": [3]}
    if use_crf:
        heads["crf/transitions"] = [len(labels), len(labels)]
    root = _task_workspace(workspace, f"tagging_crf_{use_crf}", heads)
    rng = random.Random(5)
    # Some sentences longer than a window's 14 pieces.
    for name, count, longest in (("train", 32, 12), ("dev", 12, 24),
                                 ("test", 12, 24)):
        _conll(root / "data" / f"{name}.txt",
               [_tagged_sentence(rng, rng.randint(2, longest))
                for _ in range(count)])
    return "run_tagging", root, [
        "--do_train", "--do_eval", "--do_predict",
        f"--data_dir={root / 'data'}", f"--use_crf={str(use_crf).lower()}",
        "--max_seq_length=16", "--doc_stride=5", "--train_batch_size=8",
        "--num_train_epochs=2"]


def _multiple_choice_task(workspace):
    root = _task_workspace(workspace, "multiple_choice",
                           {"output_weights": [1, 32], "output_bias": [1]})
    rng = random.Random(6)
    for name, count in (("train", 32), ("dev", 12), ("test", 12)):
        records = []
        for _ in range(count):
            answer = rng.randrange(3)
            choices = [" ".join(rng.sample(FILLER, 3)) for _ in range(3)]
            choices[answer] += " " + rng.choice(PLACES)
            records.append({"question": " ".join(rng.sample(FILLER, 4)),
                            "choices": choices, "answer": answer})
        (root / "data" / f"{name}.jsonl").write_text("".join(
            json.dumps(record) + "\n" for record in records))
    return "run_multiple_choice", root, [
        "--do_train", "--do_eval", "--do_predict", "--input_format=jsonl",
        f"--data_dir={root / 'data'}", "--max_seq_length=16",
        "--train_batch_size=8", "--num_train_epochs=2"]


def _multi_label_task(workspace):
    root = _task_workspace(workspace, "multi_label",
                           {"output_weights": [2, 32], "output_bias": [2]})
    rng = random.Random(7)
    for name, count in (("train", 32), ("dev", 12), ("test", 12)):
        lines = ["sentence\tlabels"]
        for _ in range(count):
            words = rng.sample(FILLER, rng.randint(3, 6))
            labels = []
            for label, names in (("person", PERSONS), ("place", PLACES)):
                if rng.random() < 0.5:
                    words.insert(rng.randrange(len(words) + 1),
                                 rng.choice(names))
                    labels.append(label)
            lines.append(f"{' '.join(words)}\t{'|'.join(labels)}")
        (root / "data" / f"{name}.tsv").write_text("\n".join(lines) + "\n")
    return "run_classifier", root, [
        "--do_train", "--do_eval", "--do_predict", "--task_name=generic",
        "--multi_label=true", "--label_column=labels", "--label_delimiter=|",
        f"--data_dir={root / 'data'}", "--max_seq_length=16",
        "--train_batch_size=8", "--num_train_epochs=2"]


def _squad_task(workspace):
    from squad_testdata import generated_squad_file
    root = _task_workspace(workspace, "squad",
                           {"cls/squad/output_weights": [2, 32],
                            "cls/squad/output_bias": [2]})
    # 4 paragraphs of 3 questions, in more windows.
    squad_file = generated_squad_file(root / "data", num_paragraphs=4,
                                      max_words=60)
    return "run_squad", root, [
        "--do_train", "--do_predict", f"--train_file={squad_file}",
        f"--predict_file={squad_file}", "--max_seq_length=48",
        "--doc_stride=16", "--max_query_length=12", "--train_batch_size=4",
        "--num_train_epochs=2"]


@pytest.fixture(scope="module")
def task_runs(workspace):
    """{task: {backend: output directory}} of the five runs, made by one
    process per backend (`_run_plan`), both started together."""
    tasks = {"tagging_softmax": _tagging_task(workspace, use_crf=False),
             "tagging_crf": _tagging_task(workspace, use_crf=True),
             "multiple_choice": _multiple_choice_task(workspace),
             "multi_label": _multi_label_task(workspace),
             "squad": _squad_task(workspace)}
    outputs = {task: {backend: root / f"out_{backend}"
                      for backend in BACKENDS}
               for task, (_, root, _) in tasks.items()}
    processes = []
    for backend in BACKENDS:
        plan = [(program, [
            *_common_flags(workspace, outputs[task][backend]),
            f"--init_checkpoint={root / 'init' / 'model.ckpt'}",
            *TASK_FLAGS, *flags]) for task, (program, root, flags)
            in tasks.items()]
        plan_file = workspace / f"plan_{backend}.json"
        plan_file.write_text(json.dumps(plan))
        processes.append(start_on_backend(
            [sys.executable, __file__, str(plan_file)], backend,
            workspace / f"plan_{backend}.stderr",
            PYTHONPATH=script_environment(__file__)["PYTHONPATH"]))
    finish_processes(*processes)
    return outputs


def _run_plan(plan_file):
    """Runs each `(runner module, flags)` of the JSON file in turn, in this
    process, the heads' dropout off (as `_without_head_dropout`); a run
    that fails leaves its traceback in `<output_dir>.error` and the next
    one goes on."""
    import traceback
    from bert_tf.modeling import heads
    heads.CLASSIFIER_DROPOUT = 0.0
    for program, flags in json.loads(pathlib.Path(plan_file).read_text()):
        output_dir = next(flag.split("=", 1)[1] for flag in flags
                          if flag.startswith("--output_dir="))
        try:
            run_in_process(importlib.import_module(program), *flags)
        except Exception:  # noqa: BLE001 - reported by the task's test
            pathlib.Path(f"{output_dir}.error").write_text(
                traceback.format_exc())


def _task_outputs(task_runs, task):
    """The task's output directories; fails with a run's traceback."""
    outputs = task_runs[task]
    for backend, output_dir in outputs.items():
        error = output_dir.parent / f"{output_dir.name}.error"
        assert not error.exists(), f"{backend}: {error.read_text()[-5000:]}"
    return outputs


def _losses(outputs):
    """The per-step training losses of both runs: (reference, jax)."""
    reference = read_summary_scalars(outputs["tensorflow"], "loss")
    losses = read_summary_scalars(outputs["jax"], "loss")
    assert reference and sorted(losses) == sorted(reference)
    steps = sorted(reference)
    reference = np.array([reference[step] for step in steps])
    losses = np.array([losses[step] for step in steps])
    assert losses[-1] < losses[0]  # It trained.
    return reference, losses


def _assert_same_training_and_evaluation(outputs, num_steps):
    """`num_steps` per-step losses within LOSS_TOLERANCE of TensorFlow's,
    and the same `eval_results.txt` (`_assert_same_eval_results`)."""
    reference, losses = _losses(outputs)
    assert len(losses) == num_steps
    np.testing.assert_allclose(losses, reference, rtol=0,
                               atol=LOSS_TOLERANCE)
    _assert_same_eval_results(outputs, LOSS_TOLERANCE)


def _assert_same_probabilities(outputs, shape):
    """Both runs' `test_results.tsv`, of `shape`, within
    PROBABILITY_TOLERANCE."""
    probabilities = _tsv(outputs["jax"] / "test_results.tsv")
    assert probabilities.shape == shape
    np.testing.assert_allclose(
        probabilities, _tsv(outputs["tensorflow"] / "test_results.tsv"),
        rtol=0, atol=PROBABILITY_TOLERANCE)


def _assert_same_eval_results(outputs, loss_tolerance):
    """The same keys; the losses within `loss_tolerance`, every other
    value (counts of right predictions, steps) the same."""
    reference = read_eval_results(outputs["tensorflow"])
    results = read_eval_results(outputs["jax"])
    assert sorted(results) == sorted(reference)
    for key, value in reference.items():
        if key.endswith("loss"):
            assert abs(results[key] - value) <= loss_tolerance, key
        else:
            assert results[key] == value, key


def _tsv(path):
    return np.loadtxt(path, delimiter="\t", ndmin=2)


@OTHER_RUNNERS_ON_JAX
@pytest.mark.parametrize("use_crf", [False, True], ids=["softmax", "crf"])
def test_jax_tagging_is_tensorflows(task_runs, use_crf):
    outputs = _task_outputs(task_runs,
                            "tagging_crf" if use_crf else "tagging_softmax")
    _assert_same_training_and_evaluation(outputs, 8)  # int(32 / 8 * 2)
    assert ((outputs["jax"] / "test_predictions.txt").read_text()
            == (outputs["tensorflow"] / "test_predictions.txt").read_text())


@OTHER_RUNNERS_ON_JAX
def test_jax_multiple_choice_is_tensorflows(task_runs):
    outputs = _task_outputs(task_runs, "multiple_choice")
    _assert_same_training_and_evaluation(outputs, 8)
    _assert_same_probabilities(outputs, (12, 3))


@OTHER_RUNNERS_ON_JAX
def test_jax_multi_label_classification_is_tensorflows(task_runs):
    outputs = _task_outputs(task_runs, "multi_label")
    _assert_same_training_and_evaluation(outputs, 8)
    _assert_same_probabilities(outputs, (12, 2))


# A logit may differ more than the probabilities: the gradient of
# `cls/squad/output_bias` is zero but for round-off (the bias shifts every
# position's logit alike, which the softmax ignores), and Adam turns that
# noise into steps of up to learning_rate * |noise| / epsilon.
SQUAD_LOGIT_TOLERANCE = 2e-4


@OTHER_RUNNERS_ON_JAX
def test_jax_squad_is_tensorflows(task_runs):
    outputs = _task_outputs(task_runs, "squad")
    # Training skips the question whose answer is not in its context as
    # written (Google's rule): int(11 / 4 * 2).
    _assert_same_training_and_evaluation(outputs, 5)
    answers = {}
    for backend, output_dir in outputs.items():
        answers[backend] = [
            json.loads((output_dir / name).read_text())
            for name in ("predictions.json", "nbest_predictions.json")]
    assert answers["jax"][0] == answers["tensorflow"][0]
    nbest, reference_nbest = answers["jax"][1], answers["tensorflow"][1]
    assert sorted(nbest) == sorted(reference_nbest)
    for question, candidates in reference_nbest.items():
        assert ([c["text"] for c in nbest[question]]
                == [c["text"] for c in candidates]), question
        for key, tolerance in (("start_logit", SQUAD_LOGIT_TOLERANCE),
                               ("end_logit", SQUAD_LOGIT_TOLERANCE),
                               ("probability", PROBABILITY_TOLERANCE)):
            np.testing.assert_allclose(
                [c[key] for c in nbest[question]],
                [c[key] for c in candidates], rtol=0, atol=tolerance,
                err_msg=f"{question} {key}")


if __name__ == "__main__":
    _run_plan(sys.argv[1])
