"""The TFRecord schema of Google's pretraining data, and a fast encoder.

Google's `create_pretraining_data.py` writes one `tf.train.Example` per
instance with seven features (names below), into one or more TFRecord files,
round-robin. This module holds:

* the schema: feature-name constants and `pretraining_feature_spec`, the
  `tf.io.parse_example` spec of one record;
* `PretrainingExampleEncoder`: builds the serialized `tf.train.Example` bytes
  directly from the protobuf wire format, with the constant parts (feature
  keys, masks, weights, labels) built once: one record at a time (`encode`)
  or a batch of records as numpy byte matrices (`record_blocks`, with
  `varint_rows`). Building a `tf.train.Example` object per instance costs
  more than everything else in instance creation.

The files are written by `bert_tf.data.tfrecord_files`. TensorFlow is
imported lazily: only `pretraining_feature_spec` needs it.
"""

import struct

import numpy as np

# Feature names, exactly as Google's create_pretraining_data.py writes them.
INPUT_IDS = "input_ids"
INPUT_MASK = "input_mask"
SEGMENT_IDS = "segment_ids"
MASKED_LM_POSITIONS = "masked_lm_positions"
MASKED_LM_IDS = "masked_lm_ids"
MASKED_LM_WEIGHTS = "masked_lm_weights"
NEXT_SENTENCE_LABELS = "next_sentence_labels"

# Google's feature order (an OrderedDict there); also the order we write.
FEATURE_NAMES = (INPUT_IDS, INPUT_MASK, SEGMENT_IDS, MASKED_LM_POSITIONS,
                 MASKED_LM_IDS, MASKED_LM_WEIGHTS, NEXT_SENTENCE_LABELS)


def pretraining_feature_spec(max_seq_length, max_predictions_per_seq):
    """The `tf.io.parse_example` spec of one pretraining record.

    Args:
      max_seq_length: length every sequence feature is padded to.
      max_predictions_per_seq: length the masked-LM features are padded to.

    Returns:
      A dict from feature name to `tf.io.FixedLenFeature`.
    """
    import tensorflow as tf  # Lazy: writing records must not pay for it.
    return {
        INPUT_IDS: tf.io.FixedLenFeature([max_seq_length], tf.int64),
        INPUT_MASK: tf.io.FixedLenFeature([max_seq_length], tf.int64),
        SEGMENT_IDS: tf.io.FixedLenFeature([max_seq_length], tf.int64),
        MASKED_LM_POSITIONS: tf.io.FixedLenFeature(
            [max_predictions_per_seq], tf.int64),
        MASKED_LM_IDS: tf.io.FixedLenFeature(
            [max_predictions_per_seq], tf.int64),
        MASKED_LM_WEIGHTS: tf.io.FixedLenFeature(
            [max_predictions_per_seq], tf.float32),
        NEXT_SENTENCE_LABELS: tf.io.FixedLenFeature([1], tf.int64),
    }


# ---------------------------------------------------------------------------
# Protobuf wire format of tf.train.Example.
#
#   Example  { Features features = 1; }
#   Features { map<string, Feature> feature = 1; }   (entries: key=1, value=2)
#   Feature  { oneof { BytesList bytes_list = 1; FloatList float_list = 2;
#                      Int64List int64_list = 3; } }
#   Int64List { repeated int64 value = 1 [packed]; }   (varints)
#   FloatList { repeated float value = 1 [packed]; }   (little-endian float32)
#
# A length-delimited field is: tag byte ((field << 3) | 2), varint length,
# payload.
# ---------------------------------------------------------------------------

_TAG_FIELD_1 = b"\x0a"
_TAG_FIELD_2 = b"\x12"
_TAG_FIELD_3 = b"\x1a"
_FLOAT_ONE = struct.pack("<f", 1.0)
_FLOAT_ZERO = struct.pack("<f", 0.0)


