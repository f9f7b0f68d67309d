"""Files: Google's comma-separated input patterns, and writes that never leave
a half-written file under the real name."""

import contextlib
import fnmatch
import glob
import os
import re
import shutil
import sys
import tempfile
import uuid


class InputFileError(FileNotFoundError, ValueError):
    """An input pattern that names no file (also a ValueError, for callers
    that validate arguments)."""


def is_remote(path):
    """Whether `path` is a URL such as gs://bucket/file (read with tf.io.gfile)."""
    return "://" in os.fspath(path)


def read_bytes(path, description="file"):
    """The whole content of a local or remote (gs://...) file.

    TensorFlow is imported only for a remote path (importing it is slow).

    Args:
      path: the file.
      description: what it is, for messages ("vocab file", "SQuAD file").

    Returns:
      The bytes.

    Raises:
      FileNotFoundError: `<description> <path> does not exist`.
      OSError: it cannot be read (a directory, no permission), named the
        same way.
    """
    path = os.fspath(path)
    if is_remote(path):
        import tensorflow as tf
        if not tf.io.gfile.exists(path):
            raise FileNotFoundError(f"{description} {path} does not exist")
        with tf.io.gfile.GFile(path, "rb") as reader:
            return reader.read()
    try:
        with open(path, "rb") as reader:
            return reader.read()
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{description} {path} does not exist") from None
    except OSError as error:
        raise OSError(f"cannot read {description} {path}: "
                      f"{error.strerror or error}") from error


def _glob(pattern):
    if is_remote(pattern):
        import tensorflow as tf  # Only remote files need it: slow to import.
        return tf.io.gfile.glob(pattern)
    if os.path.isfile(pattern):
        return [pattern]  # A literal name, even with glob characters in it.
    # Like TensorFlow's glob, names starting with a dot match too.
    if sys.version_info >= (3, 11):
        paths = glob.glob(pattern, include_hidden=True)
    else:
        paths = _glob_including_hidden(pattern)
    return [path for path in paths if not os.path.isdir(path)]


_MAGIC = re.compile(r"[*?[]")


def _glob_including_hidden(pattern):
    """`glob.glob(pattern, include_hidden=True)` for Python 3.10, whose glob
    has no `include_hidden`: each component of the pattern matched with
    `fnmatch` against every name in the directories matched so far."""
    head, tail = os.path.split(pattern)
    if not tail:
        return [head] if os.path.lexists(head) else []
    if not head or head == pattern:
        directories = [""]
    elif _MAGIC.search(head):
        directories = [path for path in _glob_including_hidden(head)
                       if os.path.isdir(path)]
    else:
        directories = [head] if os.path.isdir(head) else []
    if not _MAGIC.search(tail):
        return [os.path.join(directory, tail) for directory in directories
                if os.path.lexists(os.path.join(directory, tail))]
    matches = []
    for directory in directories:
        try:
            names = os.listdir(directory or os.curdir)
        except OSError:
            continue
        matches.extend(os.path.join(directory, name)
                       for name in fnmatch.filter(names, tail))
    return matches


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
    # `.<name>.tmp-<pid>-<random>`: a run that finds such a file of a dead
    # process in its output_dir removes it (`run_lock`).
    descriptor, temporary = tempfile.mkstemp(
        dir=directory, prefix=f".{os.path.basename(path)}.tmp-{os.getpid()}-")
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


class OutputIsInputError(ValueError):
    """An output path that is, or resolves to, one of the run's inputs."""


def _same_file(first, second):
    """Whether two local or remote paths name the same file.

    Local paths compare by `os.path.realpath` (symlinks, `..`, relative
    names) and, when both exist, by `os.path.samefile` (hard links, bind
    mounts); remote ones by their normalized text.
    """
    if is_remote(first) or is_remote(second):
        return first.rstrip("/") == second.rstrip("/")
    if os.path.realpath(first) == os.path.realpath(second):
        return True
    try:
        return os.path.samefile(first, second)
    except OSError:  # One does not exist (yet): not the same file.
        return False


def check_outputs_are_not_inputs(outputs, inputs):
    """Refuses, before anything is written, an output that is an input.

    Every script calls this with its output paths and its input paths, so
    that e.g. `--output_file` equal to `--input_file` cannot turn a corpus
    into a TFRecord.

    Args:
      outputs: `(description, path)` pairs, e.g. `("--output_file",
        "out.tfrecord")`, or `("--output_dir file", "out/vocab.txt")` for a
        file written inside a directory. A path may be a comma-separated
        list (Google's `--output_file`).
      inputs: `(description, path or pattern)` pairs; comma-separated globs
        are expanded (a pattern that matches nothing is skipped: its own
        check reports it). None or empty paths are skipped on both sides.

    Raises:
      OutputIsInputError: naming both flags and both paths, e.g.
        "--output_file a.txt is the input --input_file a.txt: refusing to
        overwrite an input; choose another output path".
    """
    expanded_inputs = []
    for description, pattern in inputs:
        if not pattern:
            continue
        try:
            paths = expand_input_patterns(pattern)
        except InputFileError:
            paths = []
        if not paths and not is_remote(pattern):
            # A checkpoint prefix is no file itself; its files are inputs.
            paths = glob.glob(glob.escape(os.fspath(pattern)) + ".*")
        expanded_inputs.extend((description, os.fspath(pattern), path)
                               for path in paths)
    for out_description, output in outputs:
        if not output:
            continue
        for output_path in [part.strip() for part in
                            os.fspath(output).split(",") if part.strip()]:
            for in_description, pattern, input_path in expanded_inputs:
                if _same_file(output_path, input_path):
                    same = ("" if os.fspath(output_path) == input_path
                            else " (the same file)")
                    raise OutputIsInputError(
                        f"{out_description} {output_path} is the input "
                        f"{in_description} {input_path}{same}: refusing to "
                        f"overwrite an input; choose another output path")


@contextlib.contextmanager
def atomic_directory(path, overwrite=False):
    """Yields a temporary directory beside `path` that becomes `path`.

    On success the temporary directory is renamed to `path`; an exception
    inside the block removes it and leaves `path` as it was. An existing
    `path` is refused unless `overwrite`; then it is replaced only once the
    new directory is complete (moved aside, the new one renamed in, the old
    one removed).

    Args:
      path: the directory to create (local file system; missing parent
        directories are created).
      overwrite: replace an existing `path`.

    Yields:
      The temporary directory's path (a string).

    Raises:
      FileExistsError: `path` exists and `overwrite` is False.
    """
    path = os.path.abspath(os.fspath(path))
    parent = os.path.dirname(path)
    if os.path.lexists(path) and not overwrite:
        raise FileExistsError(
            f"{path} already exists; choose another directory or allow "
            "replacing it (--overwrite)")
    os.makedirs(parent, exist_ok=True)
    temporary = tempfile.mkdtemp(dir=parent,
                                 prefix=f".{os.path.basename(path)}.")
    try:
        yield temporary
        os.chmod(temporary, 0o755)  # mkdtemp makes it private (0700).
        if os.path.lexists(path):
            old = tempfile.mkdtemp(dir=parent,
                                   prefix=f".{os.path.basename(path)}.old.")
            aside = os.path.join(old, "replaced")
            os.rename(path, aside)
            os.rename(temporary, path)
            shutil.rmtree(old)
        else:
            os.rename(temporary, path)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise
