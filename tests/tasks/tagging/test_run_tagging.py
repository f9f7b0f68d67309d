"""run_tagging.py end to end on a generated NER task, as a user runs it.

Sentences of filler words hold person names ("bob", or "mr bob": B-PER
I-PER) and places ("paris": B-LOC); a tiny model learns them in a few dozen
steps. The test file has sentences longer than --max_seq_length, so they
are split into windows. Predictions are checked against the generator's
labels with seqeval (an independent scorer), and a fine-tuned checkpoint is
read back through --init_checkpoint to predict again.
"""

import json
import random

import pytest

from runner_harness import (error_line_in_process, read_eval_results,
                            run_in_process, run_runner)
import run_tagging as run_tagging_program

FILLER = [f"w{i}" for i in range(30)]
PERSONS = ["alice", "bob", "carol"]
PLACES = ["paris", "rome"]
VOCAB = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + FILLER + PERSONS
         + PLACES + ["mr", "##s"])
TINY_CONFIG = {"vocab_size": len(VOCAB), "hidden_size": 32,
               "num_hidden_layers": 2, "num_attention_heads": 2,
               "intermediate_size": 64, "max_position_embeddings": 64,
               "type_vocab_size": 2}
TRAIN_FLAGS = ["--max_seq_length=16", "--doc_stride=5",
               "--train_batch_size=16", "--num_train_epochs=3",
               "--learning_rate=1e-3", "--seed=1", "--log_steps=25"]


def _sentence(rng, length):
    words = []
    while len(words) < length:
        draw = rng.random()
        if draw < 0.15:
            words += [("mr", "B-PER"), (rng.choice(PERSONS), "I-PER")]
        elif draw < 0.3:
            words.append((rng.choice(PERSONS), "B-PER"))
        elif draw < 0.4:
            words.append((rng.choice(PLACES), "B-LOC"))
        else:
            words.append((rng.choice(FILLER), "O"))
    return words


