"""Input patterns and atomic writes."""

import os
import re

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
