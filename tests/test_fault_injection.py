"""Fault injection: accidents and mistakes never lose a user's files.

Each scenario of issue 12 runs the real program on a tiny model, as a user
would, and checks the exact message the user sees and that no file the run
does not own was deleted or changed. The program runs in a subprocess where
the scenario needs a process of its own (a kill, a lock held by another
process, released at exit, the error a process ends with after a damaged
record); otherwise its `run` (or `main`, for the error line) runs in this
process (`runner_harness.run_in_process`, `error_line_in_process`: the
same code, without 5-8 s of `import tensorflow` per run):

* a copied run directory whose `checkpoint` state file holds absolute paths
  (TF1's Saver writes them) resumes without touching the original;
* an output that is one of the inputs is refused before anything is written;
* a second run on a locked `--output_dir` is refused, a dead run's lock is
  taken over, stale temporary files (only this project's) are removed, and
  `--keep_checkpoint_max` holds;
* evaluating without training, with no weights anywhere, is refused;
* a truncated checkpoint is named with the tensor being read; a resumed run
  falls back to the newest readable checkpoint and keeps the damaged one;
* a corrupt TFRecord among two inputs is named with its byte offset;
* a killed and resumed run with `--seed` ends with the uninterrupted run's
  weights, on one device and under MirroredStrategy (two logical CPUs);
* (slow) runs killed at random points, also during saves, never leave an
  unreadable checkpoint named by the state file, nor temporary files.
"""

import hashlib
import json
import os
import pathlib
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from pretraining_harness import pretraining_command_line
from pretraining_harness import write_tiny_pretraining_data

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEQ, PREDICTIONS = 16, 4
LOCK_FILE = ".bert_tf.lock"  # bert_tf.training.run_lock.LOCK_FILE


# -- helpers -----------------------------------------------------------------

def _environment():
    return {**os.environ, "PYTHONPATH": REPO_ROOT, "TF_CPP_MIN_LOG_LEVEL": "2",
            "CUDA_VISIBLE_DEVICES": ""}


def _command(script, args):
    if script.startswith("-m "):
        return [sys.executable, "-m", script[3:]] + list(args)
    return [sys.executable, os.path.join(REPO_ROOT, script)] + list(args)


def _run(script, *args, timeout=600):
    """Runs a script to its end; returns (exit status, stdout + stderr)."""
    process = subprocess.run(_command(script, args), cwd=REPO_ROOT,
                             env=_environment(), capture_output=True,
                             text=True, timeout=timeout)
    return process.returncode, process.stdout + process.stderr


def _info_logged(caplog):
    """Captures INFO records, also of the `absl` logger, whose own level an
    earlier test in the same process (another set of tests under
    `pytest -n`) may have left above INFO."""
    import contextlib
    stack = contextlib.ExitStack()
    stack.enter_context(caplog.at_level("INFO"))
    stack.enter_context(caplog.at_level("INFO", logger="absl"))
    return stack


def _run_here(program, args, caplog=None):
    """`python <program>.py args` run in this process (`run_in_process`);
    returns what it logged (with `caplog`) as one text. Its lock on the
    --output_dir is released after, as a process releases it at exit (a
    copy of the directory must not carry a lock of this live process)."""
    import contextlib
    import importlib

    from bert_tf.training import run_lock
    from runner_harness import run_in_process
    output_dir = next(arg.split("=", 1)[1] for arg in args
                      if arg.startswith("--output_dir="))
    if caplog is not None:
        caplog.clear()
    try:
        with (_info_logged(caplog) if caplog is not None
              else contextlib.nullcontext()):
            run_in_process(importlib.import_module(program), *args)
    finally:
        run_lock.release_output_dir(output_dir)
    if caplog is None:
        return ""
    return "\n".join(record.getMessage() for record in caplog.records)


def _start(script, args, log_path):
    log = open(log_path, "w")
    process = subprocess.Popen(_command(script, args), cwd=REPO_ROOT,
                               env=_environment(), stdout=log,
                               stderr=subprocess.STDOUT)
    return process, log


def _error_line(output):
    """The last line: where a runner states why it stopped."""
    return output.strip().splitlines()[-1]


def _snapshot(directory):
    """{relative path: sha256} of every file under `directory`."""
    result = {}
    for root, _, names in os.walk(directory):
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as reader:
                result[os.path.relpath(path, directory)] = hashlib.sha256(
                    reader.read()).hexdigest()
    return result


def _steps(directory):
    """Steps of the model.ckpt-<step> checkpoints in `directory`."""
    return sorted(int(m.group(1)) for m in (
        re.fullmatch(r"model\.ckpt-(\d+)\.index", name)
        for name in os.listdir(directory)) if m)


def _wait_for(path, process, log_path, seconds=600):
    deadline = time.time() + seconds
    while not os.path.exists(path):
        assert process.poll() is None, open(log_path).read()[-5000:]
        assert time.time() < deadline, f"{path} did not appear"
        time.sleep(0.02)


