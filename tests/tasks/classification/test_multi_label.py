"""Multi-label data, metrics (against scikit-learn) and the task's loss."""

import numpy as np
import pytest
from sklearn import metrics as sk_metrics

from bert_tf.tasks import base
from bert_tf.tasks.base import ArraysDataConfig
from bert_tf.tasks.classification import glue_processors
from bert_tf.tasks.classification import multi_label_data as multi_label_lib
from bert_tf.tasks.classification import multi_label_task as task_lib
from bert_tf.text import tokenization


def test_metrics_match_scikit_learn_on_random_matrices():
    rng = np.random.default_rng(0)
    for trial in range(200):
        # Two labels at least: one column is "binary" to scikit-learn.
        rows, labels = rng.integers(1, 12), rng.integers(2, 6)
        gold = rng.random((rows, labels)) < rng.random()
        predicted = np.where(rng.random((rows, labels)) < 0.3,
                             ~gold, gold)
        if trial % 7 == 0:
            predicted[:] = False  # Nothing predicted: zero divisions.
        ours = multi_label_lib.multi_label_metrics(gold, predicted)
        kwargs = dict(zero_division=0)
        assert ours["micro_f1"] == pytest.approx(sk_metrics.f1_score(
            gold, predicted, average="micro", **kwargs))
        assert ours["macro_f1"] == pytest.approx(sk_metrics.f1_score(
            gold, predicted, average="macro", **kwargs))
        assert ours["micro_precision"] == pytest.approx(
            sk_metrics.precision_score(gold, predicted, average="micro",
                                       **kwargs))
        assert ours["micro_recall"] == pytest.approx(sk_metrics.recall_score(
            gold, predicted, average="micro", **kwargs))
        assert ours["exact_match"] == pytest.approx(
            sk_metrics.accuracy_score(gold, predicted))


def _write(directory, name, text):
    (directory / name).write_text(text, encoding="utf-8")


def test_delimited_and_column_labels(tmp_path):
    _write(tmp_path, "train.tsv", "sentence\tlabels\tsports\tart\n"
           "a b\tsports,art\t1\t1\nc\t\t0\tfalse\nd\tart\tno\tyes\n")
    _write(tmp_path, "dev.tsv", "sentence\tlabels\tsports\tart\n"
           "a\tmusic\t1\t2\n")
    _write(tmp_path, "test.tsv", "sentence\na\n")
    delimited = multi_label_lib.MultiLabelProcessor(label_column="labels")
    assert delimited.get_labels(tmp_path) == ["art", "sports"]
    examples = delimited.get_train_examples(tmp_path)
    assert [e.label for e in examples] == [("sports", "art"), (), ("art",)]
    with pytest.raises(glue_processors.DataFormatError,
                       match=r"dev.tsv, line 2: unknown label 'music'"):
        delimited.get_dev_examples(tmp_path)
    assert delimited.get_test_examples(tmp_path)[0].label is None
    columns = multi_label_lib.MultiLabelProcessor(label_column="sports,art")
    assert columns.get_labels(tmp_path) == ["sports", "art"]
    assert [e.label for e in columns.get_train_examples(tmp_path)] == [
        ("sports", "art"), (), ("art",)]
    with pytest.raises(glue_processors.DataFormatError,
                       match=r"dev.tsv, line 2: column 'art' is '2'"):
        columns.get_dev_examples(tmp_path)


def test_arrays_are_multi_hot(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\na\nb\n")
    tokenizer = tokenization.FullTokenizer(str(vocab))
    examples = [glue_processors.InputExample("x", "a b", None, ("y", "x")),
                glue_processors.InputExample("y", "b", None, None)]
    arrays = multi_label_lib.examples_to_arrays(examples, ["x", "y", "z"], 6,
                                                tokenizer)
    np.testing.assert_array_equal(arrays["label_ids"], [[1, 1, 0],
                                                        [0, 0, 0]])
    np.testing.assert_array_equal(arrays["input_ids"][0], [2, 4, 5, 3, 0, 0])


def test_task_loss_and_metrics(tiny_config):
    rng = np.random.default_rng(0)
    arrays = {"input_ids": rng.integers(4, 100, (5, 8)).astype(np.int32),
              "input_mask": np.ones((5, 8), np.int32),
              "segment_ids": np.zeros((5, 8), np.int32),
              "label_ids": (rng.random((5, 3)) < 0.5).astype(np.int32)}
    task = task_lib.MultiLabelTask(
        tiny_config, ["a", "b", "c"],
        ArraysDataConfig(eval_arrays=arrays, max_seq_length=8),
        threshold=0.4)
    model = task.build_model()
    assert {"output_weights", "output_bias"} <= set(
        task.checkpoint_variables(model))
    model.classifier.output_bias.assign([1.0, -1.0, 0.2])
    features = next(iter(task.build_inputs(base.EVAL, 5)))
    outputs = model(features)
    loss, metrics = task.compute_loss(features, outputs,
                                      task.loss_denominators(features))
    logits = outputs["logits"].numpy().astype(np.float64)
    labels = arrays["label_ids"]
    p = 1 / (1 + np.exp(-logits))
    expected = -(labels * np.log(p) + (1 - labels) * np.log(1 - p)).mean()
    assert float(loss) == pytest.approx(expected, rel=1e-5)
    state = task.aggregate_predictions(
        None, {k: np.asarray(v) for k, v in task.prediction_outputs(
            features, outputs, base.EVAL).items()}, base.EVAL)
    reduced = task.reduce_predictions(state, base.EVAL)
    predicted = (p >= 0.4).astype(int)
    assert reduced["eval_macro_f1"] == pytest.approx(sk_metrics.f1_score(
        labels, predicted, average="macro", zero_division=0), abs=1e-6)
    assert float(metrics["exact"]) == sk_metrics.accuracy_score(
        labels, predicted) * 5
    with pytest.raises(ValueError, match="--threshold=1.0 must be in"):
        task_lib.MultiLabelTask(tiny_config, ["a"],
                                ArraysDataConfig(), 1.0)
