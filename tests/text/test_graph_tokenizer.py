"""The in-graph tokenizer gives the ids of the pure-Python FullTokenizer.

References: `bert_tf.text.tokenization.FullTokenizer` (Google's algorithm in
plain Python) and, as a second, independent one, Model Garden's copy of
Google's tokenizer (with Google's 200-character word limit; Model Garden's
default is 400).
"""

import random

import pytest
import tensorflow as tf

from bert_tf.text import tokenization
from bert_tf.text.graph_tokenizer import GraphFullTokenizer

# Text that exercises every step of Google's normalization.
ADVERSARIAL_TEXTS = [
    "Hello, World! It's a test-case: (1+2)*3 = 9; ok? [x] {y} <z> ~`^$|\\",
    "Ünïcödé àccents: café, naïve, résumé, Ångström, Øresund, Łódź, Ærø",
    "CJK: 我爱北京天安门。日本語のテキスト、カタカナ。한국어 텍스트입니다.",
    "Extension B 𠀀𠀁 and compatibility 豈更 ideographs 丽",
    "Emoji 😀👍🏽 👨‍👩‍👧 🇫🇷 ❤️ and symbols © ® ™ € £ ¥ ° ± × ÷",
    "Control\x00chars\x01here\x07and\x1bescape\x7fdel\x85nel\x9fend",
    "Zero\u200bwidth\u200cnon\u200djoiner\ufeffbom\u00adsoft\u2060joiner",
    "Bidi \u200emarks\u200f and \u202aembedding\u202c \u2066isolate\u2069",
    "Whitespace:\ttab\nnewline\rreturn\x0bvtab\x0cformfeed end",
    "Spaces:\u00a0nbsp\u2000en\u2003em\u2009thin\u202fnarrow\u3000ideographic",
    "Line\u2028separator and paragraph\u2029separator",
    "Fullwidth ＡＢＣ１２３！？（）［］ punctuation，。、「」『』【】",
    "ΕΛΛΗΝΙΚΑ ΓΡΆΜΜΑΤΑ ΟΔΟΣ ΣΟΦΟΣ Σ ΑΣ. ΑΣ'Β ΑΣ.Β Σ̈Α ΑΣ̈ ΑΣ̈Α σΣ",
    "РУССКИЙ ТЕКСТ Ёлка ЁЖИК Україна ЇЖАК Ґанок",
    "Deutsch: STRASSE Straße MAẞE Größe ÄÖÜ äöü",
    "Türkçe: İSTANBUL İstanbul ıIiİ DİYARBAKIR ŞİŞLİ",
    "Ligatures ﬁ ﬂ ﬀ ﬃ Kelvin K Ohm Ω Angstrom Å Roman Ⅻ ⅻ Circled Ⓐ ⓐ",
    "Cherokee ᏣᎳᎩ ꭰꭱ Georgian ᲒᲔᲝᲠᲒᲘ Deseret 𐐀𐐁 Osage 𐒰 Adlam 𞤀",
    "Math 𝐀𝐁𝐂 𝔸𝔹 ℌℑ ∑∏√∞ ≤≥≠ ⊂⊃ ∀∃",
    "Arabic العربية مَدْرَسَة Hebrew עִבְרִית Persian فارسی ۱۲۳",
    "Devanagari हिन्दी नमस्ते Tamil தமிழ் Thai ภาษาไทย Khmer ភាសាខ្មែរ",
    "Hangul precomposed 한국 vs jamo 한, kana がぎぐ パピプ",
    "Greek accents ἄλφα ῥῶ ᾆ ΐ Vietnamese Tiếng Việt ờ ữ ậ",
    "Combining order a\u0301\u0323 a\u0323\u0301 q\u0307\u0323 e\u0328\u0301",
    "Musical 𝅗𝅥 𝅘𝅥𝅮 \U0001D165\U0001D16D x\U0001D16D\U0001D165 \u302e\u302f",
    "Varia \u1fef, Greek question mark \u037e, ano teleia \u0387, \u0384",
    "Replacement \ufffd char and private use \ue000\U000f0000 end",
    "Noncharacters \ufdd0\uffff and unassigned \u0378\U000e0080 end",
    "Dashes – — ‒ ― hyphen ‐ minus − quotes “ ” ‘ ’ « » ‹ › „",
    "Numbers 1,234.56 3/4 ½ ¾ ² ³ ⁴ ₁ ₂ ١٢٣ ๑๒๓",
    "URLs http://example.com/path?q=1&r=2#frag user@mail.org",
    "   leading and trailing spaces   ",
    "",
    " \t\n ",
    "unaffable unbelievably antidisestablishmentarianism",
    "e\u0301" * 100 + "x",
    "a" * 200,
    "a" * 201,
    "é" * 200,
    "é" * 201,
    "Ä" * 150 + "b" * 60,
    "[CLS] [SEP] [MASK] [UNK] [PAD] ##ing",
]

