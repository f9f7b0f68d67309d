"""Google's BERT tokenizer, giving exactly the ids of `tokenization.py`.

`FullTokenizer` = `BasicTokenizer` (cleaning, CJK splitting, optional
lower-casing and accent stripping, punctuation splitting) followed by
`WordpieceTokenizer` (greedy longest-match-first WordPiece). The rules are
Google's to the character; only the way they are executed differs:

* Every rule after whitespace splitting depends on one whitespace-separated
  word alone, so the whole basic + WordPiece result is cached per word. Real
  text repeats its words (Zipf), so most words cost one dict lookup.
* Character classes (control characters, whitespace, punctuation, combining
  marks) are tables that learn each distinct character once, from
  `unicodedata`, and are applied with `str.translate` instead of Python
  loops over characters; CJK ideographs are a compiled regular expression.
* Pure-ASCII text, the common case, never needs the Unicode tables.

Character classes, as in Google's code (Python's `unicodedata` semantics):

* whitespace: " ", "\\t", "\\n", "\\r" and category Zs; mapped to " ".
* control: categories Cc and Cf, except "\\t", "\\n", "\\r"; dropped, as are
  U+0000 and U+FFFD.
* CJK ideographs (Unified Ideographs and extensions A-E, compatibility
  ideographs): surrounded by spaces. Hangul and kana are not.
* punctuation: ASCII 33-47, 58-64, 91-96, 123-126, and every category P*.
* Words are then split with Python's `str.split()`, which (as in Google's
  code) also splits at U+2028 and U+2029, the only Python whitespace
  characters that survive cleaning.

Where the C extension `_wordpiece_native` is built (setup.py builds it
with the package), `FullTokenizer` runs these rules in C, many times
faster, with the same results; the pure-Python classes here are its
reference and its fallback (`FullTokenizer(..., native=False)` uses them).
"""

import collections
import functools
import re
import unicodedata
from array import array

from absl import logging

from bert_tf import file_io

try:
    from bert_tf.text import _wordpiece_native
except ImportError:  # Built without a C compiler: the Python tokenizer.
    _wordpiece_native = None

_native_note_logged = False


def native_available():
    """Whether `FullTokenizer` can run in C on this Python.

    The extension's character tables come from the `unicodedata` of the
    Python that built it; where that Unicode version is not this Python's
    (an extension built by another interpreter), or the extension is not
    built, the pure-Python tokenizer runs and a one-line note says so once.
    """
    global _native_note_logged
    if (_wordpiece_native is not None
            and _wordpiece_native.UNIDATA_VERSION
            == unicodedata.unidata_version):
        return True
    if not _native_note_logged:
        _native_note_logged = True
        reason = ("is not built" if _wordpiece_native is None else
                  "was built for Unicode %s, this Python has %s" % (
                      _wordpiece_native.UNIDATA_VERSION,
                      unicodedata.unidata_version))
        logging.warning(
            "bert_tf: the native tokenizer (bert_tf/text/_wordpiece_native) "
            "%s; using the pure-Python FullTokenizer (same ids, slower; "
            "`pip install` bert_tf with a C compiler to build it).", reason)
    return False

# CJK ideograph blocks, as in Google's `_is_chinese_char` (inclusive ranges).
_CJK_RANGES = (
    (0x4E00, 0x9FFF),    # CJK Unified Ideographs
    (0x3400, 0x4DBF),    # Extension A
    (0x20000, 0x2A6DF),  # Extension B
    (0x2A700, 0x2B73F),  # Extension C
    (0x2B740, 0x2B81F),  # Extension D
    (0x2B820, 0x2CEAF),  # Extension E
    (0xF900, 0xFAFF),    # CJK Compatibility Ideographs
    (0x2F800, 0x2FA1F),  # CJK Compatibility Ideographs Supplement
)

# ASCII characters Google counts as punctuation although Unicode calls some
# of them symbols ("$", "^", "`", ...): everything that is not a letter,
# digit, space or control character.
_ASCII_PUNCTUATION_RANGES = ((33, 47), (58, 64), (91, 96), (123, 126))

# ASCII control characters other than tab, newline and carriage return
# (category Cc); cleaning drops them, together with NUL.
_ASCII_CONTROL_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

# In ASCII every punctuation character is its own token.
_ASCII_PUNCTUATION_SPLIT_RE = re.compile(
    "([%s])" % "".join(
        re.escape(chr(cp))
        for first, last in _ASCII_PUNCTUATION_RANGES
        for cp in range(first, last + 1)))

