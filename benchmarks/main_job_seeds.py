"""The main job's results over seeds: `demo.py` run once per seed.

    python benchmarks/main_job_seeds.py --seeds=1,2,3 --work_dir=seeds_work

Runs `python demo.py --work_dir=<work_dir>/seed-<seed> --seed=<seed>` for
each seed, one after the other, then reads what each run wrote (the
pretraining run's `eval_results.txt`: masked-LM and next-sentence accuracy;
the fine-tuned classifier's: its Rotten Tomatoes dev accuracy) and writes
them to a record under `benchmarks/results/` (`main_job_seeds-*.json`),
from which `benchmarks/performance_page.py` makes the seeds table of
`docs/performance.md`. A seed repeats its numbers on one machine; another
machine (another CPU's kernels) gives other digits, which is why the table
is over seeds and not one number.

A seed's work directory that already holds finished results is read, not
run again (the demo itself skips the steps it finished), so an interrupted
run of this script continues where it stopped.
"""

import argparse
import pathlib
import subprocess
import sys

import harness

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
# (measurement name, results file under the seed's work directory, key).
METRICS = (
    ("masked-LM accuracy", "pretraining", "masked_lm_accuracy"),
    ("next-sentence accuracy", "pretraining", "next_sentence_accuracy"),
    ("sentiment dev accuracy (Rotten Tomatoes)", "classifier",
     "eval_accuracy"),
)


def read_results(path):
    """A `key = value` file (Google's `eval_results.txt`) as floats."""
    results = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        key, separator, value = line.partition(" = ")
        if separator:
            results[key.strip()] = float(value)
    return results


def seed_results(seed_dir):
    """`{measurement name: value}` of one finished demo run."""
    values = {}
    for name, subdirectory, key in METRICS:
        path = seed_dir / subdirectory / "eval_results.txt"
        if not path.exists():
            raise FileNotFoundError(f"{path}: the demo run did not finish")
        results = read_results(path)
        if key not in results:
            raise ValueError(f"{path}: no {key}")
        values[name] = results[key]
    return values


def build_parser():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1,2,3",
                        help="comma-separated seeds, one demo run each")
    parser.add_argument("--work_dir", default="seeds_work",
                        help="each seed's run goes to <work_dir>/seed-<seed> "
                             "(kept)")
    parser.add_argument("--quick", action="store_true",
                        help="the demo's --quick (for a smoke test: its "
                             "numbers show the workflow, not results)")
    harness.records.add_arguments(parser, timed=False)
    return parser


def main():
    parser = build_parser()
    args = parser.parse_args()
    try:
        seeds = [int(seed) for seed in args.seeds.split(",")]
    except ValueError:
        parser.error(f"--seeds={args.seeds!r}: give integers, e.g. 1,2,3")
    record = harness.records.Record("main_job_seeds", args, timed=False)
    work_dir = pathlib.Path(args.work_dir)
    per_seed = {}
    for seed in seeds:
        seed_dir = work_dir / f"seed-{seed}"
        command = [sys.executable, str(REPO_ROOT / "demo.py"),
                   f"--work_dir={seed_dir}", f"--seed={seed}"]
        if args.quick:
            command.append("--quick")
        print(f"seed {seed}: {' '.join(command[1:])}", flush=True)
        process = subprocess.run(command, cwd=REPO_ROOT, check=False)
        if process.returncode != 0:
            parser.exit(1, f"{parser.prog}: error: the demo run of seed "
                           f"{seed} failed (status {process.returncode}); "
                           f"its logs are in {seed_dir}\n")
        per_seed[seed] = seed_results(seed_dir)
        print(f"seed {seed}: " + ", ".join(
            f"{name} {value:.3f}" for name, value
            in per_seed[seed].items()), flush=True)
    for name, _, _ in METRICS:
        record.add(name, {"bert_tf": [per_seed[seed][name] for seed in seeds]},
                   unit="accuracy", lower_is_better=False,
                   details={"seeds": seeds, "quick": args.quick})
    record.write()


if __name__ == "__main__":
    main()
