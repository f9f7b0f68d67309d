"""benchmarks/gpu_suite.sh keeps working: its --smoke run is a test.

The full suite needs a GPU; `--smoke` runs every part on CPUs with tiny
shapes. The numbers part is checked against Google's golden output (the
reference the suite itself uses); speed figures are only checked to exist.
"""

import importlib
import importlib.util
import json
import math
import os
import pathlib
import subprocess
import sys

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
BENCHMARKS = REPO_ROOT / "benchmarks"


@pytest.fixture(scope="module")
def gpu_suite():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        yield importlib.import_module("gpu_suite")
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_numbers_part_reproduces_google_with_tf32_off_and_on(gpu_suite,
                                                             tmp_path):
    import tensorflow as tf
    before = tf.config.experimental.tensor_float_32_execution_enabled()
    try:
        rows = gpu_suite.numbers_part(str(tmp_path))
    finally:
        tf.config.experimental.enable_tensor_float_32_execution(before)
    assert [row[0] for row in rows] == ["off", "on"]
    # On CPUs TF32 does not exist: both are float32 round-off.
    for _, difference, within in rows:
        assert float(difference) <= 1e-5 and within == "yes"


def test_tf32_drift_part_runs_and_is_zero_on_cpus(gpu_suite):
    rows = gpu_suite.tf32_drift_part(gpu_suite.TINY, 16, 2)
    # No TF32 on CPUs: both settings compute the same float32.
    assert rows[0][1:] == ["0.00e+00", "yes"]


def test_full_plan_covers_every_shape_dtype_and_xla_mode(gpu_suite):
    plan = gpu_suite.suite_plan(smoke=False)
    pretraining = plan["pretraining"]
    assert len(pretraining) == 3 * 3 * 2 == len(set(
        (e[0], e[4], e[5]) for e in pretraining))
    assert {e[0] for e in pretraining} == {"base-128", "base-512",
                                           "large-128"}
    # The figures to hold against NVIDIA's come first.
    assert [e[4:] for e in pretraining[:3]] == [("mixed_bfloat16", True)] * 3
    assert {e[0] for e in plan["finetuning"]} == {"classifier", "squad"}
    smoke = gpu_suite.suite_plan(smoke=True)["pretraining"]
    assert {e[4] for e in smoke} == {"float32", "mixed_float16",
                                     "mixed_bfloat16"}
    assert {e[5] for e in smoke} == {False, True}


def test_rows_run_most_important_first_and_stop_at_the_budget(gpu_suite,
                                                              capsys):
    entry = lambda name, dtype, xla: (name, {}, 128, 8, dtype, xla)
    pretraining = [entry("base-128", "float32", True),
                   entry("base-128", "mixed_bfloat16", True),
                   entry("base-128", "float32", False)]
    finetuning = [entry("classifier", "float32", False),
                  entry("classifier", "mixed_bfloat16", True)]
    calls = []

    def row(part):
        return lambda e: calls.append((part, e[4], e[5])) or ["1.0x"]

    tables = [("pre", ["model", "dtype", "XLA", "r"], pretraining,
               row("pre")),
              ("fine", ["task", "dtype", "XLA", "r"], finetuning,
               row("fine"))]
    rows = gpu_suite.run_tables(tables, deadline=float("inf"))
    assert calls == [("pre", "mixed_bfloat16", True),
                     ("fine", "mixed_bfloat16", True),
                     ("pre", "float32", False),
                     ("fine", "float32", False),
                     ("pre", "float32", True)]
    # Tables keep their own order.
    assert [r[1:3] for r in rows[0]] == [["float32", "on"],
                                         ["mixed_bfloat16", "on"],
                                         ["float32", "off"]]
    assert rows[1][0] == ["classifier-128", "float32", "off", "1.0x"]
    calls.clear()
    rows = gpu_suite.run_tables(tables, deadline=0.0)
    assert calls == [] and all(r[-1] == "skipped" for t in rows for r in t)


