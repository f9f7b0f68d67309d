"""Files: Google's comma-separated input patterns, and writes that never leave
a half-written file under the real name."""

import contextlib
import errno
import fnmatch
import glob
import json
import os
import re
import secrets
import shutil
import string
import sys
import tempfile
import uuid

from absl import logging


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


def parse_json(text, source, error_class=ValueError):
    """`json.loads(text)`, with a one-line error naming `source`.

    Args:
      text: the JSON text.
      source: what holds it, for the message (a file name, or e.g. "the
        TF_CONFIG environment variable").
      error_class: the exception class to raise.

    Returns:
      The parsed value.

    Raises:
      error_class: "<source>: not valid JSON (line L, column C): <why>".
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise error_class(
            f"{source}: not valid JSON (line {error.lineno}, column "
            f"{error.colno}): {error.msg}") from None


def split_lines(text, keepends=False):
    """The lines of `text`, broken at "\\n" only ("\\r\\n" is one break).

    `str.splitlines` also breaks at form feed, vertical tab, U+0085, U+2028,
    U+2029, lone "\\r" and more; a data file holding one of these inside a
    line would then have more lines than a text editor or `wc -l` counts,
    predictions written back line for line would shift, and messages would
    name the wrong line. Every reader of line-based data splits with this.

    Args:
      text: the decoded text.
      keepends: keep each line's "\\n" or "\\r\\n" (for `csv.reader`,
        which needs them inside quoted multi-line fields).

    Returns:
      A list of lines; a final line break ends the last line (no empty line
      after it), as `str.splitlines`.
    """
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # The text ends with a line break (or is empty).
        ends = ["\n"] * len(lines)
    else:
        ends = ["\n"] * (len(lines) - 1) + [""]
    result = []
    for line, end in zip(lines, ends):
        if end and line.endswith("\r"):
            line, end = line[:-1], "\r\n"
        result.append(line + end if keepends else line)
    return result


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


class InputFiles(list):
    """Files already expanded from their patterns (`expand_input_patterns`
    returns one): expanding it again gives it back unchanged, so a file
    whose name holds a comma or a glob character is not read as patterns,
    and a program's globs are expanded once, however many readers it has.
    """


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
      The file paths, an `InputFiles` (given one, it is returned as it is).

    Raises:
      InputFileError: no pattern given, or a pattern that matches no file
        (the message names it).
    """
    if isinstance(input_patterns, InputFiles):
        if not input_patterns:
            raise InputFileError("no input file given")
        return input_patterns
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
    return InputFiles(files)


def check_output_directory(path):
    """Refuses, before any slow work, an output file whose directory is
    missing.

    Args:
      path: a local output file (remote ones are not checked: object
        stores have no real directories).

    Returns:
      The directory's absolute path ("" for a remote path).

    Raises:
      FileNotFoundError: `cannot write <path>: directory <dir> does not
        exist`.
    """
    path = os.fspath(path)
    if is_remote(path):
        return ""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(
            f"cannot write {path}: directory {directory} does not exist")
    return directory


# -- writes that fail: one line naming the file --------------------------------

# Errors only a write produces (the device is full, a quota or the file
# size limit is reached), and what to do about each.
_WHAT_TO_DO = {errno.ENOSPC: "free space and run again",
               errno.EDQUOT: "free space within your quota and run again",
               errno.EFBIG: "raise the file size limit (ulimit -f) and run "
                            "again"}
_WRITE_ONLY_ERRNOS = tuple(_WHAT_TO_DO)


class WriteError(OSError):
    """Writing an output failed for lack of space; names the file and says
    what to do.

    Python's `[Errno 28] No space left on device` and TensorFlow's
    `ResourceExhaustedError` (a traceback of dozens of lines) name no file
    the user knows; this says which output could not be written. Its
    `errno` is the original one (ENOSPC, EDQUOT or EFBIG).
    """

    def __init__(self, number, description, path):
        super().__init__(
            f"cannot write {description} {path}: {os.strerror(number)} "
            f"(nothing was written under that name; {_WHAT_TO_DO[number]})")
        self.errno = number
        self.filename = os.fspath(path)

    def __str__(self):
        return self.args[0]


