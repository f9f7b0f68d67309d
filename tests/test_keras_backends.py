"""The golden checks on Keras' JAX and PyTorch backends, each in a process
of its own.

Keras reads `KERAS_BACKEND` once, when it is first imported, and every
other test runs on TensorFlow; so this test runs
`tests/backend_golden_checks.py` in a child pytest with
`KERAS_BACKEND=jax` (JAX's CPU wheel is in the `test` extra) or
`KERAS_BACKEND=torch` and passes when every check there passes. PyTorch is
not in the `test` extra (PyPI's Linux wheel is a CUDA build of several GB):
its case runs where torch is installed (`pip install -e .[torch]`, or
PyTorch's CPU wheel) and is skipped, saying so, elsewhere.
"""

import importlib.util
import os
import subprocess
import sys

import pytest

from runner_harness import REPO_ROOT


@pytest.mark.parametrize("backend, install", [
    ("jax", "pip install -e .[test]"),
    pytest.param("torch", "pip install -e .[torch]", marks=pytest.mark.extended(
        reason="PyTorch's backend; the default run makes the same checks on "
               "JAX's")),
])
def test_golden_checks_pass_on_backend(backend, install):
    if importlib.util.find_spec(backend) is None:
        pytest.skip(f"{backend} is not installed ({install})")
    environment = {**os.environ, "KERAS_BACKEND": backend,
                   "JAX_PLATFORMS": "cpu", "CUDA_VISIBLE_DEVICES": ""}
    process = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-s", "tests/backend_golden_checks.py"],
        cwd=REPO_ROOT, env=environment, capture_output=True, text=True,
        timeout=900)
    output = process.stdout + process.stderr
    assert process.returncode == 0, output[-6000:]
    assert "4 passed" in process.stdout, output[-6000:]
    assert f"extract_features on {backend}" in process.stdout
