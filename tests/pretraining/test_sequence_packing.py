"""Sequence packing (`--pack_sequences`): rows filled as computed by hand,
attention that never crosses sequences, and a packed batch's loss,
gradients, eval metrics and checkpoint names equal to the unpacked batch's
of the same sequences (the unpacked path is Google's, held to its golden
outputs by tests/modeling and tests/pretraining/test_run_pretraining.py).
"""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.config import BertConfig
from bert_tf.modeling import BertModel
from bert_tf.pretraining import records
from bert_tf.pretraining import sequence_packing
from bert_tf.pretraining import task as pretraining
from bert_tf.tasks import base

from pretraining_harness import make_pretraining_arrays

# Records of 16 tokens (8 to 16 real) in rows of 48: three fit in a row.
SEQ, ROW, PREDICTIONS = 16, 48, 4


def _no_dropout_config():
    return BertConfig(
        vocab_size=100, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=37,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
        max_position_embeddings=64)


def _unpacked_examples(num_examples, seed=0):
    """Model-ready unpacked examples, padded from SEQ to ROW tokens."""
    arrays = make_pretraining_arrays(num_examples, SEQ, PREDICTIONS, seed=seed)
    features = {}
    for name, value in arrays.items():
        if name in (records.INPUT_IDS, records.INPUT_MASK,
                    records.SEGMENT_IDS):
            value = np.pad(value, [[0, 0], [0, ROW - SEQ]])
        if value.dtype == np.int64:
            value = value.astype(np.int32)
        features[name] = value
    features[records.NEXT_SENTENCE_LABELS] = (
        features[records.NEXT_SENTENCE_LABELS].reshape(-1))
    return features


def _tensors(features):
    return {name: tf.constant(value) for name, value in features.items()}


# -- (d) packing fills rows ---------------------------------------------------

def test_best_fit_decreasing_by_hand():
    # Longest first: 7 opens row 0 (room 3), 6 opens row 1 (room 4), 5
    # opens row 2 (room 5), 3 fills row 0 exactly, 2 goes to the row with
    # the least room that fits it, row 1.
    lengths = [5, 3, 7, 2, 6]
    assert sequence_packing.pack_lengths(lengths, 10, 3) == [
        [2, 1], [4, 3], [0]]
    # 23 real tokens in 3 rows of 10 (unpacked: 5 rows of 10).


def test_masked_lm_slots_are_a_packing_constraint():
    # Rows of 10 tokens and 5 predictions: 4 + 3 predictions do not share
    # a row though their tokens would; 3 + 2 do.
    assert sequence_packing.pack_lengths(
        [3, 3, 2], 10, 3, predictions=[4, 3, 2], max_predictions=5) == [
        [0], [1, 2]]


def test_at_most_k_sequences_per_row():
    assert sequence_packing.pack_lengths([1] * 7, 10, 3) == [
        [0, 1, 2], [3, 4, 5], [6]]
    assert sequence_packing.pack_lengths([4, 4], 10, 1) == [[0], [1]]


def test_packed_row_by_hand():
    features = {
        records.INPUT_IDS: np.array([[101, 7, 102, 8, 102, 0, 0, 0],
                                     [101, 9, 102, 5, 6, 102, 0, 0]]),
        records.INPUT_MASK: np.array([[1, 1, 1, 1, 1, 0, 0, 0],
                                      [1, 1, 1, 1, 1, 1, 0, 0]]),
        records.SEGMENT_IDS: np.array([[0, 0, 0, 1, 1, 0, 0, 0],
                                       [0, 0, 0, 1, 1, 1, 0, 0]]),
        records.MASKED_LM_POSITIONS: np.array([[1, 0], [3, 4]]),
        records.MASKED_LM_IDS: np.array([[11, 0], [13, 14]]),
        records.MASKED_LM_WEIGHTS: np.array([[1, 0], [1, 1]], np.float32),
        records.NEXT_SENTENCE_LABELS: np.array([1, 0]),
    }
    # Too long for one row of 8 tokens... but not for one of 11.
    features = {name: (np.pad(value, [[0, 0], [0, 3]])
                       if value.shape[1:] == (8,) else value)
                for name, value in features.items()}
    packed = sequence_packing.pack_features(features, 2)
    expected = {
        # The longer sequence (6 tokens) first, then the other (5).
        records.INPUT_IDS: [[101, 9, 102, 5, 6, 102, 101, 7, 102, 8, 102]],
        records.INPUT_MASK: [[1] * 11],
        records.SEGMENT_IDS: [[0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1]],
        sequence_packing.POSITION_IDS: [[0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4]],
        sequence_packing.SEQUENCE_IDS: [[1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2]],
        # p + k = 4 slots: the three real predictions, then padding.
        records.MASKED_LM_POSITIONS: [[3, 4, 7, 0]],
        records.MASKED_LM_IDS: [[13, 14, 11, 0]],
        records.MASKED_LM_WEIGHTS: [[1, 1, 1, 0]],
        records.NEXT_SENTENCE_LABELS: [[0, 1]],
        sequence_packing.NEXT_SENTENCE_POSITIONS: [[0, 6]],
        sequence_packing.NEXT_SENTENCE_WEIGHTS: [[1, 1]],
    }
    assert set(packed) == set(expected)
    for name, value in expected.items():
        np.testing.assert_array_equal(packed[name], value, err_msg=name)


