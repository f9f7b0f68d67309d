"""What a user sees: a quiet start, early progress, signals handled.

Each test runs a program as a user does (`runner_harness.run_runner` or
`start_runner`): a subprocess started from the repository root with the
user's environment, in which nobody set `TF_CPP_MIN_LOG_LEVEL` (conftest.py
and tests/runner_harness.py set it for the other tests; here it is
removed).
"""

import importlib.util
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from bert_tf import checkpoints

from pretraining_harness import pretraining_command_line
from pretraining_harness import write_tiny_pretraining_data
from runner_harness import run_runner
from runner_harness import start_runner

SEQ, PREDICTIONS = 32, 5

# TensorFlow's C++ logging ("2026-12-01 21:33:30.589671: I external/...cc:31]
# ..."), Abseil's C++ logging as XLA uses it ("I0000 00:00:1796160820.50 5953
# device_compiler.h:196] ..."), their notes, and absl's Python warning.
# Our own lines come from Python files: "I1201 21:33:36.41 1400 trainer.py:249]".
TENSORFLOW_LINE = re.compile(
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IWEF] |"
    r"^[IWEF]\d{4} [\d:.]+\s+\d+ [^\]\s]+\.(?:cc|h|c|cpp):\d+\] |"
    r"absl::InitializeLog|Logging before flag parsing|cpu_feature_guard|"
    r"rebuild TensorFlow|cuInit|Compiled cluster using XLA|"
    r"TFRecordDataset|Local rendezvous|MLIR")


def user_environment(**changes):
    """The environment of a user who set no TensorFlow variable."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("TF_CPP_MIN_LOG_LEVEL", "TF_CPP_MAX_VLOG_LEVEL")}
    env.update(changes)
    return env


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """Two record shards and a tiny bert_config.json."""
    return write_tiny_pretraining_data(
        tmp_path_factory.mktemp("ux_data"), SEQ, PREDICTIONS)


def pretraining_flags(data_dir, output_dir, **overrides):
    return pretraining_command_line(data_dir, output_dir, SEQ, PREDICTIONS, {
        "do_train": "True", "do_eval": "True",
        "train_batch_size": "8", "eval_batch_size": "8",
        "num_train_steps": "6", "num_warmup_steps": "2",
        "learning_rate": "1e-3", "save_checkpoints_steps": "3",
        "iterations_per_loop": "3", "log_steps": "2",
        "max_eval_steps": "3"}, **overrides)


def run_pretraining(data_dir, output_dir, **overrides):
    """Runs run_pretraining.py as a user does; returns the finished process."""
    return run_runner("run_pretraining.py", None,
                      *pretraining_flags(data_dir, output_dir, **overrides),
                      env=user_environment(), expect_success=False)


@pytest.fixture(scope="module")
def progress_run(data_dir, tmp_path_factory):
    """A run with slow steps, a far --log_steps and a short
    --log_every_seconds, then an evaluation: the finished process (one
    runner start for the two tests below)."""
    process = run_pretraining(
        data_dir, tmp_path_factory.mktemp("progress") / "out",
        num_train_steps="12", log_steps="12", iterations_per_loop="12",
        save_checkpoints_steps="12", log_every_seconds="0.001")
    assert process.returncode == 0, process.stderr[-5000:]
    return process


# -- a quiet start -------------------------------------------------------------

def test_training_and_evaluation_show_no_tensorflow_line(progress_run):
    output = progress_run.stdout + progress_run.stderr
    noise = [line for line in output.splitlines()
             if TENSORFLOW_LINE.search(line)]
    assert noise == []
    # Our own lines are there: training, a checkpoint, evaluation.
    assert "step 12/12" in output
    assert "Eval results" in output


@pytest.mark.slow  # one more runner start
def test_verbosity_brings_tensorflow_lines_back(data_dir, tmp_path):
    """`--verbosity=1` leaves TensorFlow's C++ logging at its default."""
    process = run_pretraining(data_dir, tmp_path / "out", num_train_steps="2",
                              do_eval="False", verbosity="1")
    assert process.returncode == 0, process.stderr[-5000:]
    assert any(TENSORFLOW_LINE.search(line)
               for line in process.stderr.splitlines())


