"""TFRecord files written fast, in pure Python, and atomically.

TFRecord framing is, per record: length (uint64 little-endian), masked
CRC-32C of the length, the data, masked CRC-32C of the data. Here the CRCs
are computed for thousands of records at once in numpy, so writing needs
neither TensorFlow's writer nor its 5-10 s import.

* `frame_tfrecords` / `frame_round_robin`: framed bytes of a batch of
  records (for one file, or spread round-robin over several);
  `records_from_byte_blocks`: the records built as rows of numpy byte
  matrices, laid end to end; `frame_laid_out_round_robin` frames those
  (in C, `_tfrecord_native.c`, where built: no Python object per record);
* `TFRecordFileWriter`: one file, written under a temporary name and renamed
  only when complete, so an interrupted run never leaves (or overwrites with)
  a truncated file; remote paths (`gs://...`) go through `tf.io.gfile`,
  imported only then;
* `RoundRobinRecordWriter`: record i to file i % n, as Google's
  create_pretraining_data.py spreads its output.
"""

import contextlib
import os
import uuid

import numpy as np

from bert_tf import file_io

try:
    from bert_tf.data import _tfrecord_native
except ImportError:  # Not built (no C compiler): numpy frames the same bytes.
    _tfrecord_native = None

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


def _hardware_crc32c():
    """`google_crc32c` if its C extension is installed, else None."""
    try:
        import google_crc32c
    except ImportError:
        return None
    return google_crc32c if google_crc32c.implementation == "c" else None


# Google's CRC-32C library (the `google-crc32c` package, a dependency):
# CRC instructions of the CPU, about 20 times faster than the numpy tables
# below, which are used where it is missing.
_google_crc32c = _hardware_crc32c()


def crc32c_batch(records):
    """CRC-32C of each of many byte strings, computed together.

    With `google_crc32c` one C call a record; without it, slicing-by-8 in
    numpy over all records at once.

    Args:
      records: a sequence of `bytes`.

    Returns:
      A uint32 numpy array, one CRC per record.
    """
    count = len(records)
    if count == 0:
        return np.zeros(0, dtype=np.uint32)
    if _google_crc32c is not None:
        return np.fromiter(map(_google_crc32c.value, records),
                           dtype=np.uint32, count=count)
    # Slicing-by-8 over a (records x bytes) matrix: each step consumes eight
    # bytes of every record that still has eight, so the Python-level loop
    # runs once per eight bytes of the longest record, not once per byte.
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


def records_from_byte_blocks(blocks, lengths=None):
    """The records of rows of padded byte blocks, laid end to end.

    For records built many at once in numpy (`pretraining_records`): record
    r is the concatenation, block by block, of the bytes of row r that the
    block keeps.

    Args:
      blocks: a list of (bytes, keep): `bytes` a uint8 array [rows, width]
        (the same number of rows in every block), `keep` None (the whole
        row) or a bool array of the same shape (the bytes to keep, in row
        order).
      lengths: the records' lengths, if known (else counted).

    Returns:
      (data, lengths): a uint8 array, the records one after the other, and
      an int64 array of their lengths (`split_records` gives them one by
      one, `frame_laid_out_round_robin` framed).
    """
    count = blocks[0][0].shape[0]
    if count == 0:
        return np.zeros(0, dtype=np.uint8), np.zeros(0, dtype=np.int64)
    if _tfrecord_native is not None and lengths is not None:
        lengths = np.ascontiguousarray(lengths, dtype=np.int64)
        laid_out = _tfrecord_native.lay_out_rows(
            [(np.ascontiguousarray(matrix, dtype=np.uint8),
              None if keep is None else np.ascontiguousarray(keep,
                                                             dtype=bool))
             for matrix, keep in blocks], lengths)
        return np.frombuffer(laid_out, dtype=np.uint8), lengths
    data = np.concatenate([matrix for matrix, _ in blocks], axis=1)
    keep = np.concatenate(
        [np.broadcast_to(True, matrix.shape) if keep is None else keep
         for matrix, keep in blocks], axis=1)
    if lengths is None:
        lengths = keep.sum(axis=1, dtype=np.int64)
    return data.ravel()[keep.ravel()], np.asarray(lengths, dtype=np.int64)


