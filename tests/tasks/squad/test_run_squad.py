"""run_squad.py end to end, as a user runs it (a subprocess per run), and
its flag checks in process (both through `runner_harness`).

A generated span task with known answers: each paragraph is filler words
with one cue word, "alpha"; the answer is the word after it, a colour word
("red", or "reddish" -- two word pieces -- sometimes upper-cased or with a
comma glued on, so the answer text has to be projected back onto the
context). Paragraphs run over several windows. In the SQuAD 2.0 version
some paragraphs have no cue and no answer.

A tiny model (2 layers, hidden 32) learns it on a CPU in about a hundred
steps. The scores in `eval_results.txt` are checked against Model Garden's
copies of the official evaluation scripts run on the `predictions.json`
the runner wrote; the fine-tuned checkpoint is read back with TensorFlow's
own checkpoint reader and used through `--init_checkpoint` to predict
again.
"""

import json
import logging
import random
import re

import numpy as np
import pytest

from runner_harness import parse_runner_flags
from runner_harness import read_eval_results
from runner_harness import run_in_process
from runner_harness import run_runner
import run_squad


FILLER = [f"w{i}" for i in range(40)]
CUE = "alpha"
COLOURS = ["red", "blue", "green", "gold", "gray", "pink"]
QUESTION = "What comes after alpha?"
VOCAB = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ",", "?", "what",
          "comes", "after", "##ish", CUE] + FILLER + COLOURS)
TINY_CONFIG = {"vocab_size": len(VOCAB), "hidden_size": 32,
               "num_hidden_layers": 2, "num_attention_heads": 2,
               "intermediate_size": 64, "max_position_embeddings": 64,
               "type_vocab_size": 2, "hidden_dropout_prob": 0.0,
               "attention_probs_dropout_prob": 0.0}
# 640 / 16 * 4 = 160 steps (Google counts examples, not windows).
NUM_TRAIN = 640
LENGTH_FLAGS = ["--max_seq_length=48", "--doc_stride=16",
                "--max_query_length=8"]
TRAIN_FLAGS = LENGTH_FLAGS + [
    "--train_batch_size=16", "--num_train_epochs=4", "--learning_rate=1e-3",
    "--seed=1", "--log_steps=40", "--iterations_per_loop=40"]


def cue_squad(rng, count, prefix, version_2=False, with_answers=True):
    """SQuAD-format paragraphs where the answer is the word after the cue."""
    articles = []
    for index in range(count):
        words = [rng.choice(FILLER) for _ in range(rng.randint(6, 40))]
        impossible = version_2 and rng.random() < 0.3
        if not impossible:
            cue_position = rng.randrange(len(words) - 1)
            words[cue_position] = CUE
            words[cue_position + 1] = rng.choice(COLOURS) + (
                "ish" if rng.random() < 0.3 else "")
        shown = []
        for word in words:
            if word != CUE and rng.random() < 0.2:
                word = word.upper()
            if word != CUE and rng.random() < 0.2:
                word += ","
            shown.append(word)
        context = ""
        starts = []
        for word in shown:
            if context:
                context += rng.choice([" ", " ", "  ", "\n"])
            starts.append(len(context))
            context += word
        qa = {"id": f"{prefix}-{index}", "question": QUESTION}
        if with_answers:
            if impossible:
                qa["answers"] = []
            else:
                answer = words[cue_position + 1]
                start = starts[cue_position + 1]
                qa["answers"] = [{"text": context[start:start + len(answer)],
                                  "answer_start": start}]
            if version_2:
                qa["is_impossible"] = impossible
        articles.append({"title": prefix, "paragraphs": [
            {"context": context, "qas": [qa]}]})
    return {"version": "2.0" if version_2 else "1.1", "data": articles}


