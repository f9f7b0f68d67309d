"""Full evaluation batches (TPUs) for the in-memory tasks: padding counts 0.

Tagging, multiple choice and multi-label pad their evaluation set with
weight-0 rows to a multiple of the global batch when a fixed batch shape is
needed (`pad_to_full_batches`, the classifier's rule). Forced here on CPU:
the padded evaluation must report exactly what the unpadded one does, and
the unpadded one what numpy / scikit-learn compute from the model's outputs
on all rows at once.
"""

import dataclasses

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data import in_memory
from bert_tf.tasks import base
from bert_tf.tasks.base import ArraysDataConfig
from bert_tf.tasks.classification import multi_label_task as multi_label
from bert_tf.tasks.multiple_choice import task as multiple_choice
from bert_tf.tasks.tagging import examples as examples_lib
from bert_tf.tasks.tagging import features as features_lib
from bert_tf.tasks.tagging import task as tagging

BATCH_SIZE = 4
NUM_ROWS = 7  # two batches: 4 rows and a partial one of 3 (padded with 1)


def test_pad_to_batch_multiple_appends_zero_rows_flagged_unreal():
    arrays = {"a": np.arange(10, dtype=np.int32).reshape(5, 2),
              "b": np.ones([5], np.float32)}
    padded = in_memory.pad_to_batch_multiple(arrays, 4)
    np.testing.assert_array_equal(padded["a"][:5], arrays["a"])
    np.testing.assert_array_equal(padded["a"][5:], np.zeros([3, 2]))
    np.testing.assert_array_equal(padded["b"], [1] * 5 + [0] * 3)
    np.testing.assert_array_equal(padded[in_memory.IS_REAL_EXAMPLE],
                                  [1] * 5 + [0] * 3)
    assert padded["a"].dtype == np.int32
    # A multiple already: nothing added, all real.
    same = in_memory.pad_to_batch_multiple(arrays, 5)
    assert len(same["a"]) == 5 and same[in_memory.IS_REAL_EXAMPLE].all()


def test_padded_dataset_has_static_full_batches_of_the_global_batch():
    arrays = {"x": np.arange(7, dtype=np.int32)}
    dataset = in_memory.in_memory_dataset(arrays, False, 2,
                                          pad_to_full_batches=True)
    assert dataset.element_spec["x"].shape.as_list() == [2]
    rows = np.concatenate([batch["x"].numpy() for batch in dataset])
    np.testing.assert_array_equal(rows, list(range(7)) + [0])
    # Two replicas in sync fed by one pipeline: a multiple of 2 x 2 rows.
    context = tf.distribute.InputContext(num_input_pipelines=1,
                                         input_pipeline_id=0,
                                         num_replicas_in_sync=2)
    dataset = in_memory.in_memory_dataset(arrays, False, 2, context,
                                          pad_to_full_batches=True)
    weights = np.concatenate([batch[in_memory.IS_REAL_EXAMPLE].numpy()
                              for batch in dataset])
    np.testing.assert_array_equal(weights, [1] * 7 + [0])
    # Without the fixed shape: a partial last batch, no flag column.
    dataset = in_memory.in_memory_dataset(arrays, False, 2)
    assert dataset.element_spec["x"].shape.as_list() == [None]
    assert in_memory.IS_REAL_EXAMPLE not in dataset.element_spec


def _evaluate_both_ways(task, tmp_path):
    """(unpadded results, padded results, trainer) with the same weights."""
    from bert_tf.training.trainer import Trainer, TrainerConfig
    trainer = Trainer(task, TrainerConfig(output_dir=str(tmp_path / "out"),
                                          eval_batch_size=BATCH_SIZE,
                                          max_eval_steps=None))
    unpadded = trainer.evaluate()
    task.data_config = dataclasses.replace(task.data_config,
                                           pad_to_full_batches=True)
    fixed = task.build_inputs(base.EVAL, BATCH_SIZE)
    assert all(spec.shape[0] == BATCH_SIZE
               for spec in fixed.element_spec.values())
    assert sum(1 for _ in fixed) == 2
    padded = trainer.evaluate()
    assert set(padded) == set(unpadded)
    for key in unpadded:
        np.testing.assert_allclose(padded[key], unpadded[key], rtol=1e-6,
                                   err_msg=key)
    return unpadded, trainer


def _all_rows(trainer, arrays):
    return trainer.model({k: tf.constant(v) for k, v in arrays.items()},
                         training=False)