def split_records(data, lengths):
    """The records laid end to end in `data`, as `bytes` each.

    Args:
      data: the records one after the other (a bytes-like object).
      lengths: their lengths.

    Returns:
      A list of `bytes`, one a record.
    """
    flat = bytes(data)
    ends = np.cumsum(lengths).tolist()
    return [flat[start:end] for start, end in zip([0] + ends[:-1], ends)]


def frame_laid_out_round_robin(data, lengths, num_files):
    """`frame_round_robin` of records laid end to end in `data`.

    Args:
      data: the records one after the other (a contiguous uint8 array or
        bytes).
      lengths: their lengths (int64).
      num_files: the number of output files.

    Returns:
      A list of `num_files` framed byte strings.
    """
    if _tfrecord_native is not None:
        return _tfrecord_native.frame_round_robin(
            np.ascontiguousarray(data, dtype=np.uint8),
            np.ascontiguousarray(lengths, dtype=np.int64), num_files)
    return frame_round_robin(split_records(data, lengths), num_files)


class _CompleteOrNothing:
    """A writer used as a context manager: `close()` when the block ends
    normally, `abort()` when it ends by an exception."""

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, traceback):
        if exc_type is None:
            self.close()
        else:
            self.abort()
        return False


class TFRecordFileWriter(_CompleteOrNothing):
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
        # `.<name>.tmp-<pid>-<random>`: removed by a later run once this
        # process is gone (`file_io.remove_dead_writers_temporaries`).
        self._tmp_path = os.path.join(
            directory, file_io.temporary_prefix(name) + uuid.uuid4().hex[:8])
        if file_io.is_remote(self.path):
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
        with file_io.naming_write_errors(self.path, "output file"):
            self._file.write(framed)
        self.records_written += num_records

    def _flush(self):
        if self._buffer:
            with file_io.naming_write_errors(self.path, "output file"):
                self._file.write(frame_tfrecords(self._buffer))
            self.records_written += len(self._buffer)
            self._buffer = []

    def close(self):
        """Writes what is buffered and renames the file into place."""
        if self._file is None:
            return
        try:
            self._flush()
            with file_io.naming_write_errors(self.path, "output file"):
                self._file.close()  # Writes what the file object buffers.
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
            # Closing flushes the file's buffer, which fails again on a full
            # disk (the file is closed all the same): the temporary file
            # must still go.
            with contextlib.suppress(OSError):
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


class RoundRobinRecordWriter(_CompleteOrNothing):
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
            # Everything reaches the files before any is renamed: a full
            # disk then leaves none of them under its real name.
            for writer in self._writers:
                writer._flush()
                with file_io.naming_write_errors(writer.path, "output file"):
                    writer._file.flush()
        except BaseException:
            self.abort()
            raise
        for writer in self._writers:
            writer.close()

    def abort(self):
        """Drops every temporary file."""
        for writer in self._writers:
            writer.abort()


# -- finding the damaged record of a file ------------------------------------

_HEADER_BYTES = 12  # uint64 length + masked CRC of it
_FOOTER_BYTES = 4  # masked CRC of the data
_SCAN_BATCH_BYTES = 64 << 20

# Record files the input pipelines of this process read, in the order they
# were first read: on a `DataLossError` (which names no file) they are
# scanned to find the damaged one (`describe_data_loss`).
_FILES_READ = {}


def register_input_files(paths):
    """Notes record files an input pipeline reads, for `describe_data_loss`.

    Args:
      paths: file paths (str or bytes).
    """
    for path in paths:
        if isinstance(path, bytes):
            path = path.decode("utf-8")
        _FILES_READ.setdefault(os.fspath(path), None)