@pytest.mark.slow
def test_smoke_run_prints_every_table():
    result = subprocess.run(
        ["bash", str(BENCHMARKS / "gpu_suite.sh"), "--smoke",
         "--budget_s=100000"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=1800,
        # This interpreter, not whichever `python` PATH finds first.
        env={**os.environ, "PYTHON": sys.executable})
    assert result.returncode == 0, result.stderr[-3000:]
    output = result.stdout
    for title in ("extract_features (golden checkpoint)",
                  "TF32 against float32", "\npretraining,",
                  "\nfine-tuning,"):
        assert title in output
    assert "skipped" not in output
    table_rows = [line for line in output.splitlines()
                  if line.strip().startswith(("tiny", "classifier", "squad"))
                  and line.split()[-1].endswith("x")]
    # The tables' 3 pretraining and 2 fine-tuning rows, each with a
    # bert_tf/MG ratio.
    assert len(table_rows) == 3 + 2, output


# -- the TensorFlow-free suite: gpu_suite.sh --backend=jax ---------------------

def _jax_suite_smoke_run_without_tensorflow(tmp_path, *flags):
    """`gpu_suite.sh --backend=jax --smoke` on JAX's CPU, with a
    `tensorflow` on the path that leaves a mark and fails if anything
    imports it (the suite must run where TensorFlow is not installed).

    Returns:
      `(record, stdout)`: the suite's JSON record and its output.
    """
    trap = tmp_path / "trap"
    (trap / "tensorflow").mkdir(parents=True)
    marker = tmp_path / "tensorflow_was_imported"
    (trap / "tensorflow" / "__init__.py").write_text(
        f"open({str(marker)!r}, 'w').close()\n"
        "raise ImportError('gpu_suite_jax imported tensorflow')\n")
    record_file = tmp_path / "record.json"
    result = subprocess.run(
        ["bash", str(BENCHMARKS / "gpu_suite.sh"), "--backend=jax",
         "--smoke", "--budget_s=100000", f"--record_file={record_file}",
         *flags],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=900,
        env={**os.environ, "PYTHON": sys.executable, "JAX_PLATFORMS": "cpu",
             "PYTHONPATH": str(trap)})
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    assert not marker.exists()
    record = json.loads(record_file.read_text())
    assert record["backend"] == "jax"
    assert record["tensorflow_imported"] is False
    # What it times is the step run_pretraining.py runs on JAX.
    assert "JaxEngine.train_steps" in record["step"]
    assert "AdamWeightDecay" in record["step"]
    for row in record["rows"]:
        assert "skipped" not in row, row
        assert row["sequences_per_s"] > 0 and math.isfinite(
            row["final_loss"])
    assert "485.6 seq/s at 128, 96.5 at 512" in result.stdout
    return record, result.stdout


@pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                    reason="jax is not installed (pip install -e .[test])")
def test_jax_suite_times_the_engine_step_without_tensorflow(tmp_path):
    """One row (float32, Google's attention): the trainer's JAX engine,
    Google's optimizer and the pretraining task run with `import
    tensorflow` failing."""
    record, _ = _jax_suite_smoke_run_without_tensorflow(
        tmp_path, "--dtypes=float32", "--attention=google")
    assert [(row["dtype"], row["attention"]) for row in record["rows"]] == [
        ("float32", "google")]


@pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                    reason="jax is not installed (pip install -e .[test])")
@pytest.mark.extended(reason=(
    "every row of the TensorFlow-free GPU suite's CPU rehearsal; the "
    "default run times one row without TensorFlow"))
def test_jax_suite_smoke_run_never_imports_tensorflow(tmp_path):
    """Every code path: bf16 with the fused op and with Google's attention,
    float32 with Google's; each a finite loss and a speed."""
    record, _ = _jax_suite_smoke_run_without_tensorflow(tmp_path)
    assert [(row["dtype"], row["attention"]) for row in record["rows"]] == [
        ("mixed_bfloat16", "fused"), ("mixed_bfloat16", "google"),
        ("float32", "google")]


def test_jax_suite_batch_multiplier_scales_every_rows_batch():
    """--batch_multiplier: the plan's batches (64 at 128, 16 at 512) times
    the multiplier, nothing else changed."""
    pytest.importorskip("jax")
    spec = importlib.util.spec_from_file_location(
        "gpu_suite_jax", BENCHMARKS / "gpu_suite_jax.py")
    gpu_suite_jax = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpu_suite_jax)
    plain = gpu_suite_jax.suite_plan(smoke=False)
    scaled = gpu_suite_jax.suite_plan(smoke=False, batch_multiplier=4)
    assert [row["batch"] for row in plain[:3]] == [64, 64, 16]
    assert [row["batch"] for row in scaled[:3]] == [256, 256, 64]
    assert ([{**row, "batch": None} for row in plain]
            == [{**row, "batch": None} for row in scaled])