def test_multiple_choice_padding_counts_for_nothing(tiny_config, tmp_path):
    rng = np.random.default_rng(0)
    shape = (NUM_ROWS, 3, 8)
    arrays = {"input_ids": rng.integers(4, 100, shape).astype(np.int32),
              "input_mask": np.ones(shape, np.int32),
              "segment_ids": np.zeros(shape, np.int32),
              "label_ids": rng.integers(0, 3, NUM_ROWS).astype(np.int32)}
    task = multiple_choice.MultipleChoiceTask(
        tiny_config, ArraysDataConfig(
            eval_arrays=arrays, max_seq_length=8))
    results, trainer = _evaluate_both_ways(task, tmp_path)
    logits = _all_rows(trainer, arrays)["logits"].numpy().astype(np.float64)
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    labels = arrays["label_ids"]
    assert results["eval_accuracy"] == pytest.approx(
        (logits.argmax(-1) == labels).mean(), abs=1e-6)
    assert results["eval_loss"] == pytest.approx(
        -log_probs[np.arange(NUM_ROWS), labels].mean(), rel=1e-5)


def test_multi_label_padding_counts_for_nothing(tiny_config, tmp_path):
    from sklearn import metrics as sk_metrics
    rng = np.random.default_rng(1)
    arrays = {"input_ids": rng.integers(4, 100, (NUM_ROWS, 8)).astype(
                  np.int32),
              "input_mask": np.ones((NUM_ROWS, 8), np.int32),
              "segment_ids": np.zeros((NUM_ROWS, 8), np.int32),
              "label_ids": (rng.random((NUM_ROWS, 3)) < 0.5).astype(
                  np.int32)}
    task = multi_label.MultiLabelTask(
        tiny_config, ["a", "b", "c"], ArraysDataConfig(
            eval_arrays=arrays, max_seq_length=8), threshold=0.5)
    results, trainer = _evaluate_both_ways(task, tmp_path)
    logits = _all_rows(trainer, arrays)["logits"].numpy()
    predicted = (1 / (1 + np.exp(-logits)) >= 0.5).astype(int)
    labels = arrays["label_ids"]
    assert results["eval_micro_f1"] == pytest.approx(sk_metrics.f1_score(
        labels, predicted, average="micro", zero_division=0), abs=1e-6)
    assert results["eval_accuracy"] == pytest.approx(
        sk_metrics.accuracy_score(labels, predicted), abs=1e-6)


@pytest.mark.parametrize("use_crf", [False, True])
def test_tagging_padding_counts_for_nothing(tiny_config, tmp_path, use_crf):
    import seqeval.metrics
    labels = ["B-LOC", "B-PER", "I-PER", "O"]
    rng = np.random.default_rng(2)
    sentences, windows = [], []
    for index in range(NUM_ROWS):
        n = int(rng.integers(1, 6))
        sentences.append(examples_lib.TaggedSentence(
            [f"w{i}" for i in range(n)],
            [labels[i] for i in rng.integers(0, 4, n)], list(range(n))))
        windows.append(features_lib.TaggingWindow(
            input_ids=[2] + list(rng.integers(5, 100, n)) + [3]
            + [0] * (8 - n - 2),
            input_mask=[1] * (n + 2) + [0] * (8 - n - 2),
            segment_ids=[0] * 8,
            word_positions=list(range(1, n + 1)) + [0] * (8 - n),
            word_mask=[1] * n + [0] * (8 - n),
            label_ids=[labels.index(label) for label in
                       sentences[-1].labels] + [0] * (8 - n),
            label_weights=[1] * n + [0] * (8 - n),
            sentence_index=index, first_word=0))
    tagging_set = tagging.TaggingSet(
        examples_lib.TaggingFile("t.txt", "conll", [], sentences, True),
        features_lib.windows_to_arrays(windows, 8))
    task = tagging.TaggingTask(
        tiny_config, labels, tagging.TaggingDataConfig(
            eval_set=tagging_set, max_seq_length=8), use_crf=use_crf)
    results, trainer = _evaluate_both_ways(task, tmp_path)
    predicted_ids = _all_rows(trainer,
                              tagging_set.arrays)["predicted_ids"].numpy()
    predicted = [[labels[i] for i in predicted_ids[row][:len(sentence.words)]]
                 for row, sentence in enumerate(sentences)]
    gold = [sentence.labels for sentence in sentences]
    assert results["eval_f1"] == pytest.approx(
        seqeval.metrics.f1_score(gold, predicted), abs=1e-6)
    assert results["eval_accuracy"] == pytest.approx(
        seqeval.metrics.accuracy_score(gold, predicted), abs=1e-6)