def _write_failure_errno(error):
    """The errno of `error` if it says that a write found no space, else
    None (a TensorFlow error carries it only as text: `...; No space left
    on device`)."""
    if isinstance(error, OSError):
        return error.errno if error.errno in _WRITE_ONLY_ERRNOS else None
    tensorflow = sys.modules.get("tensorflow")  # A TF error needs it loaded.
    if tensorflow is not None and isinstance(error,
                                             tensorflow.errors.OpError):
        message = error.message or ""
        for number in _WRITE_ONLY_ERRNOS:
            if os.strerror(number) in message:
                return number
    return None


@contextlib.contextmanager
def naming_write_errors(path, description="file"):
    """Turns a full disk while writing `path` into a `WriteError` naming it.

    Wrap the calls that write `path` (Python file writes, TensorFlow's
    checkpoint and SavedModel writers); other errors pass unchanged.

    Args:
      path: the output, as the user named it (its final name, not the
        temporary one being written).
      description: what it is, e.g. "checkpoint", "SavedModel".

    Raises:
      WriteError: an `OSError` with errno ENOSPC, EDQUOT or EFBIG, or a
        TensorFlow error saying so, was raised inside the block.
    """
    try:
        yield
    except WriteError:
        raise
    except Exception as error:  # pylint: disable=broad-except
        number = _write_failure_errno(error)
        if number is None:
            raise
        raise WriteError(number, description, path) from error


# -- temporaries of writers that were killed ------------------------------------

def temporary_prefix(path):
    """The name prefix of `path`'s temporaries: `.<name>.tmp-<pid>-`.

    The writing process's id in the name lets a later run tell a dead
    writer's leftovers (`remove_dead_writers_temporaries`) from a live one's.
    """
    return f".{os.path.basename(os.fspath(path))}.tmp-{os.getpid()}-"