# TensorFlow 2.21's lines as its libraries load (Abseil's C++ logging,
# which TF_CPP_MIN_LOG_LEVEL does not reach), copied from its output.
TENSORFLOW_2_21_START_UP = [
    "WARNING: All log messages before absl::InitializeLog() is called are "
    "written to STDERR",
    "I0000 00:00:1796586499.102731   10927 port.cc:153] oneDNN custom "
    "operations are on. You may see slightly different numerical results "
    "due to floating-point round-off errors from different computation "
    "orders. To turn them off, set the environment variable "
    "`TF_ENABLE_ONEDNN_OPTS=0`.",
    "I0000 00:00:1796586499.103033   10927 cudart_stub.cc:31] Could not find "
    "cuda drivers on your machine, GPU will not be used.",
    "I0000 00:00:1796586560.713959   11907 cpu_feature_guard.cc:227] This "
    "TensorFlow binary is optimized to use available CPU instructions in "
    "performance-critical operations.",
    "To enable the following instructions: AVX2 AVX512F AVX512_VNNI "
    "AVX512_BF16 FMA, in other operations, rebuild TensorFlow with the "
    "appropriate compiler flags.",
]


def test_tensorflow_2_21_start_up_lines_are_dropped_and_others_kept():
    """Issue 49 item 15: on TensorFlow 2.21 `Could not find cuda drivers on
    your machine, GPU will not be used.` and the other load-time lines got
    through the quiet start. What C++ code writes to file descriptor 2 while
    the libraries load is held and written out without them."""
    from bert_tf import startup
    assert all(startup.is_start_up_line(line)
               for line in TENSORFLOW_2_21_START_UP)
    # A warning or an error, and anyone else's line, still reach the user.
    kept = [
        "W0000 00:00:1796586499.103033   10927 cudart_stub.cc:31] Could not "
        "find cuda drivers on your machine, GPU will not be used.",
        "E0000 00:00:1796586499.1 10927 cuda_executor.cc:1] failed call to "
        "cuInit",
        "Could not find cuda drivers on your machine, GPU will not be used.",
        "my own line",
    ]
    assert not any(startup.is_start_up_line(line) for line in kept)
    # Written to the descriptor, as C++ code writes (not through
    # sys.stderr), in a process of its own.
    lines = TENSORFLOW_2_21_START_UP[:3] + kept + TENSORFLOW_2_21_START_UP[3:]
    script = (
        "import os, sys\n"
        "from bert_tf import startup\n"
        "with startup._start_up_lines_dropped():\n"
        f"    os.write(2, {chr(10).join(lines) + chr(10)!r}.encode())\n")
    process = subprocess.run([sys.executable, "-c", script],
                             capture_output=True, text=True, timeout=60)
    assert process.returncode == 0, process.stderr
    assert process.stderr.splitlines() == kept


def test_quiet_start_then_tensorflow_prints_nothing():
    """The quiet start, then `import tensorflow` and a computation, in a
    user's environment: not a line (on TensorFlow 2.21 six, before)."""
    script = ("from bert_tf import startup\n"
              "assert startup.quiet_start()\n"
              "import tensorflow as tf\n"
              "tf.config.list_physical_devices()\n"
              "tf.reduce_sum(tf.constant([1.0, 2.0])).numpy()\n")
    process = subprocess.run([sys.executable, "-c", script],
                             capture_output=True, text=True, timeout=120,
                             env=user_environment())
    assert process.returncode == 0, process.stderr
    assert process.stdout + process.stderr == ""


# -- progress from the first seconds -------------------------------------------

PROGRESS_LINE = re.compile(r"train pretraining: (\d+)/(\d+) steps")


def test_progress_is_reported_before_the_first_log_steps_boundary(
        progress_run):
    """The run reports progress between --log_steps boundaries, the first
    line before any step."""
    lines = progress_run.stderr.splitlines()
    boundary = next(i for i, line in enumerate(lines)
                    if "step 12/12: loss = " in line)
    before = [int(m.group(1)) for line in lines[:boundary]
              for m in [PROGRESS_LINE.search(line)] if m]
    # The start line (step 0) says what the first seconds are spent on.
    start_line = next(line for line in lines if PROGRESS_LINE.search(line))
    assert "0/12 steps" in start_line and "tracing" in start_line
    # Then steps between 0 and the --log_steps boundary, with a speed.
    assert [s for s in before if 0 < s < 12], lines
    assert not any("nan" in line or "ETA ?" in line for line in lines)


# -- signals -----------------------------------------------------------------

def read_until(stream, pattern, seen):
    """Reads lines into `seen` until one matches; returns the match."""
    for line in stream:
        seen.append(line)
        match = pattern.search(line)
        if match:
            return match
    raise AssertionError("the program ended before printing "
                         f"{pattern.pattern!r}:\n" + "".join(seen[-50:]))