def _dead_pid():
    """The id of a process that has ended (and was reaped)."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """Two record shards and a tiny bert_config.json (dropout on)."""
    return write_tiny_pretraining_data(
        tmp_path_factory.mktemp("data"), SEQ, PREDICTIONS,
        examples_per_shard=40, hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1)


def pretraining_args(data_dir, output_dir, **overrides):
    return pretraining_command_line(data_dir, output_dir, SEQ, PREDICTIONS, {
        "do_train": "True", "do_eval": "False",
        "train_batch_size": "4", "eval_batch_size": "4",
        "num_train_steps": "4", "num_warmup_steps": "1",
        "learning_rate": "1e-3", "save_checkpoints_steps": "1",
        "iterations_per_loop": "1", "log_steps": "1",
        "keep_checkpoint_max": "0", "seed": "7"}, **overrides)


@pytest.fixture(scope="module")
def finished_run(data_dir, tmp_path_factory):
    """A run directory with model.ckpt-1 .. model.ckpt-4 (never modified:
    tests copy it)."""
    output_dir = tmp_path_factory.mktemp("finished") / "run"
    # In this process, without --seed: a seeded run would turn on op
    # determinism and reset the global seeds for the rest of the session.
    _run_here("run_pretraining", pretraining_args(data_dir, output_dir,
                                                  seed=None))
    assert _steps(output_dir) == [1, 2, 3, 4]
    return output_dir


# -- 1. a copied run directory with absolute paths ---------------------------

def test_resuming_a_copied_run_never_touches_the_original(
        data_dir, finished_run, tmp_path, caplog):
    original = tmp_path / "original"
    shutil.copytree(finished_run, original)
    copy = tmp_path / "copy"
    shutil.copytree(original, copy)
    # As TF1's Saver writes it: absolute paths into the original directory.
    (original / "checkpoint").write_text(
        f'model_checkpoint_path: "{original}/model.ckpt-4"\n' + "".join(
            f'all_model_checkpoint_paths: "{original}/model.ckpt-{step}"\n'
            for step in (1, 2, 3, 4)))
    shutil.copy(original / "checkpoint", copy / "checkpoint")
    # The copy lacks one of them: that entry must be ignored, not followed.
    for name in os.listdir(copy):
        if name.startswith("model.ckpt-1."):
            os.remove(copy / name)
    before = _snapshot(original)

    output = _run_here("run_pretraining", pretraining_args(
        data_dir, copy, num_train_steps="6", keep_checkpoint_max="2",
        seed=None), caplog)

    assert _snapshot(original) == before  # nothing deleted or changed
    assert (f"The checkpoint state file of {copy} names "
            f"{original}/model.ckpt-4, outside that directory (a copied "
            f"run?); using {copy}/model.ckpt-4 instead.") in output
    assert (f"The checkpoint state file of {copy} names "
            f"{original}/model.ckpt-1, outside that directory and with no "
            f"checkpoint of that name in it; ignoring that entry (it is "
            f"never deleted).") in output
    assert f"Resuming from {copy}/model.ckpt-4 (global step 4)" in output
    # Rotation kept 2, all inside the copy; the state file is relative.
    assert _steps(copy) == [5, 6]
    assert (copy / "checkpoint").read_text() == (
        'model_checkpoint_path: "model.ckpt-6"\n'
        'all_model_checkpoint_paths: "model.ckpt-5"\n'
        'all_model_checkpoint_paths: "model.ckpt-6"\n')


# -- 2. an output that is an input ---------------------------------------------

def test_output_file_equal_to_input_file_is_refused(golden_dir, tmp_path):
    corpus = tmp_path / "corpus.txt"
    shutil.copy(golden_dir / "create_pretraining_data" / "corpus.txt", corpus)
    link = tmp_path / "link.tfrecord"
    os.symlink(corpus, link)
    vocab = golden_dir / "models" / "cased_tiny" / "vocab.txt"
    before = _snapshot(tmp_path)
    for output_file, same in ((corpus, ""), (link, " (the same file)")):
        status, output = _run(
            "create_pretraining_data.py", f"--input_file={corpus}",
            f"--output_file={output_file}", f"--vocab_file={vocab}")
        assert status == 1
        assert _error_line(output) == (
            f"create_pretraining_data.py: error: --output_file {output_file} "
            f"is the input --input_file {corpus}{same}: refusing to "
            f"overwrite an input; choose another output path")
    assert _snapshot(tmp_path) == before


def test_extract_features_and_convert_refuse_to_overwrite_inputs(
        golden_dir, tmp_path):
    model = tmp_path / "model"
    shutil.copytree(golden_dir / "models" / "cased_tiny", model)
    text = tmp_path / "input.txt"
    text.write_text("Hello world .\n")
    before = _snapshot(tmp_path)
    status, output = _run(
        "extract_features.py", f"--input_file={text}",
        f"--output_file={text}", f"--vocab_file={model}/vocab.txt",
        f"--bert_config_file={model}/bert_config.json",
        f"--init_checkpoint={model}/bert_model.ckpt", "--layers=-1")
    assert status == 1
    assert _error_line(output) == (
        f"extract_features.py: error: --output_file {text} is the input "
        f"--input_file {text}: refusing to overwrite an input; choose "
        f"another output path")
    # The converter writing into the checkpoint's own directory would copy
    # vocab.txt onto itself (`main`, in this process).
    from bert_tf import convert
    with pytest.raises(SystemExit) as exited:
        convert.main(["google_to_hf", f"--checkpoint={model}",
                      f"--bert_config_file={model}/bert_config.json",
                      f"--output_dir={model}", "--overwrite"])
    assert str(exited.value.code) == (
        f"python -m bert_tf.convert google_to_hf: error: --output_dir file "
        f"{model}/vocab.txt is the input --vocab_file {model}/vocab.txt: "
        f"refusing to overwrite an input; choose another output path")
    assert _snapshot(tmp_path) == before


def test_run_squad_refuses_a_predict_file_it_would_overwrite(golden_dir,
                                                             tmp_path):
    import run_squad
    from runner_harness import error_line_in_process
    model = golden_dir / "models" / "cased_tiny"
    output_dir = tmp_path / "out"
    output_dir.mkdir()
    predict_file = output_dir / "predictions.json"
    predict_file.write_text('{"version": "1.1", "data": []}')
    before = _snapshot(tmp_path)
    error = error_line_in_process(
        run_squad, f"--vocab_file={model}/vocab.txt",
        f"--bert_config_file={model}/bert_config.json",
        f"--init_checkpoint={model}/bert_model.ckpt", "--do_predict=True",
        f"--predict_file={predict_file}", f"--output_dir={output_dir}",
        "--do_lower_case=False", "--max_seq_length=64", "--doc_stride=32",
        "--max_query_length=16")
    assert error == (
        f"run_squad.py: error: --output_dir file {predict_file} is the input "
        f"--predict_file {predict_file}: refusing to overwrite an input; "
        f"choose another output path")
    assert _snapshot(tmp_path) == before


# -- 3. two runs, a dead run's lock, stale temporary files ---------------------

def test_second_run_is_refused_and_a_dead_runs_lock_is_taken_over(
        data_dir, tmp_path, caplog):
    output_dir = tmp_path / "out"
    first, log = _start("run_pretraining.py", pretraining_args(
        data_dir, output_dir, num_train_steps="100000",
        save_checkpoints_steps="100000", iterations_per_loop="10",
        log_steps="1000"), tmp_path / "first.log")
    try:
        _wait_for(output_dir / LOCK_FILE, first, tmp_path / "first.log")
        import run_pretraining
        from runner_harness import error_line_in_process
        error = error_line_in_process(run_pretraining, *pretraining_args(
            data_dir, output_dir, num_train_steps="2", seed=None))
        assert error == (
            f"run_pretraining.py: error: --output_dir={output_dir} is in use "
            f"by another run (process {first.pid} on this host, lock file "
            f"{output_dir}/{LOCK_FILE}); wait for it to finish or use "
            f"another --output_dir (if process {first.pid} is not a bert_tf "
            f"run, e.g. its id was reused after a restart, delete "
            f"{output_dir}/{LOCK_FILE})")
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
        log.close()
    assert (output_dir / LOCK_FILE).exists()  # the dead run's

    # Temporary files of interrupted writes: this project's (removed) and
    # look-alikes a user may own (kept).
    dead = _dead_pid()
    ours = [".model.ckpt-7.tmp-" + "0123456789abcdef" * 2
            + ".data-00000-of-00001",
            ".model.ckpt-7.tmp-" + "0123456789abcdef" * 2 + ".index",
            f"checkpoint.tmp-{dead}", f"eval_results.txt.tmp-{dead}"]
    users = [".model.ckpt-7.tmp-mine", "notes.txt.tmp-12", "draft.tmp",
             f"checkpoint.tmp-{os.getppid()}"]  # a live pid: kept
    for name in ours + users:
        (output_dir / name).write_bytes(b"x" * 1000)
    before = {name: (output_dir / name).read_bytes() for name in users}

    # In this process (a process of its own adds 5-8 s of importing
    # TensorFlow; the first one is the run that dies), without --seed (see
    # `finished_run`).
    output = _run_here("run_pretraining", pretraining_args(
        data_dir, output_dir, keep_checkpoint_max="2", seed=None), caplog)
    assert (f"Took over the lock {output_dir}/{LOCK_FILE} of process "
            f"{first.pid} on {socket.gethostname()}, which no longer runs "
            f"(killed or crashed).") in output
    assert (f"Removed 4 temporary files left by an interrupted run in "
            f"{output_dir}: {', '.join(sorted(ours))}") in output
    for name in ours:
        assert not (output_dir / name).exists(), name
    for name, content in before.items():
        assert (output_dir / name).read_bytes() == content, name
    assert not (output_dir / LOCK_FILE).exists()  # released at the end
    assert _steps(output_dir) == [3, 4]  # --keep_checkpoint_max=2 holds


# -- 4. evaluation without weights -------------------------------------------

def test_eval_without_training_or_weights_is_refused(data_dir, tmp_path):
    import run_pretraining
    from runner_harness import error_line_in_process
    output_dir = tmp_path / "out"
    error = error_line_in_process(run_pretraining, *pretraining_args(
        data_dir, output_dir, do_train="False", do_eval="True"))
    assert error == (
        f"run_pretraining.py: error: --do_eval without --do_train needs "
        f"trained weights, but --output_dir={output_dir} holds no checkpoint "
        f"(model.ckpt-*) and --init_checkpoint is not set: the model would "
        f"be random. Pass --do_train=True, --init_checkpoint, or the "
        f"--output_dir of a training run.")
    assert not output_dir.exists()


# -- 5. damaged checkpoints ----------------------------------------------------

def _truncate(path, keep_fraction=0.5):
    data = open(path, "rb").read()
    with open(path, "wb") as writer:
        writer.write(data[:int(len(data) * keep_fraction)])
    return data


@pytest.mark.extended(reason=(
    "extract_features.py naming a truncated checkpoint in a process of its "
    "own; the default run resumes past a truncated checkpoint "
    "(test_resume_falls_back_past_a_truncated_checkpoint)"))
def test_truncated_checkpoint_is_named_with_the_tensor(golden_dir, tmp_path):
    model = tmp_path / "model"
    shutil.copytree(golden_dir / "models" / "cased_tiny", model)
    data_file = model / "bert_model.ckpt.data-00000-of-00001"
    _truncate(data_file)
    text = tmp_path / "input.txt"
    text.write_text("Hello world .\n")
    status, output = _run(
        "extract_features.py", f"--input_file={text}",
        f"--output_file={tmp_path}/features.jsonl",
        f"--vocab_file={model}/vocab.txt",
        f"--bert_config_file={model}/bert_config.json",
        f"--init_checkpoint={model}/bert_model.ckpt", "--layers=-1")
    assert status == 1
    line = _error_line(output)
    match = re.fullmatch(
        re.escape(f"extract_features.py: error: checkpoint {model}/"
                  f"bert_model.ckpt is damaged (truncated or corrupt): "
                  f"cannot read tensor ") + r"(\S+)" + re.escape(
            f" from {data_file}: Read less bytes than requested"), line)
    assert match, line
    assert match.group(1).startswith("bert/")
    assert not (tmp_path / "features.jsonl").exists()


def test_resume_falls_back_past_a_truncated_checkpoint(data_dir,
                                                       finished_run, tmp_path,
                                                       caplog):
    output_dir = tmp_path / "run"
    shutil.copytree(finished_run, output_dir)
    data_file = output_dir / "model.ckpt-4.data-00000-of-00001"
    damaged_bytes = _truncate(data_file)
    truncated = data_file.read_bytes()
    index_bytes = (output_dir / "model.ckpt-4.index").read_bytes()

    output = _run_here("run_pretraining", pretraining_args(
        data_dir, output_dir, num_train_steps="5", seed=None), caplog)

    assert damaged_bytes != truncated
    assert re.search(
        re.escape(f"Checkpoint {output_dir}/model.ckpt-4 cannot be read; "
                  f"trying an older one. checkpoint {output_dir}/"
                  f"model.ckpt-4 is damaged (truncated or corrupt): cannot "
                  f"read tensor ") + r"\S+" + re.escape(
            f" from {data_file}: Read less bytes than requested"), output)
    assert (f"Resuming from {output_dir}/model.ckpt-3 instead of the damaged "
            f"{output_dir}/model.ckpt-4 (kept as {output_dir}/"
            f"damaged-model.ckpt-4, not deleted).") in output
    # The damaged files are kept, byte for byte; steps 4 and 5 rewritten.
    assert (output_dir / "damaged-model.ckpt-4.data-00000-of-00001"
            ).read_bytes() == truncated
    assert (output_dir / "damaged-model.ckpt-4.index"
            ).read_bytes() == index_bytes
    assert _steps(output_dir) == [1, 2, 3, 4, 5]


# -- 6. a corrupt TFRecord among two inputs -----------------------------------

def _record_start(path, byte_offset):
    """Where the record holding `byte_offset` starts (TFRecord framing:
    8-byte length, 4-byte CRC, data, 4-byte CRC)."""
    data = open(path, "rb").read()
    start = 0
    while start < len(data):
        length = int.from_bytes(data[start:start + 8], "little")
        end = start + 12 + length + 4
        if byte_offset < end:
            return start
        start = end
    raise ValueError("offset beyond the file")


@pytest.mark.extended(reason=(
    "a damaged record met by run_pretraining.py in a process of its own; "
    "the default run names damaged classifier and SQuAD records and checks "
    "the offset against TensorFlow's reader"))
def test_corrupt_tfrecord_is_named_with_its_offset(data_dir, tmp_path):
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    for shard in range(2):
        shutil.copy(data_dir / f"records-{shard}.tfrecord", inputs)
    damaged = inputs / "records-1.tfrecord"
    data = bytearray(damaged.read_bytes())
    position = len(data) * 2 // 3
    data[position] ^= 0x20
    damaged.write_bytes(bytes(data))
    status, output = _run("run_pretraining.py", *pretraining_args(
        data_dir, tmp_path / "out", input_file=f"{inputs}/records-*.tfrecord",
        num_train_steps="200", save_checkpoints_steps="100",
        iterations_per_loop="20", log_steps="100"))
    assert status == 1
    start = _record_start(damaged, position)
    assert _error_line(output) in (
        f"run_pretraining.py: error: TFRecord file {damaged} is damaged at "
        f"byte offset {start} (the record starting there): corrupted record "
        f"{part} (its CRC does not match)" for part in ("data", "length"))


def test_corrupt_classifier_and_squad_records_are_named(tmp_path):
    import tensorflow as tf
    from bert_tf.data import tfrecord_files
    from bert_tf.runners import flags as runner_flags
    from bert_tf.tasks.classification import features as classifier_features
    from bert_tf.tasks.squad import features as squad_features
    path = tmp_path / "eval.tf_record"
    record = tf.train.Example(features=tf.train.Features(feature={
        name: tf.train.Feature(int64_list=tf.train.Int64List(value=[1] * 8))
        for name in ("input_ids", "input_mask", "segment_ids")} | {
            name: tf.train.Feature(int64_list=tf.train.Int64List(value=[1]))
            for name in ("label_ids", "is_real_example", "unique_ids")})).\
        SerializeToString()
    framed = tfrecord_files.frame_tfrecords([record] * 3)
    corrupt = bytearray(framed)
    third = 2 * (len(framed) // 3)
    corrupt[third + 20] ^= 1  # inside the third record's data
    path.write_bytes(bytes(corrupt))
    readers = [
        lambda: classifier_features.read_tfrecord(path, 8),
        lambda: squad_features.read_tfrecord(path, 8, is_training=False),
    ]
    for make in readers:
        with pytest.raises(tf.errors.DataLossError) as raised:
            for _ in make():
                pass
        assert str(runner_flags.DataLossMessage(raised.value)) == (
            f"TFRecord file {path} is damaged at byte offset {third} (the "
            f"record starting there): corrupted record data (its CRC does "
            f"not match)")


def test_find_damaged_record_agrees_with_tensorflow(tmp_path):
    """Every single-byte corruption TensorFlow's reader detects is found,
    at the record TensorFlow names."""
    import tensorflow as tf
    from bert_tf.data import tfrecord_files
    rng = np.random.RandomState(0)
    records = [rng.bytes(rng.randint(0, 40)) for _ in range(12)]
    framed = tfrecord_files.frame_tfrecords(records)
    path = tmp_path / "r.tfrecord"
    path.write_bytes(framed)
    assert tfrecord_files.find_damaged_record(str(path)) is None
    for position in rng.choice(len(framed), 40, replace=False):
        data = bytearray(framed)
        data[position] ^= 1 << rng.randint(8)
        path.write_bytes(bytes(data))
        try:
            for _ in tf.data.TFRecordDataset(str(path)):
                pass
            tensorflow_offset = None
        except tf.errors.DataLossError as error:
            tensorflow_offset = int(re.search(r"record at (\d+)",
                                              error.message).group(1))
        found = tfrecord_files.find_damaged_record(str(path))
        assert (found is None) == (tensorflow_offset is None), position
        if found:
            assert tensorflow_offset in (found[0], found[0] + 12), position
    path.write_bytes(framed[:-7])  # truncated
    assert tfrecord_files.find_damaged_record(str(path))[1].startswith(
        "truncated record")


# -- 7. a killed and resumed run is the uninterrupted run ----------------------

def _read_all(prefix):
    from bert_tf import checkpoints
    return checkpoints.read_checkpoint(str(prefix))


def test_killed_and_resumed_run_equals_the_uninterrupted_run(data_dir,
                                                             tmp_path):
    num_steps = 150
    overrides = dict(num_train_steps=str(num_steps),
                     save_checkpoints_steps="25", iterations_per_loop="5",
                     log_steps="50")
    # The uninterrupted run runs beside the first, killed one.
    uninterrupted = tmp_path / "uninterrupted"
    reference, reference_log = _start("run_pretraining.py", pretraining_args(
        data_dir, uninterrupted, **overrides), tmp_path / "reference.log")
    resumed = tmp_path / "resumed"
    process, log = _start("run_pretraining.py", pretraining_args(
        data_dir, resumed, **overrides), tmp_path / "first.log")
    try:
        _wait_for(resumed / "model.ckpt-25.index", process,
                  tmp_path / "first.log")
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
        log.close()
    killed_at = _steps(resumed)[-1]
    assert process.returncode == -signal.SIGKILL and killed_at < num_steps
    status, output = _run("run_pretraining.py", *pretraining_args(
        data_dir, resumed, **overrides))
    assert status == 0, output[-5000:]
    assert f"(global step {killed_at})" in output
    try:
        reference.wait(timeout=600)
    finally:
        if reference.poll() is None:
            reference.kill()
        reference_log.close()
    assert reference.returncode == 0, (
        tmp_path / "reference.log").read_text()[-5000:]

    expected = _read_all(uninterrupted / f"model.ckpt-{num_steps}")
    actual = _read_all(resumed / f"model.ckpt-{num_steps}")
    assert sorted(actual) == sorted(expected)
    assert "training/dropout_random_state" in actual
    for name, value in expected.items():
        np.testing.assert_allclose(actual[name], value, rtol=1e-6,
                                   atol=1e-7, err_msg=name)
    # The comparison can fail: the weights moved since the kill.
    before = _read_all(resumed / f"model.ckpt-{killed_at}") if os.path.exists(
        resumed / f"model.ckpt-{killed_at}.index") else None
    if before is not None:
        assert not np.allclose(before["bert/pooler/dense/kernel"],
                               actual["bert/pooler/dense/kernel"])


@pytest.mark.slow  # three processes with two logical devices: minutes
def test_resume_is_exact_under_mirrored_strategy(data_dir, tmp_path):
    """Two logical CPUs: uninterrupted vs killed (SIGKILL) and resumed."""
    num_steps = 80
    script = os.path.abspath(__file__)

    def command(output_dir):
        return [sys.executable, script, "mirrored_train", str(data_dir),
                str(output_dir), str(num_steps)]

    env = {**_environment(),
           "PYTHONPATH": os.pathsep.join([REPO_ROOT,
                                          os.path.dirname(script)])}
    # The uninterrupted run runs beside the first, killed one.
    reference = subprocess.Popen(command(tmp_path / "uninterrupted"),
                                 cwd=REPO_ROOT, env=env,
                                 stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
    resumed = tmp_path / "resumed"
    with open(tmp_path / "first.log", "w") as log:
        process = subprocess.Popen(command(resumed), cwd=REPO_ROOT, env=env,
                                   stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_for(resumed / "model.ckpt-10.index", process,
                      tmp_path / "first.log")
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
    assert process.returncode == -signal.SIGKILL
    killed_at = _steps(resumed)[-1]
    assert killed_at < num_steps
    second = subprocess.run(command(resumed), cwd=REPO_ROOT, env=env,
                            capture_output=True, text=True, timeout=900)
    assert second.returncode == 0, second.stderr[-5000:]
    assert f"restored {resumed}/model.ckpt-{killed_at}" in second.stdout
    try:
        assert reference.wait(timeout=600) == 0
    finally:
        if reference.poll() is None:
            reference.kill()
    expected = _read_all(tmp_path / "uninterrupted" /
                         f"model.ckpt-{num_steps}")
    actual = _read_all(resumed / f"model.ckpt-{num_steps}")
    for name, value in expected.items():
        np.testing.assert_allclose(actual[name], value, rtol=1e-6,
                                   atol=1e-7, err_msg=name)


def _mirrored_train(data_dir, output_dir, num_steps):
    """Trains the pretraining task on 2 logical CPUs with --seed 7."""
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    import keras
    from bert_tf.config import BertConfig
    from bert_tf.pretraining import task as pretraining
    from bert_tf.training import distribution
    from bert_tf.training import optimization
    from bert_tf.training import trainer as trainer_lib
    keras.utils.set_random_seed(7)
    strategy = distribution.get_distribution_strategy("mirrored")
    assert strategy.num_replicas_in_sync == 2
    task = pretraining.PretrainingTask(
        BertConfig.from_json_file(os.path.join(data_dir, "bert_config.json")),
        pretraining.PretrainingDataConfig(
            input_patterns=(os.path.join(data_dir, "records-*.tfrecord"),),
            max_seq_length=SEQ, max_predictions_per_seq=PREDICTIONS, seed=7))
    trainer = trainer_lib.Trainer(
        task, trainer_lib.TrainerConfig(
            output_dir=output_dir, train_batch_size=4,
            num_train_steps=num_steps, save_checkpoints_steps=10,
            iterations_per_loop=5, log_steps=20, keep_checkpoint_max=0,
            seed=7),
        strategy, optimizer_factory=lambda: optimization.create_optimizer(
            "adamw", 1e-3, num_steps, 10))
    trainer.train()
    print(f"restored {trainer.restored_checkpoint}")


# -- the pieces, in process (fast) --------------------------------------------

def test_lock_is_reentrant_refuses_live_holders_and_takes_over_dead_ones(
        tmp_path):
    from bert_tf.training import run_lock
    lock = tmp_path / LOCK_FILE
    host = socket.gethostname()
    # A live process of this host (our parent) holds it.
    lock.write_text(f"host={host}\npid={os.getppid()}\n")
    with pytest.raises(run_lock.OutputDirLockedError) as raised:
        run_lock.lock_output_dir(tmp_path)
    assert str(raised.value) == (
        f"--output_dir={tmp_path} is in use by another run (process "
        f"{os.getppid()} on this host, lock file {lock}); wait for it to "
        f"finish or use another --output_dir (if process {os.getppid()} is "
        f"not a bert_tf run, e.g. its id was reused after a restart, delete "
        f"{lock})")
    # Another host's lock is never taken over.
    lock.write_text("host=elsewhere\npid=1\n")
    with pytest.raises(run_lock.OutputDirLockedError) as raised:
        run_lock.lock_output_dir(tmp_path)
    assert str(raised.value).endswith(
        f"(process 1 on host elsewhere, lock file {lock}); wait for it to "
        f"finish or use another --output_dir (delete {lock} only if that run "
        f"is gone)")
    # A dead process's lock is taken over; taking it again is a no-op.
    lock.write_text(f"host={host}\npid={_dead_pid()}\n")
    assert run_lock.lock_output_dir(tmp_path) == str(lock)
    assert run_lock.lock_output_dir(tmp_path) == str(lock)
    assert f"pid={os.getpid()}" in lock.read_text()
    assert not run_lock.lock_output_dir(tmp_path / "worker", is_chief=False)
    run_lock.release_output_dir(tmp_path)
    assert not lock.exists()
    assert sorted(os.listdir(tmp_path)) == []


def test_only_this_projects_stale_temporary_files_are_removed(tmp_path):
    from bert_tf.training import run_lock
    dead = _dead_pid()
    hex32 = "0123456789abcdef" * 2
    ours = [f".model.ckpt-12.tmp-{hex32}.index",
            f".model.ckpt-12.tmp-{hex32}.data-00000-of-00001",
            f".model.ckpt-12.tmp-{hex32}.data-00000-of-00001.tempstate123",
            f"checkpoint.tmp-{hex32}", f"checkpoint.tmp-{dead}",
            f"eval_results.txt.tmp-{dead}", f"test_results.tsv.tmp-{dead}",
            f".train.tf_record.tmp-{dead}-0123abcd",
            f".checkpoint.tmp-{dead}-k3_x9q0z",  # file_io.atomic_write's
            f".eval_results.txt.tmp-{dead}-a1b2c3d4",
            f"{LOCK_FILE}.tmp-{dead}"]
    kept = [f"checkpoint.tmp-{os.getpid()}",  # a live writer's
            f".checkpoint.tmp-{os.getpid()}-k3_x9q0z",
            f".eval_results.txt.tmp-{dead}-a1b2",
            f".model.ckpt-12.tmp-{hex32[:-1]}.index", "model.ckpt-12.index",
            "notes.tmp", f"results.txt.tmp-{dead}", ".hidden",
            f".train.tf_record.tmp-{dead}", "checkpoint"]
    for name in ours + kept:
        (tmp_path / name).write_text("x")
    removed = run_lock.remove_stale_temporary_files(tmp_path)
    assert removed == sorted(str(tmp_path / name) for name in ours)
    assert sorted(os.listdir(tmp_path)) == sorted(kept)


def test_output_is_input_check_follows_links_and_lists(tmp_path):
    from bert_tf import file_io
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("text")
    os.link(corpus, tmp_path / "hard.txt")
    os.symlink(tmp_path, tmp_path / "dir_link")
    for output in (f"{tmp_path}/other.tfrecord,{tmp_path}/hard.txt",
                   f"{tmp_path}/dir_link/corpus.txt",
                   f"{tmp_path}/sub/../corpus.txt"):
        with pytest.raises(file_io.OutputIsInputError, match=re.escape(
                f"is the input --input_file {corpus}")):
            file_io.check_outputs_are_not_inputs(
                [("--output_file", output)],
                [("--input_file", f"{tmp_path}/*.txt")])
    # A checkpoint prefix's files are inputs too.
    (tmp_path / "model.ckpt.index").write_text("x")
    with pytest.raises(file_io.OutputIsInputError):
        file_io.check_outputs_are_not_inputs(
            [("--output_dir file", tmp_path / "model.ckpt.index")],
            [("--init_checkpoint", tmp_path / "model.ckpt")])
    file_io.check_outputs_are_not_inputs(
        [("--output_file", tmp_path / "new.tfrecord")],
        [("--input_file", corpus), ("--vocab_file", None)])


def test_vocabulary_and_corpus_tools_refuse_to_overwrite_inputs(tmp_path):
    from bert_tf import learn_vocab
    from bert_tf import prepare_corpus
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("some text\n")
    dump = tmp_path / "dump.xml.bz2"
    dump.write_bytes(b"BZh9")
    for main, args, flag, path in (
            (learn_vocab.main, [f"--input_file={corpus}"], "--input_file",
             corpus),
            (prepare_corpus.main, [f"--wiki_dump={dump}"], "--wiki_dump",
             dump)):
        with pytest.raises(SystemExit) as raised:
            main(args + [f"--output_file={path}"])
        # sys.exit(message): the message on stderr, exit status 1.
        assert str(raised.value.code).endswith(
            f"error: --output_file {path} is the input {flag} {path}: "
            f"refusing to overwrite an input; choose another output path")
    assert corpus.read_text() == "some text\n"
    assert dump.read_bytes() == b"BZh9"


def test_unused_encoder_weights_are_a_warning(cased_tiny_dir, caplog):
    import tensorflow as tf
    from bert_tf import checkpoints
    prefix = str(cased_tiny_dir / "bert_model.ckpt")
    shapes = checkpoints.checkpoint_shapes(prefix)

    def load(names):
        variables = {name: tf.Variable(tf.zeros(shapes[name]), name=name)
                     for name in names}
        caplog.clear()
        with _info_logged(caplog):
            checkpoints.load_checkpoint(variables, prefix)
        return [record for record in caplog.records
                if "not used by the model" in record.getMessage()]

    # A config with fewer layers: layer_1's weights are left over.
    encoder = [n for n in shapes if n.startswith("bert/")
               and "layer_1/" not in n]
    [record] = load(encoder)
    assert record.levelname == "WARNING"
    assert ("(including 16 encoder weights, e.g. bert/encoder/layer_1/"
            "attention/output/LayerNorm/beta: does bert_config.json describe "
            "the checkpoint's model?)") in record.getMessage()
    # The encoder alone from a pretraining checkpoint: heads left, INFO.
    [record] = load([n for n in shapes if n.startswith("bert/")])
    assert record.levelname == "INFO"


# -- 8. issue 22: outputs that are inputs, exports, leftovers, a full disk -----

def _cased_tiny_flags(golden_dir):
    model = golden_dir / "models" / "cased_tiny"
    return [f"--vocab_file={model}/vocab.txt",
            f"--bert_config_file={model}/bert_config.json",
            f"--init_checkpoint={model}/bert_model.ckpt",
            "--do_lower_case=False"]


def test_tagging_and_multiple_choice_refuse_to_overwrite_their_inputs(
        golden_dir, tmp_path):
    import run_multiple_choice
    import run_tagging
    from runner_harness import error_line_in_process
    output_dir = tmp_path / "out"
    output_dir.mkdir()
    # A file to tag, given under the name of the predictions of a run.
    predictions = output_dir / "test_predictions.txt"
    predictions.write_text("EU B-ORG\nrejects O\n")
    # A SWAG file named as the scores the run writes.
    scores = output_dir / "test_results.tsv"
    scores.write_text("sent1,sent2,ending0,ending1\na,b,c,d\n")
    before = _snapshot(tmp_path)
    for runner, predict_file in ((run_tagging, predictions),
                                 (run_multiple_choice, scores)):
        error = error_line_in_process(
            runner, *_cased_tiny_flags(golden_dir), "--do_predict=True",
            f"--predict_file={predict_file}", f"--output_dir={output_dir}")
        assert error == (
            f"{runner.PROGRAM}: error: --output_dir file {predict_file} is "
            f"the input --predict_file {predict_file}: refusing to overwrite "
            f"an input; choose another output path")
    assert _snapshot(tmp_path) == before


def _fake_export(directory, files):
    """A directory as export_saved_model.py writes one: `files` and the
    marker listing them."""
    directory.mkdir(parents=True)
    for name in files:
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text(f"{name} of the previous export")
    (directory / "bert_tf_export.json").write_text(json.dumps(
        {"written_by": "bert_tf export_saved_model.py",
         "files": sorted(files)}))


def test_export_overwrite_never_deletes_a_run_or_an_input(golden_dir,
                                                          tmp_path):
    import export_saved_model
    from runner_harness import error_line_in_process
    model = tmp_path / "run"  # a training run's output_dir
    shutil.copytree(golden_dir / "models" / "cased_tiny", model)
    (model / "label_list.txt").write_text("O\nB-PER\n")
    (model / "eval_results.txt").write_text("eval_f1 = 0.9\n")
    not_ours = tmp_path / "documents"
    not_ours.mkdir()
    (not_ours / "notes.txt").write_text("mine")
    extra = tmp_path / "export_plus"
    _fake_export(extra, ["saved_model.pb", "variables/variables.index"])
    (extra / "variables" / "mine.txt").write_text("mine")
    before = _snapshot(tmp_path)

    def error(export_dir, init_checkpoint=model / "bert_model.ckpt"):
        return error_line_in_process(
            export_saved_model, "--task_name=embeddings",
            f"--bert_config_file={model}/bert_config.json",
            f"--vocab_file={model}/vocab.txt",
            f"--init_checkpoint={init_checkpoint}", "--do_lower_case=False",
            f"--export_dir={export_dir}", "--overwrite")

    prefix = "export_saved_model.py: error: "
    assert error(model) == (
        f"{prefix}--export_dir {model} holds the input --bert_config_file "
        f"{model}/bert_config.json: refusing to replace it; choose another "
        f"output path")
    assert error(model / "vocab.txt") == (
        f"{prefix}--export_dir {model}/vocab.txt is the input --vocab_file "
        f"{model}/vocab.txt: refusing to overwrite an input; choose another "
        f"output path")
    # A checkpoint given as its directory is an input too.
    assert error(tmp_path, init_checkpoint=model).startswith(
        f"{prefix}--export_dir {tmp_path} holds the input ")
    refusal = (f"{prefix}--overwrite replaces only a SavedModel that "
               f"export_saved_model.py wrote, and ")
    assert error(not_ours) == (
        f"{refusal}{not_ours} is not one (it has no bert_tf_export.json): "
        f"refusing to delete it; choose another --export_dir")
    assert error(extra) == (
        f"{refusal}{extra} also holds {extra}/variables/mine.txt, which the "
        f"export did not write: refusing to delete it; move it away or "
        f"choose another --export_dir")
    assert error(not_ours / "notes.txt") == (
        f"{refusal}{not_ours}/notes.txt is a file, not such a directory: "
        f"refusing to delete it; choose another --export_dir")
    assert _snapshot(tmp_path) == before
    # What may be replaced: an export holding only its own files, or an
    # empty directory.
    from bert_tf.export import serving
    (extra / "variables" / "mine.txt").unlink()
    (tmp_path / "empty").mkdir()
    for replaceable in (extra, tmp_path / "empty"):
        serving.check_export_dir(replaceable, overwrite=True)


def test_preset_overwrite_replaces_only_the_converters_own_files(
        golden_dir, tmp_path):
    """google_to_keras_hub --overwrite: a user's file anywhere in the
    preset (assets/ too) is named and kept; the converter's own files are
    replaced."""
    pytest.importorskip("keras_hub", reason='pip install -e ".[hf]"')
    from bert_tf import convert
    model = golden_dir / "models" / "cased_tiny"
    preset = tmp_path / "preset"
    args = ["google_to_keras_hub", f"--checkpoint={model}/bert_model.ckpt",
            f"--bert_config_file={model}/bert_config.json",
            "--do_lower_case=false", f"--output_dir={preset}", "--overwrite"]
    assert convert.main(args) == 0
    converted = sorted(_snapshot(preset))
    (preset / "model.weights.h5").write_text("an older preset's weights")
    assert convert.main(args) == 0
    assert sorted(_snapshot(preset)) == converted
    assert (preset / "model.weights.h5").read_bytes()[:4] == b"\x89HDF"

    def refusal(named, more=""):
        return (f"python -m bert_tf.convert google_to_keras_hub: error: "
                f"--output_dir {preset} also holds {preset}/{named}{more}, "
                f"which is not a file of the keras-hub preset this converter "
                f"writes: refusing to replace it; move it away or choose "
                f"another directory")

    # A user's file at every depth, a directory of the user's (named
    # whole), a link: each one is named, and nothing changes.
    mine = {"assets/mine.txt": "assets/mine.txt",
            "assets/tokenizer/my_notes.txt": "assets/tokenizer/my_notes.txt",
            "notes/todo.txt": "notes",
            "assets/tokenizer/link": "assets/tokenizer/link"}
    for path, named in mine.items():
        (preset / path).parent.mkdir(exist_ok=True)
        if path.endswith("link"):
            os.symlink(model / "vocab.txt", preset / path)
        else:
            (preset / path).write_text("mine")
        before = _snapshot(tmp_path)
        with pytest.raises(SystemExit) as exited:
            convert.main(args)
        assert str(exited.value.code) == refusal(named)
        assert _snapshot(tmp_path) == before
        if named == "notes":
            shutil.rmtree(preset / named)
        else:
            os.remove(preset / named)
    for path in mine:
        (preset / path).parent.mkdir(exist_ok=True)
        (preset / path).write_text("mine")
    with pytest.raises(SystemExit) as exited:
        convert.main(args)
    assert str(exited.value.code) == refusal("assets/mine.txt",
                                             " (and 3 more)")


def test_an_output_dir_through_a_link_is_seen_to_be_the_inputs(tmp_path):
    from bert_tf.pretraining import beam as pretraining_beam
    from bert_tf.pretraining.errors import PretrainingDataError
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "part").write_text("text\n")
    (corpus / "part.tfrecord").write_text("a shard named as an output\n")
    os.symlink(corpus, tmp_path / "link")
    with pytest.raises(PretrainingDataError) as raised:
        pretraining_beam.plan_shards(
            [str(corpus / "part"), str(corpus / "part.tfrecord")],
            str(tmp_path / "link"))
    assert str(raised.value) == (
        f"--output_dir file {tmp_path}/link/part.tfrecord is the input "
        f"--input_file {corpus}/part.tfrecord (the same file): refusing to "
        f"overwrite an input; choose another output path")


def test_a_killed_writers_temporaries_are_removed_by_the_next_run(
        golden_dir, tmp_path):
    dead = _dead_pid()
    output = tmp_path / "out.tfrecord"
    # What create_pretraining_data.py killed mid-write leaves, a live
    # writer's temporary, and a user's look-alikes.
    leftovers = [f".out.tfrecord.tmp-{dead}-0123abcd",
                 f".out.tfrecord.tmp-{dead}-k3_x9q0z"]
    kept = [f".out.tfrecord.tmp-{os.getppid()}-0123abcd",  # alive
            ".out.tfrecord.tmp-mine", f".other.tfrecord.tmp-{dead}-0123abcd"]
    for name in leftovers + kept:
        (tmp_path / name).write_bytes(b"x" * 1000)
    status, output_text = _run(
        "create_pretraining_data.py",
        f"--input_file={golden_dir}/create_pretraining_data/corpus.txt",
        f"--output_file={output}",
        f"--vocab_file={golden_dir}/models/cased_tiny/vocab.txt",
        "--max_seq_length=32", "--dupe_factor=1")
    assert status == 0, output_text[-3000:]
    assert (f"Removed 2 temporary files left by a killed run writing "
            f"{output}: {', '.join(leftovers)}") in output_text
    assert sorted(os.listdir(tmp_path)) == sorted(kept + ["out.tfrecord"])


def test_a_killed_exports_directories_are_cleaned_and_put_back(tmp_path):
    from bert_tf import file_io
    dead = _dead_pid()
    export_dir = tmp_path / "export"
    # Killed while replacing: the previous export moved aside, the new one
    # complete beside it, nothing under the real name.
    _fake_export(tmp_path / f".export.old-{dead}-abcd1234" / "replaced",
                 ["saved_model.pb"])
    _fake_export(tmp_path / f".export.tmp-{dead}-0123abcd",
                 ["saved_model.pb", "variables/variables.index"])
    # Killed while writing an earlier export; a live writer's.
    (tmp_path / f".export.tmp-{dead}-zzzzzzzz").mkdir()
    live = tmp_path / f".export.tmp-{os.getppid()}-0123abcd"
    live.mkdir()
    with pytest.raises(FileExistsError):
        with file_io.atomic_directory(export_dir) as temporary:
            pass
    # The previous export is back, whole; the dead writers' files are gone.
    assert (export_dir / "saved_model.pb").read_text() == (
        "saved_model.pb of the previous export")
    assert sorted(os.listdir(tmp_path)) == sorted(["export", live.name])
    with file_io.atomic_directory(export_dir, overwrite=True) as temporary:
        (pathlib.Path(temporary) / "new").write_text("new")
    assert os.listdir(export_dir) == ["new"]
    assert sorted(os.listdir(tmp_path)) == sorted(["export", live.name])


# A full disk, for real: a small tmpfs mounted over the output directory in
# a user and mount namespace (no root needed; skipped where the system
# forbids such namespaces).

def _namespaces_allowed():
    if not shutil.which("unshare"):
        return False
    return subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "true"],
        capture_output=True).returncode == 0


needs_namespaces = pytest.mark.skipif(
    not _namespaces_allowed(),
    reason="needs unprivileged user namespaces (unshare) for a small tmpfs")


def _run_on_a_small_disk(directory, size_bytes, commands, snapshot):
    """Runs `commands` (argument lists) in turn with a `size_bytes` tmpfs on
    `directory`; copies what it holds to `snapshot` at the end.

    Returns:
      (exit status of the last command, its stdout + stderr).
    """
    import shlex
    directory.mkdir(parents=True, exist_ok=True)
    script = [f"mount -t tmpfs -o size={size_bytes} tmpfs "
              f"{shlex.quote(str(directory))} || exit 99"]
    for command in commands[:-1]:
        script.append(" ".join(map(shlex.quote, command))
                      + " >/dev/null 2>&1 || exit 98")
    script.append(" ".join(map(shlex.quote, commands[-1])) + " 2>&1")
    script.append("status=$?")
    script.append(f"cp -a {shlex.quote(str(directory))}/. "
                  f"{shlex.quote(str(snapshot))}/")
    script.append("exit $status")
    snapshot.mkdir(parents=True, exist_ok=True)
    process = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
         "\n".join(script)], cwd=REPO_ROOT, env=_environment(),
        capture_output=True, text=True, timeout=600)
    assert process.returncode not in (98, 99), process.stdout[-5000:]
    return process.returncode, process.stdout + process.stderr


@needs_namespaces
def test_full_disk_keeps_the_previous_records_and_features(golden_dir,
                                                           tmp_path):
    disk = tmp_path / "disk"
    snapshot = tmp_path / "snapshot"
    model = golden_dir / "models" / "cased_tiny"
    text = tmp_path / "input.txt"
    text.write_text("Hello world .\n" * 40)
    previous = [sys.executable, "-c",
                f"open('{disk}/out.tfrecord', 'w').write('previous');"
                f"open('{disk}/features.jsonl', 'w').write('previous')"]
    status, output = _run_on_a_small_disk(disk, 64 * 1024, [
        previous, _command("create_pretraining_data.py", [
            f"--input_file={golden_dir}/create_pretraining_data/corpus.txt",
            f"--output_file={disk}/out.tfrecord",
            f"--vocab_file={model}/vocab.txt", "--dupe_factor=20"])],
        snapshot)
    assert status == 1, output[-3000:]
    assert _error_line(output) == (
        f"create_pretraining_data.py: error: cannot write output file "
        f"{disk}/out.tfrecord: No space left on device (nothing was written "
        f"under that name; free space and run again)")
    assert sorted(os.listdir(snapshot)) == ["features.jsonl", "out.tfrecord"]
    assert (snapshot / "out.tfrecord").read_text() == "previous"

    status, output = _run_on_a_small_disk(disk, 64 * 1024, [
        previous, _command("extract_features.py", [
            f"--input_file={text}", f"--output_file={disk}/features.jsonl",
            f"--vocab_file={model}/vocab.txt",
            f"--bert_config_file={model}/bert_config.json",
            f"--init_checkpoint={model}/bert_model.ckpt",
            "--do_lower_case=False", "--layers=-1,-2", "--max_seq_length=16"])],
        snapshot)
    assert status == 1, output[-3000:]
    assert _error_line(output) == (
        f"extract_features.py: error: cannot write file "
        f"{disk}/features.jsonl: No space left on device (nothing was "
        f"written under that name; free space and run again)")
    assert "Traceback" not in output
    assert sorted(os.listdir(snapshot)) == ["features.jsonl", "out.tfrecord"]
    assert (snapshot / "features.jsonl").read_text() == "previous"


def _checkpoint_bytes(directory, step):
    return sum(os.path.getsize(directory / name) for name in
               os.listdir(directory)
               if name.startswith(f"model.ckpt-{step}."))


@pytest.mark.slow  # a training run and an export in processes of their own
@needs_namespaces
def test_full_disk_keeps_the_previous_checkpoint_and_export(
        data_dir, finished_run, golden_dir, tmp_path):
    from bert_tf import checkpoints
    disk = tmp_path / "disk"
    snapshot = tmp_path / "snapshot"
    # Room for one checkpoint and a half: the second does not fit.
    size = int(_checkpoint_bytes(finished_run, 1) * 1.5)
    status, output = _run_on_a_small_disk(disk, size, [_command(
        "run_pretraining.py", pretraining_args(data_dir, disk))], snapshot)
    assert status == 1, output[-5000:]
    assert _error_line(output) == (
        f"run_pretraining.py: error: cannot write checkpoint "
        f"{disk}/model.ckpt-2: No space left on device (nothing was written "
        f"under that name; free space and run again)")
    assert "Traceback" not in output
    assert _steps(snapshot) == [1]
    checkpoints.read_checkpoint(str(snapshot / "model.ckpt-1"))  # whole
    assert (snapshot / "checkpoint").read_text().startswith(
        'model_checkpoint_path: "model.ckpt-1"\n')
    assert not [name for name in os.listdir(snapshot) if ".tmp-" in name]

    previous = [sys.executable, "-c", (
        "import json, os; os.makedirs('{0}/export/variables'); "
        "open('{0}/export/saved_model.pb', 'w').write('previous'); "
        "json.dump({{'files': ['saved_model.pb']}}, "
        "open('{0}/export/bert_tf_export.json', 'w'))").format(disk)]
    shutil.rmtree(snapshot)
    status, output = _run_on_a_small_disk(disk, 256 * 1024, [
        previous, _command("export_saved_model.py", _embeddings_export_args(
            golden_dir, disk / "export", "--overwrite"))], snapshot)
    assert status == 1, output[-5000:]
    assert _error_line(output) == (
        f"export_saved_model.py: error: cannot write SavedModel "
        f"{disk}/export: No space left on device (nothing was written under "
        f"that name; free space and run again)")
    assert "Traceback" not in output
    assert os.listdir(snapshot) == ["export"]  # no temporary directory
    assert (snapshot / "export" / "saved_model.pb").read_text() == "previous"


def _embeddings_export_args(golden_dir, export_dir, *flags):
    """export_saved_model.py's flags for the tiny model's embeddings."""
    model = golden_dir / "models" / "cased_tiny"
    return ["--task_name=embeddings", f"--vocab_file={model}/vocab.txt",
            f"--bert_config_file={model}/bert_config.json",
            f"--init_checkpoint={model}/bert_model.ckpt",
            "--do_lower_case=False", f"--export_dir={export_dir}", *flags]


PORTABLE_EXPORT_FILES = ["bert_tf_export.json", "packing.json",
                         "special_tokens_map.json", "tokenizer.json",
                         "tokenizer_config.json", "vocab.txt"]


@needs_namespaces
@pytest.mark.extended(reason=(
    "a full temporary directory under a TFLite or ONNX export; the default "
    "run fills the disk under records, features and checkpoints"))
@pytest.mark.parametrize("flags, model_file", [
    (["--format=tflite"], "model.tflite"),
    (["--format=onnx", "--quantize=int8"], "model.onnx")])
def test_a_full_tmpdir_does_not_stop_a_tflite_or_onnx_export(
        flags, model_file, golden_dir, tmp_path):
    """The converters' intermediate files (TFLite's SavedModel copy, the
    float32 graph ONNX Runtime quantizes) are written beside the export,
    so a $TMPDIR without room for them is not in the way (it was, and the
    message blamed the export's disk). (A $TMPDIR without room for
    Python's few-byte probe is skipped by Python itself.)"""
    if model_file == "model.onnx":
        pytest.importorskip("tf2onnx")
        pytest.importorskip("onnxruntime")
    tmpdir = tmp_path / "tmpdir"
    snapshot = tmp_path / "snapshot"
    export_dir = tmp_path / "export"
    status, output = _run_on_a_small_disk(tmpdir, 64 * 1024, [
        ["env", f"TMPDIR={tmpdir}"] + _command(
            "export_saved_model.py",
            _embeddings_export_args(golden_dir, export_dir, *flags))],
        snapshot)
    assert status == 0, output[-5000:]
    # Nothing in $TMPDIR but the session id `import onnxruntime` writes.
    assert set(os.listdir(snapshot)) <= {".ses"}
    assert sorted(os.listdir(export_dir)) == sorted(
        PORTABLE_EXPORT_FILES + [model_file])
    assert sorted(os.listdir(tmp_path)) == ["export", "snapshot", "tmpdir"]


@pytest.mark.extended(reason=(
    "a SIGKILLed TFLite export; the default run checks that an export killed "
    "at any point is cleaned up and put back"))
def test_a_killed_tflite_exports_intermediate_files_are_removed_by_the_next(
        golden_dir, tmp_path, caplog):
    """Killed while converting: the converter's SavedModel copy is inside
    the export's temporary directory (not in $TMPDIR, where nothing ever
    removed it), which the next export to the same --export_dir removes;
    nothing else is touched."""
    import export_saved_model
    from runner_harness import run_in_process
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    (out / ".export.tmp-mine").write_text("mine too")
    mine = _snapshot(out)
    export_dir = out / "export"
    args = _embeddings_export_args(golden_dir, export_dir, "--format=tflite")
    log_path = tmp_path / "export.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            _command("export_saved_model.py", args), cwd=REPO_ROOT,
            env={**_environment(), "TMPDIR": str(tmpdir)}, stdout=log,
            stderr=subprocess.STDOUT)
        try:
            # The SavedModel copy the converter reads, wherever it is.
            deadline = time.time() + 600
            while not (list(out.glob(".export.tmp-*/*/*/saved_model.pb"))
                       or list(tmpdir.glob("*/saved_model.pb"))):
                assert process.poll() is None, log_path.read_text()[-5000:]
                assert time.time() < deadline
                time.sleep(0.02)
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
    # TensorFlow's own AutoGraph sources aside (any killed TensorFlow
    # program leaves them), $TMPDIR holds nothing of the export.
    assert [name for name in os.listdir(tmpdir)
            if not name.startswith("__autograph_generated_file")] == []
    leftovers = [name for name in os.listdir(out)
                 if name.startswith(f".export.tmp-{process.pid}-")]
    assert len(leftovers) == 1, os.listdir(out)
    caplog.clear()
    with caplog.at_level("WARNING"):
        run_in_process(export_saved_model, *args)
    assert (f"Removed 1 temporary files left by a killed run writing "
            f"{export_dir}: {leftovers[0]}") in caplog.text
    assert sorted(os.listdir(out)) == [".export.tmp-mine", "export",
                                       "notes.txt"]
    assert {name: digest for name, digest in _snapshot(out).items()
            if not name.startswith("export/")} == mine
    assert sorted(os.listdir(export_dir)) == sorted(
        PORTABLE_EXPORT_FILES + ["model.tflite"])


