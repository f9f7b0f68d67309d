"""Writes docs/performance.md from the benchmarks' records.

Every number on the page comes from a JSON record a benchmark wrote under
`benchmarks/results/` (`benchmarks/records.py`); nothing is typed in. The
page lists the headline rows (`HEADLINE_ROWS`: what the project claims,
with the command that measures it and the goal where one was set), each
filled from the newest headline record of its measurement or marked "no
record yet", then every record in full, those that are not headline ones
(measured on a loaded machine or with too few rounds) marked as such.

    python benchmarks/performance_page.py            # rewrite the page
    python benchmarks/performance_page.py --check    # exit 1 if it is stale

`tests/test_benchmark_records.py` fails when the page and the records
disagree.
"""

import argparse
import collections
import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import records  # noqa: E402

PAGE = records.REPO_ROOT / "docs" / "performance.md"

# A claim of the project: which measurement of which benchmark backs it.
HeadlineRow = collections.namedtuple(
    "HeadlineRow", "benchmark measurement what command goal")

HEADLINE_ROWS = (
    HeadlineRow("tokenizer", "english, uncased",
                "Tokenization, English, uncased: bert_tf's `FullTokenizer` "
                "against Model Garden's", "python benchmarks/tokenizer.py",
                None),
    HeadlineRow("tokenizer", "multilingual, cased",
                "Tokenization, multilingual text, cased",
                "python benchmarks/tokenizer.py", None),
    HeadlineRow("create_pretraining_data", "against Google's original",
                "`create_pretraining_data.py` against Google's script "
                "(Google's default flags, the same records)",
                "python benchmarks/create_pretraining_data.py "
                "--google_bert_dir=DIR --skip_peer", 20.0),
    HeadlineRow("create_pretraining_data", "against Model Garden's port",
                "`create_pretraining_data.py` against Model Garden's port",
                "python benchmarks/create_pretraining_data.py --skip_google",
                None),
    HeadlineRow("squad", "feature creation",
                "SQuAD feature creation against Model Garden's `squad_lib`",
                "python benchmarks/squad.py --part=features", None),
    HeadlineRow("prediction", "rotten_tomatoes, minilm",
                "Prediction, MiniLM shape, Rotten Tomatoes, batch 32, "
                "against Model Garden",
                "python benchmarks/prediction.py --shape=minilm "
                "--datasets=rotten_tomatoes", 3.0),
    HeadlineRow("serving", "rt texts, batch 1, 12 layers, hidden 768",
                "Serving one Rotten Tomatoes snippet (p50 latency), BERT-Base "
                "shape, raw-text export against Model Garden's "
                "preprocessing + encoder",
                "python benchmarks/serving.py --batch_sizes=1 --calls=20 "
                "--texts=rt", 4.0),
    HeadlineRow("finetune",
                "training steps, rotten_tomatoes text, 12 layers, hidden 768",
                "Fine-tuning steps, BERT-Base shape, Rotten Tomatoes "
                "records, against Model Garden's `BertClassifier`",
                "python benchmarks/finetune.py --text=rotten_tomatoes "
                "--steps=3",
                2.0),
    HeadlineRow("finetune_epoch", "epoch",
                "One fine-tuning epoch of MiniLM (`run_classifier.py`) "
                "against Model Garden",
                "python benchmarks/finetune_epoch.py "
                "--contenders=length_aware,model_garden", 2.0),
    HeadlineRow("pretraining", "training step, 12 layers, hidden 768",
                "Pretraining step, BERT-Base shape, against Model Garden's "
                "`BertPretrainerV2`", "python benchmarks/pretraining.py",
                None),
    HeadlineRow("packing", "training, sequence 512, 2 layers, hidden 128",
                "Pretraining on Wikipedia records at sequence 512, "
                "`--pack_sequences` against unpacked rows (sequences/s, "
                "the demo's model shape)", "python benchmarks/packing.py",
                1.8),
)

Claim = collections.namedtuple("Claim", "row record measurement")


def _number(value):
    """A value with three significant digits (no exponent below 1e6)."""
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def _contender_cell(summary, unit):
    """"median unit (spread x%, n rounds)"."""
    return (f"{_number(summary['median'])} {unit} (spread "
            f"{summary['spread']:.0%}, {len(summary['rounds'])} "
            f"round{'s' if len(summary['rounds']) != 1 else ''})")


def _ratio_cell(measurement):
    ratio = measurement["ratio"]
    if ratio is None:
        return "--"
    return f"{ratio['value']:.2f}× {ratio['peer'].replace('_', ' ')}"


def _goal_cell(goal, measurement):
    if goal is None:
        return "--"
    if measurement is None or measurement["ratio"] is None:
        return f"{goal:g}×: not measured"
    met = measurement["ratio"]["value"] >= goal
    return f"{goal:g}×: {'met' if met else '**missed**'}"


