"""Sequence packing: several pretraining sequences in one row, no padding
spent on compute, and no token attending across sequences.

`create_pretraining_data.py` never lets an instance cross a document, so on
real text many rows are mostly padding (at sequence 512 on Wikipedia, more
than half of the tokens; Krell et al., 2021, "Efficient Sequence Packing
without Cross-contamination"). Packing puts up to `max_sequences_per_pack`
sequences into one row of `max_seq_length` tokens, as they are read:

    row:           [CLS] a1 a2 [SEP] b1 [SEP] [CLS] c1 [SEP] d1 d2 [SEP] pad
    position_ids:    0   1  2   3    4   5     0    1   2    3  4   5    0
    segment_ids:     0   0  0   0    1   1     0    0   0    1  1   1    0
    sequence_ids:    1   1  1   1    1   1     2    2   2    2  2   2    0

The model attends within each sequence only (`sequence_ids` make the
attention mask block-diagonal), positions and token types restart per
sequence, the masked-LM positions are offset into the row and the
next-sentence head reads each sequence's [CLS] (`next_sentence_positions`).
Every sequence's outputs are then those of its unpacked row, and the losses
(summed over the batch's masked positions and sequences, divided by their
counts) are the unpacked batch's on the same sequences.

A packed row's features, for `k = max_sequences_per_pack` and
`p = max_predictions_per_seq`:

| feature                 | dtype   | shape           |
|-------------------------|---------|-----------------|
| input_ids               | int32   | [seq]           |
| input_mask              | int32   | [seq]           |
| segment_ids             | int32   | [seq]           |
| position_ids            | int32   | [seq]           |
| sequence_ids            | int32   | [seq] (1..k, 0 for padding) |
| masked_lm_positions     | int32   | [p + k]         |
| masked_lm_ids           | int32   | [p + k]         |
| masked_lm_weights       | float32 | [p + k]         |
| next_sentence_labels    | int32   | [k]             |
| next_sentence_positions | int32   | [k]             |
| next_sentence_weights   | float32 | [k] (1 for a sequence, 0 for none) |

(the masked-LM slots: `predictions_per_row`).

Rows are filled by best-fit decreasing over a buffer of sequences (Krell et
al.'s histogram packing is the same rule over the histogram of a whole
data set): longest first, each into the open row with the least room that
still fits it (tokens and masked-LM slots) and holds fewer than `k`
sequences. Training shuffles the rows, which leave the packer longest
first.
"""

import threading

from absl import logging
import numpy as np

from bert_tf.pretraining import records

# TensorFlow is imported by `packed_dataset` only: the feature names and the
# numpy packing serve the model and its loss on every backend, and a
# TensorFlow-free process (the JAX GPU benchmark) imports them.

POSITION_IDS = "position_ids"
SEQUENCE_IDS = "sequence_ids"
NEXT_SENTENCE_POSITIONS = "next_sentence_positions"
NEXT_SENTENCE_WEIGHTS = "next_sentence_weights"

# Sequences packed together: a larger buffer fills rows better (fewer
# leftovers per buffer) and costs memory and a longer wait for the first
# batch.
PACKING_BUFFER_SEQUENCES = 2048
# Packed rows shuffled in training: those of a buffer leave the packer
# longest first.
ROW_SHUFFLE_BUFFER = 2048


def predictions_per_row(max_predictions_per_seq, max_sequences_per_pack):
    """The masked-LM slots of a packed row: p + k.

    Google's records mask `min(p, max(1, round(length * masked_lm_prob)))`
    tokens, so k sequences sharing a row of `max_seq_length` tokens (with
    `p >= round(max_seq_length * masked_lm_prob)`, as in Google's recipes)
    have at most p + k / 2 of them between them. Rows of records masked
    more densely get fewer sequences: the slots are a packing constraint.
    Fewer slots than k * p keep the masked-LM head's work per row near the
    unpacked row's.
    """
    return max_predictions_per_seq + max_sequences_per_pack


def pack_lengths(lengths, max_seq_length, max_sequences_per_pack,
                 predictions=None, max_predictions=None):
    """Groups sequences into rows: best-fit decreasing, at most k per row.

    Args:
      lengths: the sequences' token counts, each in [1, max_seq_length].
      max_seq_length: the tokens a row holds.
      max_sequences_per_pack: the sequences a row holds at most (k).
      predictions: optional, each sequence's masked-LM predictions, each at
        most `max_predictions`.
      max_predictions: with `predictions`, the predictions a row holds.

    Returns:
      A list of rows, each a list of indices into `lengths` (in the order
      they are placed in the row).
    """
    lengths = np.asarray(lengths, np.int64)
    if predictions is None:
        predictions = np.zeros_like(lengths)
        max_predictions = 0
    predictions = np.asarray(predictions, np.int64)
    order = np.argsort(-lengths, kind="stable")  # longest first
    rows = []
    # Token and prediction room left in each open row; a full row (k
    # sequences) gets token room -1.
    room = np.full(len(lengths), -1, np.int64)
    prediction_room = np.zeros(len(lengths), np.int64)
    for index in order:
        length = lengths[index]
        # The open row with the least room that fits the sequence.
        fits = ((room[:len(rows)] >= length)
                & (prediction_room[:len(rows)] >= predictions[index]))
        fitting = np.where(fits, room[:len(rows)], max_seq_length + 1)
        best = int(np.argmin(fitting)) if rows else 0
        if not rows or fitting[best] > max_seq_length:
            best = len(rows)
            rows.append([])
            room[best] = max_seq_length
            prediction_room[best] = max_predictions
        rows[best].append(int(index))
        room[best] -= length
        prediction_room[best] -= predictions[index]
        if len(rows[best]) == max_sequences_per_pack:
            room[best] = -1
    return rows