def _tagging_args(golden_dir, tmp_path, output_dir):
    train = tmp_path / "train.txt"
    train.write_text("EU B-ORG\nrejects O\nGerman B-MISC\ncall O\n\n"
                     "Peter B-PER\nBlackburn I-PER\n\n" * 2)
    model = golden_dir / "models" / "cased_tiny"
    return [f"--vocab_file={model}/vocab.txt",
            f"--bert_config_file={model}/bert_config.json",
            "--do_lower_case=False", "--do_train=True",
            f"--train_file={train}", f"--output_dir={output_dir}",
            "--max_seq_length=16", "--train_batch_size=2",
            "--num_train_epochs=2", "--save_checkpoints_steps=1",
            "--iterations_per_loop=1", "--seed=1"]


@pytest.mark.parametrize("program", ["run_pretraining", "run_tagging"])
def test_full_disk_while_saving_a_checkpoint_is_one_line(
        program, data_dir, golden_dir, tmp_path, monkeypatch):
    """In process, TensorFlow's own error injected where the checkpoint is
    written (as a full disk raises it): the one-line message, and the
    previous checkpoint kept whole."""
    import importlib

    import tensorflow as tf

    from bert_tf import checkpoints
    from bert_tf.training import run_lock
    from runner_harness import error_line_in_process
    output_dir = tmp_path / "out"
    real_save = tf.raw_ops.SaveV2
    calls = []

    def save_until_the_disk_is_full(prefix, **kwargs):
        calls.append(prefix)
        if len(calls) < 2:
            return real_save(prefix=prefix, **kwargs)
        # `prefix` is the temporary one save_checkpoint writes first.
        with open(f"{prefix}.data-00000-of-00001.tempstate1", "wb") as f:
            f.write(b"half a checkpoint")
        raise tf.errors.ResourceExhaustedError(
            None, None, f"{prefix}.data-00000-of-00001.tempstate1; No space "
                        f"left on device")

    monkeypatch.setattr(tf.raw_ops, "SaveV2", save_until_the_disk_is_full)
    args = (pretraining_args(data_dir, output_dir)
            if program == "run_pretraining"
            else _tagging_args(golden_dir, tmp_path, output_dir))
    try:
        error = error_line_in_process(importlib.import_module(program),
                                      *args)
    finally:
        run_lock.release_output_dir(output_dir)
    assert error == (
        f"{program}.py: error: cannot write checkpoint "
        f"{output_dir}/model.ckpt-2: No space left on device (nothing was "
        f"written under that name; free space and run again)")
    assert _steps(output_dir) == [1]
    checkpoints.read_checkpoint(str(output_dir / "model.ckpt-1"))
    assert not [name for name in os.listdir(output_dir) if ".tmp" in name]


