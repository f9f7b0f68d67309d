"""The TFRecord schema of Google's pretraining data, and a fast encoder.

Google's `create_pretraining_data.py` writes one `tf.train.Example` per
instance with seven features (names below), into one or more TFRecord files,
round-robin. This module holds:

* the schema: feature-name constants and `pretraining_feature_spec`, the
  `tf.io.parse_example` spec of one record;
* `PretrainingExampleEncoder`: builds the serialized `tf.train.Example` bytes
  directly from the protobuf wire format, with the constant parts (feature
  keys, masks, weights, labels) built once. Building a `tf.train.Example`
  object per instance costs more than everything else in instance creation.

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

# Varints of 0 .. 2**17 - 1 (every id of every released BERT vocabulary),
# built on first use.
_VARINT_TABLE_SIZE = 1 << 17
_varint_table = None


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


def varint_table():
    """`table[v]` = the varint bytes of v, for 0 <= v < 2**17 (built once)."""
    global _varint_table
    if _varint_table is None:
        _varint_table = [encode_varint(v) for v in range(_VARINT_TABLE_SIZE)]
    return _varint_table


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
    if min(values) >= 0:
        if max(values) < 0x80:
            return bytes(values)  # One byte per value: the value itself.
        try:
            return b"".join(map(varint_table().__getitem__, values))
        except IndexError:
            pass  # A value beyond the table.
    return b"".join(map(encode_varint, values))


_varint_numpy_tables = None


def _varint_tables_numpy():
    """(bytes, lengths): varints of 0 .. 2**17 - 1 as a (N, 3) uint8 matrix
    (zero-padded) and their lengths, for vectorized lookups."""
    global _varint_numpy_tables
    if _varint_numpy_tables is None:
        values = np.arange(_VARINT_TABLE_SIZE, dtype=np.uint32)
        lengths = (1 + (values >= 1 << 7) + (values >= 1 << 14)).astype(
            np.uint8)
        table = np.stack([
            (values & 0x7F) | ((values >= 1 << 7) << 7),
            ((values >> 7) & 0x7F) | ((values >= 1 << 14) << 7),
            values >> 14,
        ], axis=1).astype(np.uint8)
        _varint_numpy_tables = (table, lengths)
    return _varint_numpy_tables


def pack_int64_rows(values):
    """Packed-varint payloads of each row of a matrix of non-negative ints.

    The vectorized form of `pack_int64s` for many records at once. Values
    below 2**17 (every token id of the released vocabularies) are looked up
    in a table of varints; larger ones are split into 7-bit groups.

    Args:
      values: a 2-D numpy array of ints in [0, 2**63).

    Returns:
      (data, offsets): `bytes` of all rows' payloads concatenated, and an
      int64 array of len(values) + 1 offsets; row r's payload is
      `data[offsets[r]:offsets[r + 1]]`.

    Raises:
      ValueError: a value is negative.
    """
    values = np.asarray(values)
    if values.size and values.min() < 0:
        raise ValueError("pack_int64_rows: values must be non-negative")
    if not values.size or values.max() < _VARINT_TABLE_SIZE:
        table, table_lengths = _varint_tables_numpy()
        groups = table[values]
        num_bytes = table_lengths[values]
    else:
        values = values.astype(np.uint64)
        num_bytes = np.ones(values.shape, dtype=np.uint8)
        group_list = [values & np.uint64(0x7F)]
        rest = values >> np.uint64(7)
        while rest.any():
            more = rest > 0
            group_list[-1] |= more.astype(np.uint64) << np.uint64(7)
            num_bytes += more
            group_list.append(rest & np.uint64(0x7F))
            rest >>= np.uint64(7)
        groups = np.stack(group_list, axis=-1).astype(np.uint8)
    keep = np.arange(groups.shape[-1], dtype=np.uint8) < num_bytes[..., None]
    data = groups[keep].tobytes()
    offsets = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum(num_bytes.sum(axis=-1, dtype=np.int64), out=offsets[1:])
    return data, offsets


def _varint_of_length(length):
    if length < _VARINT_TABLE_SIZE:
        return varint_table()[length]
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
        return self.encode_packed(
            pack_int64s(input_ids), length, pack_int64s(segment_ids),
            pack_int64s(masked_lm_positions), pack_int64s(masked_lm_ids),
            count, next_sentence_label)

    def encode_packed(self, input_ids_packed, length, segment_ids_packed,
                      masked_lm_positions_packed, masked_lm_ids_packed,
                      count, next_sentence_label):
        """`encode` from payloads already packed (see `pack_int64s`).

        For callers that can build the packed varints faster than from
        lists; no checks.

        Args:
          input_ids_packed, segment_ids_packed: packed varints of `length`
            values each, unpadded.
          length: the number of unpadded input ids.
          masked_lm_positions_packed, masked_lm_ids_packed: packed varints
            of `count` values each, unpadded.
          count: the number of masked positions.
          next_sentence_label: 0 or 1.

        Returns:
          The record bytes.
        """
        sequence_padding = self._sequence_padding[length]
        prediction_padding = self._prediction_padding[count]
        return self.encode_padded(
            input_ids_packed + sequence_padding, length,
            segment_ids_packed + sequence_padding,
            masked_lm_positions_packed + prediction_padding,
            masked_lm_ids_packed + prediction_padding, count,
            next_sentence_label)

    def encode_padded(self, input_ids_packed, length, segment_ids_packed,
                      masked_lm_positions_packed, masked_lm_ids_packed,
                      count, next_sentence_label):
        """`encode_packed` from payloads that already include the padding.

        Args:
          input_ids_packed, segment_ids_packed: packed varints of
            `max_seq_length` values each (zeros after the first `length`).
          length: the number of real (unpadded) input ids.
          masked_lm_positions_packed, masked_lm_ids_packed: packed varints
            of `max_predictions_per_seq` values each (zeros after `count`).
          count: the number of masked positions.
          next_sentence_label: 0 or 1.

        Returns:
          The record bytes.
        """
        prefixes = self._prefixes
        ids_prefix = prefixes[INPUT_IDS].get(len(input_ids_packed))
        if ids_prefix is None:
            ids_prefix = self._prefix(INPUT_IDS, len(input_ids_packed))
        segments_prefix = prefixes[SEGMENT_IDS].get(len(segment_ids_packed))
        if segments_prefix is None:
            segments_prefix = self._prefix(SEGMENT_IDS,
                                           len(segment_ids_packed))
        positions_prefix = prefixes[MASKED_LM_POSITIONS].get(
            len(masked_lm_positions_packed))
        if positions_prefix is None:
            positions_prefix = self._prefix(MASKED_LM_POSITIONS,
                                            len(masked_lm_positions_packed))
        masked_ids_prefix = prefixes[MASKED_LM_IDS].get(
            len(masked_lm_ids_packed))
        if masked_ids_prefix is None:
            masked_ids_prefix = self._prefix(MASKED_LM_IDS,
                                             len(masked_lm_ids_packed))
        label_entry = self._label_entries.get(next_sentence_label)
        if label_entry is None:
            label_entry = self._label_entry(next_sentence_label)
        features = b"".join((
            ids_prefix, input_ids_packed,
            self._input_mask_entries[length],
            segments_prefix, segment_ids_packed,
            positions_prefix, masked_lm_positions_packed,
            masked_ids_prefix, masked_lm_ids_packed,
            self._weights_entries[count],
            label_entry,
        ))
        return _TAG_FIELD_1 + _varint_of_length(len(features)) + features


# ---------------------------------------------------------------------------
# CRC-32C (Castagnoli), as TFRecord framing needs, for many records at once.
# ---------------------------------------------------------------------------
