"""The golden checks on Keras' JAX backend, in a process of its own.

Keras reads `KERAS_BACKEND` once, when it is first imported, and every
other test runs on TensorFlow; so this test runs
`tests/backend_golden_checks.py` in a child pytest with
`KERAS_BACKEND=jax` (JAX's CPU wheel is in the `test` extra) and passes
when every check there passes.
"""

import importlib.util
import os
import subprocess
import sys

import pytest

from runner_harness import REPO_ROOT


@pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                    reason="jax is not installed (pip install -e .[test])")
def test_golden_checks_pass_on_jax():
    environment = {**os.environ, "KERAS_BACKEND": "jax",
                   "JAX_PLATFORMS": "cpu"}
    process = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-s", "tests/backend_golden_checks.py"],
        cwd=REPO_ROOT, env=environment, capture_output=True, text=True,
        timeout=900)
    output = process.stdout + process.stderr
    assert process.returncode == 0, output[-6000:]
    assert "4 passed" in process.stdout, output[-6000:]
    assert "extract_features on jax" in process.stdout
