"""run_multiple_choice.py end to end on a generated task, in process.

Questions of filler words with three choices; the right choice holds one
of the "good" words. A tiny model learns it in a few dozen steps; a
fine-tuned checkpoint read back through --init_checkpoint predicts the same.
"""

import json
import random

import numpy as np
import pytest

from runner_harness import (error_line_in_process, read_eval_results,
                            run_in_process)
import run_multiple_choice

FILLER = [f"w{i}" for i in range(30)]
GOOD = ["yes", "right"]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + FILLER + GOOD
TINY_CONFIG = {"vocab_size": len(VOCAB), "hidden_size": 32,
               "num_hidden_layers": 2, "num_attention_heads": 2,
               "intermediate_size": 64, "max_position_embeddings": 64,
               "type_vocab_size": 2}
FLAGS = ["--input_format=jsonl", "--max_seq_length=16",
         "--train_batch_size=16", "--num_train_epochs=4",
         "--learning_rate=1e-3", "--seed=1", "--log_steps=25"]


def _records(rng, count):
    records = []
    for _ in range(count):
        def words(n):
            return " ".join(rng.choice(FILLER) for _ in range(n))
        answer = rng.randrange(3)
        choices = [words(3) for _ in range(3)]
        choices[answer] += " " + rng.choice(GOOD)
        records.append({"question": words(5), "choices": choices,
                        "answer": answer})
    return records


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("run_multiple_choice")
    (root / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    (root / "bert_config.json").write_text(json.dumps(TINY_CONFIG))
    rng = random.Random(0)
    data = root / "data"
    data.mkdir()
    for name, count in (("train", 200), ("dev", 60), ("test", 30)):
        (data / f"{name}.jsonl").write_text("".join(
            json.dumps(r) + "\n" for r in _records(rng, count)))
    return root


def _probabilities(output_dir):
    return np.array([[float(v) for v in line.split("\t")] for line in (
        output_dir / "test_results.tsv").read_text().splitlines()])


def test_learns_predicts_and_reloads(workspace):
    output_dir = workspace / "out"
    # In this process (`run`): the same files as `python
    # run_multiple_choice.py`, without 5-8 s of `import tensorflow`.
    run_in_process(run_multiple_choice, "--do_train", "--do_eval",
                   "--do_predict", f"--data_dir={workspace / 'data'}",
                   f"--output_dir={output_dir}", *FLAGS, workspace=workspace)
    results = read_eval_results(output_dir)
    assert results["global_step"] == 50  # int(200 / 16 * 4)
    assert results["eval_accuracy"] > 0.8  # chance: 1/3
    probabilities = _probabilities(output_dir)
    answers = [json.loads(line)["answer"] for line in (
        workspace / "data" / "test.jsonl").read_text().splitlines()]
    assert probabilities.shape == (30, 3)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1, atol=1e-5)
    assert np.mean(probabilities.argmax(axis=1) == answers) > 0.8

    import tensorflow as tf
    shapes = dict(tf.train.list_variables(str(output_dir / "model.ckpt-50")))
    assert shapes["output_weights"] == [1, 32]
    assert shapes["output_bias"] == [1]

    # In this process (`run`): the same files as a run of its own, which
    # the training run above is.
    reloaded = workspace / "reloaded"
    run_in_process(run_multiple_choice, "--do_predict",
                   f"--data_dir={workspace / 'data'}",
                   f"--output_dir={reloaded}",
                   f"--init_checkpoint={output_dir / 'model.ckpt-50'}",
                   "--input_format=jsonl", "--max_seq_length=16",
                   "--predict_batch_size=7",
                   "--pad_to_multiple_of=16",  # Google's fixed-length batches
                   workspace=workspace)
    np.testing.assert_allclose(_probabilities(reloaded), probabilities,
                               atol=1e-5)


def test_different_number_of_choices_is_named(workspace, tmp_path):
    (tmp_path / "train.jsonl").write_text(
        (workspace / "data" / "train.jsonl").read_text())
    (tmp_path / "dev.jsonl").write_text(
        json.dumps({"question": "q", "choices": ["a", "b"], "answer": 0})
        + "\n")
    error = error_line_in_process(
        run_multiple_choice, "--do_train", "--do_eval",
        f"--data_dir={tmp_path}", f"--output_dir={tmp_path / 'out'}", *FLAGS,
        workspace=workspace)
    assert error == (
        f"run_multiple_choice.py: error: {tmp_path / 'dev.jsonl'}:1: 2 "
        "choices, but the dataset has 3 (set by its first example)")