# Beyond this many distinct words a cache is emptied and starts again, so
# tokenizing an endless stream of new words cannot exhaust memory.
_MAX_CACHED_WORDS = 1 << 20


class UnknownVocabularyEntryError(KeyError):
    """A token that is not in the vocabulary, or an id outside it."""

    def __str__(self):
        # KeyError's own `str` shows the repr of its argument; show the text.
        return str(self.args[0]) if self.args else ""


class _UnicodeTables:
    """Google's character classes, learned character by character.

    Each distinct character is classified once, with `unicodedata`, the
    first time a text holding it is cleaned, has its accents stripped or is
    split at punctuation, so the classes are exactly what Google's
    per-character checks decide on the running Python, whatever its Unicode
    version. (Sweeping all 1.1 million code points up front costs about
    0.3 s a process; real text holds a few hundred distinct characters.)
    """

    def __init__(self):
        self._known = set()
        self._clean = {}          # code point -> None (drop) or " " (space)
        self._strip_marks = {}    # category Mn -> None, for accent stripping
        self._punctuation = set()  # characters, ASCII ranges included
        self._learn(map(chr, range(128)))
        self.cjk_re = re.compile(
            "[%s]" % "".join("\\U%08x-\\U%08x" % r for r in _CJK_RANGES))

    def _learn(self, characters):
        """Classifies the characters not seen before."""
        category = unicodedata.category
        for character in characters:
            self._known.add(character)
            cp = ord(character)
            cat = category(character)
            if cp in (0, 0xFFFD):
                self._clean[cp] = None  # NUL and the replacement character.
            elif character in "\t\n\r":
                # Category Cc, but Google treats them as spaces.
                self._clean[cp] = " "
            elif cat == "Zs":
                self._clean[cp] = " "
            elif cat == "Cc" or cat == "Cf":
                self._clean[cp] = None
            elif cat == "Mn":
                self._strip_marks[cp] = None
            if cat[0] == "P" or any(first <= cp <= last for first, last
                                    in _ASCII_PUNCTUATION_RANGES):
                self._punctuation.add(character)

    def _learn_text(self, text):
        new = set(text)
        new.difference_update(self._known)
        if new:
            self._learn(new)

    def clean(self, text):
        """`text` with control characters dropped and whitespace made " "."""
        self._learn_text(text)
        return text.translate(self._clean)

    def strip_marks(self, text):
        """`text` without its combining marks (category Mn)."""
        self._learn_text(text)
        return text.translate(self._strip_marks)

    def split_punctuation(self, word):
        """`word` split into runs of non-punctuation and single punctuation
        characters (empty runs left out)."""
        self._learn_text(word)
        punctuation = self._punctuation
        if punctuation.isdisjoint(word):
            return [word]
        pieces = []
        start = 0
        for index, character in enumerate(word):
            if character in punctuation:
                if index > start:
                    pieces.append(word[start:index])
                pieces.append(character)
                start = index + 1
        if start < len(word):
            pieces.append(word[start:])
        return pieces


# The one instance of the process, built on first use.
_unicode_tables = functools.cache(_UnicodeTables)


def convert_to_unicode(text):
    """Returns `text` as `str`; bytes are UTF-8 with invalid bytes dropped."""
    if isinstance(text, str):
        return text
    if isinstance(text, bytes):
        return text.decode("utf-8", "ignore")
    raise ValueError("Unsupported string type: %s" % (type(text),))


def printable_text(text):
    """Returns `text` as a `str` suitable for printing or logging."""
    return convert_to_unicode(text)


def load_vocab(vocab_file):
    """Loads a vocabulary file: one token per line, id = line number.

    As Google's (which reads with `tf.io.gfile.GFile`): lines are split at
    "\\n" only, every "\\r" in a line is dropped (TensorFlow's line reader
    does that), each line is stripped of surrounding whitespace, and a token
    that appears twice keeps its first position in the dict but the id of
    its last line.

    Args:
      vocab_file: path of the `vocab.txt`.

    Returns:
      An `OrderedDict` mapping token -> id.

    Raises:
      FileNotFoundError: the file does not exist (the message names it).
      ValueError: the file is empty or a line is not valid UTF-8.
    """
    lines = [line.replace(b"\r", b"")
             for line in file_io.read_bytes(vocab_file, "vocab file").split(b"\n")]
    if lines[-1] == b"":
        # Nothing (or only "\r") after the last newline: the reader is at
        # its end, not on an empty line.
        lines.pop()
    vocab = collections.OrderedDict()
    for index, line in enumerate(lines):
        try:
            token = line.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ValueError(
                f"vocab file {vocab_file}, line {index + 1}: not valid UTF-8 "
                f"({error.reason} at byte {error.start})") from None
        vocab[token.strip()] = index
    if not vocab:
        raise ValueError(f"vocab file {vocab_file} is empty")
    return vocab


