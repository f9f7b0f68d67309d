"""Files: Google's comma-separated input patterns, and writes that never leave
a half-written file under the real name."""

import contextlib
import glob
import os
import tempfile
import uuid


class InputFileError(FileNotFoundError, ValueError):
    """An input pattern that names no file (also a ValueError, for callers
    that validate arguments)."""


def is_remote(path):
    """Whether `path` is a URL such as gs://bucket/file (read with tf.io.gfile)."""
    return "://" in os.fspath(path)


def _glob(pattern):
    if is_remote(pattern):
        import tensorflow as tf  # Only remote files need it: slow to import.
        return tf.io.gfile.glob(pattern)
    if os.path.isfile(pattern):
        return [pattern]  # A literal name, even with glob characters in it.
    # Like TensorFlow's glob, names starting with a dot match too.
    return [path for path in glob.glob(pattern, include_hidden=True)
            if not os.path.isdir(path)]


def expand_input_patterns(input_patterns, *, sort=False):
    """The files named by comma-separated paths or glob patterns.

    Google's scripts take `--input_file=a.txt,dir/*.txt`. Files come in the
    order of the patterns; within a pattern in the order the file system
    lists them, as TensorFlow's glob in Google's create_pretraining_data.py
    (which this order must reproduce), or sorted. A file named twice is kept
    once. Remote patterns (`gs://...`) go through `tf.io.gfile.glob`.

    Args:
      input_patterns: a comma-separated string, a path, or a list of them.
      sort: sort each pattern's matches (reproducible across machines, as
        input pipelines that shard files between workers need).

    Returns:
      A list of file paths.

    Raises:
      InputFileError: no pattern given, or a pattern that matches no file
        (the message names it).
    """
    if isinstance(input_patterns, (str, bytes, os.PathLike)):
        input_patterns = [input_patterns]
    patterns = []
    for item in input_patterns:
        if isinstance(item, bytes):
            item = item.decode("utf-8")
        patterns.extend(part.strip() for part in os.fspath(item).split(",")
                        if part.strip())
    if not patterns:
        raise InputFileError("no input file given")
    files, seen = [], set()
    for pattern in patterns:
        matches = _glob(pattern)
        if not matches:
            raise InputFileError(f"no file matches input pattern {pattern!r}")
        for path in sorted(matches) if sort else matches:
            if path not in seen:
                seen.add(path)
                files.append(path)
    return files


@contextlib.contextmanager
def atomic_write(path, mode="w", encoding="utf-8", newline=None):
    """Opens a temporary file beside `path` that replaces it on success.

    A crash or an exception inside the block leaves `path` as it was (and no
    temporary file behind), so a user's existing output is never lost to a
    half-written one. Works on every `tf.io.gfile` file system: local paths
    with `os` (no TensorFlow import), URLs such as `gs://bucket/file` with
    `tf.io.gfile` (a temporary object renamed over the real name).

    Args:
      path: the file to write (local or a URL).
      mode: "w" (text) or "wb" (binary).
      encoding: text encoding (text mode only).
      newline: as `open`'s (text mode only).

    Yields:
      The open file object.

    Raises:
      FileNotFoundError: the directory of `path` does not exist (named).
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_write mode must be 'w' or 'wb', got {mode!r}")
    path = os.fspath(path)
    if is_remote(path):
        with _remote_atomic_write(path, mode) as writer:
            yield writer
        return
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(
            f"cannot write {path}: directory {directory} does not exist")
    descriptor, temporary = tempfile.mkstemp(
        dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        text_options = {} if "b" in mode else {"encoding": encoding,
                                               "newline": newline}
        with os.fdopen(descriptor, mode, **text_options) as writer:
            yield writer
        os.chmod(temporary, 0o644)  # mkstemp makes it private (0600).
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(temporary)
        raise


@contextlib.contextmanager
def _remote_atomic_write(path, mode):
    """`atomic_write` for a `tf.io.gfile` URL (text is written as UTF-8)."""
    import tensorflow as tf  # Only remote files need it: slow to import.
    # No directory check: object stores (gs://) have no real directories.
    temporary = f"{path}.tmp-{uuid.uuid4().hex}"
    try:
        with tf.io.gfile.GFile(temporary, mode) as writer:
            yield writer
        tf.io.gfile.rename(temporary, path, overwrite=True)
    except BaseException:
        with contextlib.suppress(tf.errors.NotFoundError):
            tf.io.gfile.remove(temporary)
        raise
