"""Tests of WordPiece vocabulary learning and its command line."""

import collections
import os
import random
import time

import pytest

from bert_tf import learn_vocab as learn_vocab_cli
from bert_tf.text import tokenization
from bert_tf.text import vocab_learning as vl

_SPECIALS = ["[PAD]", "[UNK]"]

# The classic byte-pair example, worked by hand (see the test below).
_CLASSIC_COUNTS = {"low": 5, "lower": 2, "newest": 6, "widest": 3}
_CLASSIC_CHARACTERS = ["d", "e", "i", "l", "n", "o", "r", "s", "t", "w"]
_CLASSIC_PIECES = ["##es", "##est", "##ow", "low", "##ew", "##ewest",
                   "newest", "##dest", "##idest", "widest", "##er", "lower"]


def _naive_learn(word_counts, vocab_size, special_tokens, min_pair_count):
    """Reference learner: recounts every pair of every word at each merge.

    Slow but plainly right; ties go to the smallest pair, as documented.
    """
    characters = sorted({c for word in word_counts for c in word})
    vocab = list(special_tokens) + characters + [
        "##" + c for c in characters if c.isalnum()]
    words = {word: [word[0]] + ["##" + c for c in word[1:]]
             for word in word_counts}
    while len(vocab) < vocab_size:
        pairs = collections.Counter()
        for word, symbols in words.items():
            for pair in zip(symbols, symbols[1:]):
                pairs[pair] += word_counts[word]
        if not pairs:
            break
        pair, count = min(pairs.items(), key=lambda item: (-item[1], item[0]))
        if count < min_pair_count:
            break
        merged = pair[0] + pair[1][2:]
        for word, symbols in words.items():
            out, i = [], 0
            while i < len(symbols):
                if tuple(symbols[i:i + 2]) == pair:
                    out.append(merged)
                    i += 2
                else:
                    out.append(symbols[i])
                    i += 1
            words[word] = out
        if merged not in vocab:
            vocab.append(merged)
    return vocab


# -- layout ----------------------------------------------------------------

def test_reserved_tokens_follow_googles_uncased_layout(uncased_vocab_file):
    google = uncased_vocab_file.read_text(encoding="utf-8").split("\n")
    ours = vl.reserved_tokens()
    assert ours == google[:len(ours)]
    assert [ours.index(t) for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]",
                                    "[MASK]")] == [0, 100, 101, 102, 103]


def test_reserved_tokens_with_five_unused_match_cased_tiny(cased_tiny_dir):
    google = (cased_tiny_dir / "vocab.txt").read_text(
        encoding="utf-8").split("\n")
    assert vl.reserved_tokens(5) == google[:10]


def test_reserved_tokens_rejects_negative_count():
    with pytest.raises(ValueError, match="num_unused_tokens must be >= 0"):
        vl.reserved_tokens(-1)


# -- counting --------------------------------------------------------------

def test_count_words_uses_the_basic_tokenizer():
    lines = ["Héllo, WORLD! héllo", "", "don't\tstop\u00a0now"]
    assert vl.count_words(lines, do_lower_case=True) == {
        "hello": 2, ",": 1, "world": 1, "!": 1, "don": 1, "'": 1, "t": 1,
        "stop": 1, "now": 1}
    assert vl.count_words(lines, do_lower_case=False) == {
        "Héllo": 1, "héllo": 1, ",": 1, "WORLD": 1, "!": 1, "don": 1,
        "'": 1, "t": 1, "stop": 1, "now": 1}