# Characters for random strings: every class of the normalization.
_FUZZ_POOL = (
    "abcXYZ019 .,;:!?'\"-_()[]{}<>/\\@#$%^&*+=~`|"
    "\t\n\r\x00\x01\x0b\x1f\x7f\x85\xa0\xad"
    "éÉñÑüÜßẞİıΣσςΑΩЖжЁё"
    "\u0301\u0308\u0323\u0345\u0307\u093f\u094d\u0e31"
    "\u200b\u200c\u200d\u200e\u2028\u2029\u3000\ufeff\ufffd"
    "我爱中文日本語한국어がパ"
    "😀👍🏽🇫🇷❤️"
    "，。！？（）「」—–…"
    "\U0001d400\U0001d165\U0001d16d\u302e\u1fef\u037e\u0387"
)


# Characters whose properties differ between Python 3.11's Unicode 14 and
# the newer (RE2, tensorflow-text's ICU) or older (TensorFlow's ICU) tables
# of the TensorFlow 2.20 build: punctuation and marks new in Unicode 15,
# lower-case mappings new in Unicode 14, decompositions new in Unicode 16.
_NEWER_UNICODE_CHARACTERS = (
    "\U00011f43\U00011f4f\U00011b00\u0ece\U00010efd\U00011241\U00013439"
    "\u2c2f\ua7c0\ua7d0\U00010570\U00010595\U000105c9\U00011383\U000113c5")


def _fuzz_texts(count, seed):
    rng = random.Random(seed)
    return ["".join(rng.choice(_FUZZ_POOL)
                    for _ in range(rng.randint(0, 40)))
            for _ in range(count)]


def _python_ids(tokenizer, texts):
    return [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(t))
            for t in texts]


# One tokenizer per vocab and casing for the whole module: each traces its
# graph once, which costs seconds.
@pytest.fixture(scope="module")
def uncased_graph(uncased_vocab_file):
    return GraphFullTokenizer(uncased_vocab_file, do_lower_case=True)


@pytest.fixture(scope="module")
def cased_graph(cased_tiny_dir):
    return GraphFullTokenizer(cased_tiny_dir / "vocab.txt",
                              do_lower_case=False)


@pytest.fixture(scope="module")
def uncased_vocab_basic_graph(uncased_vocab_file):
    """The uncased vocab without lower-casing: the cased basic tokenizer."""
    return GraphFullTokenizer(uncased_vocab_file, do_lower_case=False)


@pytest.fixture(scope="module", params=["uncased", "cased"])
def tokenizers(request, uncased_vocab_file, cased_tiny_dir, uncased_graph,
               cased_graph):
    if request.param == "uncased":
        graph, vocab_file, lower = uncased_graph, uncased_vocab_file, True
    else:
        graph, vocab_file, lower = (cased_graph, cased_tiny_dir / "vocab.txt",
                                    False)
    return (graph, tokenization.FullTokenizer(vocab_file, do_lower_case=lower),
            vocab_file, lower)


def test_adversarial_texts_match_python(tokenizers):
    graph, python, _, _ = tokenizers
    got = graph.tokenize(ADVERSARIAL_TEXTS).to_list()
    expected = _python_ids(python, ADVERSARIAL_TEXTS)
    for text, got_ids, expected_ids in zip(ADVERSARIAL_TEXTS, got, expected):
        assert got_ids == expected_ids, repr(text)


def test_random_texts_match_python(tokenizers):
    graph, python, _, _ = tokenizers
    texts = _fuzz_texts(400, seed=7)
    got = graph.tokenize(texts).to_list()
    for text, got_ids, expected_ids in zip(texts, got,
                                           _python_ids(python, texts)):
        assert got_ids == expected_ids, repr(text)