def _write_conll(path, sentences):
    with open(path, "w", encoding="utf-8") as writer:
        writer.write("-DOCSTART- -X- -X- O\n\n")
        for sentence in sentences:
            for word, tag in sentence:
                writer.write(f"{word} NN O {tag}\n")
            writer.write("\n")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("run_tagging")
    (root / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    (root / "bert_config.json").write_text(json.dumps(TINY_CONFIG))
    rng = random.Random(0)
    data = root / "data"
    data.mkdir()
    _write_conll(data / "train.txt",
                 [_sentence(rng, rng.randint(3, 12)) for _ in range(400)])
    _write_conll(data / "dev.txt",
                 [_sentence(rng, rng.randint(3, 12)) for _ in range(60)])
    # Up to 40 words: longer than the 14 pieces a window holds.
    _write_conll(data / "test.txt",
                 [_sentence(rng, rng.randint(3, 40)) for _ in range(40)])
    return root


def run_tagging(workspace, *flags, expect_success=True):
    return run_runner("run_tagging.py", workspace, *flags,
                      expect_success=expect_success)


def _predicted_columns(output_dir):
    return [line.split()[-1] if line.strip() and not line.startswith(
        "-DOCSTART-") else line
        for line in (output_dir / "test_predictions.txt").read_text(
            ).splitlines()]


# The CRF run repeats the whole flow (~1.5 minutes here): slow.
@pytest.fixture(scope="module", params=[
    False, pytest.param(True, marks=pytest.mark.slow)], ids=["softmax", "crf"])
def trained(request, workspace):
    output_dir = workspace / f"out_crf_{request.param}"
    run_tagging(workspace, "--do_train", "--do_eval", "--do_predict",
                f"--data_dir={workspace / 'data'}",
                f"--output_dir={output_dir}",
                f"--use_crf={str(request.param).lower()}", *TRAIN_FLAGS)
    return request.param, output_dir


def test_learns_and_writes_googles_files(workspace, trained):
    from seqeval import metrics as seqeval_metrics
    use_crf, output_dir = trained
    results = read_eval_results(output_dir)
    assert {"eval_precision", "eval_recall", "eval_f1", "eval_accuracy",
            "eval_loss", "global_step", "eval_f1_PER",
            "eval_f1_LOC"} <= set(results)
    assert results["global_step"] == 75  # int(400 / 16 * 3)
    assert results["eval_f1"] > 0.7
    assert (output_dir / "label_list.txt").read_text().split() == [
        "B-LOC", "B-PER", "I-PER", "O"]

    # The predict file back, line for line, one more column per word.
    test_lines = (workspace / "data" / "test.txt").read_text().splitlines()
    predicted_lines = (output_dir / "test_predictions.txt").read_text(
        ).splitlines()
    assert len(predicted_lines) == len(test_lines)
    gold, predicted = [[]], [[]]
    for original, line in zip(test_lines, predicted_lines):
        if not original.strip() or original.startswith("-DOCSTART-"):
            assert line == original
            if gold[-1]:
                gold.append([])
                predicted.append([])
            continue
        assert line.startswith(original + " ")
        gold[-1].append(original.split()[-1])
        predicted[-1].append(line.split()[-1])
    gold, predicted = [g for g in gold if g], [p for p in predicted if p]
    assert max(len(g) for g in gold) > 14  # Windows were needed.
    test_results = dict(line.split(" = ") for line in (
        output_dir / "test_results.txt").read_text().splitlines())
    assert float(test_results["test_f1"]) == pytest.approx(
        seqeval_metrics.f1_score(gold, predicted), abs=1e-6)
    assert float(test_results["test_f1"]) > 0.7

    records = [json.loads(line) for line in (
        output_dir / "test_predictions.jsonl").read_text().splitlines()]
    assert [r["labels"] for r in records] == predicted
    from seqeval.metrics.sequence_labeling import get_entities
    for record in records:
        assert [(e["type"], e["start"], e["end"] - 1)
                for e in record["entities"]] == get_entities(record["labels"])
        for entity in record["entities"]:
            assert entity["text"] == " ".join(
                record["words"][entity["start"]:entity["end"]])

    import tensorflow as tf
    shapes = dict(tf.train.list_variables(str(output_dir / "model.ckpt-75")))
    assert shapes["output_weights"] == [4, 32]
    assert shapes["output_bias"] == [4]
    assert ("crf/transitions" in shapes) == use_crf


def test_init_checkpoint_of_a_fine_tuned_model_predicts_the_same(
        workspace, trained):
    use_crf, output_dir = trained
    reloaded = workspace / f"reloaded_{use_crf}"
    # Predicting alone finds the training run's label list beside the
    # checkpoint. In this process (`run`): the same files as a run of its
    # own, which the training run is.
    run_in_process(run_tagging_program, "--do_predict",
                   f"--data_dir={workspace / 'data'}",
                   f"--output_dir={reloaded}",
                   f"--init_checkpoint={output_dir / 'model.ckpt-75'}",
                   f"--use_crf={str(use_crf).lower()}", "--max_seq_length=16",
                   "--doc_stride=5", "--predict_batch_size=7",
                   # Google's fixed-length batches; the training run's were
                   # cut to their lengths.
                   "--pad_to_multiple_of=16", workspace=workspace)
    assert ((reloaded / "test_predictions.txt").read_text()
            == (output_dir / "test_predictions.txt").read_text())


def test_unseen_label_is_named_with_file_and_line(workspace, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.txt").write_text((workspace / "data" / "train.txt")
                                    .read_text())
    (data / "dev.txt").write_text("bob NN O B-PER\nrome NN O B-GPE\n")
    # `main` in this process: the line a process of its own ends with.
    error = error_line_in_process(
        run_tagging_program, "--do_train", "--do_eval", f"--data_dir={data}",
        f"--output_dir={tmp_path}/o", "--max_seq_length=16",
        workspace=workspace)
    assert error == (
        f"run_tagging.py: error: {data / 'dev.txt'}:2: label 'B-GPE' does "
        "not occur in the training data (labels: B-LOC B-PER I-PER O)")


def test_predict_without_label_list_says_how(workspace, tmp_path):
    error = error_line_in_process(
        run_tagging_program, "--do_predict",
        f"--data_dir={workspace / 'data'}", f"--output_dir={tmp_path}",
        "--max_seq_length=16", workspace=workspace)
    assert error.startswith("run_tagging.py: error: ")
    assert "label_list.txt not found" in error


def test_label_list_file_scores_a_label_training_never_saw(workspace,
                                                           tmp_path):
    # A corpus' tag set can hold tags too rare for the training split
    # (People's Daily's "na" occurs once, in its test split): with
    # --label_list_file they are labels the model can be scored on.
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.txt").write_text((workspace / "data" / "train.txt")
                                    .read_text())
    (data / "dev.txt").write_text("bob NN O B-PER\nrome NN O B-GPE\n")
    labels = tmp_path / "labels.txt"
    labels.write_text("O\nB-PER\nI-PER\nB-LOC\nB-GPE\n")
    output_dir = tmp_path / "out"
    # In this process (`run`): the same files as a run of its own.
    run_in_process(run_tagging_program, "--do_train", "--do_predict",
                   f"--train_file={data / 'train.txt'}",
                   f"--predict_file={data / 'dev.txt'}",
                   f"--output_dir={output_dir}",
                   f"--label_list_file={labels}", "--max_seq_length=16",
                   "--num_train_epochs=0.1", "--train_batch_size=16",
                   workspace=workspace)
    # The given order is kept: the label ids are its line numbers.
    assert (output_dir / "label_list.txt").read_text() == labels.read_text()
    import tensorflow as tf
    shapes = dict(tf.train.list_variables(str(output_dir / "model.ckpt-2")))
    assert shapes["output_weights"] == [5, 32]  # int(400 / 16 * 0.1) steps
    # Scored as seqeval scores the predictions against the gold B-GPE.
    from seqeval import metrics as seqeval_metrics
    predicted = [line.split()[-1] for line in (
        output_dir / "test_predictions.txt").read_text().splitlines()]
    test_results = dict(line.split(" = ") for line in (
        output_dir / "test_results.txt").read_text().splitlines())
    assert float(test_results["test_f1"]) == pytest.approx(
        seqeval_metrics.f1_score([["B-PER", "B-GPE"]], [predicted]),
        abs=1e-6)
    assert "test_f1_GPE" in test_results