def process_is_running(pid):
    """Whether a process of this id runs on this host."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # It runs, as another user.
    return True


def remove_dead_writers_temporaries(path):
    """Removes what killed writers of `path` left beside it.

    `atomic_write`, the TFRecord writers and `atomic_directory` write
    `.<name>.tmp-<pid>-<random>` beside `path` (a file, or a directory for
    `atomic_directory`) and rename it at the end; a process killed before
    that leaves it behind (a corpus' records: tens of MB). Those whose
    process no longer runs are removed; nothing else is touched.

    Args:
      path: a local output path (a remote one is skipped).

    Returns:
      The removed paths, sorted.
    """
    path = os.fspath(path)
    if is_remote(path):
        return []
    directory = os.path.dirname(os.path.abspath(path))
    pattern = re.compile(re.escape(f".{os.path.basename(path)}.tmp-")
                         + r"(?P<pid>\d+)-[0-9a-z_]{8}")
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    removed = []
    for name in sorted(names):
        match = pattern.fullmatch(name)
        if not match:
            continue
        pid = int(match.group("pid"))
        if pid == os.getpid() or process_is_running(pid):
            continue
        temporary = os.path.join(directory, name)
        try:
            if os.path.isdir(temporary) and not os.path.islink(temporary):
                shutil.rmtree(temporary)
            else:
                os.remove(temporary)
        except OSError:
            continue  # Gone meanwhile, or not ours to remove.
        removed.append(temporary)
    if removed:
        logging.warning(
            "Removed %d temporary files left by a killed run writing %s: %s",
            len(removed), path,
            ", ".join(os.path.basename(name) for name in removed))
    return removed


# The random part of a temporary's name (`remove_dead_writers_temporaries`
# matches it).
_NAME_CHARACTERS = string.ascii_lowercase + string.digits + "_"
_RANDOM_NAME_LENGTH = 8


def _create_temporary(directory, prefix, create):
    """Creates a new entry `<prefix><8 random characters>` in `directory`.

    Unlike `tempfile.mkstemp` (0600) and `mkdtemp` (0700), what `create`
    makes gets the mode the user's umask gives, as `open()` and `os.mkdir`
    do (and the directory's default ACL, which a later chmod would undo):
    an output is as private, or as shared, as the checkpoints TensorFlow
    writes beside it.

    Args:
      directory: where to create it.
      prefix: the name's start (`temporary_prefix`).
      create: `create(path)` creates `path`, raising FileExistsError if it
        exists (`os.open` with O_EXCL, `os.mkdir`).

    Returns:
      (path, what `create` returned).
    """
    for _ in range(100):
        name = prefix + "".join(secrets.choice(_NAME_CHARACTERS)
                                for _ in range(_RANDOM_NAME_LENGTH))
        path = os.path.join(directory, name)
        try:
            return path, create(path)
        except FileExistsError:
            continue  # Taken: another name.
    raise FileExistsError(errno.EEXIST, "no unused temporary name",
                          os.path.join(directory, prefix + "*"))


def _new_file(path):
    """Opens a new file for writing with `open()`'s mode (0666 less the
    umask); its descriptor."""
    flags = (os.O_WRONLY | os.O_CREAT | os.O_EXCL
             | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
             | getattr(os, "O_BINARY", 0))
    return os.open(path, flags, 0o666)


def _new_directory(path):
    """Creates a directory with `os.mkdir`'s mode (0777 less the umask)."""
    os.mkdir(path, 0o777)


@contextlib.contextmanager
def atomic_write(path, mode="w", encoding="utf-8", newline=None):
    """Opens a temporary file beside `path` that replaces it on success.

    A crash or an exception inside the block leaves `path` as it was (and no
    temporary file behind), so a user's existing output is never lost to a
    half-written one. Works on every `tf.io.gfile` file system: local paths
    with `os` (no TensorFlow import), URLs such as `gs://bucket/file` with
    `tf.io.gfile` (a temporary object renamed over the real name). A
    local file gets the mode `open()` would give it (0666 less the umask).

    Args:
      path: the file to write (local or a URL).
      mode: "w" (text) or "wb" (binary).
      encoding: text encoding (text mode only).
      newline: as `open`'s (text mode only).

    Yields:
      The open file object.

    Raises:
      FileNotFoundError: the directory of `path` does not exist (named).
      WriteError: the disk is full (or a quota or file size limit was hit)
        while writing; the message names `path`.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_write mode must be 'w' or 'wb', got {mode!r}")
    path = os.fspath(path)
    if is_remote(path):
        with _remote_atomic_write(path, mode) as writer:
            yield writer
        return
    directory = check_output_directory(path)
    # `.<name>.tmp-<pid>-<random>`: a run that finds such a file of a dead
    # process removes it (`run_lock`, `remove_dead_writers_temporaries`).
    temporary, descriptor = _create_temporary(
        directory, temporary_prefix(path), _new_file)
    try:
        text_options = {} if "b" in mode else {"encoding": encoding,
                                               "newline": newline}
        with naming_write_errors(path):
            with os.fdopen(descriptor, mode, **text_options) as writer:
                yield writer
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


def _is_inside(path, directory):
    """Whether local `path` is under `directory` (links followed)."""
    if is_remote(path) or is_remote(directory):
        return os.fspath(path).startswith(
            os.fspath(directory).rstrip("/") + "/")
    return os.path.realpath(path).startswith(
        os.path.join(os.path.realpath(directory), ""))


def check_outputs_are_not_inputs(outputs, inputs, *,
                                 whole_directories=False):
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
        are expanded, `InputFiles` taken as they are (a pattern that
        matches nothing is skipped: its own check reports it); with
        `whole_directories`, an existing directory is an input itself. None or empty paths are skipped on both sides.
      whole_directories: the outputs are directories that the run replaces
        whole (`atomic_directory`): an input inside one is refused too.

    Raises:
      OutputIsInputError: naming both flags and both paths, e.g.
        "--output_file a.txt is the input --input_file a.txt: refusing to
        overwrite an input; choose another output path", or "--export_dir
        run holds the input --init_checkpoint run/model.ckpt-4: ...".
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
            if os.path.isdir(pattern):
                # A directory input (--data_dir, a checkpoint directory)
                # matters only to an output directory replaced whole: a
                # run's --output_dir may well be its --init_checkpoint.
                paths = [os.fspath(pattern)] if whole_directories else []
            else:
                # A checkpoint prefix is no file itself; its files are
                # inputs.
                paths = glob.glob(glob.escape(os.fspath(pattern)) + ".*")
        expanded_inputs.extend((description, path) for path in paths)
    for out_description, output in outputs:
        if not output:
            continue
        for output_path in [part.strip() for part in
                            os.fspath(output).split(",") if part.strip()]:
            for in_description, input_path in expanded_inputs:
                if _same_file(output_path, input_path):
                    same = ("" if os.fspath(output_path) == input_path
                            else " (the same file)")
                    raise OutputIsInputError(
                        f"{out_description} {output_path} is the input "
                        f"{in_description} {input_path}{same}: refusing to "
                        f"overwrite an input; choose another output path")
                if whole_directories and _is_inside(input_path, output_path):
                    raise OutputIsInputError(
                        f"{out_description} {output_path} holds the input "
                        f"{in_description} {input_path}: refusing to "
                        f"replace it; choose another output path")


def check_replaceable_directory(path, overwrite=False,
                                check_replaceable=None):
    """What `atomic_directory` refuses about an existing `path`, for
    checking before slow work.

    Args:
      path: the output directory.
      overwrite: whether replacing an existing one is allowed.
      check_replaceable: as `atomic_directory`'s.

    Raises:
      FileExistsError: `path` exists and `overwrite` is False; or what
        `check_replaceable` raises.
    """
    path = os.path.abspath(os.fspath(path))
    if not os.path.lexists(path):
        return
    if not overwrite:
        raise FileExistsError(
            f"{path} already exists; choose another directory or allow "
            "replacing it (--overwrite)")
    if check_replaceable is not None:
        check_replaceable(path)


@contextlib.contextmanager
def atomic_directory(path, overwrite=False, check_replaceable=None):
    """Yields a temporary directory beside `path` that becomes `path`.

    On success the temporary directory is renamed to `path`; an exception
    inside the block removes it and leaves `path` as it was. An existing
    `path` is refused unless `overwrite`; then it is replaced only once the
    new directory is complete (moved aside, the new one renamed in, the old
    one removed).

    The temporary directory is `.<name>.tmp-<pid>-<random>` and the old one
    is moved aside into `.<name>.old-<pid>-<random>`: what a killed process
    left there is cleaned up by the next call for the same `path` (a
    previous `path` that the killed process had moved aside, but not yet
    replaced, is first put back). The directory gets the mode `os.mkdir`
    would give it (0777 less the umask).

    Args:
      path: the directory to create (local file system; missing parent
        directories are created).
      overwrite: replace an existing `path`.
      check_replaceable: optional `check_replaceable(path)` that raises when
        the existing `path` must not be replaced even with `overwrite` (it
        is not what this writer wrote); called before the block and again
        just before the replacement.

    Yields:
      The temporary directory's path (a string).

    Raises:
      FileExistsError: `path` exists and `overwrite` is False.
    """
    path = os.path.abspath(os.fspath(path))
    parent = os.path.dirname(path)
    name = os.path.basename(path)

    def check_existing():
        check_replaceable_directory(path, overwrite, check_replaceable)

    if os.path.isdir(parent):
        _restore_dead_writers_directories(path)
        remove_dead_writers_temporaries(path)
    check_existing()
    os.makedirs(parent, exist_ok=True)
    temporary, _ = _create_temporary(parent, temporary_prefix(path),
                                     _new_directory)
    try:
        with naming_write_errors(path, "directory"):
            yield temporary
        check_existing()
        if os.path.lexists(path):
            old = tempfile.mkdtemp(dir=parent,
                                   prefix=f".{name}.old-{os.getpid()}-")
            aside = os.path.join(old, "replaced")
            os.rename(path, aside)
            os.rename(temporary, path)
            shutil.rmtree(old)
        else:
            os.rename(temporary, path)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise


def _restore_dead_writers_directories(path):
    """Puts back the `path` that a killed `atomic_directory` had moved
    aside, and removes the moved-aside copies of dead writers."""
    parent, name = os.path.split(path)
    pattern = re.compile(re.escape(f".{name}.old-") + r"(?P<pid>\d+)-"
                         r"[0-9a-z_]{8}")
    for entry in sorted(os.listdir(parent)):
        match = pattern.fullmatch(entry)
        if not match:
            continue
        pid = int(match.group("pid"))
        if pid == os.getpid() or process_is_running(pid):
            continue
        old = os.path.join(parent, entry)
        aside = os.path.join(old, "replaced")
        if not os.path.lexists(path) and os.path.lexists(aside):
            os.rename(aside, path)
            logging.warning("Put back %s, which a killed run had moved "
                            "aside to replace it.", path)
        shutil.rmtree(old, ignore_errors=True)