# -- 10. a finished run's files (issue 49 items 1-2) ------------------------

def _write_reviews(directory, labels):
    """A generic task's train.tsv and dev.tsv with these two labels."""
    directory.mkdir(parents=True, exist_ok=True)
    rows = "".join(f"{text}\t{label}\n" for text, label in (
        ("good film", labels[0]), ("bad film", labels[1])) * 4)
    for name in ("train.tsv", "dev.tsv"):
        (directory / name).write_text("sentence\tlabel\n" + rows)
    return directory


def _classifier_args(golden_dir, data, output_dir, *more):
    model = golden_dir / "models" / "cased_tiny"
    return [f"--vocab_file={model}/vocab.txt",
            f"--bert_config_file={model}/bert_config.json",
            "--do_lower_case=False", "--task_name=generic",
            f"--data_dir={data}", f"--output_dir={output_dir}",
            "--do_train=True", "--max_seq_length=16",
            "--train_batch_size=4", "--num_train_epochs=1", *more]


def _without_lock(snapshot):
    return {name: digest for name, digest in snapshot.items()
            if name != LOCK_FILE}


@pytest.fixture(scope="module")
def finished_classifier_run(golden_dir, tmp_path_factory):
    """A run_classifier.py run (labels positive/negative, max_seq_length
    16) that trained to its end; tests copy it."""
    root = tmp_path_factory.mktemp("finished_classifier")
    output_dir = root / "run"
    _run_here("run_classifier", _classifier_args(
        golden_dir, _write_reviews(root / "data", ("positive", "negative")),
        output_dir))
    assert _steps(output_dir) == [2]
    return output_dir