@pytest.mark.parametrize("content, do_train, message", [
    ("O\nB-PER\nI-PER\n", True,
     "run_tagging.py: error: {data}/train.txt:{line}: label 'B-LOC' does "
     "not occur in --label_list_file={labels} (labels: O B-PER I-PER)"),
    ("O\nB-PER\nI-PER\nB-LOC\nO\n", True,
     "run_tagging.py: error: --label_list_file={labels}: labels listed "
     "twice: O"),
    ("O\nB-PER\nI-PER\nB-LOC\n", False,
     "run_tagging.py: error: --label_list_file needs --do_train (without "
     "training, the labels are the training run's label_list.txt)"),
])
def test_bad_label_list_file_is_named(workspace, tmp_path, content, do_train,
                                      message):
    data = workspace / "data"
    labels = tmp_path / "labels.txt"
    labels.write_text(content)
    error = error_line_in_process(
        run_tagging_program, f"--do_train={str(do_train).lower()}",
        "--do_predict", f"--data_dir={data}", f"--output_dir={tmp_path}/o",
        f"--label_list_file={labels}", "--max_seq_length=16",
        workspace=workspace)
    line = next(number for number, text in enumerate(
        (data / "train.txt").read_text().splitlines(), start=1)
        if text.endswith(" B-LOC"))
    assert error == message.format(data=data, labels=labels, line=line)