def test_matches_model_garden_tokenizer(tokenizers):
    """A second reference, from another codebase."""
    from official.nlp.tools import tokenization as model_garden
    graph, _, vocab_file, lower = tokenizers
    reference = model_garden.FullTokenizer(str(vocab_file), lower)
    reference.wordpiece_tokenizer.max_input_chars_per_word = 200  # Google's
    texts = ADVERSARIAL_TEXTS + _fuzz_texts(100, seed=11)
    got = graph.tokenize(texts).to_list()
    for text, got_ids, expected_ids in zip(texts, got,
                                           _python_ids(reference, texts)):
        assert got_ids == expected_ids, repr(text)


def test_golden_texts_match_python(tokenizers, golden_dir):
    graph, python, _, _ = tokenizers
    lines = []
    for path in (golden_dir / "create_pretraining_data" / "corpus.txt",
                 golden_dir / "extract_features" / "input.txt"):
        lines.extend(path.read_text(encoding="utf-8").splitlines())
    got = graph.tokenize(lines).to_list()
    assert got == _python_ids(python, lines)


def test_hand_checked_ids(uncased_graph, uncased_vocab_file):
    """Values checked by hand against the vocab file, not a tokenizer."""
    graph = uncased_graph
    vocab = tokenization.load_vocab(uncased_vocab_file)
    got = graph.tokenize(["UNAFFABLE Straße, naïve!"]).to_list()[0]
    # Longest vocab prefixes: "una" (not "unaf..."), then "##ffa", "##ble";
    # "st", then "##raße"; "naïve" loses its accent.
    expected = [vocab[t] for t in ("una", "##ffa", "##ble", "st", "##raße",
                                   ",", "naive", "!")]
    assert got == expected


def test_lower_casing_is_python_lower_not_case_folding(uncased_graph):
    """Google lower()s: "ß" stays "ß" (case folding would give "ss"), "İ"
    becomes "i" + U+0307 and the dot is stripped, and the final sigma is
    context dependent."""
    words = uncased_graph.basic_tokenize(
        ["Straße İSTANBUL ΟΔΟΣ ΑΣ.Β ＡＢＣ ﬁ"]).to_list()[0]
    assert [w.decode("utf-8") for w in words] == [
        "straße", "istanbul", "οδος", "ασ", ".", "β", "ａｂｃ", "ﬁ"]
    # Not final in "ΑΣ.Β": "." is case-ignorable, so "Β" follows the sigma.
    assert "İ".lower() == "i\u0307"  # What the expected "istanbul" rests on.


def test_word_limit_counts_characters_after_normalization(
        cased_tiny_dir, uncased_vocab_file, uncased_graph, cased_graph):
    unknown = tokenization.load_vocab(uncased_vocab_file)["[UNK]"]
    uncased = uncased_graph
    # 201 characters with the accents, 101 without: not [UNK] when uncased.
    accented = "e\u0301" * 100 + "x"
    ids = uncased.tokenize([accented, "é" * 201, "a" * 201]).to_list()
    assert ids[0] != [unknown]
    assert ids[1] == [unknown]  # NFD + strip gives 201 x "e"
    assert ids[2] == [unknown]
    cased_unknown = tokenization.load_vocab(
        cased_tiny_dir / "vocab.txt")["[UNK]"]
    assert cased_graph.tokenize([accented]).to_list() == [[cased_unknown]]


def test_invalid_utf8_bytes_are_dropped_as_in_python(uncased_graph,
                                                      uncased_vocab_file):
    graph = uncased_graph
    python = tokenization.FullTokenizer(uncased_vocab_file, True)
    texts = [b"caf\xc3\xa9 \xff\xfeok", b"\xe2\x82 euro \xe2\x82\xac",
             b"\xed\xa0\x80surrogate", b"\xc0\xafslash", b"\xf4\x90\x80\x80x"]
    got = graph.tokenize(tf.constant(texts)).to_list()
    assert got == _python_ids(python, texts)


def test_scalar_and_empty_inputs(uncased_graph):
    graph = uncased_graph
    assert graph.tokenize("hello").shape[0] == 1
    assert graph.tokenize(tf.constant([], tf.string)).to_list() == []
    assert graph.tokenize(["", " \t "]).to_list() == [[], []]