def test_count_words_in_files_reads_patterns(tmp_path):
    (tmp_path / "a.txt").write_text("one two\n\ntwo\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("three\n", encoding="utf-8")
    (tmp_path / "c.txt").write_text("two\n", encoding="utf-8")
    counts = vl.count_words_in_files(
        f"{tmp_path / 'a.txt'},{tmp_path / '[bc].txt'}")
    assert counts == {"one": 1, "two": 3, "three": 1}


def test_literal_names_with_glob_characters_are_read(tmp_path):
    path = tmp_path / "corpus[1].txt"
    path.write_text("word\n", encoding="utf-8")
    assert vl.count_words_in_files(str(path)) == {"word": 1}


def test_missing_input_is_named(tmp_path):
    with pytest.raises(FileNotFoundError,
                       match=r"no file matches input pattern '.*absent\.txt'"):
        vl.count_words_in_files(str(tmp_path / "absent.txt"))


def test_empty_corpus_is_named(tmp_path):
    path = tmp_path / "empty.txt"
    path.write_text("\n  \n\n", encoding="utf-8")
    with pytest.raises(ValueError,
                       match=r"no words in .*empty\.txt: the corpus is empty"):
        vl.count_words_in_files(str(path))


def test_invalid_utf8_names_file_and_line(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes(b"fine line\nsecond\ncaf\xe9 au lait\n")
    with pytest.raises(ValueError, match=r"input file .*latin1\.txt, line 3: "
                                         r"not valid UTF-8 \(invalid "
                                         r"continuation byte at byte 3"):
        vl.count_words_in_files(str(path))


# -- learning --------------------------------------------------------------

def test_classic_example_learns_the_hand_computed_pieces():
    # Pair counts: (##e,##s)=(##s,##t)=9 -> "##es" (smaller pair), then
    # "##est"=9; (##o,##w)=(l,##o)=7 -> "##ow", "low"; at 6 "##ew",
    # "##ewest", "newest"; at 3 "##dest", "##idest", "widest"; at 2 "##er",
    # "lower".
    vocab = vl.learn_vocab(_CLASSIC_COUNTS, 100, _SPECIALS)
    assert vocab == (_SPECIALS + _CLASSIC_CHARACTERS +
                     ["##" + c for c in _CLASSIC_CHARACTERS] +
                     _CLASSIC_PIECES)


def test_vocab_size_cuts_the_learned_pieces():
    vocab = vl.learn_vocab(_CLASSIC_COUNTS, 26, _SPECIALS)
    assert len(vocab) == 26
    assert vocab[-4:] == _CLASSIC_PIECES[:4]


def test_min_pair_count_stops_merging():
    vocab = vl.learn_vocab(_CLASSIC_COUNTS, 100, _SPECIALS, min_pair_count=3)
    assert vocab[22:] == _CLASSIC_PIECES[:10]  # The pairs seen twice stay.


def test_learned_vocab_drives_full_tokenizer(tmp_path):
    vocab_file = tmp_path / "vocab.txt"
    vl.write_vocab(vl.learn_vocab(_CLASSIC_COUNTS, 100, _SPECIALS),
                   vocab_file)
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=True)
    assert tokenizer.tokenize("Lowest NEWER widest lows") == [
        "low", "##est", "n", "##ew", "##er", "widest", "low", "##s"]
    assert tokenizer.tokenize("low-x") == ["low", "[UNK]", "[UNK]"]


def test_merging_matches_the_naive_reference():
    rng = random.Random(7)
    letters = "aaabbcdeé"
    counts = {}
    for _ in range(250):
        word = "".join(rng.choice(letters)
                       for _ in range(rng.randint(1, 9)))
        counts[word] = counts.get(word, 0) + rng.choice((1, 1, 2, 3, 8, 20))
    for min_pair_count in (1, 4):
        for vocab_size in (40, 150):
            expected = _naive_learn(counts, vocab_size, _SPECIALS,
                                    min_pair_count)
            assert vl.learn_vocab(counts, vocab_size, _SPECIALS,
                                  min_pair_count=min_pair_count) == expected


def test_overlapping_pairs_merge_left_to_right():
    # "aaa" = a ##a ##a and "aaaa" = a ##a ##a ##a: (##a,##a) occurs
    # 1 + 2 * 3 = 7 times, (a,##a) 4 times; "aaaa" then becomes a ##aa ##a.
    counts = {"aaa": 1, "aaaa": 3}
    assert vl.learn_vocab(counts, 10, _SPECIALS, min_pair_count=1) == (
        _naive_learn(counts, 10, _SPECIALS, 1))
    assert vl.learn_vocab(counts, 5, _SPECIALS, min_pair_count=1) == [
        "[PAD]", "[UNK]", "a", "##a", "##aa"]


def test_only_characters_that_join_words_get_continuation_forms():
    counts = {"中": 3, ",": 2, "ab": 1, "é": 1}
    vocab = vl.learn_vocab(counts, 100, _SPECIALS, min_pair_count=1)
    assert vocab == _SPECIALS + [",", "a", "b", "é", "中",
                                 "##a", "##b", "##é", "ab"]


def test_rare_characters_beyond_the_alphabet_are_left_out():
    counts = {"aab": 5, "ab": 4, "xyz": 1}
    vocab = vl.learn_vocab(counts, 100, _SPECIALS, max_alphabet_size=2)
    # (##a,##b)=5 ties (a,##a)=5 and sorts first; then (a,##ab)=5, (a,##b)=4.
    assert vocab == _SPECIALS + ["a", "b", "##a", "##b", "##ab", "aab", "ab"]
    assert "x" not in vocab


def test_words_longer_than_full_tokenizer_accepts_are_ignored():
    counts = {"q" * 201: 50, "ab": 2}
    assert vl.learn_vocab(counts, 100, _SPECIALS) == _SPECIALS + [
        "a", "b", "##a", "##b", "ab"]


def test_too_small_vocab_size_gives_the_sizes():
    with pytest.raises(ValueError, match=r"vocab_size 10 is too small: the 2 "
                                         r"special tokens and 10 characters "
                                         r"with their \"##\" forms already "
                                         r"take 22 entries"):
        vl.learn_vocab(_CLASSIC_COUNTS, 10, _SPECIALS)


def test_no_words_is_an_error():
    with pytest.raises(ValueError, match="no words to learn"):
        vl.learn_vocab({}, 100, _SPECIALS)


def test_unknown_token_rate_counts_pieces():
    vocab = _SPECIALS + ["a", "##b"]
    # "ab" -> a ##b (2 pieces); "ba" -> [UNK] (1 piece), seen 3 times.
    assert vl.unknown_token_rate({"ab": 1, "ba": 3}, vocab) == 3 / 5


# -- writing ---------------------------------------------------------------

def test_write_vocab_round_trips_and_leaves_no_temporary(tmp_path):
    vocab = vl.learn_vocab(_CLASSIC_COUNTS, 200, vl.reserved_tokens())
    path = tmp_path / "vocab.txt"
    vl.write_vocab(vocab, path)
    assert list(tokenization.load_vocab(path)) == vocab
    assert path.read_bytes().endswith(b"lower\n")
    assert os.listdir(tmp_path) == ["vocab.txt"]


def test_write_vocab_rejects_whitespace_tokens(tmp_path):
    with pytest.raises(ValueError, match=r"vocabulary entry 1 \('a b'\)"):
        vl.write_vocab(["[PAD]", "a b"], tmp_path / "vocab.txt")
    assert os.listdir(tmp_path) == []


# -- command line ----------------------------------------------------------

def _write_corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("The Lower tower is lower.\nNewest widest low.\n\n"
                    "Lower, lower, LOWEST!\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("flag, lower_cased", [
    ("--do_lower_case=True", True), ("--do_lower_case=false", False),
    ("--nodo_lower_case", False), ("--do_lower_case", True)])
