"""The tokenizer gives Google's ids on any text.

References, none of them our code:
* Model Garden's `official.nlp.tools.tokenization`, a character-for-character
  port of Google's `tokenization.py` (checked against the original on 31,500
  lines, see the golden README). Its one difference: `WordpieceTokenizer`'s
  default `max_input_chars_per_word` is 400 where Google's is 200, so the
  reference here is set to Google's 200.
* Hand-derived expectations on small vocabularies.
"""

import collections
import pathlib
import sys

import pytest

from bert_tf.text import tokenization

MULTILINGUAL_TEXT = [
    # Accents, ligatures, typographic punctuation.
    "Ophélie, Æneas and naïve café — ÉLAN “quoted” text… «guillemets»",
    "Ünïcödé ÀÉÎÕÜ ǅǈǋ ﬁﬂ İstanbul ß ẞ ﬀ Ωmega Kelvin\u212a Ångström\u212b",
    "Decomposed: e\u0301 a\u0308 o\u0302 and lone marks \u0301\u0327 end",
    # CJK ideographs (incl. extension B and compatibility), kana, Hangul.
    "中华人民共和国成立于1949年，首都是北京。𠀀𠀁 and 豈更 compat",
    "日本語のテキスト：東京タワーは３３３メートルです。カタカナ ひらがな",
    "한국어 문장입니다. 서울은 대한민국의 수도입니다! ᄀᄁ",
    # Right-to-left and other scripts.
    "اللغة العربية جميلة، أليس كذلك؟ עברית: שלום!",
    "Москва — столица России; население: 13 млн. Ελληνικά: Καλημέρα;",
    "हिन्दी भाषा में एक वाक्य। ภาษาไทย ไม่มีช่องว่าง",
    # Emoji (with modifiers and joiners), symbols, fullwidth forms.
    "Emoji 😀👍🏽 👨\u200d👩\u200d👧 flags 🇫🇷 ＦＵＬＬＷＩＤＴＨ！？（）",
    "Math ∑∫√∞ ≠ ≤ currency $€£¥₹ and ^caret^ `tick` ~tilde~ |pipe|",
    # Control, format, zero-width and unusual whitespace characters.
    "Zero\u200bwidth\u200cnon\u200djoiner\ufeffbom soft\u00adhyphen",
    "ctrl\x00nul\x01soh\x07bel\x0bvt\x0cff\x1besc\x7fdel\x85nel end",
    "tabs\tand\nnewlines\r\nand\u00a0nbsp\u2003emsp\u3000ideo\u2028ls\u2029ps",
    "replacement \ufffd char\ufffdinside and \u061c arabic mark",
    # Words longer than Google's 200-character limit, and just under it.
    "long " + "a" * 201 + " edge " + "b" * 200 + " and " + "xy" * 150,
    "punctuated-" + "c" * 250 + ".end and " + "é" * 210,
    # Numbers, URLs, e-mail, code.
    "Numbers 3.14159, 1,000,000 and URLs https://example.org/a?b=c&d=e",
    "e-mail: someone@example.com; code: foo_bar(x[0]) {return x->y;}",
    "",
    "   \t\n  ",
]

# Invalid UTF-8 is dropped byte by byte, as Google's decode(..., "ignore").
INVALID_UTF8_BYTES = [
    b"caf\xc3\xa9 \xff\xfebad bytes \xc3 truncated \xe4\xb8",
    b"\x80\x81 lone continuation \xed\xa0\x80 surrogate \xf4\x90\x80\x80 big",
]


def _model_garden_tokenizer(vocab_file, do_lower_case):
    from official.nlp.tools import tokenization as model_garden
    tokenizer = model_garden.FullTokenizer(str(vocab_file), do_lower_case)
    tokenizer.wordpiece_tokenizer.max_input_chars_per_word = 200  # Google's.
    return tokenizer


def _model_garden_basic_tokenizer(do_lower_case):
    from official.nlp.tools import tokenization as model_garden
    return model_garden.BasicTokenizer(do_lower_case=do_lower_case)


@pytest.fixture(scope="module")
def corpus_lines(golden_dir):
    path = golden_dir / "create_pretraining_data" / "corpus.txt"
    return path.read_text(encoding="utf-8").splitlines()


VOCABS = [("cased", False), ("uncased", True)]


def _vocab_file(golden_dir, name):
    if name == "cased":
        return golden_dir / "models" / "cased_tiny" / "vocab.txt"
    return golden_dir / "models" / "uncased_vocab.txt"