def convert_by_vocab(vocab, items, what="token"):
    """Maps each item through `vocab`; an unknown item is a clear error."""
    try:
        return [vocab[item] for item in items]
    except KeyError:
        for item in items:
            if item not in vocab:
                raise UnknownVocabularyEntryError(
                    f"{what} {item!r} is not in the vocabulary "
                    f"({len(vocab)} entries)") from None
        raise


def convert_tokens_to_ids(vocab, tokens):
    return convert_by_vocab(vocab, tokens, what="token")


def convert_ids_to_tokens(inv_vocab, ids):
    return convert_by_vocab(inv_vocab, ids, what="token id")


def whitespace_tokenize(text):
    """Strips `text` and splits it at (Python) whitespace."""
    return text.split()


def validate_case_matches_checkpoint(do_lower_case, init_checkpoint):
    """Raises if `do_lower_case` contradicts a released checkpoint's name.

    Google's check: the casing is not stored with a checkpoint, so the name
    of a released model's directory (`uncased_L-12_H-768_A-12/...`) is the
    only hint. Checkpoints with other names are not checked.

    Raises:
      ValueError: the flag and the checkpoint's casing disagree.
    """
    if not init_checkpoint:
        return
    match = re.match("^.*?([A-Za-z0-9_-]+)/bert_model.ckpt", init_checkpoint)
    if match is None:
        return
    model_name = match.group(1)
    lower_cased_models = (
        "uncased_L-24_H-1024_A-16", "uncased_L-12_H-768_A-12",
        "multilingual_L-12_H-768_A-12", "chinese_L-12_H-768_A-12")
    cased_models = (
        "cased_L-12_H-768_A-12", "cased_L-24_H-1024_A-16",
        "multi_cased_L-12_H-768_A-12")
    if model_name in lower_cased_models and not do_lower_case:
        flag, casing, right_flag = "False", "lowercased", "True"
    elif model_name in cased_models and do_lower_case:
        flag, casing, right_flag = "True", "cased", "False"
    else:
        return
    raise ValueError(
        f"You passed in `--do_lower_case={flag}` with "
        f"`--init_checkpoint={init_checkpoint}`. However, `{model_name}` "
        f"seems to be a {casing} model, so you should pass in "
        f"`--do_lower_case={right_flag}` so that the fine-tuning matches how "
        f"the model was pre-trained.")


class BasicTokenizer:
    """Cleaning, CJK splitting, lower-casing/accent stripping, punctuation."""

    def __init__(self, do_lower_case=True):
        """Args:
          do_lower_case: lower-case and strip accents (NFD, then drop
            category Mn). Cased models need False.
        """
        self.do_lower_case = do_lower_case
        self._word_cache = {}

    def tokenize(self, text):
        """Splits `text` (str or UTF-8 bytes) into basic tokens."""
        tokens = []
        for word in self.split_words(text):
            tokens.extend(self.tokenize_word(word))
        return tokens

    def split_words(self, text):
        """Cleans `text`, spaces out CJK ideographs, splits at whitespace.

        Returns:
          The whitespace-separated words on which `tokenize_word` works.
        """
        text = convert_to_unicode(text)
        if text.isascii():
            # `isprintable` is False for any control character (tab and
            # newline too), so clean text skips the regular expression.
            if not text.isprintable():
                text = _ASCII_CONTROL_RE.sub("", text)
            return text.split()
        tables = _unicode_tables()
        text = tables.clean(text)
        text = tables.cjk_re.sub(r" \g<0> ", text)
        return text.split()

    def tokenize_word(self, word):
        """Basic tokens of one word from `split_words` (a cached tuple)."""
        tokens = self._word_cache.get(word)
        if tokens is None:
            if len(self._word_cache) >= _MAX_CACHED_WORDS:
                self._word_cache.clear()
            tokens = self._word_cache[word] = tuple(self._tokenize_word(word))
        return tokens

    def _tokenize_word(self, word):
        if self.do_lower_case:
            word = word.lower()
            if not word.isascii():
                # Accent stripping: decompose, then drop the combining marks.
                word = unicodedata.normalize("NFD", word)
                word = _unicode_tables().strip_marks(word)
        if word.isascii():
            pieces = _ASCII_PUNCTUATION_SPLIT_RE.split(word)
        else:
            pieces = _unicode_tables().split_punctuation(word)
        # Google joins the pieces with spaces and splits again: empty pieces
        # (between adjacent punctuation, or a word that was all accents)
        # disappear.
        return " ".join(pieces).split()


