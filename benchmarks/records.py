"""Benchmark records: what a benchmark measured, as a JSON file.

Every benchmark in this directory writes one record per run under
`benchmarks/results/` (`<benchmark>-<UTC time>.json`), and
`benchmarks/performance_page.py` builds `docs/performance.md` from those
files alone, so that no number on that page is typed in by hand.

A record holds, per measurement, each contender's time (or rate) of every
round, their median, smallest and largest value and spread, and the ratio
of two contenders' medians; and, for the whole run, the command, the git
commit, the package versions, the CPU model, the 1-minute load average
before and after, and the date.

A measurement is a *headline* one only when the machine was quiet: the run
refuses to start while the 1-minute load average is at or above
`--max_load` (default `HEADLINE_MAX_LOAD`, 1.5), optionally waiting up to
`--wait_for_load` seconds for it to fall. Raising `--max_load` lets a run
go on under load (to try the pipeline, say); its record then says
`"headline": false` and the page shows it apart.

This module imports neither TensorFlow nor anything outside the standard
library (benchmarks/gpu_suite.py reads it before choosing its devices).
"""

import datetime
import importlib.metadata
import json
import os
import pathlib
import platform
import shlex
import statistics
import subprocess
import sys
import time

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS_DIR = REPO_ROOT / "benchmarks" / "results"
# The 1-minute load average under which a run's results are headline ones.
HEADLINE_MAX_LOAD = 1.5
# Fewest rounds whose median and spread a record reports as a headline.
MIN_HEADLINE_ROUNDS = 3
# How often a run waiting for a quiet machine looks at the load again.
LOAD_POLL_SECONDS = 15
SCHEMA_VERSION = 1
# The distributions whose versions a record keeps (those installed).
PACKAGES = ("tensorflow", "tensorflow-text", "keras", "tf-keras",
            "tf-models-official", "numpy", "onnxruntime", "tf2onnx",
            "tokenizers", "transformers", "torch", "google-crc32c")


def add_arguments(parser, *, timed=True):
    """Adds `--max_load`, `--wait_for_load` and `--results_dir`.

    Args:
      parser: an `argparse.ArgumentParser`.
      timed: False for a benchmark that measures no time (accuracy): then
        only `--results_dir`, since the load does not change its results.
    """
    parser.add_argument(
        "--results_dir", default=str(RESULTS_DIR),
        help="where the run's JSON record goes (default benchmarks/results)")
    if not timed:
        return
    parser.add_argument(
        "--max_load", type=float, default=HEADLINE_MAX_LOAD,
        help="start only when the 1-minute load average is below this "
             f"(default {HEADLINE_MAX_LOAD}: a headline measurement; a "
             "higher value records a run marked as not a headline one)")
    parser.add_argument(
        "--wait_for_load", type=float, default=0.0, metavar="SECONDS",
        help="wait up to this many seconds for the load to fall below "
             "--max_load before giving up (default 0: do not wait)")


def load_average():
    """The machine's 1-minute load average."""
    return os.getloadavg()[0]


def wait_for_quiet_machine(max_load, wait_seconds, *, load=None,
                           sleep=time.sleep, clock=time.monotonic):
    """Returns the 1-minute load once it is below `max_load`.

    Args:
      max_load: the load average to be under.
      wait_seconds: how long to keep looking before giving up.
      load, sleep, clock: the load (default `load_average`), sleeping and
        clock functions (tests pass their own).

    Returns:
      The load average seen last (below `max_load`).

    Raises:
      SystemExit: with a one-line message, when the load stayed at or above
        `max_load` for `wait_seconds`.
    """
    load = load or load_average
    deadline = clock() + wait_seconds
    current = load()
    while current >= max_load:
        left = deadline - clock()
        if left <= 0:
            raise SystemExit(
                f"not started: the 1-minute load average is {current:.2f}, "
                f"not below --max_load={max_load:g} (other work on the "
                "machine would distort the times); run on a quiet machine, "
                "pass --wait_for_load=SECONDS to wait for one, or a higher "
                "--max_load to record a run that is not a headline one")
        sleep(min(LOAD_POLL_SECONDS, left))
        current = load()
    return current


def summarize(values):
    """Median, smallest, largest value and relative spread of the rounds.

    Args:
      values: one number per round (at least one).

    Returns:
      A dict with "rounds", "median", "min", "max" and "spread" (the range
      over the median: 0.1 means the rounds lie within 10% of it).
    """
    values = [float(value) for value in values]
    if not values:
        raise ValueError("a contender needs at least one round")
    median = statistics.median(values)
    return {"rounds": values, "median": median, "min": min(values),
            "max": max(values),
            "spread": (max(values) - min(values)) / median if median else 0.0}