def _copied_run(finished_classifier_run, tmp_path):
    output_dir = tmp_path / "run"
    shutil.copytree(finished_classifier_run, output_dir)
    return output_dir


@pytest.mark.parametrize("flag, message", [
    ("--learning_rate=-1", "--learning_rate=-1.0 must be positive"),
    ("--eval_batch_size=0", "--eval_batch_size=0 must be a positive integer"),
    ("--save_checkpoints_steps=0",
     "--save_checkpoints_steps=0 must be a positive integer"),
    ("--keep_checkpoint_max=-1", "--keep_checkpoint_max=-1 must be >= 0"),
    ("--max_seq_length=1", "--max_seq_length=1 cannot hold [CLS] and the "
                           "[SEP] of an example (at least 2)"),
    ("--train_batch_size=0",
     "--train_batch_size=0 must be a positive integer"),
    ("--num_train_epochs=nan", "--num_train_epochs=nan must be a finite "
                               "number"),
    ("--dtype=mixed_float16 jax",
     "--dtype=mixed_float16: on KERAS_BACKEND=jax training runs in float32 "
     "or mixed_bfloat16 (float16 needs the TensorFlow backend's loss "
     "scaling)"),
])
def test_a_run_refused_for_a_late_flag_leaves_a_finished_run_as_it_was(
        finished_classifier_run, golden_dir, tmp_path, monkeypatch, flag,
        message):
    """Issue 49 item 1: every field is checked before anything is written
    (the run description and train.tf_record of the finished run were
    rewritten with the refused run's labels). The JAX backend's refusals
    are checked with Keras' backend name set to "jax" (Keras picks its
    backend once per process)."""
    import keras
    import run_classifier
    from runner_harness import error_line_in_process
    if flag.endswith(" jax"):
        flag = flag[:-len(" jax")]
        monkeypatch.setattr(keras.backend, "backend", lambda: "jax")
    output_dir = _copied_run(finished_classifier_run, tmp_path)
    before = _without_lock(_snapshot(output_dir))
    other_data = _write_reviews(tmp_path / "other", ("yes", "no"))
    assert error_line_in_process(run_classifier, *_classifier_args(
        golden_dir, other_data, output_dir, "--do_eval=True", flag)) == (
        f"run_classifier.py: error: {message}")
    assert _without_lock(_snapshot(output_dir)) == before