def _open_for_reading(path):
    if file_io.is_remote(path):
        import tensorflow as tf  # Only for remote files.
        return tf.io.gfile.GFile(path, "rb")
    return open(path, "rb")


def find_damaged_record(path):
    """Checks a TFRecord file's framing and CRCs, as TensorFlow's reader.

    Args:
      path: an uncompressed TFRecord file.

    Returns:
      None if every record is whole, else `(byte_offset, reason)`: the
      offset of the first damaged record (where its length field starts)
      and what is wrong with it.
    """
    with _open_for_reading(path) as reader:
        pending = b""  # read bytes not yet checked
        pending_offset = 0  # file offset of pending[0]
        end_of_file = False
        while True:
            # Collect whole records of this batch, then check their CRCs
            # together (crc32c_batch).
            if not end_of_file:
                chunk = reader.read(_SCAN_BATCH_BYTES)
                end_of_file = not chunk
                pending += chunk
            headers, bodies, starts = [], [], []
            position = 0
            bad_length_at = None  # an incomplete record's bad length field
            while True:
                if len(pending) - position < _HEADER_BYTES:
                    break
                header = pending[position:position + 8]
                length = int.from_bytes(header, "little")
                end = position + _HEADER_BYTES + length + _FOOTER_BYTES
                if end > len(pending):
                    # Waiting for the rest is only right if the length is
                    # (a corrupt one can announce terabytes).
                    if int(masked_crc32c_batch([header])[0]) != (
                            int.from_bytes(pending[position + 8:position + 12],
                                           "little")):
                        bad_length_at = pending_offset + position
                    break
                headers.append((header, pending[position + 8:position + 12]))
                bodies.append((pending[position + 12:end - 4],
                               pending[end - 4:end]))
                starts.append(pending_offset + position)
                position = end
            if headers:
                header_crcs = masked_crc32c_batch([h for h, _ in headers])
                for index, (_, stored) in enumerate(headers):
                    if int(header_crcs[index]) != int.from_bytes(stored,
                                                                 "little"):
                        return starts[index], (
                            "corrupted record length (its CRC does not "
                            "match)")
                data_crcs = masked_crc32c_batch([b for b, _ in bodies])
                for index, (_, stored) in enumerate(bodies):
                    if int(data_crcs[index]) != int.from_bytes(stored,
                                                               "little"):
                        return starts[index], (
                            "corrupted record data (its CRC does not match)")
            if bad_length_at is not None:
                return bad_length_at, ("corrupted record length (its CRC "
                                       "does not match)")
            pending = pending[position:]
            pending_offset += position
            if end_of_file and not headers:
                if not pending:
                    return None
                offset = pending_offset
                if len(pending) >= _HEADER_BYTES:
                    header = pending[:8]
                    if int(masked_crc32c_batch([header])[0]) != (
                            int.from_bytes(pending[8:12], "little")):
                        return offset, ("corrupted record length (its CRC "
                                        "does not match)")
                    length = int.from_bytes(header, "little")
                    return offset, (
                        f"truncated record: {length} data bytes announced, "
                        f"the file ends {len(pending) - _HEADER_BYTES} bytes "
                        f"later")
                # Fewer bytes than a header: TensorFlow's reader takes them
                # for the end of the file, and so does this check.
                return None


def describe_data_loss(paths=None):
    """The first damaged record among record files, as a one-line message.

    Args:
      paths: files to scan; default: those registered by the input
        pipelines of this process (`register_input_files`), newest first.

    Returns:
      "TFRecord file F is damaged at byte offset N: reason", or None when
      every file reads whole (or none is known).
    """
    # Newest first: in a process that ran several pipelines (a notebook,
    # a test session) the failing one is most likely the last one made.
    for path in reversed(list(_FILES_READ)) if paths is None else paths:
        try:
            damage = find_damaged_record(path)
        except OSError:
            continue  # Gone or unreadable: not what the error was about.
        if damage is not None:
            offset, reason = damage
            return (f"TFRecord file {path} is damaged at byte offset "
                    f"{offset} (the record starting there): {reason}")
    return None
