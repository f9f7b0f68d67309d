"""The TFRecord schema of Google's pretraining data, and a fast writer for it.

Google's `create_pretraining_data.py` writes one `tf.train.Example` per
instance with seven features (names below), into one or more TFRecord files,
round-robin. This module holds:

* the schema: feature-name constants and `pretraining_feature_spec`, the
  `tf.io.parse_example` spec of one record;
* `PretrainingExampleEncoder`: builds the serialized `tf.train.Example` bytes
  directly from the protobuf wire format, with the constant parts (feature
  keys, masks, weights, labels) built once. Building a `tf.train.Example`
  object per instance costs more than everything else in instance creation;
* `TFRecordFileWriter` / `RoundRobinRecordWriter`: TFRecord framing (length,
  masked CRC-32C of the length, data, masked CRC-32C of the data) with the
  CRCs computed for thousands of records at once in numpy, so writing needs
  neither TensorFlow's writer nor its 5-10 s import. Files are written under a
  temporary name and renamed only when complete, so an interrupted run never
  leaves (or overwrites with) a truncated file. Remote paths (`gs://...`) go
  through `tf.io.gfile`, imported only then.

TensorFlow is imported lazily: only `pretraining_feature_spec` and remote
paths need it.
"""

import os
import struct
import uuid

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

_CRC32C_POLYNOMIAL = 0x82F63B78  # Reflected form of 0x1EDC6F41.
_CRC_MASK_DELTA = 0xA282EAD8


def _crc32c_tables():
    """The eight slicing-by-8 lookup tables, as uint32 arrays."""
    table0 = np.zeros(256, dtype=np.uint32)
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ (_CRC32C_POLYNOMIAL if crc & 1 else 0)
        table0[byte] = crc
    tables = [table0]
    for _ in range(7):
        previous = tables[-1]
        tables.append((previous >> np.uint32(8)) ^ table0[previous & 0xFF])
    return tables


_CRC_TABLES = _crc32c_tables()