def test_a_run_with_other_labels_or_length_is_refused_by_a_finished_run(
        finished_classifier_run, golden_dir, cased_tiny_dir, tmp_path):
    """Issue 49 item 2: a second run with other labels resumed with nothing
    to train, evaluated the old model against the new labels and rewrote
    the run description, so `bert_tf.load` served the old model under the
    new names."""
    import bert_tf
    import run_classifier
    from runner_harness import error_line_in_process
    output_dir = _copied_run(finished_classifier_run, tmp_path)
    before = _without_lock(_snapshot(output_dir))
    other_data = _write_reviews(tmp_path / "other", ("yes", "no"))
    refusal = (f"--output_dir: {output_dir} holds a model trained "
               "(model.ckpt-2) with {}, which this run would use under its "
               "own; use another --output_dir")
    other_labels = "labels negative, positive (this run: no, yes)"
    assert error_line_in_process(run_classifier, *_classifier_args(
        golden_dir, other_data, output_dir, "--do_eval=True")) == (
        "run_classifier.py: error: " + refusal.format(other_labels))
    # Evaluating without training is refused too; its max_seq_length may
    # differ from the training run's.
    eval_only = _classifier_args(golden_dir, other_data, output_dir,
                                 "--max_seq_length=32", "--do_eval=True")
    eval_only.remove("--do_train=True")
    assert error_line_in_process(run_classifier, *eval_only) == (
        "run_classifier.py: error: " + refusal.format(other_labels))
    same_data = tmp_path / "same"
    _write_reviews(same_data, ("positive", "negative"))
    assert error_line_in_process(run_classifier, *_classifier_args(
        golden_dir, same_data, output_dir, "--max_seq_length=32")) == (
        "run_classifier.py: error: " + refusal.format(
            "max_seq_length 16 (this run: 32)"))
    with pytest.raises(ValueError) as error:
        bert_tf.finetune("classification", cased_tiny_dir, output_dir,
                         train=[("great", "good"), ("awful", "bad")] * 2,
                         max_seq_length=16, train_batch_size=4,
                         num_train_epochs=1, verbose=False)
    assert str(error.value) == refusal.format(
        "labels negative, positive (this run: bad, good)")
    assert _without_lock(_snapshot(output_dir)) == before
    assert bert_tf.load(output_dir).labels == ["negative", "positive"]