@pytest.mark.slow  # two runner starts
def test_sigterm_during_training_saves_a_checkpoint_to_resume_from(
        data_dir, tmp_path):
    output_dir = tmp_path / "out"
    process = start_runner(
        "run_pretraining.py", None, *pretraining_flags(
            data_dir, output_dir, num_train_steps="100000",
            save_checkpoints_steps="100000", log_steps="100000",
            iterations_per_loop="100000", do_eval="False",
            log_every_seconds="0.001"),
        env=user_environment(), stderr=subprocess.PIPE, text=True)
    seen = []
    try:
        # Training is under way (past the first, tracing call).
        match = read_until(process.stderr, re.compile(
            r"train pretraining: ([2-9]|\d\d+)/100000 steps"), seen)
        step_seen = int(match.group(1))
        process.send_signal(signal.SIGTERM)
        seen.extend(process.stderr)
        returncode = process.wait(timeout=120)
    finally:
        process.kill()
        process.wait()
    output = "".join(seen)
    assert returncode == 128 + signal.SIGTERM, output[-5000:]
    stopped = re.search(r"run_pretraining.py: stopped: received SIGTERM at "
                        r"step (\d+)/100000: saved (\S+);", output)
    assert stopped, output[-5000:]
    step = int(stopped.group(1))
    assert step >= step_seen
    assert stopped.group(2) == str(output_dir / f"model.ckpt-{step}")
    assert checkpoints.checkpoint_shapes(stopped.group(2))
    assert (sorted(f for f in os.listdir(output_dir) if f.endswith(".index"))
            == [f"model.ckpt-{step}.index"])

    # The same command resumes from it.
    resumed = run_pretraining(data_dir, output_dir,
                              num_train_steps=str(step + 2), do_eval="False")
    assert resumed.returncode == 0, resumed.stderr[-5000:]
    assert f"Resuming from {output_dir}/model.ckpt-{step} " in resumed.stderr
    assert (output_dir / f"model.ckpt-{step + 2}.index").exists()


def child_pids(pid):
    """The processes whose parent is `pid` (from /proc)."""
    children = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            children.append(int(entry))
    return children


def running(pid):
    """Whether `pid` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"),
                    reason="reads /proc")
@pytest.mark.skipif(
    importlib.util.find_spec("gensim") is None,
    reason="demo.py's first step needs gensim (pip install --no-deps "
           "gensim==4.4.0)")
def test_sigterm_of_demo_stops_its_running_step(tmp_path):
    """`kill <pid>` of demo.py passes SIGTERM on and waits: no orphan."""
    process = start_runner(
        "demo.py", None, f"--work_dir={tmp_path / 'work'}", "--quick",
        cwd=tmp_path, env=user_environment(), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    seen = []
    try:
        # The first step's command line: its process starts right after.
        read_until(process.stdout, re.compile(r"^\$ "), seen)
        children = []
        for _ in range(600):  # at most a minute
            children = child_pids(process.pid)
            if children:
                break
            time.sleep(0.1)
        assert children, "demo.py started no step:\n" + "".join(seen)
        process.send_signal(signal.SIGTERM)
        seen.extend(process.stdout)
        returncode = process.wait(timeout=120)
    finally:
        process.kill()
        process.wait()
    output = "".join(seen)
    assert returncode == 128 + signal.SIGTERM, output[-5000:]
    assert "demo.py: stopped by SIGTERM; run the same command again" in output
    assert not [pid for pid in children if running(pid)]


# -- lines that say what they mean ---------------------------------------------

def test_training_log_names_training_metrics_and_gives_a_speed_at_once(
        tiny_config, tmp_path, caplog):
    """The classifier's running metrics are `train_*` (its task names them
    with Google's eval keys); the first line has a speed and an ETA."""
    import logging as python_logging

    from bert_tf.tasks.classification import features as cf
    from bert_tf.training import optimization
    from bert_tf.training.trainer import Trainer, TrainerConfig

    from tests.tasks.classification.test_classification_task import (
        make_task, random_features)

    train_file = str(tmp_path / "train.tf_record")
    cf.write_tfrecord(random_features(16, 2, seed=3), train_file)
    task = make_task(tiny_config, num_labels=2, train_file=train_file)
    trainer = Trainer(
        task, TrainerConfig(output_dir=str(tmp_path / "out"),
                            train_batch_size=4, num_train_steps=4,
                            log_steps=2, save_checkpoints_steps=4),
        optimizer_factory=lambda: optimization.create_optimizer(
            "adamw", 1e-3, 4, 0))
    with caplog.at_level(python_logging.INFO):
        last = trainer.train()
    step_lines = [r.getMessage() for r in caplog.records
                  if r.getMessage().startswith("step ")]
    assert [line.split(":")[0] for line in step_lines] == ["step 2/4",
                                                          "step 4/4"]
    for line in step_lines:
        assert "train_accuracy = " in line and "train_loss = " in line
        assert "eval_" not in line
        assert "nan" not in line and "ETA ?" not in line
    assert "train_accuracy" in last and "eval_accuracy" not in last