class PackingStats:
    """Counts what packing did, and logs the fill rate now and then.

    Thread-safe: tf.data may run the packing of several buffers at once.
    """

    def __init__(self, max_seq_length):
        self.max_seq_length = max_seq_length
        self.sequences = 0
        self.rows = 0
        self.tokens = 0
        self.buffers = 0
        self._lock = threading.Lock()

    @property
    def packed_fill(self):
        """The fraction of packed row tokens that are real tokens."""
        return self.tokens / max(self.rows * self.max_seq_length, 1)

    @property
    def unpacked_fill(self):
        """The same fraction without packing: one sequence per row."""
        return self.tokens / max(self.sequences * self.max_seq_length, 1)

    def add(self, lengths, num_rows):
        with self._lock:
            self.sequences += len(lengths)
            self.rows += num_rows
            self.tokens += int(np.sum(lengths))
            self.buffers += 1
            # Buffers 1, 2, 4, 8, ...: a few lines, however long the run.
            if self.buffers & (self.buffers - 1) == 0:
                logging.info(
                    "sequence packing: %d sequences in %d rows of %d "
                    "tokens, %.1f%% of row tokens real (unpacked: %.1f%%), "
                    "%.2f sequences per row", self.sequences, self.rows,
                    self.max_seq_length, 100 * self.packed_fill,
                    100 * self.unpacked_fill,
                    self.sequences / max(self.rows, 1))


def pack_features(features, max_sequences_per_pack, stats=None):
    """Packs a buffer of unpacked examples into rows (numpy).

    Args:
      features: dict of numpy arrays, a batch of examples with the
        pretraining features (`bert_tf.pretraining.dataset`'s), real
        tokens first in each row of `input_mask`.
      max_sequences_per_pack: the sequences a row holds at most (k).
      stats: optional `PackingStats` to count into.

    Returns:
      A dict of numpy arrays [rows, ...], the packed features (see the
      module docstring).
    """
    input_ids = features[records.INPUT_IDS]
    num_examples, max_seq_length = input_ids.shape
    k = max_sequences_per_pack
    slots = predictions_per_row(
        features[records.MASKED_LM_POSITIONS].shape[1], k)
    lengths = np.sum(features[records.INPUT_MASK] != 0, axis=1)
    is_prediction = features[records.MASKED_LM_WEIGHTS] != 0
    rows = pack_lengths(np.maximum(lengths, 1), max_seq_length, k,
                        np.sum(is_prediction, axis=1), slots)
    if stats is not None:
        stats.add(lengths, len(rows))

    def zeros(width, dtype=np.int32):
        return np.zeros([len(rows), width], dtype)

    packed = {name: zeros(max_seq_length) for name in (
        records.INPUT_IDS, records.INPUT_MASK, records.SEGMENT_IDS,
        POSITION_IDS, SEQUENCE_IDS)}
    packed.update({name: zeros(slots) for name in (
        records.MASKED_LM_POSITIONS, records.MASKED_LM_IDS)})
    packed[records.MASKED_LM_WEIGHTS] = zeros(slots, np.float32)
    packed.update({name: zeros(k) for name in (
        records.NEXT_SENTENCE_LABELS, NEXT_SENTENCE_POSITIONS)})
    packed[NEXT_SENTENCE_WEIGHTS] = zeros(k, np.float32)
    labels = np.reshape(features[records.NEXT_SENTENCE_LABELS],
                        [num_examples])
    for row, members in enumerate(rows):
        start = 0
        used_slots = 0  # the row's predictions so far
        for slot, example in enumerate(members):
            length = lengths[example]
            tokens = slice(start, start + length)
            for name in (records.INPUT_IDS, records.INPUT_MASK,
                         records.SEGMENT_IDS):
                packed[name][row, tokens] = features[name][example, :length]
            packed[POSITION_IDS][row, tokens] = np.arange(length)
            packed[SEQUENCE_IDS][row, tokens] = slot + 1
            # The real predictions, one after another; the row's padding
            # slots stay position 0, id 0, weight 0, as in Google's records.
            real = is_prediction[example]
            predictions = slice(used_slots, used_slots + np.sum(real))
            packed[records.MASKED_LM_POSITIONS][row, predictions] = (
                features[records.MASKED_LM_POSITIONS][example][real] + start)
            packed[records.MASKED_LM_IDS][row, predictions] = (
                features[records.MASKED_LM_IDS][example][real])
            packed[records.MASKED_LM_WEIGHTS][row, predictions] = (
                features[records.MASKED_LM_WEIGHTS][example][real])
            used_slots = predictions.stop
            packed[records.NEXT_SENTENCE_LABELS][row, slot] = labels[example]
            packed[NEXT_SENTENCE_POSITIONS][row, slot] = start
            packed[NEXT_SENTENCE_WEIGHTS][row, slot] = 1.0
            start += length
    return packed


