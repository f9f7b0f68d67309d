"""experiments/chinese_tagging.py: the run plan, the result table, and (slow)
the --quick experiment end to end on the People's Daily corpus."""

import json
import pathlib
import subprocess
import sys

import pytest

# The steps and command helpers demo.py runs too.
from demo_workflow import workflow
from experiments import chinese_tagging
from runner_harness import installed_corpus

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]


def _paths(tmp_path):
    paths = chinese_tagging.Paths(tmp_path)
    paths.vocab.write_text("\n".join(f"t{i}" for i in range(300)) + "\n")
    return paths


def _flag(command, name):
    values = [part.split("=", 1)[1] for part in command
              if part.startswith(f"--{name}=")]
    return values[0] if values else None


def test_baselines_differ_from_the_pretrained_runs_only_in_init(tmp_path):
    paths = _paths(tmp_path)
    runs = chinese_tagging.build_runs(paths, chinese_tagging.DEFAULT)
    by_name = {run.name: run for run in runs}
    assert [run.name for run in runs] == [
        "pretrain", "pos/pretrained/seed1", "ner/pretrained/seed1",
        "pos/random_init/seed1", "ner/random_init/seed1"]
    for task in ("pos", "ner"):
        pretrained = by_name[f"{task}/pretrained/seed1"]
        baseline = by_name[f"{task}/random_init/seed1"]
        assert pretrained.depends_on == ("pretrain",)
        assert baseline.depends_on == ()
        assert _flag(pretrained.command, "init_checkpoint") == (
            workflow.display_path(paths.pretrain_dir))
        assert _flag(baseline.command, "init_checkpoint") is None
        # Same data, model, steps and seed; only the output differs.
        same = [part for part in pretrained.command
                if not part.startswith(("--init_checkpoint=",
                                        "--output_dir="))]
        assert same == [part for part in baseline.command
                        if not part.startswith("--output_dir=")]
    pos = by_name["pos/random_init/seed1"].command
    ner = by_name["ner/random_init/seed1"].command
    assert _flag(pos, "input_format") == "peoples_daily"
    assert _flag(ner, "input_format") == "peoples_daily_ner"
    assert _flag(pos, "label_list_file").endswith("pos_tags.txt")
    assert _flag(ner, "label_list_file") is None


def test_pretraining_reads_the_train_split_text_with_whole_word_masking(
        tmp_path):
    paths = _paths(tmp_path)
    steps = {step.name: step for step in chinese_tagging.data_steps(
        paths, chinese_tagging.DEFAULT)}
    data = steps["data"].command
    assert _flag(data, "corpus") == "peoples_daily"
    corpus = _flag(data, "pretraining_corpus")
    records = steps["pretrain_data"].command
    assert _flag(records, "input_file") == corpus
    assert _flag(records, "do_whole_word_mask") == "True"
    assert _flag(records, "word_boundaries") == "spaces"
    assert _flag(steps["vocab"].command, "input_file") == corpus
    pretrain = chinese_tagging.build_runs(
        paths, chinese_tagging.DEFAULT)[0].command
    assert _flag(pretrain, "input_file") == _flag(records, "output_file")