def test_a_run_in_a_relative_directory_resumes_without_a_warning(
        finished_classifier_run, tmp_path, monkeypatch, caplog):
    """Issue 49 item 12: the state file's entries were joined to a relative
    --output_dir twice ("names work/reviews/work/reviews/model.ckpt-4,
    outside that directory (a copied run?)")."""
    from bert_tf.training import checkpoint_manager
    _copied_run(finished_classifier_run, tmp_path / "work")
    monkeypatch.chdir(tmp_path)
    with caplog.at_level("WARNING"), caplog.at_level("WARNING",
                                                     logger="absl"):
        manager = checkpoint_manager.CheckpointManager(
            os.path.join("work", "run"), is_chief=False)
        latest = manager.latest_checkpoint
    assert latest == os.path.join("work", "run", "model.ckpt-2")
    assert not [record.getMessage() for record in caplog.records
                if "state file" in record.getMessage()]


def test_a_users_eval_results_file_is_kept_and_a_failed_call_unlocks(
        finished_classifier_run, golden_dir, cased_tiny_dir, tmp_path):
    """Issue 49 item 13: a user's own eval_results.txt was replaced; a
    recipe that failed after taking the lock kept the directory locked
    until the Python process exited."""
    import bert_tf
    import run_classifier
    from runner_harness import error_line_in_process
    output_dir = tmp_path / "mine"
    output_dir.mkdir()
    notes = output_dir / "eval_results.txt"
    notes.write_text("My results from last week:\naccuracy 0.91\n")
    data = _write_reviews(tmp_path / "data", ("positive", "negative"))
    assert error_line_in_process(run_classifier, *_classifier_args(
        golden_dir, data, output_dir, "--do_eval=True")) == (
        f"run_classifier.py: error: --output_dir: {notes} is not a run's "
        "evaluation results (name = value lines) and would be overwritten "
        "by this run's; move it or use another --output_dir")
    assert notes.read_text() == "My results from last week:\naccuracy 0.91\n"
    # Refused after taking the lock (the finished run's labels differ).
    run = _copied_run(finished_classifier_run, tmp_path)
    with pytest.raises(ValueError, match="holds a model trained"):
        bert_tf.finetune("classification", cased_tiny_dir, run,
                         train=[("great", "good"), ("awful", "bad")] * 2,
                         max_seq_length=16, train_batch_size=4,
                         verbose=False)
    assert not (run / LOCK_FILE).exists()


