"""The native FullTokenizer gives the pure-Python tokenizer's ids.

Reference: `FullTokenizer(..., native=False)`, the pure-Python tokenizer
(itself held to Model Garden's port of Google's code in
test_tokenization.py), and Google's own `tokenization_test.py` cases.
Skipped where the extension is not built (then `FullTokenizer` is the
reference itself).
"""

import random
import unicodedata
from array import array

import pytest

from bert_tf.text import native_tables, tokenization

pytestmark = pytest.mark.skipif(
    not tokenization.native_available(),
    reason="bert_tf/text/_wordpiece_native is not built for this Python")

VOCABS = [("cased", False), ("uncased", True)]


@pytest.fixture(scope="module")
def vocab_files(golden_dir, tmp_path_factory):
    """The golden uncased vocabulary, and a cased one made from it.

    The repository's cased vocabulary (cased_tiny) has 2000 entries, so
    random text would be mostly "[UNK]"; this one holds the uncased
    entries, their capitalized and upper-case forms, and accented and
    non-Latin characters and pieces, so that long matches are exercised.
    """
    uncased = golden_dir / "models" / "uncased_vocab.txt"
    tokens = uncased.read_text(encoding="utf-8").split("\n")[:-1]
    extra = []
    for token in tokens:
        word = token[2:] if token.startswith("##") else token
        prefix = token[:len(token) - len(word)]
        if word.isalpha():
            extra += [prefix + word.capitalize(), prefix + word.upper()]
    characters = ("ÀÉÎÕÜàéîõüßẞǅİıΣσςΌΆĀāŻżØøÆæÇçÑñ"
                  "中华人民共和国東京タワーカタカナ한국어서울ΑΒΓαβγБВГбвг")
    for first in characters:
        extra += [first, "##" + first]
        for second in characters[::3]:
            extra += [first + second, "##" + first + second]
    cased = tmp_path_factory.mktemp("vocab") / "cased_vocab.txt"
    seen = set()
    lines = [t for t in tokens + extra if not (t in seen or seen.add(t))]
    cased.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return {"uncased": uncased, "cased": cased}


def _pair(vocab_file, do_lower_case):
    native = tokenization.FullTokenizer(vocab_file, do_lower_case)
    reference = tokenization.FullTokenizer(vocab_file, do_lower_case,
                                           native=False)
    assert native.is_native and not reference.is_native
    return native, reference


def _assert_same(native, reference, texts):
    """Tokens and ids of `texts` agree; names the first text that differs."""
    expected_tokens = [reference.tokenize(text) for text in texts]
    expected_ids = [reference.convert_tokens_to_ids(tokens)
                    for tokens in expected_tokens]
    ids = native.encode_batch(texts)
    if ids != expected_ids:
        for text, text_ids, expected in zip(texts, ids, expected_ids):
            assert text_ids == expected, ascii(text)
    flat, lengths = native.encode_flat(texts)
    assert flat == array("i", [i for text_ids in expected_ids
                               for i in text_ids])
    assert lengths == array("i", map(len, expected_ids))
    for text, expected in zip(texts, expected_tokens):
        tokens = native.tokenize(text)
        assert tokens == expected, ascii(text)


def test_tables_match_regenerated_tables():
    """The built tables are those of this Python's unicodedata."""
    from bert_tf.text import _wordpiece_native
    built = _wordpiece_native.tables()
    tables = native_tables.build()
    assert tables["unidata_version"] == _wordpiece_native.UNIDATA_VERSION
    for name, typecode in (("stage1", "H"), ("stage2", "H"), ("flags", "B"),
                           ("map_start", "I"), ("map_length", "B"),
                           ("map_pool", "I")):
        assert built[name] == array(typecode, tables[name]).tobytes(), name


# Google's tokenization_test.py, case by case.
GOOGLE_VOCAB = ["[UNK]", "[CLS]", "[SEP]", "want", "##want", "##ed", "wa",
                "un", "runn", "##ing", ","]