def encode_varint(value):
    """Protobuf varint of an int64 (negative: 10 bytes, two's complement).

    Args:
      value: an integer in [-2**63, 2**64).

    Returns:
      The varint bytes.
    """
    value &= 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def pack_int64s(values):
    """The packed-varint payload of a sequence of int64 values.

    Args:
      values: ints (a list, array or any sequence).

    Returns:
      The concatenated varints.
    """
    if type(values) is not list:
        # `bytes(array)` would give the array's memory, not one byte a value.
        values = list(values)
    if not values:
        return b""
    if min(values) >= 0 and max(values) < 0x80:
        return bytes(values)  # One byte per value: the value itself.
    return b"".join(map(encode_varint, values))


def varint_rows(values):
    """Protobuf varints of a matrix of non-negative ints, as byte groups.

    The vectorized form of `pack_int64s` for many records at once: every
    value gets the same number of 7-bit groups (enough for the largest);
    `keep` marks the bytes of each value's varint.

    Args:
      values: an int array [rows, n], values in [0, 2**63).

    Returns:
      (groups, keep): a uint8 array [rows, n * g] and a bool array of the
      same shape; the varint of values[r, i] is the kept bytes of
      groups[r, i * g:(i + 1) * g], so the kept bytes of row r are the
      packed payload of its values.

    Raises:
      ValueError: a value is negative.
    """
    values = np.asarray(values)
    rows, width = values.shape
    if values.size == 0:
        return (np.zeros((rows, 0), dtype=np.uint8),
                np.zeros((rows, 0), dtype=bool))
    if values.min() < 0:
        raise ValueError("varint_rows: values must be non-negative")
    largest = int(values.max())
    num_groups = max(1, -(-largest.bit_length() // 7))
    dtype = np.uint32 if largest < 2 ** 32 else np.uint64
    values = values.astype(dtype, copy=False)
    groups = np.empty((rows, width, num_groups), dtype=np.uint8)
    keep = np.empty((rows, width, num_groups), dtype=bool)
    keep[:, :, 0] = True
    for group in range(num_groups):
        low_bits = (values >> dtype(7 * group)) & dtype(0x7F)
        if group + 1 < num_groups:
            # The continuation bit: the value has more groups.
            more = values >= dtype(1 << (7 * (group + 1)))
            keep[:, :, group + 1] = more
            low_bits |= more.astype(dtype) << dtype(7)
        groups[:, :, group] = low_bits
    return (groups.reshape(rows, width * num_groups),
            keep.reshape(rows, width * num_groups))


def _padded_rows(byte_strings):
    """(uint8 matrix, bool keep) holding `byte_strings` left-aligned; keep
    is None when all have the same length."""
    width = max(map(len, byte_strings))
    matrix = np.zeros((len(byte_strings), width), dtype=np.uint8)
    keep = np.zeros((len(byte_strings), width), dtype=bool)
    for row, value in enumerate(byte_strings):
        matrix[row, :len(value)] = np.frombuffer(value, dtype=np.uint8)
        keep[row, :len(value)] = True
    return matrix, (None if keep.all() else keep)


def _rows(table, indices):
    """Rows `indices` of a `_padded_rows` table, as a block."""
    matrix, keep = table
    return matrix[indices], (None if keep is None else keep[indices])


def _varint_of_length(length):
    return encode_varint(length)


def _length_delimited(tag, payload):
    return tag + _varint_of_length(len(payload)) + payload


def _entry_prefix(key, payload_length, list_tag):
    """Bytes of a `Features` map entry up to its packed payload.

    The entry is: Features.feature field { key, value: Feature { list_tag
    (Int64List or FloatList) { packed values field { payload } } } }; all
    nesting lengths follow from the payload's length alone.
    """
    if payload_length:
        values_field = _TAG_FIELD_1 + _varint_of_length(payload_length)
    else:
        values_field = b""  # An empty repeated field is not written.
    list_length = len(values_field) + payload_length
    feature_head = list_tag + _varint_of_length(list_length)
    feature_length = len(feature_head) + list_length
    key_field = _length_delimited(_TAG_FIELD_1, key)
    value_head = _TAG_FIELD_2 + _varint_of_length(feature_length)
    entry_length = len(key_field) + len(value_head) + feature_length
    return (_TAG_FIELD_1 + _varint_of_length(entry_length) + key_field
            + value_head + feature_head + values_field)


class PretrainingExampleEncoder:
    """Serializes pretraining instances to `tf.train.Example` bytes.

    The bytes parse (with `tf.train.Example.FromString` or
    `tf.io.parse_single_example`) to exactly the features Google's
    `write_instance_to_example_files` builds: sequences padded with 0 to
    `max_seq_length`, masked-LM features padded with 0 (weights 0.0) to
    `max_predictions_per_seq`, `next_sentence_labels` = [label]. Everything
    but the payloads of input_ids, segment_ids, masked_lm_positions and
    masked_lm_ids is built once and reused.
    """

    def __init__(self, max_seq_length, max_predictions_per_seq):
        """Args:
          max_seq_length: length of input_ids / input_mask / segment_ids.
          max_predictions_per_seq: length of the masked_lm_* features.
        """
        self.max_seq_length = max_seq_length
        self.max_predictions_per_seq = max_predictions_per_seq
        keys = {name: name.encode("ascii") for name in FEATURE_NAMES}
        self._keys = keys
        # Padding: one zero byte per padded int64, four per padded float.
        self._sequence_padding = [b"\x00" * (max_seq_length - n)
                                  for n in range(max_seq_length + 1)]
        self._prediction_padding = [
            b"\x00" * (max_predictions_per_seq - n)
            for n in range(max_predictions_per_seq + 1)]
        # Entries that depend on a count only.
        self._input_mask_entries = [
            _entry_prefix(keys[INPUT_MASK], max_seq_length, _TAG_FIELD_3)
            + b"\x01" * n + self._sequence_padding[n]
            for n in range(max_seq_length + 1)]
        self._weights_entries = [
            _entry_prefix(keys[MASKED_LM_WEIGHTS],
                          4 * max_predictions_per_seq, _TAG_FIELD_2)
            + _FLOAT_ONE * n + _FLOAT_ZERO * (max_predictions_per_seq - n)
            for n in range(max_predictions_per_seq + 1)]
        self._label_entries = {}
        # Entry prefixes by payload length, per variable-length feature.
        self._prefixes = {name: {} for name in (
            INPUT_IDS, SEGMENT_IDS, MASKED_LM_POSITIONS, MASKED_LM_IDS)}
        # The same as padded byte matrices, for `record_blocks`.
        self._prefix_tables = {}
        self._input_mask_table = None
        self._weights_table = None

    def _prefix(self, name, payload_length):
        prefixes = self._prefixes[name]
        prefix = prefixes.get(payload_length)
        if prefix is None:
            prefix = prefixes[payload_length] = _entry_prefix(
                self._keys[name], payload_length, _TAG_FIELD_3)
        return prefix

    def _label_entry(self, label):
        entry = self._label_entries.get(label)
        if entry is None:
            packed = pack_int64s([label])
            entry = self._label_entries[label] = (
                _entry_prefix(self._keys[NEXT_SENTENCE_LABELS], len(packed),
                              _TAG_FIELD_3) + packed)
        return entry

    def _prefix_rows(self, name, payload_lengths):
        """Entry prefixes (`_prefix`) for each payload length, as rows."""
        table = self._prefix_tables.get(name)
        largest = int(payload_lengths.max())
        if table is None or len(table[0]) <= largest:
            table = self._prefix_tables[name] = _padded_rows(
                [self._prefix(name, length) for length in range(largest + 1)])
        return _rows(table, payload_lengths)

    def record_blocks(self, input_ids, lengths, segment_ids,
                      masked_lm_positions, masked_lm_ids, counts, labels):
        """The serialized Examples of many instances, as byte blocks.

        For `tfrecord_files.frame_byte_blocks`: row r's record is exactly
        `encode` of row r's unpadded features, built for all rows at once.

        Args:
          input_ids: int array [rows, max_seq_length], zero after each
            row's length.
          lengths: int array [rows], the unpadded lengths.
          segment_ids: int array [rows, max_seq_length] of 0/1, zero after
            each row's length.
          masked_lm_positions, masked_lm_ids: int arrays [rows,
            max_predictions_per_seq], zero after each row's count.
          counts: int array [rows], the numbers of masked positions.
          labels: int array [rows] of 0/1, the next-sentence labels.

        Returns:
          (blocks, lengths): a list of (uint8 bytes, bool keep or None)
          blocks, each [rows, width] (the record of row r is the kept bytes
          of row r of the blocks in order), and the records' lengths.
        """
        rows = len(lengths)
        if self._input_mask_table is None:
            self._input_mask_table = _padded_rows(self._input_mask_entries)
            self._weights_table = _padded_rows(self._weights_entries)
        entries = []
        for name, values in ((INPUT_IDS, input_ids), (None, lengths),
                             (SEGMENT_IDS, segment_ids),
                             (MASKED_LM_POSITIONS, masked_lm_positions),
                             (MASKED_LM_IDS, masked_lm_ids)):
            if name is None:  # input_mask: one entry per length.
                entries.append(_rows(self._input_mask_table, values))
                continue
            payload, payload_keep = varint_rows(values)
            entries.append(self._prefix_rows(
                name, payload_keep.sum(axis=1, dtype=np.int64)))
            entries.append((payload, payload_keep))
        entries.append(_rows(self._weights_table, counts))
        label_values, label_rows = np.unique(labels, return_inverse=True)
        entries.append(_rows(_padded_rows(
            [self._label_entry(int(label)) for label in label_values]),
            label_rows))
        # Example { features (field 1) { the entries } }.
        features_length = sum(
            matrix.shape[1] if keep is None
            else keep.sum(axis=1, dtype=np.int64)
            for matrix, keep in entries) + np.zeros(rows, dtype=np.int64)
        length_varint = varint_rows(features_length[:, None])
        tag = np.full((rows, 1), _TAG_FIELD_1[0], dtype=np.uint8)
        record_lengths = (1 + length_varint[1].sum(axis=1, dtype=np.int64)
                          + features_length)
        return [(tag, None), length_varint] + entries, record_lengths

    def encode(self, input_ids, segment_ids, masked_lm_positions,
               masked_lm_ids, next_sentence_label):
        """Serialized `tf.train.Example` of one instance.

        Args:
          input_ids: token ids, unpadded (at most `max_seq_length`).
          segment_ids: segment ids, same length as `input_ids`.
          masked_lm_positions: masked positions, unpadded (at most
            `max_predictions_per_seq`).
          masked_lm_ids: original token ids at those positions.
          next_sentence_label: 1 if segment B is a random next, else 0.

        Returns:
          The record bytes.

        Raises:
          ValueError: a list is longer than its padded length, or the
            lengths of paired lists differ.
        """
        length = len(input_ids)
        count = len(masked_lm_positions)
        if length > self.max_seq_length or len(segment_ids) != length:
            raise ValueError(
                f"input_ids has {length} ids and segment_ids "
                f"{len(segment_ids)}; both must have the same length, at "
                f"most max_seq_length={self.max_seq_length}")
        if (count > self.max_predictions_per_seq
                or len(masked_lm_ids) != count):
            raise ValueError(
                f"masked_lm_positions has {count} values and masked_lm_ids "
                f"{len(masked_lm_ids)}; both must have the same length, at "
                f"most max_predictions_per_seq="
                f"{self.max_predictions_per_seq}")
        sequence_padding = self._sequence_padding[length]
        prediction_padding = self._prediction_padding[count]
        ids_payload = pack_int64s(input_ids) + sequence_padding
        segments_payload = pack_int64s(segment_ids) + sequence_padding
        positions_payload = (pack_int64s(masked_lm_positions)
                             + prediction_padding)
        masked_ids_payload = pack_int64s(masked_lm_ids) + prediction_padding
        features = b"".join((
            self._prefix(INPUT_IDS, len(ids_payload)), ids_payload,
            self._input_mask_entries[length],
            self._prefix(SEGMENT_IDS, len(segments_payload)),
            segments_payload,
            self._prefix(MASKED_LM_POSITIONS, len(positions_payload)),
            positions_payload,
            self._prefix(MASKED_LM_IDS, len(masked_ids_payload)),
            masked_ids_payload,
            self._weights_entries[count],
            self._label_entry(next_sentence_label),
        ))
        return _TAG_FIELD_1 + _varint_of_length(len(features)) + features