def packed_feature_shapes(max_seq_length, max_predictions_per_seq,
                          max_sequences_per_pack):
    """{feature: (dtype name, per-row shape)} of packed rows."""
    k = max_sequences_per_pack
    predictions = predictions_per_row(max_predictions_per_seq, k)
    return {
        records.INPUT_IDS: ("int32", [max_seq_length]),
        records.INPUT_MASK: ("int32", [max_seq_length]),
        records.SEGMENT_IDS: ("int32", [max_seq_length]),
        POSITION_IDS: ("int32", [max_seq_length]),
        SEQUENCE_IDS: ("int32", [max_seq_length]),
        records.MASKED_LM_POSITIONS: ("int32", [predictions]),
        records.MASKED_LM_IDS: ("int32", [predictions]),
        records.MASKED_LM_WEIGHTS: ("float32", [predictions]),
        records.NEXT_SENTENCE_LABELS: ("int32", [k]),
        NEXT_SENTENCE_POSITIONS: ("int32", [k]),
        NEXT_SENTENCE_WEIGHTS: ("float32", [k]),
    }


def packed_dataset(examples, batch_size, max_seq_length,
                   max_predictions_per_seq, max_sequences_per_pack,
                   is_training, *, buffer_size=PACKING_BUFFER_SEQUENCES,
                   stats=None, seed=None):
    """Batches of packed rows from a stream of unpacked examples.

    Args:
      examples: a `tf.data.Dataset` of single examples (feature dicts of
        `bert_tf.pretraining.dataset.pretraining_dataset`, unbatched).
      batch_size: rows per batch.
      max_seq_length, max_predictions_per_seq: the examples' lengths.
      max_sequences_per_pack: the sequences a row holds at most (k >= 1).
      is_training: training drops a last, smaller batch (the stream is
        endless anyway); evaluation pads the last batch with empty rows
        (no token, no prediction, no sequence: they count nowhere), so
        every example is evaluated and every batch has `batch_size` rows.
      buffer_size: examples packed together.
      stats: a `PackingStats` to count into (default: a new one, which
        logs the fill rate).
      seed: the training row shuffle's seed (None: a random one).

    Returns:
      A `tf.data.Dataset` of packed feature dicts [batch_size, ...] (see
      the module docstring).

    Raises:
      ValueError: `max_sequences_per_pack` or `batch_size` below 1.
    """
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    if max_sequences_per_pack < 1:
        raise ValueError(f"--max_sequences_per_pack={max_sequences_per_pack}"
                         f" must be at least 1")
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    stats = stats or PackingStats(max_seq_length)
    shapes = packed_feature_shapes(max_seq_length, max_predictions_per_seq,
                                   max_sequences_per_pack)
    names = list(shapes)

    def pack_buffer(*values):
        packed = pack_features(
            {name: value for name, value in zip(input_names, values)},
            max_sequences_per_pack, stats)
        return [packed[name] for name in names]

    input_names = list(examples.element_spec)

    @tf.autograph.experimental.do_not_convert
    def pack(features):
        outputs = tf.numpy_function(
            pack_buffer, [features[name] for name in input_names],
            [tf.as_dtype(shapes[name][0]) for name in names],
            stateful=False)
        packed = {}
        for name, output in zip(names, outputs):
            output.set_shape([None] + shapes[name][1])
            packed[name] = output
        return packed

    rows = examples.batch(buffer_size).map(
        pack, num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True).unbatch()
    if is_training:
        rows = rows.shuffle(ROW_SHUFFLE_BUFFER, seed=seed)
        return rows.batch(batch_size, drop_remainder=True).prefetch(
            tf.data.AUTOTUNE)

    @tf.autograph.experimental.do_not_convert
    def pad_batch(batch):
        missing = batch_size - tf.shape(batch[records.INPUT_IDS])[0]
        padded = {}
        for name, value in batch.items():
            value = tf.pad(value, [[0, missing], [0, 0]])
            value.set_shape([batch_size] + shapes[name][1])
            padded[name] = value
        return padded

    return rows.batch(batch_size).map(pad_batch).prefetch(tf.data.AUTOTUNE)