class WordpieceTokenizer:
    """Greedy longest-match-first WordPiece over a vocabulary."""

    def __init__(self, vocab, unk_token="[UNK]", max_input_chars_per_word=200):
        """Args:
          vocab: dict token -> id (or any container of tokens).
          unk_token: what a word that cannot be split becomes.
          max_input_chars_per_word: longer words become `unk_token` whole.

        The vocabulary is indexed here; changing it afterwards needs a new
        tokenizer.
        """
        self.vocab = vocab
        self.unk_token = unk_token
        self.max_input_chars_per_word = max_input_chars_per_word
        # "##" + piece is in the vocabulary iff piece is in `_continuations`;
        # looking that up saves building the "##" string for each candidate.
        self._continuations = frozenset(
            token[2:] for token in vocab if token.startswith("##"))
        # No entry is longer, so longer candidates need no lookup.
        self._longest_word_start = max(
            (len(token) for token in vocab), default=0)
        self._longest_continuation = max(
            (len(piece) for piece in self._continuations), default=0)
        self._token_cache = {}

    def tokenize(self, text):
        """WordPiece tokens of whitespace-separated basic tokens.

        For example "unaffable" -> ["un", "##aff", "##able"].

        Args:
          text: basic tokens (from `BasicTokenizer`), separated by spaces.

        Returns:
          A list of word pieces; a token that cannot be covered by
          vocabulary entries, or has more than `max_input_chars_per_word`
          characters, is a single `unk_token`.
        """
        output = []
        for token in convert_to_unicode(text).split():
            output.extend(self.tokenize_token(token))
        return output

    def tokenize_token(self, token):
        """Word pieces of one basic token (a cached tuple)."""
        pieces = self._token_cache.get(token)
        if pieces is None:
            if len(self._token_cache) >= _MAX_CACHED_WORDS:
                self._token_cache.clear()
            pieces = self._token_cache[token] = self.split_token(token)
        return pieces

    def split_token(self, token):
        """Uncached WordPiece split of one basic token, as a tuple."""
        length = len(token)
        if length > self.max_input_chars_per_word:
            return (self.unk_token,)
        # The first piece: the longest vocabulary entry that starts the token.
        vocab = self.vocab
        end = min(length, self._longest_word_start)
        while end > 0 and token[:end] not in vocab:
            end -= 1
        if end == 0:
            return (self.unk_token,)  # No piece matches: the whole token.
        pieces = [token[:end]]
        # Each further piece: the longest "##" entry that continues it.
        continuations = self._continuations
        start = end
        while start < length:
            end = min(length, start + self._longest_continuation)
            while end > start and token[start:end] not in continuations:
                end -= 1
            if end == start:
                return (self.unk_token,)
            pieces.append("##" + token[start:end])
            start = end
        return tuple(pieces)