def _google_tokenizer(tmp_path, tokens, do_lower_case=True):
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
    return tokenization.FullTokenizer(vocab_file, do_lower_case)


def test_google_full_tokenizer(tmp_path):
    tokenizer = _google_tokenizer(tmp_path, GOOGLE_VOCAB)
    tokens = tokenizer.tokenize("UNwant\u00E9d,running")
    assert tokens == ["un", "##want", "##ed", ",", "runn", "##ing"]
    assert tokenizer.convert_tokens_to_ids(tokens) == [7, 4, 5, 10, 8, 9]
    assert tokenizer.encode("UNwant\u00E9d,running") == [7, 4, 5, 10, 8, 9]


def test_google_chinese(tmp_path):
    tokenizer = _google_tokenizer(
        tmp_path, ["ah", "\u535A", "\u63A8", "zz", "[UNK]"])
    assert tokenizer.tokenize("ah\u535A\u63A8zz") == [
        "ah", "\u535A", "\u63A8", "zz"]


def test_google_basic_tokenizer_lower(tmp_path):
    tokenizer = _google_tokenizer(
        tmp_path, ["hello", "!", "how", "are", "you", "?", "[UNK]"])
    assert tokenizer.tokenize(" \tHeLLo!how  \n Are yoU?  ") == [
        "hello", "!", "how", "are", "you", "?"]
    assert tokenizer.tokenize("H\u00E9llo") == ["hello"]


def test_google_basic_tokenizer_no_lower(tmp_path):
    tokenizer = _google_tokenizer(
        tmp_path, ["HeLLo", "!", "how", "Are", "yoU", "?", "[UNK]"],
        do_lower_case=False)
    assert tokenizer.tokenize(" \tHeLLo!how  \n Are yoU?  ") == [
        "HeLLo", "!", "how", "Are", "yoU", "?"]


def test_google_wordpiece_tokenizer(tmp_path):
    tokenizer = _google_tokenizer(tmp_path, GOOGLE_VOCAB)
    assert tokenizer.tokenize("") == []
    assert tokenizer.tokenize("unwanted running") == [
        "un", "##want", "##ed", "runn", "##ing"]
    assert tokenizer.tokenize("unwantedX running") == [
        "[UNK]", "runn", "##ing"]


def test_google_convert_tokens_to_ids(tmp_path):
    tokenizer = _google_tokenizer(tmp_path, GOOGLE_VOCAB)
    assert tokenizer.convert_tokens_to_ids(
        ["un", "##want", "##ed", "runn", "##ing"]) == [7, 4, 5, 8, 9]


def test_google_character_classes_on_text(tmp_path):
    # Google's _is_whitespace, _is_control and _is_punctuation cases, as
    # what they do to a word: split it, vanish, stand alone.
    tokenizer = _google_tokenizer(tmp_path, ["a", "b", "-", "$", "`", "."])
    for separator in " \t\r\n\u00A0":
        assert tokenizer.tokenize("a%sb" % separator) == ["a", "b"]
    for control in "\u0005":
        assert tokenizer.tokenize("a%sb" % control) == ["[UNK]"]
    for punctuation in "-$`.":
        assert tokenizer.tokenize("a%sb" % punctuation) == [
            "a", punctuation, "b"]


def test_missing_unknown_token_errors_as_python(tmp_path):
    tokenizer = _google_tokenizer(tmp_path, ["a", "b"])
    assert tokenizer.tokenize("a c") == ["a", "[UNK]"]
    with pytest.raises(tokenization.UnknownVocabularyEntryError,
                       match="'\\[UNK\\]' is not in the vocabulary"):
        tokenizer.encode("a c")
    with pytest.raises(tokenization.UnknownVocabularyEntryError):
        tokenizer.encode_batch(["a", "c"])
    assert tokenizer.encode_batch(["a b", ""]) == [[0, 1], []]
    assert tokenizer.encode_flat([]) == (array("i"), array("i"))
    assert tokenizer.encode_flat(["", "\x07"]) == (array("i"),
                                                   array("i", [0, 0]))