@pytest.mark.parametrize("vocab_name, do_lower_case", VOCABS)
def test_same_ids_as_model_garden_on_multilingual_text(
        golden_dir, vocab_name, do_lower_case):
    vocab_file = _vocab_file(golden_dir, vocab_name)
    ours = tokenization.FullTokenizer(vocab_file, do_lower_case=do_lower_case)
    reference = _model_garden_tokenizer(vocab_file, do_lower_case)
    for text in MULTILINGUAL_TEXT + INVALID_UTF8_BYTES:
        expected = reference.tokenize(text)
        # Twice: the second time comes from the caches.
        for _ in range(2):
            tokens = ours.tokenize(text)
            assert tokens == expected, text
        assert (ours.convert_tokens_to_ids(tokens)
                == reference.convert_tokens_to_ids(expected))
    # The whole text at once crosses lines inside one call.
    joined = "\n".join(MULTILINGUAL_TEXT)
    assert ours.tokenize(joined) == reference.tokenize(joined)


@pytest.mark.parametrize("vocab_name, do_lower_case", VOCABS)
def test_same_ids_as_model_garden_on_golden_corpus(
        golden_dir, corpus_lines, vocab_name, do_lower_case):
    vocab_file = _vocab_file(golden_dir, vocab_name)
    ours = tokenization.FullTokenizer(vocab_file, do_lower_case=do_lower_case)
    reference = _model_garden_tokenizer(vocab_file, do_lower_case)
    ours_ids = [ours.convert_tokens_to_ids(ours.tokenize(line))
                for line in corpus_lines]
    reference_ids = [reference.convert_tokens_to_ids(reference.tokenize(line))
                     for line in corpus_lines]
    assert ours_ids == reference_ids


def _sweep_text(code_points):
    # Each character between two letters: a control character vanishes
    # ("ab"), whitespace splits ("a", "b"), punctuation and CJK stand alone
    # ("a", c, "b"), a combining mark is stripped when lower-casing, and
    # anything else stays inside the word.
    return " ".join("a%sb" % chr(cp) for cp in code_points)


def _assert_basic_tokenizers_agree(code_points, chunk=4096):
    code_points = list(code_points)
    for do_lower_case in (True, False):
        ours = tokenization.BasicTokenizer(do_lower_case=do_lower_case)
        reference = _model_garden_basic_tokenizer(do_lower_case)
        for start in range(0, len(code_points), chunk):
            text = _sweep_text(code_points[start:start + chunk])
            tokens = ours.tokenize(text)
            expected = reference.tokenize(text)
            if tokens != expected:
                # Name the first code point on which they differ.
                for cp in code_points[start:start + chunk]:
                    one = _sweep_text([cp])
                    assert ours.tokenize(one) == reference.tokenize(one), (
                        f"U+{cp:04X} (do_lower_case={do_lower_case})")
            assert tokens == expected


def test_every_bmp_code_point_and_astral_samples_match_model_garden():
    import unicodedata
    astral = set(range(0x10000, 0x110000, 97))
    # Every astral character of the classes the rules care about, and the
    # edges of each CJK block.
    for cp in range(0x10000, 0x110000):
        category = unicodedata.category(chr(cp))
        if category in ("Cf", "Zs", "Mn") or category[0] == "P":
            astral.add(cp)
    for first, last in ((0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
                        (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF),
                        (0x2F800, 0x2FA1F)):
        astral.update((first - 1, first, last, last + 1))
    # Lone surrogates (U+D800..DFFF) are ordinary characters to both.
    _assert_basic_tokenizers_agree(
        list(range(0x10000)) + sorted(astral), chunk=16384)


@pytest.mark.slow
def test_every_code_point_matches_model_garden():
    _assert_basic_tokenizers_agree(range(0x110000), chunk=65536)


def test_load_vocab_matches_model_garden_on_odd_lines(tmp_path):
    from official.nlp.tools import tokenization as model_garden
    vocab_file = tmp_path / "vocab.txt"
    # CRLF, surrounding spaces, a blank line, a duplicate, CRs inside a line
    # (TensorFlow's line reader drops them), a non-ASCII token; no final
    # newline, or a final line of only "\r" (which the reader does not see).
    body = (b"[PAD]\r\n  [UNK] \n\n[CLS]\nhello\nwo\rrld\r\r\nhello\n"
            b"\r\n\xc3\xa9t\xc3\xa9")
    for data in (body, body + b"\n\r"):
        vocab_file.write_bytes(data)
        ours = tokenization.load_vocab(vocab_file)
        expected = model_garden.load_vocab(str(vocab_file))
        assert list(ours.items()) == list(expected.items())
        assert isinstance(ours, collections.OrderedDict)


def test_hand_derived_basic_tokenization():
    lower = tokenization.BasicTokenizer(do_lower_case=True)
    cased = tokenization.BasicTokenizer(do_lower_case=False)
    text = " \tHeLLo!how  \n Are yoU?  "
    assert lower.tokenize(text) == ["hello", "!", "how", "are", "you", "?"]
    assert cased.tokenize(text) == ["HeLLo", "!", "how", "Are", "yoU", "?"]
    assert lower.tokenize("H\u00e9llo Ünïcödé") == ["hello", "unicode"]
    assert cased.tokenize("H\u00e9llo") == ["H\u00e9llo"]
    assert lower.tokenize("ah\u535a\u63a8zz") == ["ah", "\u535a", "\u63a8", "zz"]
    # Hangul and kana are not split like CJK ideographs.
    assert cased.tokenize("한국어カタカナ") == ["한국어カタカナ"]
    # Control and zero-width format characters vanish; U+2028 splits.
    assert cased.tokenize("a\x00b\u200bc\ufffdd\u2028e") == ["abcd", "e"]
    # "$", "^", "`" are punctuation by Google's ASCII rule.
    assert cased.tokenize("a$b^c`d") == ["a", "$", "b", "^", "c", "`", "d"]


def test_hand_derived_wordpiece(tmp_path):
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("\n".join([
        "[PAD]", "[UNK]", "[CLS]", "[SEP]", "want", "##want", "##ed", "wa",
        "un", "runn", "##ing", ",", "low", "lowest", "##aff", "##able",
        "a", "##a"]) + "\n", encoding="utf-8")
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=True)
    assert tokenizer.tokenize("UNwant\u00e9d,running") == [
        "un", "##want", "##ed", ",", "runn", "##ing"]
    assert tokenizer.tokenize("unaffable") == ["un", "##aff", "##able"]
    # One unmatched piece makes the whole word [UNK]; other words survive.
    assert tokenizer.tokenize("unwantedX running") == [
        "[UNK]", "runn", "##ing"]
    # Google's limit: 200 characters are split, 201 are one [UNK].
    assert tokenizer.tokenize("a" * 200) == ["a"] + ["##a"] * 199
    assert tokenizer.tokenize("a" * 201) == ["[UNK]"]
    assert tokenizer.convert_tokens_to_ids(["[CLS]", "want", "##a"]) == [2, 4, 17]
    assert tokenizer.convert_ids_to_tokens([3, 8, 1]) == ["[SEP]", "un", "[UNK]"]


