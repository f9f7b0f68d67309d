"""Input patterns and atomic writes."""

import contextlib
import errno
import os
import re
import resource
import signal
import stat

import pytest

from bert_tf import file_io


def test_patterns_keep_order_dedupe_and_sort_on_request(tmp_path):
    for name in ("b.txt", "a.txt", ".hidden.txt", "c[1].txt"):
        (tmp_path / name).write_text("x")
    (tmp_path / "dir.txt").mkdir()
    star = str(tmp_path / "*.txt")
    files = file_io.expand_input_patterns(
        f"{tmp_path / 'b.txt'}, {star}", sort=True)
    assert files == [str(tmp_path / n) for n in
                     ("b.txt", ".hidden.txt", "a.txt", "c[1].txt")]
    # A literal name with glob characters names that file.
    assert file_io.expand_input_patterns(
        [tmp_path / "c[1].txt"]) == [str(tmp_path / "c[1].txt")]


def test_pattern_matching_nothing_is_named(tmp_path):
    pattern = str(tmp_path / "none-*.txt")
    with pytest.raises(file_io.InputFileError,
                       match=re.escape(f"no file matches input pattern '{pattern}'")):
        file_io.expand_input_patterns(pattern)
    with pytest.raises(ValueError, match="no input file given"):
        file_io.expand_input_patterns(" , ")