def write(path, document):
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("run_squad")
    (root / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    (root / "bert_config.json").write_text(json.dumps(TINY_CONFIG),
                                           encoding="utf-8")
    rng = random.Random(1)
    write(root / "train-v1.1.json", cue_squad(rng, NUM_TRAIN, "train"))
    write(root / "dev-v1.1.json", cue_squad(rng, 100, "dev"))
    write(root / "test-v1.1.json",
          cue_squad(rng, 30, "test", with_answers=False))
    write(root / "train-v2.0.json",
          cue_squad(rng, 400, "train2", version_2=True))
    write(root / "dev-v2.0.json", cue_squad(rng, 100, "dev2", version_2=True))
    return root


def run_program(workspace, *flags, expect_success=True, timeout=600):
    """Runs run_squad.py with the tiny model; returns the process."""
    return run_runner("run_squad.py", workspace, *flags,
                      expect_success=expect_success, timeout=timeout)


def read_json(path):
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def v1_run(workspace):
    output_dir = workspace / "v1_output"
    run_program(workspace, "--do_train=true", "--do_predict=true",
              f"--train_file={workspace / 'train-v1.1.json'}",
              f"--predict_file={workspace / 'dev-v1.1.json'}",
              f"--output_dir={output_dir}", *TRAIN_FLAGS)
    return output_dir


def test_span_task_learns(workspace, v1_run):
    from official.nlp.tools import squad_evaluate_v1_1
    results = read_eval_results(v1_run)
    assert set(results) == {"exact_match", "f1"}
    assert results["exact_match"] > 90
    assert results["f1"] > 90
    for name in ("train.tf_record", "eval.tf_record", "model.ckpt-160.index",
                 "checkpoint", "predictions.json", "nbest_predictions.json"):
        assert (v1_run / name).exists(), name
    assert not (v1_run / "null_odds.json").exists()

    # The scores are the official script's on the written predictions.
    predictions = read_json(v1_run / "predictions.json")
    dataset = read_json(workspace / "dev-v1.1.json")["data"]
    official = squad_evaluate_v1_1.evaluate(dataset, predictions)
    assert results["exact_match"] == pytest.approx(
        100 * official["exact_match"])
    assert results["f1"] == pytest.approx(100 * official["final_f1"])

    # Answers are the context's own text: case kept, glued comma dropped.
    gold = {qa["id"]: qa["answers"][0]["text"] for article in dataset
            for p in article["paragraphs"] for qa in p["qas"]}
    assert list(predictions) == list(gold)
    exact = [qid for qid in gold if predictions[qid] == gold[qid]]
    assert len(exact) > 90
    assert any(gold[qid].isupper() for qid in exact)
    assert any(gold[qid].endswith("ish") for qid in exact)

    nbest = read_json(v1_run / "nbest_predictions.json")
    for qid, entries in nbest.items():
        assert 1 <= len(entries) <= 20
        assert list(entries[0]) == ["text", "probability", "start_logit",
                                    "end_logit"]
        assert entries[0]["text"] == predictions[qid]
        assert sum(e["probability"] for e in entries) == pytest.approx(1.0)


def test_checkpoint_has_googles_names(v1_run):
    import tensorflow as tf
    shapes = dict(tf.train.list_variables(str(v1_run / "model.ckpt-160")))
    assert shapes["cls/squad/output_weights"] == [2, 32]
    assert shapes["cls/squad/output_bias"] == [2]
    assert shapes["bert/embeddings/word_embeddings"] == [len(VOCAB), 32]
    assert "global_step" in shapes
    assert any(name.startswith("cls/squad/output_weights/adam_")
               for name in shapes)
    # The pooler gets no gradient: saved, but without Adam slots, as in
    # Google's fine-tuned checkpoints.
    assert shapes["bert/pooler/dense/kernel"] == [32, 32]
    assert not any(name.startswith("bert/pooler/dense/kernel/")
                   for name in shapes)


def test_predictions_from_fine_tuned_checkpoint_reproduce(workspace, v1_run):
    # In this process (`run`): the same files as a run of its own, which
    # the training run is.
    output_dir = workspace / "v1_reloaded"
    run_in_process(run_squad, "--do_predict=true",
                   f"--predict_file={workspace / 'dev-v1.1.json'}",
                   f"--output_dir={output_dir}",
                   f"--init_checkpoint={v1_run / 'model.ckpt-160'}",
                   "--predict_batch_size=5", *LENGTH_FLAGS,
                   workspace=workspace)
    assert (read_json(output_dir / "predictions.json")
            == read_json(v1_run / "predictions.json"))
    ours = read_json(output_dir / "nbest_predictions.json")
    before = read_json(v1_run / "nbest_predictions.json")
    for qid, entries in before.items():
        assert [e["text"] for e in ours[qid]] == [e["text"] for e in entries]
        np.testing.assert_allclose(
            [[e["start_logit"], e["end_logit"]] for e in ours[qid]],
            [[e["start_logit"], e["end_logit"]] for e in entries], atol=1e-4)
    assert read_eval_results(output_dir) == read_eval_results(v1_run)
    assert not list(output_dir.glob("model.ckpt*"))  # predicting saves nothing


def test_windows_run_at_their_length_give_the_same_answers(workspace,
                                                          v1_run):
    # --pad_to_multiple_of: each batch of windows (grouped by length) runs
    # at its longest window; the fixture ran Google's full-length batches.
    output_dir = workspace / "v1_length_aware"
    run_in_process(run_squad, "--do_predict=true",
                   f"--predict_file={workspace / 'dev-v1.1.json'}",
                   f"--output_dir={output_dir}",
                   f"--init_checkpoint={v1_run / 'model.ckpt-160'}",
                   "--predict_batch_size=5", "--pad_to_multiple_of=8",
                   *LENGTH_FLAGS, workspace=workspace)
    assert (read_json(output_dir / "predictions.json")
            == read_json(v1_run / "predictions.json"))
    ours = read_json(output_dir / "nbest_predictions.json")
    before = read_json(v1_run / "nbest_predictions.json")
    for qid, entries in before.items():
        assert ours[qid][0]["text"] == entries[0]["text"]
        # The padding's logits no longer take n-best places, so other
        # candidates can take them; those in both lists have the same
        # logits.
        logits = {e["text"]: (e["start_logit"], e["end_logit"])
                  for e in ours[qid]}
        shared = [e for e in entries if e["text"] in logits]
        assert len(shared) >= min(3, len(entries)), qid
        for entry in shared:
            np.testing.assert_allclose(
                logits[entry["text"]],
                (entry["start_logit"], entry["end_logit"]), atol=1e-4)


def test_predict_file_without_answers_is_not_scored(workspace, v1_run,
                                                    caplog):
    output_dir = workspace / "v1_test_set"
    with caplog.at_level(logging.INFO):
        run_in_process(run_squad, "--do_predict=true",
                       f"--predict_file={workspace / 'test-v1.1.json'}",
                       f"--output_dir={output_dir}",
                       f"--init_checkpoint={v1_run / 'model.ckpt-160'}",
                       *LENGTH_FLAGS, workspace=workspace)
    predictions = read_json(output_dir / "predictions.json")
    assert len(predictions) == 30
    assert all(answer.lower().removesuffix("ish") in COLOURS
               for answer in predictions.values())
    assert not (output_dir / "eval_results.txt").exists()
    assert "has no answers: predictions are not scored" in caplog.text


def test_version_2_learns_when_there_is_no_answer(workspace):
    from official.nlp.tools import squad_evaluate_v2_0
    output_dir = workspace / "v2_output"
    # In this process (`run`): the same files as a run of its own, which
    # the v1.1 training run is.
    run_in_process(run_squad, "--do_train=true", "--do_predict=true",
                   "--version_2_with_negative=true",
                   f"--train_file={workspace / 'train-v2.0.json'}",
                   f"--predict_file={workspace / 'dev-v2.0.json'}",
                   f"--output_dir={output_dir}", *TRAIN_FLAGS,
                   workspace=workspace)
    results = read_eval_results(output_dir)
    assert set(results) == {
        "exact", "f1", "total", "HasAns_exact", "HasAns_f1", "HasAns_total",
        "NoAns_exact", "NoAns_f1", "NoAns_total", "best_exact",
        "best_exact_thresh", "best_f1", "best_f1_thresh"}
    assert results["total"] == 100
    assert 10 < results["NoAns_total"] < 50
    assert results["HasAns_exact"] > 85
    assert results["NoAns_exact"] > 85

    predictions = read_json(output_dir / "predictions.json")
    null_odds = read_json(output_dir / "null_odds.json")
    assert list(null_odds) == list(predictions)
    # Threshold 0: no answer exactly where the null score wins.
    assert all((predictions[qid] == "") == (null_odds[qid] > 0)
               for qid in predictions)
    dataset = read_json(workspace / "dev-v2.0.json")["data"]
    official = squad_evaluate_v2_0.evaluate(dataset, predictions, null_odds)
    for key in ("exact", "f1", "HasAns_exact", "NoAns_exact"):
        assert results[key] == pytest.approx(official[key]), key
    assert results["best_f1"] == pytest.approx(official["final_f1"])


# -- bad input ----------------------------------------------------------------
# Flag and file errors are checked in process (`run` on freshly parsed
# flags); what a user sees is `run_squad.py: error: <the message>`.

def parse(workspace, *args):
    return parse_runner_flags(run_squad, *args, workspace=workspace)


def test_google_defaults(workspace):
    flag_values = parse(workspace, "--output_dir=x")
    assert (flag_values.do_lower_case, flag_values.max_seq_length,
            flag_values.doc_stride, flag_values.max_query_length,
            flag_values.do_train, flag_values.do_predict,
            flag_values.train_batch_size, flag_values.predict_batch_size,
            flag_values.learning_rate, flag_values.num_train_epochs,
            flag_values.warmup_proportion, flag_values.save_checkpoints_steps,
            flag_values.iterations_per_loop, flag_values.n_best_size,
            flag_values.max_answer_length, flag_values.verbose_logging,
            flag_values.version_2_with_negative,
            flag_values.null_score_diff_threshold, flag_values.use_tpu,
            flag_values.num_tpu_cores) == (
        True, 384, 128, 64, False, False, 32, 8, 5e-5, 3.0, 0.1, 1000, 1000,
        20, 30, False, False, 0.0, False, 8)
    # Google's run_squad.py has no --do_eval / --eval_batch_size.
    assert "do_eval" not in flag_values
    assert "eval_batch_size" not in flag_values


def test_malformed_predict_file_fails_before_training(workspace, tmp_path):
    broken = tmp_path / "dev.json"
    broken.write_text('{"data": [{"paragraphs": [', encoding="utf-8")
    output_dir = tmp_path / "output"
    flag_values = parse(workspace, "--do_train=true", "--do_predict=true",
                        f"--train_file={workspace / 'train-v1.1.json'}",
                        f"--predict_file={broken}",
                        f"--output_dir={output_dir}", *LENGTH_FLAGS)
    with pytest.raises(ValueError,
                       match=re.escape(f"{broken}: not valid JSON (line 1")):
        run_squad.run(flag_values)
    assert not output_dir.exists()  # nothing converted, nothing trained


@pytest.mark.parametrize("args, message", [
    (["--do_train=true"],
     "If `do_train` is True, then `train_file` must be specified."),
    (["--do_predict=true"],
     "If `do_predict` is True, then `predict_file` must be specified."),
    ([], "At least one of `do_train` or `do_predict` must be True."),
    (["--do_predict=true", "--predict_file=x.json", "--max_seq_length=40",
      "--max_query_length=37"],
     "The max_seq_length (40) must be greater than max_query_length (37) "
     "+ 3"),
    (["--do_predict=true", "--predict_file=x.json", "--max_seq_length=128"],
     "Cannot use sequence length 128 because the BERT model was only "
     "trained up to sequence length 64"),
    (["--do_predict=true", "--predict_file=x.json", *LENGTH_FLAGS,
      "--doc_stride=0"],
     "--doc_stride=0 must be positive"),
    (["--do_predict=true", "--predict_file=missing.json", *LENGTH_FLAGS],
     "--predict_file: file missing.json does not exist"),
    (["--do_train=true", "--train_file=t.json", "--do_lower_case=false",
      "--init_checkpoint=/m/uncased_L-12_H-768_A-12/bert_model.ckpt"],
     "`uncased_L-12_H-768_A-12` seems to be a lowercased model"),
])
def test_bad_flags_are_explained(workspace, tmp_path, args, message):
    flag_values = parse(workspace, f"--output_dir={tmp_path / 'out'}", *args)
    with pytest.raises(ValueError, match=re.escape(message)):
        run_squad.run(flag_values)


def test_error_reaches_the_user_as_one_line(workspace, tmp_path):
    process = run_program(workspace, f"--output_dir={tmp_path / 'out'}",
                        "--do_train=true", expect_success=False)
    assert process.returncode == 1
    assert ("run_squad.py: error: If `do_train` is True, then `train_file` "
            "must be specified.") in process.stderr
    assert "Traceback" not in process.stderr


def test_training_answer_not_in_context_is_skipped_with_its_id(
        workspace, tmp_path, caplog):
    document = cue_squad(random.Random(5), 40, "bad")
    qa = document["data"][3]["paragraphs"][0]["qas"][0]
    qa["answers"][0]["answer_start"] = 0  # Does not point at its text.
    train_file = write(tmp_path / "train.json", document)
    flag_values = parse(workspace, "--do_train=true",
                        f"--train_file={train_file}",
                        f"--output_dir={tmp_path / 'out'}",
                        "--num_train_epochs=0.5", "--train_batch_size=8",
                        *LENGTH_FLAGS)
    with caplog.at_level(logging.INFO, logger="absl"):
        results = run_squad.run(flag_values)
    assert "skipping question bad-3: answer" in caplog.text, caplog.text
    assert "Num orig examples = 39" in caplog.text, caplog.text
    # int(39 / 8 * 0.5) = 2 steps, as Google counts them.
    assert results["train"]["global_step"] == 2, results