def crc32c_batch(records):
    """CRC-32C of each of many byte strings, computed together.

    Slicing-by-8 over a (records x bytes) matrix: each step consumes eight
    bytes of every record that still has eight, so the Python-level loop runs
    once per eight bytes of the longest record, not once per byte.

    Args:
      records: a sequence of `bytes`.

    Returns:
      A uint32 numpy array, one CRC per record.
    """
    count = len(records)
    if count == 0:
        return np.zeros(0, dtype=np.uint32)
    t0, t1, t2, t3, t4, t5, t6, t7 = _CRC_TABLES
    lengths = np.fromiter(map(len, records), dtype=np.int64, count=count)
    # Longest first, so the records still active at each step are a prefix.
    order = np.argsort(-lengths, kind="stable")
    lengths = lengths[order]
    width = max(8, -(-int(lengths[0]) // 8) * 8)
    padded = b"".join(records[i].ljust(width, b"\x00") for i in order.tolist())
    matrix = np.frombuffer(padded, dtype=np.uint8).reshape(count, width)
    words = matrix.view("<u4")
    crc = np.full(count, 0xFFFFFFFF, dtype=np.uint32)
    full_blocks = lengths // 8
    # active[s] = number of records with more than s full 8-byte blocks.
    active = np.searchsorted(-full_blocks, -np.arange(int(full_blocks[0])),
                             side="left")
    for step, rows in enumerate(active.tolist()):
        low = crc[:rows] ^ words[:rows, 2 * step]
        high = words[:rows, 2 * step + 1]
        crc[:rows] = (t7[low & 0xFF] ^ t6[(low >> 8) & 0xFF]
                      ^ t5[(low >> 16) & 0xFF] ^ t4[low >> 24]
                      ^ t3[high & 0xFF] ^ t2[(high >> 8) & 0xFF]
                      ^ t1[(high >> 16) & 0xFF] ^ t0[high >> 24])
    # The last len % 8 bytes, one byte per step.
    tail_start = full_blocks * 8
    remaining = lengths - tail_start
    for offset in range(7):
        rows = np.flatnonzero(remaining > offset)
        if rows.size == 0:
            break
        data = matrix[rows, tail_start[rows] + offset].astype(np.uint32)
        value = crc[rows]
        crc[rows] = t0[(value ^ data) & 0xFF] ^ (value >> 8)
    crc ^= np.uint32(0xFFFFFFFF)
    result = np.empty(count, dtype=np.uint32)
    result[order] = crc
    return result


def crc32c(data):
    """CRC-32C of one byte string (e.g. 0xE3069283 for b"123456789")."""
    return int(crc32c_batch([bytes(data)])[0])


def masked_crc32c_batch(records):
    """TFRecord's masked CRC-32C (rotate right 15, add a constant) of each."""
    crc = crc32c_batch(records)
    return ((crc >> np.uint32(15)) | (crc << np.uint32(17))) + np.uint32(
        _CRC_MASK_DELTA)


def frame_tfrecords(records):
    """TFRecord framing of `records`, concatenated.

    Each record becomes: uint64 length, masked CRC-32C of those 8 bytes,
    the data, masked CRC-32C of the data (all little-endian).

    Args:
      records: a sequence of `bytes`.

    Returns:
      The bytes to append to a TFRecord file.
    """
    if not records:
        return b""
    lengths = np.fromiter(map(len, records), dtype="<u8", count=len(records))
    length_bytes = lengths.tobytes()
    headers = [length_bytes[8 * i:8 * i + 8] for i in range(len(records))]
    header_crcs = masked_crc32c_batch(headers).astype("<u4").tobytes()
    data_crcs = masked_crc32c_batch(records).astype("<u4").tobytes()
    parts = []
    append = parts.append
    for i, record in enumerate(records):
        append(headers[i])
        append(header_crcs[4 * i:4 * i + 4])
        append(record)
        append(data_crcs[4 * i:4 * i + 4])
    return b"".join(parts)


def frame_round_robin(records, num_files):
    """Frames consecutive records for `write_framed_batch`, file by file.

    Args:
      records: consecutive records (bytes); records[i] goes to the
        (i % num_files)-th file from the writer's next one.
      num_files: the number of output files.

    Returns:
      A list of `num_files` framed byte strings.
    """
    return [frame_tfrecords(records[k::num_files]) for k in range(num_files)]


def _is_remote(path):
    return "://" in str(path)


class TFRecordFileWriter:
    """Writes one uncompressed TFRecord file, atomically.

    Records are buffered and framed in batches (`frame_tfrecords`). The data
    goes to a temporary file next to `path`; `close()` renames it to `path`,
    `abort()` (or leaving a `with` block by an exception) deletes it, so
    `path` is either the complete new file or untouched.
    """

    def __init__(self, path, buffer_records=4096):
        """Args:
          path: the output file (local, or remote through `tf.io.gfile`).
          buffer_records: how many records to frame at once.

        Raises:
          OSError: the temporary file cannot be created (message names it).
        """
        self.path = str(path)
        self._buffer = []
        self._buffer_records = buffer_records
        self.records_written = 0
        directory, name = os.path.split(self.path)
        self._tmp_path = os.path.join(
            directory, f".{name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
        if _is_remote(self.path):
            import tensorflow as tf  # Only for remote files.
            self._gfile = tf.io.gfile
            self._file = tf.io.gfile.GFile(self._tmp_path, "wb")
        else:
            self._gfile = None
            try:
                self._file = open(self._tmp_path, "wb")
            except OSError as error:
                raise OSError(
                    f"cannot create output file {self.path} (temporary "
                    f"{self._tmp_path}): {error.strerror or error}") from error

    def write(self, record):
        """Appends one record (bytes)."""
        self._buffer.append(record)
        if len(self._buffer) >= self._buffer_records:
            self._flush()

    def write_framed(self, framed, num_records):
        """Appends records already framed by `frame_tfrecords`.

        Args:
          framed: the framed bytes of `num_records` records.
          num_records: how many records `framed` holds.
        """
        self._flush()
        self._file.write(framed)
        self.records_written += num_records

    def _flush(self):
        if self._buffer:
            self._file.write(frame_tfrecords(self._buffer))
            self.records_written += len(self._buffer)
            self._buffer = []

    def close(self):
        """Writes what is buffered and renames the file into place."""
        if self._file is None:
            return
        try:
            self._flush()
            self._file.close()
            self._file = None
            if self._gfile is not None:
                self._gfile.rename(self._tmp_path, self.path, overwrite=True)
            else:
                os.replace(self._tmp_path, self.path)
        except BaseException:
            self.abort()
            raise

    def abort(self):
        """Drops the temporary file; `path` is left as it was."""
        if self._file is not None:
            self._file.close()
            self._file = None
        self._buffer = []
        try:
            if self._gfile is not None:
                if self._gfile.exists(self._tmp_path):
                    self._gfile.remove(self._tmp_path)
            elif os.path.exists(self._tmp_path):
                os.remove(self._tmp_path)
        except OSError:
            pass  # Cleaning up after another error: do not mask it.

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, traceback):
        if exc_type is None:
            self.close()
        else:
            self.abort()
        return False


class RoundRobinRecordWriter:
    """Spreads records over several TFRecord files, as Google's script does.

    Record i goes to file i % len(paths). All files are written atomically
    (see `TFRecordFileWriter`): none appears until all are complete.
    """

    def __init__(self, paths, buffer_records=4096):
        """Args:
          paths: the output files (at least one).
          buffer_records: records framed at once per file.

        Raises:
          ValueError: no paths.
        """
        paths = [str(path) for path in paths]
        if not paths:
            raise ValueError("no output files given")
        self.paths = paths
        self._writers = []
        try:
            for path in paths:
                self._writers.append(TFRecordFileWriter(path, buffer_records))
        except BaseException:
            self.abort()
            raise
        self._next = 0
        self.records_written = 0

    def write(self, record):
        """Writes one record to the next file in turn."""
        self._writers[self._next].write(record)
        self._next = (self._next + 1) % len(self._writers)
        self.records_written += 1

    def write_framed_batch(self, framed_per_file, num_records):
        """Writes `num_records` consecutive records, framed by file.

        Args:
          framed_per_file: for k = 0 .. len(paths) - 1, the framed bytes
            (`frame_round_robin`) of the records of this batch that go to
            the k-th file from the next one in turn.
          num_records: the number of records in the batch.
        """
        count = len(self._writers)
        for k, framed in enumerate(framed_per_file):
            records = len(range(k, num_records, count))
            if records:
                self._writers[(self._next + k) % count].write_framed(
                    framed, records)
        self._next = (self._next + num_records) % count
        self.records_written += num_records

    def close(self):
        """Completes every file and renames them into place."""
        try:
            for writer in self._writers:
                writer._flush()
        except BaseException:
            self.abort()
            raise
        for writer in self._writers:
            writer.close()

    def abort(self):
        """Drops every temporary file."""
        for writer in self._writers:
            writer.abort()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, traceback):
        if exc_type is None:
            self.close()
        else:
            self.abort()
        return False
