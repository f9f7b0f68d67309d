"""In-graph packing of token ids into model inputs, as the runners pack them.

`run_classifier.py` (Google's `convert_single_example`) builds

    [CLS] a [SEP]              segment ids 0 ... 0            (one text)
    [CLS] a [SEP] b [SEP]      segment ids 0 ... 0 1 ... 1    (a pair)

then pads with zeros to `max_seq_length` -- or, for serving, only to the
longest row of the request rounded up to `pad_to_multiple_of` (the model's
outputs for a row do not depend on the padding after it). One text keeps its first
`max_seq_length - 2` pieces; a pair is cut to `max_seq_length - 3` pieces
one at a time from the end of the longer text (of text b when both are as
long). Here the same happens to a whole batch of ragged ids at once; the
truncation lengths have a closed form (see `truncated_pair_lengths`).
"""

import tensorflow as tf


def truncated_pair_lengths(length_a, length_b, budget):
    """The lengths Google's `_truncate_seq_pair` leaves, for a batch.

    The loop "pop from the longer, from b on ties, while a + b > budget"
    first shortens the longer text to the other's length, then alternates
    b, a, b, ...; so it ends at:
      - nothing removed, when a + b <= budget;
      - only a shortened, to budget - b, when 2 b <= budget;
      - only b shortened, to budget - a, when 2 a <= budget + 1;
      - otherwise a = ceil(budget / 2) and b = floor(budget / 2).

    Args:
      length_a: int tensor [batch], pieces of text a.
      length_b: int tensor [batch], pieces of text b.
      budget: the most pieces both may keep together (a Python int).

    Returns:
      `(new_length_a, new_length_b)`, int tensors [batch].
    """
    fits = length_a + length_b <= budget
    only_a = 2 * length_b <= budget
    only_b = 2 * length_a <= budget + 1
    new_a = tf.where(fits | only_b, length_a,
                     tf.where(only_a, budget - length_b,
                              tf.ones_like(length_a) * ((budget + 1) // 2)))
    new_b = tf.where(fits | only_a, length_b,
                     tf.where(only_b, budget - length_a,
                              tf.ones_like(length_b) * (budget // 2)))
    return new_a, new_b


def pack_inputs(ids_a, ids_b, max_seq_length, cls_id, sep_id,
                pad_to_multiple_of=None):
    """Model inputs for a batch of one text or of text pairs.

    Args:
      ids_a: int32 `RaggedTensor` [batch, (pieces)], text a's word pieces.
      ids_b: the same for text b, or None. A row of b without pieces (an
        empty text) gets the one-text layout, as in Google's code.
      max_seq_length: the length of every output row (Python int >= 3).
      cls_id: the id of "[CLS]".
      sep_id: the id of "[SEP]".
      pad_to_multiple_of: None pads every row to `max_seq_length`; an int
        pads to the batch's longest row rounded up to a multiple of it (at
        most `max_seq_length`). Truncation is `max_seq_length`'s either way.

    Returns:
      A dict of int32 tensors [batch, length]: `input_ids`, `input_mask`,
      `segment_ids`; `length` is `max_seq_length`, or the rounded length.
    """
    ids_a = tf.cast(ids_a, tf.int32)
    batch_size = ids_a.nrows()
    length_a = tf.cast(ids_a.row_lengths(), tf.int32)
    if ids_b is None:
        ids_b = tf.RaggedTensor.from_row_lengths(
            tf.zeros([0], tf.int32), tf.zeros([batch_size], tf.int64))
    ids_b = tf.cast(ids_b, tf.int32)
    length_b = tf.cast(ids_b.row_lengths(), tf.int32)
    has_b = length_b > 0
    pair_a, pair_b = truncated_pair_lengths(length_a, length_b,
                                            max_seq_length - 3)
    keep_a = tf.where(has_b, pair_a,
                      tf.minimum(length_a, max_seq_length - 2))
    keep_b = tf.where(has_b, pair_b, 0)
    kept_a = tf.ragged.boolean_mask(
        ids_a, tf.ragged.range(length_a) < keep_a[:, tf.newaxis])
    kept_b = tf.ragged.boolean_mask(
        ids_b, tf.ragged.range(length_b) < keep_b[:, tf.newaxis])

    def column(value):
        return tf.fill([batch_size, 1], tf.constant(value, tf.int32))

    # The second [SEP] only where there is a text b: one (possibly empty)
    # piece per row.
    second_sep = tf.ragged.boolean_mask(column(sep_id), has_b[:, tf.newaxis])
    ids = tf.concat([column(cls_id), kept_a, column(sep_id), kept_b,
                     second_sep], axis=1)
    segments = tf.concat([
        tf.zeros_like(column(0)), tf.zeros_like(kept_a), column(0),
        tf.ones_like(kept_b), tf.ones_like(second_sep)], axis=1)
    length = max_seq_length
    if pad_to_multiple_of is not None:
        longest = tf.cast(tf.reduce_max(tf.concat(
            [ids.row_lengths(), [1]], 0)), tf.int32)
        length = tf.cast(tf.minimum(
            (longest + pad_to_multiple_of - 1) // pad_to_multiple_of
            * pad_to_multiple_of, max_seq_length), batch_size.dtype)
    shape = [batch_size, length]
    return {
        "input_ids": ids.to_tensor(0, shape=shape),
        "input_mask": tf.ones_like(ids).to_tensor(0, shape=shape),
        "segment_ids": segments.to_tensor(0, shape=shape),
    }
