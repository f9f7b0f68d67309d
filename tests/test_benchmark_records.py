"""Benchmark records and the performance page built from them.

- `benchmarks/records.py`: the median, spread and ratio of hand-made
  rounds (values worked out by hand, not by the code under test); the load
  gate refuses, waits and lets a quiet machine through; a written record
  holds what the issue asks for (command, commit, versions, CPU, load
  before and after, date) and never overwrites another;
- every benchmark script writes a record (read from its source: running
  them is the benchmarks' job, not the tests');
- `docs/performance.md` is exactly what `benchmarks/performance_page.py`
  makes of `benchmarks/results/`, so the page and the records cannot
  disagree; and the page marks records that are not headline ones and the
  rows that have none.
"""

import argparse
import json
import pathlib
import subprocess
import sys

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
BENCHMARKS = REPO_ROOT / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import performance_page  # noqa: E402
import records  # noqa: E402

# Scripts in benchmarks/ that are not benchmarks: shared code, helpers a
# benchmark runs in a subprocess, and the page generator.
NOT_BENCHMARKS = {"harness.py", "records.py", "performance_page.py",
                  "hugging_face_peer.py", "run_google_original.py",
                  # Runs on a lent GPU without TensorFlow, where records.py's
                  # load gate means nothing; it writes its own JSON
                  # (--record_file), kept under results/gpu/ and checked
                  # against docs/gpu-check.md below.
                  "gpu_suite_jax.py"}


def _arguments(results_dir, max_load=100.0):
    return argparse.Namespace(max_load=max_load, wait_for_load=0.0,
                              results_dir=str(results_dir))


def test_summary_of_rounds():
    summary = records.summarize([3.0, 1.0, 2.0, 6.0])
    # Median of 1, 2, 3, 6 is 2.5; spread (6 - 1) / 2.5 = 2.
    assert summary == {"rounds": [3.0, 1.0, 2.0, 6.0], "median": 2.5,
                       "min": 1.0, "max": 6.0, "spread": 2.0}
    with pytest.raises(ValueError):
        records.summarize([])


def test_the_load_gate_refuses_waits_and_lets_through():
    with pytest.raises(SystemExit) as refused:
        records.wait_for_quiet_machine(1.5, 0, load=lambda: 4.0)
    assert str(refused.value).startswith(
        "not started: the 1-minute load average is 4.00, not below "
        "--max_load=1.5")
    loads, slept = iter([4.0, 3.0, 1.2]), []
    clock = iter(range(100))
    assert records.wait_for_quiet_machine(
        1.5, 60, load=lambda: next(loads), sleep=slept.append,
        clock=lambda: next(clock)) == 1.2
    assert len(slept) == 2


def test_a_record_holds_the_run_and_is_never_overwritten(tmp_path):
    record = records.Record("example", _arguments(tmp_path),
                            argv=["--rounds=3"])
    times = record.add("times", {"ours": [1.0, 2.0, 3.0],
                                 "peer": [4.0, 8.0, 6.0]},
                       unit="s", ratio=("ours", "peer"))
    rates = record.add("rates", {"ours": [30.0], "peer": [10.0]},
                       unit="examples/s", lower_is_better=False,
                       ratio=("ours", "peer"))
    assert times["ratio"]["value"] == 3.0     # peer's median 6 / ours 2
    assert rates["ratio"]["value"] == 3.0     # 30 / 10
    first, second = record.write(), record.write()
    assert first != second and first.exists() and second.exists()
    written = json.loads(first.read_text())
    assert written["command"] == "python benchmarks/example.py --rounds=3"
    for key in ("git_commit", "versions", "cpu_model", "date",
                "load_average_before", "load_average_after"):
        assert written[key] not in (None, "", {}), key
    assert written["versions"]["python"]
    # --max_load 100 is not a headline measurement, whatever the load.
    assert written["headline"] is False
    assert [r["file"] for r in records.read_records(tmp_path)] == [
        first.name, second.name]


def test_headline_needs_a_quiet_machine_and_three_rounds(tmp_path,
                                                        monkeypatch):
    monkeypatch.setattr(records, "load_average", lambda: 0.5)
    record = records.Record("example", _arguments(tmp_path, max_load=1.5))
    record.add("times", {"ours": [1.0, 1.0, 1.0]}, unit="s")
    assert record.as_dict()["headline"] is True
    record.add("one round", {"ours": [1.0]}, unit="s")
    assert record.as_dict()["headline"] is False


def test_an_untimed_benchmark_records_whatever_the_load(tmp_path,
                                                      monkeypatch):
    """Accuracy does not move with the load: no gate, a headline record."""
    monkeypatch.setattr(records, "load_average", lambda: 40.0)
    record = records.Record("quantization_accuracy",
                            argparse.Namespace(results_dir=str(tmp_path)),
                            timed=False)
    record.add("sentiment (accuracy)", {"TF float32": [0.8]}, unit="score",
               lower_is_better=False)
    written = record.as_dict()
    assert written["headline"] is True and written["timed"] is False
    assert "not timed: no load limit" in performance_page.render(
        [dict(written, file="quantization_accuracy-x.json")])