def test_result_rows_take_dev_from_eval_and_test_from_test_results(
        tmp_path):
    paths = _paths(tmp_path)
    runs = chinese_tagging.build_runs(paths, chinese_tagging.QUICK)
    infos = []
    for number, run in enumerate(runs):
        metrics = ({"masked_lm_accuracy": 0.25,
                    "next_sentence_accuracy": 0.75}
                   if run.task == "pretrain" else
                   {"eval_accuracy": 0.9 + number / 100, "eval_f1": 0.5,
                    "eval_precision": 0.4, "eval_recall": 0.625,
                    "eval_f1_PER": 0.7, "eval_f1_LOC": 0.6,
                    "eval_f1_ORG": 0.1, "global_step": 745.0})
        infos.append({"name": run.name, "task": run.task,
                      "variant": run.variant, "seed": run.seed,
                      "seconds": 61.0, "metrics": metrics})
        if run.task != "pretrain":
            run.output_dir.mkdir(parents=True)
            (run.output_dir / "test_results.txt").write_text(
                f"test_accuracy = {0.8 + number / 100}\ntest_f1 = 0.3\n"
                "test_precision = 0.2\ntest_recall = 0.6\n")
    rows = chinese_tagging.result_rows(runs, infos)
    assert [(row["task"], row["init"]) for row in rows] == [
        ("pos", "pretrained"), ("ner", "pretrained"), ("pos", "random_init"),
        ("ner", "random_init")]
    assert rows[0]["dev"] == pytest.approx(0.91)
    assert rows[0]["test"] == pytest.approx(0.81)
    assert rows[1]["dev"] == 0.5 and rows[1]["test"] == 0.3
    assert rows[1]["dev_f1_ORG"] == 0.1 and rows[1]["test_f1_ORG"] is None
    assert rows[1]["test_recall"] == 0.6 and rows[3]["steps"] == 745
    table = chinese_tagging.markdown_table(
        rows, infos[0], chinese_tagging.QUICK,
        {"train": 3, "dev": 3, "test": 3})
    assert ("| part of speech (PKU tags): token accuracy | pretrained here | "
            "1 | 0.9100 | 0.8100 |  |  | 745 | 1m01s |") in table
    assert ("| named entities (PER/LOC/ORG): entity F1 | random init | 1 | "
            "0.5000 | 0.3000 | 0.4000 / 0.6250 | 0.7000 / 0.6000 / 0.1000 | "
            "745 | 1m01s |") in table
    assert "masked LM accuracy 0.250, next sentence 0.750" in table


@pytest.mark.slow
@pytest.mark.real_data
def test_quick_experiment_end_to_end(tmp_path):
    installed_corpus("peoples_daily")
    work_dir = tmp_path / "work"
    results_dir = tmp_path / "results"
    process = subprocess.run(
        [sys.executable, "-m", "experiments.chinese_tagging", "--quick",
         f"--work_dir={work_dir}", f"--results_dir={results_dir}"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=1800)
    assert process.returncode == 0, process.stdout[-3000:] + process.stderr
    # Every runner command is printed before it runs.
    for program in ("bert_tf.corpora.task_corpora", "bert_tf.learn_vocab",
                    "create_pretraining_data.py", "run_pretraining.py",
                    "run_tagging.py"):
        assert f"{program} --" in process.stdout
    summary = json.loads((results_dir / "chinese_tagging.json").read_text())
    assert summary["runs_finished"] == summary["runs_total"] == 5
    assert summary["corpus_lines"] == {"train": 800, "dev": 100, "test": 100}
    assert len(summary["results"]) == 4
    for row in summary["results"]:
        for split in ("dev", "test"):
            assert 0.0 <= row[split] <= 1.0
        assert row["steps"] > 0 and row["seconds"] > 0
    pos = [row for row in summary["results"] if row["task"] == "pos"]
    # Even a few steps beat chance among 30-odd tags.
    assert all(row["dev"] > 0.1 for row in pos)
    table = (results_dir / "chinese_tagging.md").read_text()
    assert table.count("| part of speech") == 2
    assert table.count("| named entities") == 2
    # A rerun finds every run done and only rewrites the results.
    again = subprocess.run(
        [sys.executable, "-m", "experiments.chinese_tagging", "--quick",
         f"--work_dir={work_dir}", f"--results_dir={results_dir}"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert "5 of 5 runs are done already" in again.stdout


def test_most_frequent_tag_reference(tmp_path):
    train = tmp_path / "train.txt"
    train.write_text("我/r  爱/v  北京/ns\n我/r  爱/n  的/u  人/n\n"
                     "爱/v  人/n\n", encoding="utf-8")
    dev = tmp_path / "dev.txt"
    # 爱 is v (2 of 3), 人 n, 天津 unseen -> n (3 of 9 tags overall).
    dev.write_text("我/r  爱/n  天津/ns\n人/n  爱/v\n", encoding="utf-8")
    assert chinese_tagging.most_frequent_tag_accuracy(train, dev) == (
        pytest.approx(3 / 5))