def test_bytes_and_bad_types_as_python(golden_dir):
    native, reference = _pair(golden_dir / "models" / "uncased_vocab.txt",
                              True)
    for data in (b"caf\xc3\xa9 \xff\xfebad \xc3 truncated \xe4\xb8",
                 b"\x80\x81 lone \xed\xa0\x80 surrogate \xf4\x90\x80\x80"):
        assert native.tokenize(data) == reference.tokenize(data)
    with pytest.raises(ValueError, match="Unsupported string type"):
        native.tokenize(3)


def _sweep_words(code_points):
    # Each character alone and inside a word (a control character vanishes,
    # whitespace splits, punctuation and CJK stand alone, a combining mark
    # is stripped when lower-casing), and twice after an upper-case letter
    # (final sigma, marks to reorder).
    return " ".join("%s a%sb A%s%s" % ((chr(cp),) * 4) for cp in code_points)


def _assert_code_points_agree(vocab_file, do_lower_case, code_points):
    native, reference = _pair(vocab_file, do_lower_case)
    code_points = list(code_points)
    chunk = 8192
    for start in range(0, len(code_points), chunk):
        text = _sweep_words(code_points[start:start + chunk])
        if native.encode(text) != reference.encode(text):
            for cp in code_points[start:start + chunk]:
                _assert_same(native, reference, [_sweep_words([cp])])
            raise AssertionError("chunk at U+%04X differs"
                                 % code_points[start])


def _astral_samples():
    """Every 97th astral code point, every astral one of a class the rules
    care for, and the edges of the astral CJK blocks."""
    astral = set(range(0x10000, 0x110000, 97))
    for cp in range(0x10000, 0x110000):
        category = unicodedata.category(chr(cp))
        if category in ("Cf", "Zs", "Mn", "Mc", "Lu", "Lt") or (
                category[0] == "P"):
            astral.add(cp)
    for first, last in ((0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
                        (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF),
                        (0x2F800, 0x2FA1F)):
        astral.update((first - 1, first, last, last + 1))
    return sorted(astral)


@pytest.mark.parametrize("vocab_name, do_lower_case", VOCABS)
def test_every_bmp_code_point_and_astral_samples(
        vocab_files, vocab_name, do_lower_case):
    """Lone surrogates (U+D800..DFFF) included: ordinary characters."""
    _assert_code_points_agree(vocab_files[vocab_name], do_lower_case,
                              list(range(0x10000)) + _astral_samples())


@pytest.mark.extended(reason="the default run sweeps the BMP and samples "
                      "of the astral planes")
@pytest.mark.parametrize("vocab_name, do_lower_case", VOCABS)
def test_every_code_point(vocab_files, vocab_name, do_lower_case):
    _assert_code_points_agree(vocab_files[vocab_name], do_lower_case,
                              range(0x110000))


def _random_pools():
    """Code points the fuzz draws from, by the class the rules care for."""
    by_category = {}
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue  # Surrogate-free.
        by_category.setdefault(unicodedata.category(chr(cp)), []).append(cp)
    pools = {
        "ascii": list(range(32, 127)) * 4,
        "latin": list(range(0xC0, 0x250)),
        "marks": by_category["Mn"] + by_category["Mc"] + by_category["Me"],
        "cjk": list(range(0x4E00, 0x4E80)) + list(range(0x3400, 0x3420))
        + list(range(0x20000, 0x20020)) + list(range(0xF900, 0xF920)),
        "kana_hangul": list(range(0x3040, 0x3100)) + list(range(0xAC00,
                                                                0xAC80)),
        "greek_cyrillic": list(range(0x370, 0x500)) + [0x3A3] * 50,
        "punctuation": [cp for category, cps in by_category.items()
                        if category[0] in "PS" for cp in cps],
        "controls": by_category["Cc"] + by_category["Cf"] + [0, 0xFFFD],
        "spaces": by_category["Zs"] + by_category["Zl"] + by_category["Zp"]
        + [9, 10, 13],
        "astral": [cp for category, cps in by_category.items()
                   if category not in ("Cn", "Co") for cp in cps
                   if cp >= 0x10000],
        "special": [0x130, 0x1E9E, 0xDF, 0x212A, 0x212B, 0x1D165, 0x1D16D,
                    0x1D166, 0x345, 0x3C2, 0xFB01, 0x149],
    }
    return [pools[name] for name in sorted(pools)]


def random_texts(seed, count):
    """`count` random texts: runs of characters from random pools, some
    words longer than Google's 200-character limit."""
    rng = random.Random(seed)
    pools = _random_pools()
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZéÉ"
    texts = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randrange(1, 8)):
            kind = rng.random()
            if kind < 0.02:
                # A long word, just under, at or over the limit.
                length = rng.choice((199, 200, 201, rng.randrange(150, 400)))
                parts.append("".join(rng.choice(letters)
                                     for _ in range(length)))
            elif kind < 0.4:
                parts.append(" ")
            else:
                pool = rng.choice(pools)
                parts.append("".join(chr(rng.choice(pool))
                                     for _ in range(rng.randrange(1, 6))))
        texts.append("".join(parts))
    return texts


@pytest.mark.parametrize("vocab_name, do_lower_case", VOCABS)
def test_seeded_fuzz(vocab_files, vocab_name, do_lower_case):
    native, reference = _pair(vocab_files[vocab_name], do_lower_case)
    _assert_same(native, reference, random_texts(seed=1, count=10000))


@pytest.mark.extended(reason="the default run fuzzes 10,000 texts a vocab")
@pytest.mark.parametrize("vocab_name, do_lower_case", VOCABS)
def test_seeded_fuzz_a_million_texts(vocab_files, vocab_name, do_lower_case):
    native, reference = _pair(vocab_files[vocab_name], do_lower_case)
    for seed in range(100, 110):
        # Fresh reference caches for each tenth: bounded memory.
        reference = tokenization.FullTokenizer(
            vocab_files[vocab_name], do_lower_case, native=False)
        _assert_same(native, reference, random_texts(seed, count=100000))


def test_fallback_without_the_extension(monkeypatch, golden_dir, caplog):
    """Where the extension is not built: the Python tokenizer, a note."""
    monkeypatch.setattr(tokenization, "_wordpiece_native", None)
    monkeypatch.setattr(tokenization, "_native_note_logged", False)
    vocab_file = golden_dir / "models" / "uncased_vocab.txt"
    with caplog.at_level("WARNING"):
        tokenizer = tokenization.FullTokenizer(vocab_file, True)
        tokenization.FullTokenizer(vocab_file, True)
    notes = [r.getMessage() for r in caplog.records
             if "native tokenizer" in r.getMessage()]
    assert len(notes) == 1 and "is not built" in notes[0]
    assert not tokenizer.is_native
    assert tokenizer.encode_batch(["Héllo, wörld!"]) == [
        tokenizer.convert_tokens_to_ids(["hello", ",", "world", "!"])]


def test_threads_share_a_tokenizer(vocab_files):
    """Batches release the GIL: threads tokenizing at once with one
    tokenizer (words lower-cased by Python code among them) get the ids
    they get one at a time."""
    from concurrent.futures import ThreadPoolExecutor
    native, reference = _pair(vocab_files["uncased"], True)
    texts = random_texts(seed=7, count=2000) + [
        "ΟΔΟΣ ΣΟΦΟΚΛΕΟΥΣ", b"caf\xc3\xa9 \xff bytes", "Σ"] * 50
    chunks = [texts[start::8] for start in range(8)]
    expected = [[reference.encode(text) for text in chunk]
                for chunk in chunks]
    with ThreadPoolExecutor(4) as pool:
        batches = list(pool.map(native.encode_batch, chunks * 3))
        flats = list(pool.map(native.encode_flat, chunks * 3))
    assert batches == expected * 3
    for (ids, lengths), chunk_ids in zip(flats, expected * 3):
        assert list(lengths) == list(map(len, chunk_ids))
        assert list(ids) == [i for text_ids in chunk_ids for i in text_ids]