def test_convert_to_unicode_drops_invalid_bytes():
    assert tokenization.convert_to_unicode(b"caf\xc3\xa9\xff!") == "caf\u00e9!"
    assert tokenization.convert_to_unicode("as is\udc80") == "as is\udc80"
    with pytest.raises(ValueError, match="Unsupported string type"):
        tokenization.convert_to_unicode(42)


def test_unknown_token_error_names_it(cased_tiny_dir):
    vocab_file = cased_tiny_dir / "vocab.txt"
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=False)
    with pytest.raises(KeyError) as info:
        tokenizer.convert_tokens_to_ids(["[CLS]", "no-such-piece", "[SEP]"])
    message = str(info.value)
    assert "'no-such-piece'" in message
    assert "not in the vocabulary" in message
    assert str(vocab_file) in message


def test_unknown_id_error_names_it(cased_tiny_dir):
    vocab_file = cased_tiny_dir / "vocab.txt"
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=False)
    with pytest.raises(KeyError) as info:
        tokenizer.convert_ids_to_tokens([0, 1, 2000])
    message = str(info.value)
    assert "token id 2000" in message
    assert "ids 0..1999" in message
    assert str(vocab_file) in message


def test_missing_vocab_file_error_names_it(tmp_path):
    missing = tmp_path / "nowhere" / "vocab.txt"
    with pytest.raises(FileNotFoundError, match="vocab file .*nowhere"):
        tokenization.FullTokenizer(missing)


def test_empty_vocab_file_error_names_it(tmp_path):
    empty = tmp_path / "empty_vocab.txt"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="empty_vocab.txt is empty"):
        tokenization.load_vocab(empty)


def test_vocab_with_invalid_utf8_error_names_line(tmp_path):
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_bytes(b"[PAD]\n[UNK]\nbad\xff\n")
    with pytest.raises(ValueError, match=r"vocab.txt, line 3: not valid UTF-8"):
        tokenization.load_vocab(vocab_file)


def test_casing_check_rejects_released_model_mismatch():
    with pytest.raises(ValueError, match="--do_lower_case=True"):
        tokenization.validate_case_matches_checkpoint(
            False, "/models/uncased_L-12_H-768_A-12/bert_model.ckpt")
    tokenization.validate_case_matches_checkpoint(
        False, "/models/cased_L-12_H-768_A-12/bert_model.ckpt")
    tokenization.validate_case_matches_checkpoint(True, "/my/own/model.ckpt")


def test_importing_the_tokenizer_does_not_import_tensorflow():
    import subprocess
    code = ("import sys; import bert_tf.text.tokenization; "
            "sys.exit(1 if 'tensorflow' in sys.modules else 0)")
    repo_root = pathlib.Path(__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, "-c", code], cwd=repo_root)
    assert result.returncode == 0, "bert_tf.text.tokenization imports TF"