def test_a_file_that_is_not_a_record_is_named(tmp_path):
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(ValueError, match="broken.json: not JSON"):
        records.read_records(tmp_path)


def _damaged(record, change):
    """A copy of `record` with `change(copy)` applied."""
    copy = json.loads(json.dumps(record))
    change(copy)
    return copy


@pytest.mark.parametrize("change, message", [
    (lambda r: r.pop("cpu_count"), "no field 'cpu_count'"),
    (lambda r: r.update(headline="yes"), "headline is 'yes', not true or "
                                         "false"),
    (lambda r: r.update(measurements=[]), "measurements is [], not a "
                                          "non-empty list"),
    (lambda r: r["measurements"][0].pop("ratio"),
     "no field 'measurements[0].ratio'"),
    (lambda r: r["measurements"][0]["ratio"].update(value="3"),
     "measurements[0].ratio.value is '3', not a number"),
    (lambda r: r["measurements"][0]["contenders"]["ours"].update(rounds=[]),
     "measurements[0].contenders['ours'].rounds is [], not a non-empty "
     "list"),
    (lambda r: r["measurements"][0]["contenders"].update(ours=[1.0]),
     "measurements[0].contenders['ours'] is not an object"),
])
def test_a_record_with_a_missing_or_wrong_field_is_named(tmp_path, change,
                                                          message):
    """Issue 49 item 10: KeyError, TypeError or IndexError tracebacks, or
    a message without the file's name, before."""
    record = records.Record("example", _arguments(tmp_path))
    record.add("times", {"ours": [1.0, 2.0], "peer": [4.0, 8.0]}, unit="s",
               ratio=("ours", "peer"))
    path = record.write()
    path.write_text(json.dumps(_damaged(json.loads(path.read_text()),
                                        change)))
    process = subprocess.run(
        [sys.executable, str(BENCHMARKS / "performance_page.py"), "--check",
         f"--results_dir={tmp_path}"], capture_output=True, text=True,
        timeout=120)
    assert process.returncode == 1
    assert process.stderr == f"performance_page.py: {path}: {message}\n"


@pytest.mark.parametrize("script", sorted(
    path.name for path in BENCHMARKS.glob("*.py")
    if path.name not in NOT_BENCHMARKS))
def test_every_benchmark_writes_a_record(script):
    source = (BENCHMARKS / script).read_text(encoding="utf-8")
    assert "records.add_arguments(parser" in source, script
    assert f'records.Record("{script[:-len(".py")]}"' in source, script
    assert ".write()" in source, script
    # Only the best of the rounds was kept before: every round now.
    assert "best_seconds" not in source and "_best_time" not in source


def test_the_page_is_what_the_records_make():
    page = (REPO_ROOT / "docs" / "performance.md").read_text(
        encoding="utf-8")
    assert page == performance_page.render(records.read_records()), (
        "docs/performance.md differs from benchmarks/results/: run python "
        "benchmarks/performance_page.py")
    pretraining = performance_page.PRETRAINING_PAGE.read_text(
        encoding="utf-8")
    assert pretraining == performance_page.with_packing_table(
        pretraining, records.read_records()), (
        "docs/pretraining.md's packing table differs from "
        "benchmarks/results/: run python benchmarks/performance_page.py")


def test_the_page_marks_what_is_not_a_headline(tmp_path):
    record = records.Record("tokenizer", _arguments(tmp_path))
    record.add("english, uncased", {"bert_tf": [1.0, 1.0, 1.0],
                                    "model garden": [5.0, 6.0, 7.0]},
               unit="CPU s", ratio=("bert_tf", "model garden"))
    record.write()
    page = performance_page.render(records.read_records(tmp_path))
    assert "**not a headline measurement**" in page
    # A row backed only by a loaded machine's record has no headline yet.
    assert (f"{len(performance_page.HEADLINE_ROWS)} of "
            f"{len(performance_page.HEADLINE_ROWS)} headline rows have no "
            "headline record yet") in page
    assert "| 6.00× model garden |" in page


def test_the_gpu_check_page_quotes_the_jax_suites_records():
    """docs/gpu-check.md's H200 table: every row as its record says, and
    every timed row of those records in the table."""
    page = (REPO_ROOT / "docs" / "gpu-check.md").read_text()
    table = page.split("<!-- gpu-jax-table: begin -->")[1].split(
        "<!-- gpu-jax-table: end -->")[0]
    quoted = {tuple(cell.strip() for cell in line.strip("|").split("|"))
              for line in table.strip().splitlines()[2:]}
    expected = set()
    for path in sorted((REPO_ROOT / "benchmarks" / "results" / "gpu").glob(
            "gpu_suite_jax-*.json")):
        for row in json.loads(path.read_text())["rows"]:
            if "mfu" in row:
                expected.add((path.name, row["name"], row["dtype"],
                              row["attention"], str(row["batch"]),
                              str(row["sequences_per_s"]),
                              f"{row['mfu'] * 100:.1f}%"))
    assert expected and quoted == expected