def test_cli_casing_flags(tmp_path, capsys, flag, lower_cased):
    corpus = _write_corpus(tmp_path)
    vocab_file = tmp_path / "vocab.txt"
    stats = learn_vocab_cli.main([
        f"--input_file={corpus}", f"--output_file={vocab_file}",
        "--vocab_size=150", "--num_unused_tokens=5", flag])
    vocab = vocab_file.read_text(encoding="utf-8").split("\n")[:-1]
    assert vocab[:10] == vl.reserved_tokens(5)
    assert len(vocab) == stats.vocab_size
    assert ("L" in vocab) is not lower_cased
    assert f"do_lower_case={lower_cased}" in capsys.readouterr().out
    assert stats.unknown_rate == 0.0


def test_cli_rejects_a_bad_boolean(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        learn_vocab_cli.main([f"--input_file={tmp_path}/c.txt",
                              f"--output_file={tmp_path}/v.txt",
                              "--do_lower_case=maybe"])
    # sys.exit(message): status 1, the message on stderr.
    assert str(exit_info.value.code).startswith(
        "python -m bert_tf.learn_vocab: error: flag --do_lower_case=maybe")


def test_cli_reports_missing_corpus_without_traceback(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        learn_vocab_cli.main([f"--input_file={tmp_path / 'gone.txt'}",
                              f"--output_file={tmp_path / 'vocab.txt'}"])
    # sys.exit(message): status 1, the message on stderr.
    assert exit_info.value.code == (
        f"python -m bert_tf.learn_vocab: error: no file matches input "
        f"pattern {str(tmp_path / 'gone.txt')!r}")
    assert not (tmp_path / "vocab.txt").exists()


# -- the real corpus -------------------------------------------------------

@pytest.fixture(scope="module")
def wikipedia_corpus_file(tmp_path_factory):
    from bert_tf.corpora import wikipedia as wikipedia_corpus
    try:
        dump = wikipedia_corpus.find_gensim_wiki_dump()
    except FileNotFoundError as error:
        pytest.skip(str(error))
    path = tmp_path_factory.mktemp("wiki") / "corpus.txt"
    wikipedia_corpus.write_corpus(dump, path)
    return path


@pytest.mark.slow
@pytest.mark.parametrize("do_lower_case", [True, False])
def test_vocab_from_wikipedia_tokenizes_it_with_few_unknowns(
        wikipedia_corpus_file, tmp_path, do_lower_case):
    vocab_file = tmp_path / "vocab.txt"
    started = time.process_time()
    stats = vl.learn_vocab_from_files(str(wikipedia_corpus_file), vocab_file,
                                      8000, do_lower_case=do_lower_case)
    assert time.process_time() - started < 60
    assert stats.vocab_size == 8000
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case)
    assert [tokenizer.vocab[t] for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]",
                                         "[MASK]")] == [0, 100, 101, 102, 103]
    pieces = unknown = 0
    with open(wikipedia_corpus_file, encoding="utf-8") as reader:
        for line in reader:
            tokens = tokenizer.tokenize(line)
            pieces += len(tokens)
            unknown += tokens.count("[UNK]")
    assert pieces > 500_000
    assert unknown / pieces < 0.01
    # Frequent words are whole pieces.
    the = "the" if do_lower_case else "The"
    assert tokenizer.tokenize(f"{the} anarchist") == [the, "anarchist"]