def test_packed_dataset_keeps_every_sequence_and_pads_the_eval_batch():
    features = _unpacked_examples(20)
    stats = sequence_packing.PackingStats(ROW)
    dataset = sequence_packing.packed_dataset(
        tf.data.Dataset.from_tensor_slices(features), 4, ROW, PREDICTIONS, 3,
        is_training=False, buffer_size=8, stats=stats)
    batches = list(dataset.as_numpy_iterator())
    assert all(len(batch[records.INPUT_IDS]) == 4 for batch in batches)
    weights = np.concatenate([
        batch[sequence_packing.NEXT_SENTENCE_WEIGHTS].reshape(-1)
        for batch in batches])
    assert weights.sum() == 20 == stats.sequences
    assert sum(batch[records.INPUT_MASK].sum() for batch in batches) == (
        features[records.INPUT_MASK].sum()) == stats.tokens
    # 8 to 16 real tokens per sequence, so any three fit in a row of 48
    # tokens (and these examples' predictions in its 4 + 3 slots):
    # buffers of 8, 8 and 4 sequences make 3, 3 and 2 rows.
    assert stats.rows == 8
    assert all((batch[records.MASKED_LM_WEIGHTS].sum(axis=1) <= 7).all()
               for batch in batches)
    assert stats.packed_fill == pytest.approx(stats.tokens / (8 * ROW))
    assert stats.unpacked_fill == pytest.approx(stats.tokens / (20 * ROW))


# -- (c) block-diagonal attention ---------------------------------------------

def test_a_token_sees_only_its_own_sequence():
    """Each packed sequence's outputs are those it has alone in a row, and
    do not move when another sequence of the row changes."""
    model = BertModel(_no_dropout_config())
    features = _unpacked_examples(3)
    packed = sequence_packing.pack_features(features, 3)
    assert packed[sequence_packing.NEXT_SENTENCE_WEIGHTS].sum() == 3
    assert len(packed[records.INPUT_IDS]) == 1

    def encode(row):
        return model(row[records.INPUT_IDS],
                     input_mask=row[records.INPUT_MASK],
                     segment_ids=row[records.SEGMENT_IDS],
                     position_ids=row[sequence_packing.POSITION_IDS],
                     sequence_ids=row[sequence_packing.SEQUENCE_IDS]
                     )["sequence_output"].numpy()[0]

    unpacked = model(features[records.INPUT_IDS],
                     input_mask=features[records.INPUT_MASK],
                     segment_ids=features[records.SEGMENT_IDS]
                     )["sequence_output"].numpy()
    outputs = encode(packed)
    sequence_ids = packed[sequence_packing.SEQUENCE_IDS][0]
    lengths = features[records.INPUT_MASK].sum(axis=1)
    order = sorted(range(3), key=lambda i: -lengths[i])  # longest first
    for slot, example in enumerate(order):
        tokens = sequence_ids == slot + 1
        np.testing.assert_allclose(outputs[tokens],
                                   unpacked[example, :lengths[example]],
                                   atol=1e-5)
    # Other tokens for the second sequence: the first and third are as
    # they were, to the bit.
    changed = dict(packed)
    changed[records.INPUT_IDS] = np.where(
        sequence_ids == 2, (packed[records.INPUT_IDS] + 7) % 100,
        packed[records.INPUT_IDS])
    changed_outputs = encode(changed)
    others = (sequence_ids == 1) | (sequence_ids == 3)
    np.testing.assert_array_equal(changed_outputs[others], outputs[others])
    assert not np.allclose(changed_outputs[sequence_ids == 2],
                           outputs[sequence_ids == 2])


# -- (b) a training step: loss and gradients ------------------------------------

@pytest.mark.parametrize("objective", [pretraining.MLM_NSP, pretraining.MLM])
def test_packed_batch_loss_and_gradients_are_the_unpacked_batchs(objective):
    config = _no_dropout_config()
    task = pretraining.PretrainingTask(
        config, pretraining.PretrainingDataConfig(
            input_patterns=("unused",), max_seq_length=ROW,
            max_predictions_per_seq=PREDICTIONS, pack_sequences=True),
        objective=objective)
    model = task.build_model()
    features = _unpacked_examples(9, seed=3)
    packed = sequence_packing.pack_features(features, 3)
    assert len(packed[records.INPUT_IDS]) < 9  # several sequences per row

    def loss_and_gradients(batch):
        batch = _tensors(batch)
        with tf.GradientTape() as tape:
            outputs = model(batch, training=True)
            loss, metrics = task.compute_loss(
                batch, outputs, task.loss_denominators(batch))
        gradients = tape.gradient(loss, model.trainable_variables)
        # The "No NSP" objective leaves the next-sentence head without one.
        return loss.numpy(), metrics, [
            None if g is None else tf.convert_to_tensor(g).numpy()
            for g in gradients]

    loss, metrics, gradients = loss_and_gradients(features)
    packed_loss, packed_metrics, packed_gradients = loss_and_gradients(packed)
    np.testing.assert_allclose(packed_loss, loss, rtol=1e-5)
    for name, value in metrics.items():
        np.testing.assert_allclose(packed_metrics[name].numpy(),
                                   value.numpy(), rtol=1e-5, err_msg=name)
    if objective == pretraining.MLM_NSP:
        assert metrics["next_sentence_count"].numpy() == 9
    for variable, want, got in zip(model.trainable_variables, gradients,
                                   packed_gradients):
        assert (got is None) == (want is None), variable.path
        if want is None:
            continue
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-7,
                                   err_msg=variable.path)