# -- 9. (slow) kills at random points, also during saves ----------------------

@pytest.mark.slow
def test_runs_killed_at_random_points_lose_nothing(data_dir, tmp_path):
    from bert_tf import checkpoints
    import tensorflow as tf
    output_dir = tmp_path / "out"
    random_state = random.Random(0)
    keep = 3
    args = pretraining_args(
        data_dir, output_dir, num_train_steps="100000",
        save_checkpoints_steps="1", iterations_per_loop="1",
        log_steps="1000", keep_checkpoint_max=str(keep))
    for attempt in range(8):
        process, log = _start("run_pretraining.py", args,
                              tmp_path / f"run-{attempt}.log")
        try:
            deadline = time.time() + 300
            steps_before = _steps(output_dir) if output_dir.exists() else []
            # Wait until this run saves, then kill it at a random moment
            # (checkpoints are written every step: most kills hit a save).
            while (not output_dir.exists()
                   or _steps(output_dir) == steps_before):
                assert process.poll() is None, open(
                    tmp_path / f"run-{attempt}.log").read()[-5000:]
                assert time.time() < deadline
                time.sleep(0.01)
            time.sleep(random_state.uniform(0.0, 1.0))
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
            log.close()
        state = tf.train.get_checkpoint_state(str(output_dir))
        for prefix in state.all_model_checkpoint_paths:
            checkpoints.read_checkpoint(prefix)  # every one reads whole
        # Killed between a save and its rotation: at most one extra.
        assert len(_steps(output_dir)) <= keep + 1
        temporary = [name for name in os.listdir(output_dir)
                     if ".tmp-" in name]
        # At most one interrupted write's files (removed by the next run).
        assert len({name.split(".tmp-")[0] for name in temporary}) <= 1, (
            temporary)
    status, output = _run("run_pretraining.py", *pretraining_args(
        data_dir, output_dir, num_train_steps=str(_steps(output_dir)[-1] + 2),
        keep_checkpoint_max=str(keep)))
    assert status == 0, output[-5000:]
    assert not [name for name in os.listdir(output_dir) if ".tmp-" in name]
    assert len(_steps(output_dir)) == keep


if __name__ == "__main__":
    if sys.argv[1] == "mirrored_train":
        _mirrored_train(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        raise SystemExit(f"unknown mode {sys.argv[1]!r}")