class FullTokenizer:
    """Google's end-to-end tokenizer: basic tokens, then word pieces."""

    def __init__(self, vocab_file, do_lower_case=True, native=True):
        """Args:
          vocab_file: the model's `vocab.txt`.
          do_lower_case: True for uncased models, False for cased ones.
          native: run in C where the extension is built (the same ids);
            False: the pure-Python tokenizer, the reference.

        Raises:
          FileNotFoundError, ValueError: see `load_vocab`.
        """
        self.vocab_file = str(vocab_file)
        self.vocab = load_vocab(vocab_file)
        self.inv_vocab = {index: token for token, index in self.vocab.items()}
        self.basic_tokenizer = BasicTokenizer(do_lower_case=do_lower_case)
        self.wordpiece_tokenizer = WordpieceTokenizer(vocab=self.vocab)
        self._word_cache = {}
        self._native = None
        if native and native_available():
            self._native = _wordpiece_native.Tokenizer(
                self.vocab, do_lower_case, self.wordpiece_tokenizer.unk_token,
                self.wordpiece_tokenizer.max_input_chars_per_word,
                self.basic_tokenizer._tokenize_word)

    @property
    def is_native(self):
        """Whether this tokenizer runs in C (`native_available`)."""
        return self._native is not None

    @property
    def do_lower_case(self):
        return self.basic_tokenizer.do_lower_case

    def tokenize(self, text):
        """Word pieces of `text` (str, or bytes read as UTF-8)."""
        if self._native is not None:
            return self._native.tokenize(text)
        words = self.basic_tokenizer.split_words(text)
        cache = self._word_cache
        try:
            return [piece for word in words for piece in cache[word]]
        except KeyError:
            pass  # Some words are new: split them, then look up again.
        if len(cache) + len(words) > _MAX_CACHED_WORDS:
            cache.clear()
        for word in words:
            if word not in cache:
                cache[word] = self.word_pieces(word)
        return [piece for word in words for piece in cache[word]]

    def encode(self, text):
        """Ids of the word pieces of `text`: `convert_tokens_to_ids(
        tokenize(text))`, without the token strings where native."""
        if self._native is not None:
            try:
                return self._native.encode(text)
            except KeyError:
                pass  # No "[UNK]" in the vocabulary: the error below.
        return self.convert_tokens_to_ids(self.tokenize(text))

    def encode_batch(self, texts):
        """`[encode(text) for text in texts]`, in one native call.

        Natively the texts are tokenized without holding the GIL, so
        several Python threads can tokenize batches at once.

        Args:
          texts: a sequence of `str` (or UTF-8 `bytes`).

        Returns:
          A list with a list of ids for each text.
        """
        if self._native is not None:
            try:
                return self._native.encode_batch(texts)
            except KeyError:
                pass  # No "[UNK]" in the vocabulary: the error below.
        return [self.convert_tokens_to_ids(self.tokenize(text))
                for text in texts]

    def encode_flat(self, texts):
        """The ids of `texts` as two `array("i")`: all ids, concatenated,
        and the number of ids of each text (for callers that keep ids in
        arrays: no Python object per id where native). Releases the GIL
        as `encode_batch` does.

        Returns:
          (ids, lengths), `array("i")` each.
        """
        if self._native is not None:
            try:
                ids_bytes, lengths_bytes = self._native.encode_flat(texts)
            except KeyError:
                pass  # No "[UNK]" in the vocabulary: the error below.
            else:
                ids, lengths = array("i"), array("i")
                ids.frombytes(ids_bytes)
                lengths.frombytes(lengths_bytes)
                return ids, lengths
        ids, lengths = array("i"), array("i")
        for text in texts:
            text_ids = self.convert_tokens_to_ids(self.tokenize(text))
            ids.extend(text_ids)
            lengths.append(len(text_ids))
        return ids, lengths

    def word_pieces(self, word):
        """Word pieces of one word of `BasicTokenizer.split_words`, uncached.

        `tokenize(text)` is the concatenation of `word_pieces` of the words
        of `split_words(text)`.

        Returns:
          A tuple of word pieces.
        """
        if self._native is not None:
            return tuple(self._native.tokenize(word))
        pieces = []
        tokenize_token = self.wordpiece_tokenizer.tokenize_token
        for token in self.basic_tokenizer._tokenize_word(word):
            pieces.extend(tokenize_token(token))
        return tuple(pieces)

    def convert_tokens_to_ids(self, tokens):
        """Ids of `tokens`; an unknown token raises naming it and the vocab."""
        try:
            return [self.vocab[token] for token in tokens]
        except KeyError:
            for token in tokens:
                if token not in self.vocab:
                    raise UnknownVocabularyEntryError(
                        f"token {token!r} is not in the vocabulary "
                        f"{self.vocab_file} ({len(self.vocab)} entries)"
                    ) from None
            raise

    def convert_ids_to_tokens(self, ids):
        """Tokens of `ids`; an unknown id raises naming it and the vocab."""
        try:
            return [self.inv_vocab[index] for index in ids]
        except KeyError:
            for index in ids:
                if index not in self.inv_vocab:
                    raise UnknownVocabularyEntryError(
                        f"token id {index!r} is not in the vocabulary "
                        f"{self.vocab_file} (ids 0..{len(self.vocab) - 1})"
                    ) from None
            raise