def _git_commit():
    """`(commit, dirty)` of the repository, or `(None, None)` without git."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True,
            text=True, timeout=30, check=True).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=REPO_ROOT, capture_output=True, text=True, timeout=30,
            check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None, None
    return commit, bool(status)


def _cpu_model():
    """The CPU's model name (from /proc/cpuinfo where there is one)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def package_versions():
    """{distribution: version} of `PACKAGES` that are installed, and Python."""
    versions = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions


def _plain(value):
    """A numpy scalar (or array) as the Python value JSON can hold."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


class Record:
    """One benchmark run's record; `write()` puts it under the results dir.

    Creating it checks the load (`wait_for_quiet_machine`), so a benchmark
    creates its record before it measures anything.

    Args:
      benchmark: the benchmark's name (its file's stem, e.g. "tokenizer").
      args: the parsed command line, with `add_arguments`' flags.
      argv: the command's arguments (default `sys.argv[1:]`).
      timed: False for a benchmark that measures no time (`add_arguments`
        with `timed=False`): the load is recorded, not checked, and the
        record is a headline one whatever the load and rounds.
    """

    def __init__(self, benchmark, args, argv=None, *, timed=True):
        self.benchmark = benchmark
        self.timed = timed
        self.results_dir = pathlib.Path(args.results_dir)
        self.max_load = args.max_load if timed else None
        self.load_before = (wait_for_quiet_machine(
            args.max_load, args.wait_for_load) if timed else load_average())
        arguments = sys.argv[1:] if argv is None else list(argv)
        self.command = shlex.join(
            ["python", f"benchmarks/{benchmark}.py", *arguments])
        self.started = datetime.datetime.now(datetime.timezone.utc)
        self.measurements = []

    def add(self, name, contenders, *, unit, lower_is_better=True,
            ratio=None, details=None):
        """Adds one measurement: each contender's value of every round.

        Args:
          name: what was measured, e.g. "english, uncased".
          contenders: {contender: [value per round]} (a one-off value, such
            as an accuracy, as a one-element list).
          unit: the values' unit, e.g. "s", "examples/s", "ms".
          lower_is_better: True for times, False for rates and accuracies.
          ratio: `(contender, peer)`: how many times better the contender's
            median is than the peer's (peer / contender for times, contender
            / peer otherwise); None for no ratio.
          details: a JSON-serializable dict of what else describes the
            measurement (sizes, shapes, data sets).
        """
        summaries = {contender: summarize(values)
                     for contender, values in contenders.items()}
        measurement = {"name": name, "unit": unit,
                       "lower_is_better": lower_is_better,
                       "contenders": summaries, "ratio": None,
                       "details": details or {}}
        if ratio is not None:
            ours, peer = (summaries[ratio[0]]["median"],
                          summaries[ratio[1]]["median"])
            value = peer / ours if lower_is_better else ours / peer
            measurement["ratio"] = {"contender": ratio[0], "peer": ratio[1],
                                    "value": value}
        self.measurements.append(measurement)
        return measurement

    def as_dict(self):
        """The record, with the load average after the run and the commit."""
        commit, dirty = _git_commit()
        load_after = load_average()
        fewest_rounds = min(
            (len(summary["rounds"]) for measurement in self.measurements
             for summary in measurement["contenders"].values()), default=0)
        return {
            "schema": SCHEMA_VERSION,
            "benchmark": self.benchmark,
            "command": self.command,
            "date": self.started.isoformat(timespec="seconds"),
            "finished": datetime.datetime.now(
                datetime.timezone.utc).isoformat(timespec="seconds"),
            "git_commit": commit,
            "git_dirty": dirty,
            "versions": package_versions(),
            "cpu_model": _cpu_model(),
            "cpu_count": os.cpu_count(),
            "load_average_before": self.load_before,
            "load_average_after": load_after,
            "max_load": self.max_load,
            "timed": self.timed,
            "headline": not self.timed or (
                self.load_before < HEADLINE_MAX_LOAD
                and self.max_load <= HEADLINE_MAX_LOAD
                and fewest_rounds >= MIN_HEADLINE_ROUNDS),
            "measurements": self.measurements,
        }

    def write(self):
        """Writes the record (a new file; nothing is overwritten).

        Returns:
          The record file's path.
        """
        record = self.as_dict()
        self.results_dir.mkdir(parents=True, exist_ok=True)
        stamp = self.started.strftime("%Y%m%dT%H%M%SZ")
        path = self.results_dir / f"{self.benchmark}-{stamp}.json"
        suffix = 1
        while path.exists():
            suffix += 1
            path = self.results_dir / f"{self.benchmark}-{stamp}-{suffix}.json"
        temporary = path.with_name(path.name + ".partial")
        temporary.write_text(json.dumps(record, indent=1, sort_keys=True,
                                        default=_plain) + "\n",
                             encoding="utf-8")
        os.replace(temporary, path)
        shown = (path.relative_to(REPO_ROOT)
                 if path.is_relative_to(REPO_ROOT) else path)
        print(f"record: {shown}" + (
            "" if record["headline"] else " (not a headline measurement)"),
            flush=True)
        return path


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# What each field of a record holds, in words and as a test (`check_record`).
_KINDS = {
    "text": (lambda value: isinstance(value, str), "a string"),
    "flag": (lambda value: isinstance(value, bool), "true or false"),
    "count": (lambda value: isinstance(value, int)
              and not isinstance(value, bool), "an integer"),
    "number": (_number, "a number"),
    "number or null": (lambda value: value is None or _number(value),
                       "a number or null"),
    "text or null": (lambda value: value is None or isinstance(value, str),
                     "a string or null"),
    "object": (lambda value: isinstance(value, dict), "an object"),
    "list": (lambda value: isinstance(value, list) and bool(value),
             "a non-empty list"),
}
_RECORD_FIELDS = {
    "benchmark": "text", "command": "text", "date": "text",
    "finished": "text", "git_commit": "text or null", "git_dirty": "flag",
    "versions": "object", "cpu_model": "text", "cpu_count": "count",
    "load_average_before": "number", "load_average_after": "number",
    "max_load": "number or null", "headline": "flag",
    "measurements": "list"}
_MEASUREMENT_FIELDS = {"name": "text", "unit": "text",
                       "contenders": "object", "details": "object"}
_SUMMARY_FIELDS = {"median": "number", "min": "number", "max": "number",
                   "spread": "number", "rounds": "list"}
_RATIO_FIELDS = {"peer": "text", "value": "number"}


def _check_fields(path, where, value, fields):
    """Raises ValueError naming the file and the first field of `fields`
    that `value` (an object) lacks or holds the wrong kind of."""
    if not isinstance(value, dict):
        raise ValueError(f"{path}: {where or 'the record'} is not an object")
    for name, kind in fields.items():
        test, words = _KINDS[kind]
        field = f"{where}.{name}" if where else name
        if name not in value:
            raise ValueError(f"{path}: no field {field!r}")
        if not test(value[name]):
            raise ValueError(f"{path}: {field} is {value[name]!r:.40}, not "
                             f"{words}")


def check_record(path, record):
    """Checks that a record read from `path` has every field the page
    reads, of its kind.

    Raises:
      ValueError: naming the file and the field.
    """
    _check_fields(path, "", record, _RECORD_FIELDS)
    for i, measurement in enumerate(record["measurements"]):
        where = f"measurements[{i}]"
        _check_fields(path, where, measurement, _MEASUREMENT_FIELDS)
        if "ratio" not in measurement:
            raise ValueError(f"{path}: no field '{where}.ratio'")
        if measurement["ratio"] is not None:
            _check_fields(path, f"{where}.ratio", measurement["ratio"],
                          _RATIO_FIELDS)
        for name, summary in measurement["contenders"].items():
            summary_where = f"{where}.contenders[{name!r}]"
            _check_fields(path, summary_where, summary, _SUMMARY_FIELDS)
            for value in summary["rounds"]:
                if not _number(value):
                    raise ValueError(f"{path}: {summary_where}.rounds holds "
                                     f"{value!r:.40}, not a number")


def read_records(results_dir=RESULTS_DIR):
    """Every record under `results_dir`, oldest first.

    Raises:
      ValueError: naming the file, when one is not a record.
    """
    records = []
    for path in sorted(pathlib.Path(results_dir).glob("*.json")):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as error:
            raise ValueError(f"{path}: not JSON ({error})") from None
        if not isinstance(record, dict) or record.get(
                "schema") != SCHEMA_VERSION:
            raise ValueError(f"{path}: not a benchmark record of schema "
                             f"{SCHEMA_VERSION}")
        check_record(path, record)
        record["file"] = path.name
        records.append(record)
    # Same start second: "<name>.json", then "<name>-2.json", "-3", ...
    return sorted(records, key=lambda record: (
        record["date"], len(record["file"]), record["file"]))