def test_atomic_write_replaces_only_on_success(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("old")
    with pytest.raises(RuntimeError):
        with file_io.atomic_write(path) as writer:
            writer.write("half")
            raise RuntimeError("crash")
    assert path.read_text() == "old"
    assert os.listdir(tmp_path) == ["out.txt"]
    with file_io.atomic_write(path, "wb") as writer:
        writer.write(b"new")
    assert path.read_bytes() == b"new"
    assert os.listdir(tmp_path) == ["out.txt"]


@contextlib.contextmanager
def _umask(mask):
    previous = os.umask(mask)
    try:
        yield
    finally:
        os.umask(previous)


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("umask", [0o077, 0o022, 0o002])
def test_outputs_get_the_mode_the_umask_gives_as_checkpoints_do(tmp_path,
                                                                umask):
    """What the atomic writers write is as private (or as shared) as what
    `open()`, `os.mkdir` and TensorFlow's checkpoint writer create in the
    same directory under the user's umask."""
    import numpy as np

    from bert_tf.checkpoints import tf1_checkpoint
    from bert_tf.training import run_lock
    directory = tmp_path / "run"
    directory.mkdir()
    os.chmod(directory, 0o755)
    with _umask(umask):
        with open(directory / "by_open.txt", "w"):
            pass
        os.mkdir(directory / "by_mkdir")
        with file_io.atomic_write(directory / "predictions.txt") as writer:
            writer.write("x")
        with file_io.atomic_write(directory / "model.safetensors",
                                  "wb") as writer:
            writer.write(b"x")
        with file_io.atomic_directory(directory / "export") as temporary:
            with open(os.path.join(temporary, "inside.txt"), "w"):
                pass
        tf1_checkpoint.save_checkpoint({"x": np.zeros(2, np.float32)},
                                       str(directory / "model.ckpt-1"))
        run_lock.lock_output_dir(str(directory))
        lock_mode = _mode(directory / run_lock.LOCK_FILE)
        run_lock.release_output_dir(str(directory))
    assert _mode(directory / "by_open.txt") == 0o666 & ~umask
    assert lock_mode == 0o666 & ~umask
    for name in ("predictions.txt", "model.safetensors",
                 "model.ckpt-1.index", "model.ckpt-1.data-00000-of-00001",
                 "checkpoint"):
        assert _mode(directory / name) == 0o666 & ~umask, name
    assert _mode(directory / "by_mkdir") == 0o777 & ~umask
    assert _mode(directory / "export") == 0o777 & ~umask


def test_atomic_write_names_a_missing_directory(tmp_path):
    path = tmp_path / "missing" / "out.txt"
    with pytest.raises(FileNotFoundError, match="directory .*missing does not exist"):
        with file_io.atomic_write(path):
            pass


def test_read_bytes_names_the_file_it_cannot_read(tmp_path):
    (tmp_path / "vocab.txt").write_bytes(b"[PAD]\n\xc3\xa9\n")
    assert file_io.read_bytes(tmp_path / "vocab.txt") == b"[PAD]\n\xc3\xa9\n"
    with pytest.raises(FileNotFoundError) as raised:
        file_io.read_bytes(tmp_path / "gone.txt", "vocab file")
    assert str(raised.value) == (
        f"vocab file {tmp_path / 'gone.txt'} does not exist")
    with pytest.raises(OSError) as raised:
        file_io.read_bytes(tmp_path, "SQuAD file")
    assert str(raised.value) == (
        f"cannot read SQuAD file {tmp_path}: Is a directory")


@contextlib.contextmanager
def _file_size_limit(limit_bytes):
    """Writes past `limit_bytes` fail with EFBIG, as the kernel enforces
    `ulimit -f` (a real failed write, not a mock); SIGXFSZ is ignored so
    that the process gets the error instead of being killed."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous_handler)


def test_a_write_past_the_size_limit_names_the_file_and_keeps_the_old(
        tmp_path):
    from bert_tf.data import tfrecord_files
    output = tmp_path / "results.txt"
    output.write_text("previous results\n")
    records = tmp_path / "out.tfrecord"
    records.write_bytes(b"previous records")
    with _file_size_limit(4096):
        with pytest.raises(file_io.WriteError) as text_error:
            with file_io.atomic_write(output) as writer:
                for _ in range(100):
                    writer.write("x" * 1000)
        with pytest.raises(file_io.WriteError) as records_error:
            with tfrecord_files.TFRecordFileWriter(records,
                                                   buffer_records=2) as writer:
                for _ in range(100):
                    writer.write(b"y" * 1000)
    assert str(text_error.value) == (
        f"cannot write file {output}: File too large (nothing was written "
        f"under that name; raise the file size limit (ulimit -f) and run "
        f"again)")
    assert text_error.value.errno == errno.EFBIG
    assert str(records_error.value) == (
        f"cannot write output file {records}: File too large (nothing was "
        f"written under that name; raise the file size limit (ulimit -f) "
        f"and run again)")
    assert output.read_text() == "previous results\n"
    assert records.read_bytes() == b"previous records"
    assert sorted(os.listdir(tmp_path)) == ["out.tfrecord", "results.txt"]


def test_only_a_full_disk_becomes_a_write_error(tmp_path):
    import tensorflow as tf
    full = tf.errors.ResourceExhaustedError(
        None, None, "/x/.m.tmp-1.data; No space left on device")
    with pytest.raises(file_io.WriteError) as raised:
        with file_io.naming_write_errors("/x/m", "checkpoint"):
            raise full
    assert raised.value.errno == errno.ENOSPC
    assert raised.value.__cause__ is full
    # Out of memory, a read that failed: not about the file being written.
    for error in (tf.errors.ResourceExhaustedError(
                      None, None, "OOM when allocating tensor"),
                  FileNotFoundError(errno.ENOENT, "No such file", "in.txt")):
        with pytest.raises(type(error)) as raised:
            with file_io.naming_write_errors("/x/m", "checkpoint"):
                raise error
        assert raised.value is error


# -- split_lines: line breaks are "\n" (and "\r\n") only ----------------------

@pytest.mark.parametrize("text, lines, with_ends", [
    ("", [], []),
    ("a", ["a"], ["a"]),
    ("a\n", ["a"], ["a\n"]),
    ("a\r\nb", ["a", "b"], ["a\r\n", "b"]),
    ("\n\n", ["", ""], ["\n", "\n"]),
    # Form feed, vertical tab, U+0085, U+2028, U+2029, a lone "\r", \x1c:
    # str.splitlines breaks at each; a text editor and `wc -l` do not.
    ("a\x0cb\x0bc\x85d\u2028e\u2029f\rg\x1ch\nnext\n",
     ["a\x0cb\x0bc\x85d\u2028e\u2029f\rg\x1ch", "next"],
     ["a\x0cb\x0bc\x85d\u2028e\u2029f\rg\x1ch\n", "next\n"]),
])
def test_split_lines_breaks_at_newline_only(text, lines, with_ends):
    assert file_io.split_lines(text) == lines
    assert file_io.split_lines(text, keepends=True) == with_ends
    # The count a user sees: `wc -l` (+1 when the last line has no "\n").
    assert len(lines) == text.count("\n") + (not text.endswith("\n")
                                             and text != "")


@pytest.mark.parametrize("pattern", [
    "*", ".*", "d/*", "d/.h*", "*/x*", "*/*", "d/[x.]*", "d/?hidden",
    "d/x1.txt", "missing/*", "d/*/deep"])
def test_glob_including_hidden_equals_pythons(tmp_path, monkeypatch,
                                              pattern):
    """Python 3.10's stand-in for glob's include_hidden=True, against
    Python 3.11's glob itself (where the tests run on 3.11 or later)."""
    import glob
    import sys
    if sys.version_info < (3, 11):
        pytest.skip("the reference, glob's include_hidden, is Python 3.11+")
    monkeypatch.chdir(tmp_path)
    for name in ("x1.txt", ".hidden", ".h2", "y"):
        (tmp_path / "d").mkdir(exist_ok=True)
        (tmp_path / "d" / name).write_text("")
    (tmp_path / ".top").mkdir()
    (tmp_path / ".top" / "x2").write_text("")
    (tmp_path / "d" / "sub").mkdir()
    (tmp_path / "d" / "sub" / "deep").write_text("")
    for form in (pattern, str(tmp_path / pattern)):
        assert sorted(file_io._glob_including_hidden(form)) == sorted(
            glob.glob(form, include_hidden=True)), form