def _find(records_list, benchmark, name, headline):
    """The newest `(record, measurement)` of `benchmark`'s `name`."""
    for record in reversed(records_list):
        if record["benchmark"] != benchmark or record["headline"] != headline:
            continue
        for measurement in record["measurements"]:
            if measurement["name"] == name:
                return record, measurement
    return None, None


def _headline_table(records_list):
    lines = ["| what | bert_tf | peer | bert_tf vs peer | goal | record |",
             "|---|---|---|---|---|---|"]
    missing = []
    for row in HEADLINE_ROWS:
        record, measurement = _find(records_list, row.benchmark,
                                    row.measurement, headline=True)
        if record is None:
            missing.append(row)
            loaded, _ = _find(records_list, row.benchmark, row.measurement,
                              headline=False)
            seen = (f"; a run that is not a headline one: "
                    f"[{loaded['file']}](#{_anchor(loaded)})" if loaded
                    else "")
            lines.append(f"| {row.what} | no record yet{seen} | | | "
                         f"{_goal_cell(row.goal, None)} | `{row.command}` |")
            continue
        ratio = measurement["ratio"]
        ours = measurement["contenders"][ratio["contender"]] if ratio else None
        peer = measurement["contenders"][ratio["peer"]] if ratio else None
        lines.append(
            f"| {row.what} | "
            f"{_contender_cell(ours, measurement['unit']) if ours else '--'}"
            f" | {_contender_cell(peer, measurement['unit']) if peer else '--'}"
            f" | {_ratio_cell(measurement)} | "
            f"{_goal_cell(row.goal, measurement)} | "
            f"[{record['file']}](#{_anchor(record)}) |")
    return lines, missing


def _anchor(record):
    """The anchor MkDocs gives the record's heading (its file's stem)."""
    return record["file"][:-len(".json")].lower().replace(".", "")


def _record_section(record):
    status = ("headline measurement" if record["headline"] and record.get(
        "timed", True) else "not timed: no load limit" if record["headline"]
        else
              "**not a headline measurement** (load average "
              f"{record['load_average_before']:.2f} at the start, "
              f"`--max_load={record['max_load']:g}`; a headline one needs "
              f"a load below {records.HEADLINE_MAX_LOAD:g} and at least "
              f"{records.MIN_HEADLINE_ROUNDS} rounds)")
    versions = ", ".join(f"{name} {version}" for name, version
                         in sorted(record["versions"].items()))
    commit = record["git_commit"] or "unknown"
    if record["git_dirty"]:
        commit += " (with uncommitted changes)"
    lines = [
        f"### {record['file'][:-len('.json')]}", "",
        f"`{record['command']}`: {status}.", "",
        f"- date: {record['date']} to {record['finished']}",
        f"- machine: {record['cpu_model']}, {record['cpu_count']} CPUs; "
        f"1-minute load average {record['load_average_before']:.2f} before, "
        f"{record['load_average_after']:.2f} after",
        f"- commit: {commit}",
        f"- versions: {versions}", "",
        "| measurement | contender | median | min | max | spread | rounds "
        "| ratio |",
        "|---|---|---|---|---|---|---|---|"]
    for measurement in record["measurements"]:
        for index, (contender, summary) in enumerate(
                measurement["contenders"].items()):
            unit = measurement["unit"]
            rounds = ", ".join(_number(value) for value in summary["rounds"])
            lines.append(
                f"| {measurement['name'] if index == 0 else ''} | {contender}"
                f" | {_number(summary['median'])} {unit} | "
                f"{_number(summary['min'])} | {_number(summary['max'])} | "
                f"{summary['spread']:.0%} | {rounds} | "
                f"{_ratio_cell(measurement) if index == 0 else ''} |")
    return lines + [""]


def _seeds_section(records_list):
    """The table of the newest full (not `--quick`) main-job seeds record."""
    found = [record for record in records_list
             if record["benchmark"] == "main_job_seeds"
             and not record["measurements"][0]["details"].get("quick")]
    if not found:
        return [
            "No record of the main job's results over seeds yet: run "
            "`python benchmarks/main_job_seeds.py --seeds=1,2,3`.", ""]
    record = found[-1]
    measurements = record["measurements"]
    seeds = measurements[0]["details"]["seeds"]
    lines = [
        f"`python demo.py --work_dir=DIR --seed=SEED` for {len(seeds)} "
        f"seeds, from [{record['file']}](#{_anchor(record)}) "
        f"(`{record['command']}`): the pretraining run's masked-LM and "
        "next-sentence accuracy on its held-out records, and the fine-tuned "
        "classifier's Rotten Tomatoes dev accuracy. A seed repeats its "
        "numbers on one machine; another machine (other CPU kernels) gives "
        "other digits, which is why this is a table over seeds.", "",
        "| seed | " + " | ".join(m["name"] for m in measurements) + " |",
        "|---|" + "---|" * len(measurements)]
    for index, seed in enumerate(seeds):
        lines.append(f"| {seed} | " + " | ".join(
            f"{m['contenders']['bert_tf']['rounds'][index]:.3f}"
            for m in measurements) + " |")
    for label, key in (("median", "median"), ("lowest", "min"),
                       ("highest", "max")):
        lines.append(f"| {label} | " + " | ".join(
            f"{m['contenders']['bert_tf'][key]:.3f}" for m in measurements)
            + " |")
    return lines + [""]


