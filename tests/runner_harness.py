"""Running a runner script as a user does (a subprocess), for the tests."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]


def run_runner(script, workspace, *flags, expect_success=True, timeout=600):
    """Runs `script` with the workspace's tiny model; returns the process.

    Args:
      script: the runner's file name in the repository, e.g. "run_squad.py".
      workspace: a directory holding `vocab.txt` and `bert_config.json`.
      *flags: the rest of the command line.
      expect_success: fail the test (with the runner's stderr) on a non-zero
        exit status.
      timeout: seconds before the run is killed.

    Returns:
      The `subprocess.CompletedProcess`, output captured as text.
    """
    command = [sys.executable, str(REPO_ROOT / script),
               f"--vocab_file={workspace / 'vocab.txt'}",
               f"--bert_config_file={workspace / 'bert_config.json'}",
               *flags]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    process = subprocess.run(command, cwd=REPO_ROOT, env=env,
                             capture_output=True, text=True, timeout=timeout)
    if expect_success and process.returncode != 0:
        pytest.fail(f"{script} failed ({process.returncode}):\n"
                    f"{process.stderr[-5000:]}")
    return process


def read_eval_results(output_dir):
    """`eval_results.txt`'s `key = value` lines as a dict of floats."""
    results = {}
    for line in (output_dir / "eval_results.txt").read_text().splitlines():
        key, value = line.split(" = ")
        results[key] = float(value)
    return results


def run_test_file_as_script(test_file, mode, tmp_path):
    """Runs `python <test_file> <mode> <result.json> <tmp_path>`; returns the
    JSON the script wrote.

    For checks that must configure TensorFlow before it starts (e.g. two
    logical CPUs for a MirroredStrategy): the test file's `__main__` does
    the work in a fresh process. Fails the test with the script's stderr on
    a non-zero exit status.
    """
    out = tmp_path / "result.json"
    tests_dir = str(pathlib.Path(test_file).resolve().parent)
    process = subprocess.run(
        [sys.executable, os.path.abspath(test_file), mode, str(out),
         str(tmp_path)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=900,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(REPO_ROOT), tests_dir, os.environ.get("PYTHONPATH", "")])})
    assert process.returncode == 0, process.stderr[-5000:]
    return json.loads(out.read_text())