def test_works_inside_tf_data_and_tf_function(uncased_graph):
    graph = uncased_graph
    texts = ADVERSARIAL_TEXTS[:12]
    eager = graph.tokenize(texts).to_list()
    mapped = tf.data.Dataset.from_tensor_slices(texts).batch(5).map(
        graph.tokenize)
    from_dataset = [row for batch in mapped for row in batch.to_list()]
    assert from_dataset == eager
    assert tf.function(graph.tokenize)(tf.constant(texts)).to_list() == eager
    assert graph.tokenize(texts).dtype == tf.int32


def test_vocab_without_unknown_token_is_an_error(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\nhello\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"vocab\.txt has no \[UNK\]"):
        GraphFullTokenizer(vocab, do_lower_case=True)


def test_missing_vocab_file_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        GraphFullTokenizer(tmp_path / "nope.txt", do_lower_case=True)


def _every_character_in_context(template, stride=1, limit=0x110000):
    return [template % chr(cp) for cp in range(0, limit, stride)
            if not 0xD800 <= cp <= 0xDFFF]


def _assert_basic_tokens_match(texts, graph):
    do_lower_case = graph.do_lower_case
    basic = tokenization.BasicTokenizer(do_lower_case=do_lower_case)
    got = graph.basic_tokenize(tf.constant([t.encode("utf-8")
                                            for t in texts])).to_list()
    mismatches = []
    for text, words in zip(texts, got):
        words = [w.decode("utf-8") for w in words]
        expected = basic.tokenize(text)
        if words != expected:
            mismatches.append((text, words, expected))
    assert not mismatches, mismatches[:10]


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_basic_tokens_of_a_spread_of_code_points(
        do_lower_case, uncased_graph, uncased_vocab_basic_graph):
    """Every code point below U+3400, then every 61st, between letters and
    after a capital sigma (the final-sigma context)."""
    texts = (_every_character_in_context("a%sb", limit=0x3400)
             + _every_character_in_context("ΑΣ%s", stride=61)
             + ["a%sb" % c for c in _NEWER_UNICODE_CHARACTERS])
    _assert_basic_tokens_match(
        texts, uncased_graph if do_lower_case else uncased_vocab_basic_graph)


@pytest.mark.slow
@pytest.mark.parametrize("do_lower_case", [True, False])
@pytest.mark.parametrize("template", ["a%sb", "Σ%sΣ", "ΑΣ%s"],
                         ids=["between_letters", "between_sigmas",
                              "after_sigma"])
def test_basic_tokens_of_every_code_point(do_lower_case, template,
                                          uncased_graph,
                                          uncased_vocab_basic_graph):
    """All 1,112,064 code points: the character classes, lower-casing and
    decompositions are the running Python's, whatever RE2's or ICU's
    Unicode version."""
    _assert_basic_tokens_match(
        _every_character_in_context(template),
        uncased_graph if do_lower_case else uncased_vocab_basic_graph)


def test_tokenize_with_offsets_gives_the_ids_and_where_pieces_are(
        tokenizers):
    """Per word: Python's basic tokens; flattened: Python's ids; each piece
    (unless "[UNK]") spells its vocabulary entry within its word."""
    graph, python, _, _ = tokenizers
    words, ids, starts, ends = graph.tokenize_with_offsets(ADVERSARIAL_TEXTS)
    expected_ids = _python_ids(python, ADVERSARIAL_TEXTS)
    inverse = {index: token for token, index in python.vocab.items()}
    unknown = python.vocab["[UNK]"]
    for row, text in enumerate(ADVERSARIAL_TEXTS):
        row_words = [w.decode("utf-8") for w in words[row].numpy()]
        assert row_words == python.basic_tokenizer.tokenize(text), repr(text)
        row_ids = ids[row].to_list()
        assert [i for word in row_ids for i in word] == expected_ids[row]
        for word, word_ids, word_starts, word_ends in zip(
                words[row].numpy(), row_ids, starts[row].to_list(),
                ends[row].to_list()):
            for piece, start, end in zip(word_ids, word_starts, word_ends):
                if piece != unknown:
                    assert word[start:end].decode("utf-8") == (
                        inverse[piece].removeprefix("##"))