def _packing_section(records_list):
    """The newest packing record as a table: fill and training speed."""
    found = [record for record in records_list
             if record["benchmark"] == "packing"]
    if not found:
        return ["No record of sequence packing yet: run "
                "`python benchmarks/packing.py`.", ""]
    record = found[-1]
    first = record["measurements"][0]["details"]
    status = "" if record["headline"] else (
        " It is **not a headline measurement** (see the record).")
    lines = [
        f"`run_pretraining.py --pack_sequences` against Google's unpacked "
        f"rows, from [{record['file']}](#{_anchor(record)}) "
        f"(`{record['command']}`): records made by "
        f"`create_pretraining_data.py` (dupe factor "
        f"{first['dupe_factor']}) from the Wikipedia sample, up to "
        f"{first['max_sequences_per_pack']} sequences per packed row; "
        f"training speed of the model shape {first['shape']}, "
        f"{first['batch_rows']} rows per batch, packed and unpacked "
        f"alternating.{status}", "",
        "| sequence | records | real tokens, unpacked | real tokens, "
        "packed | sequences per packed row | training, unpacked | "
        "training, packed | packed / unpacked |",
        "|---|---|---|---|---|---|---|---|"]
    for measurement in record["measurements"]:
        details = measurement["details"]
        contenders = measurement["contenders"]
        unit = measurement["unit"]
        lines.append(
            f"| {details['seq_length']} | {details['records']} | "
            f"{details['unpacked_fill']:.1%} | {details['packed_fill']:.1%} "
            f"| {details['sequences_per_packed_row']:.2f} | "
            f"{_number(contenders['unpacked']['median'])} {unit} | "
            f"{_number(contenders['packed']['median'])} {unit} | "
            f"{_ratio_cell(measurement)} |")
    return lines + [""]


def render(records_list):
    """The page's Markdown for `records_list` (`records.read_records()`)."""
    headline, missing = _headline_table(records_list)
    lines = [
        "# Performance", "",
        "<!-- Generated by `python benchmarks/performance_page.py` from "
        "benchmarks/results/*.json; edit that script, not this page. -->", "",
        "Each benchmark in `benchmarks/` runs bert_tf and a peer on the same "
        "work in one process, the contenders alternating call by call for "
        "several rounds, and writes what it measured to a JSON record under "
        "`benchmarks/results/`: every round of every contender, their median "
        "and spread (largest minus smallest over the median), the ratio of "
        "the medians, the command, the git commit, the package versions, the "
        "CPU model and the 1-minute load average before and after. This page "
        "is generated from those records; no number on it is typed in.", "",
        "A benchmark starts only when the 1-minute load average is below "
        f"`--max_load` (default {records.HEADLINE_MAX_LOAD:g}); "
        "`--wait_for_load=SECONDS` waits for a quiet machine. A record is a "
        f"headline one when the load was below {records.HEADLINE_MAX_LOAD:g}"
        f" and every contender ran at least {records.MIN_HEADLINE_ROUNDS} "
        "rounds. Ratios above 1 mean bert_tf is faster. Absolute times are "
        "this machine's; another machine gives other digits, and only the "
        "ratios, measured side by side, carry over.", "",
        "## Headline rows", ""] + headline + [""]
    if missing:
        lines += [
            f"{len(missing)} of {len(HEADLINE_ROWS)} headline rows have no "
            "headline record yet: "
            + "; ".join(row.what for row in missing) + ".", ""]
    lines += ["## The main job over seeds", ""] + _seeds_section(
        records_list)
    lines += ["## Sequence packing", ""] + _packing_section(
        records_list) + [
        "## Records", ""]
    if not records_list:
        lines += ["No records yet.", ""]
    for record in reversed(records_list):
        lines += _record_section(record)
    return "\n".join(lines).rstrip("\n") + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if the page differs from the records' "
                             "instead of writing it")
    parser.add_argument("--results_dir", default=str(records.RESULTS_DIR))
    args = parser.parse_args()
    try:
        page = render(records.read_records(args.results_dir))
    except ValueError as error:
        raise SystemExit(f"performance_page.py: {error}") from None
    if args.check:
        written = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
        if written != page:
            raise SystemExit(
                f"{PAGE.relative_to(records.REPO_ROOT)} differs from the "
                "records: run python benchmarks/performance_page.py")
        return
    temporary = PAGE.with_name(PAGE.name + ".partial")
    temporary.write_text(page, encoding="utf-8")
    os.replace(temporary, PAGE)
    print(f"wrote {PAGE.relative_to(records.REPO_ROOT)}")


if __name__ == "__main__":
    main()
