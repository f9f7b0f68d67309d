"""Google's BERT tokenizer as TensorFlow ops: same ids, inside a graph.

`GraphFullTokenizer` runs Google's `FullTokenizer` algorithm with TensorFlow
and tensorflow-text ops, so that tokenization can live inside a `tf.data`
pipeline or any TensorFlow graph. Its ids are those of the pure-Python
`bert_tf.text.tokenization.FullTokenizer` on the same Python: every
character class is taken from the running Python's `unicodedata`, never from
the (differently versioned) Unicode tables compiled into RE2 or ICU.

Why not `tensorflow_text.BertTokenizer`: its normalization is not Google's.
It lower-cases with `case_fold_utf8` (NFKC case folding: "ß" becomes "ss",
fullwidth letters become ASCII), replaces control characters by spaces
instead of deleting them (so "a\\u200bb" becomes two words), uses RE2's
`\\p{...}` classes (a newer Unicode than Python's), and limits words by
bytes instead of characters. Here each step is Google's:

1. Decode UTF-8, dropping invalid bytes (Google's `decode("utf-8",
   "ignore")`; `unicode_transcode(errors="ignore")` drops the same bytes).
2. Cleaning: " ", "\\t", "\\n", "\\r" and category Zs become " "; U+0000,
   U+FFFD and categories Cc/Cf are deleted. U+2028 and U+2029 also become
   " ", because Google splits words with Python's `str.split()`, for which
   they are whitespace, and they are the only such characters that survive
   cleaning.
3. CJK ideographs (Google's `_is_chinese_char` blocks) get spaces around.
4. Only when lower-casing: Python's `str.lower()` (full mappings, "İ" ->
   "i" + U+0307, and the context-dependent final sigma), then NFD (Python's
   decompositions and canonical ordering), then deletion of category Mn.
   These run on code points with tables taken from Python (see
   `_CaseAndAccentTables`); pure-ASCII batches take a fast exact path.
5. Punctuation (ASCII 33-47, 58-64, 91-96, 123-126 and categories P*)
   becomes a word of its own; words are split at spaces.
6. WordPiece, greedy longest-match-first with "##" continuation pieces
   (tensorflow-text's `WordpieceTokenizer` on a table holding Google's vocab
   dict); a word of more than 200 characters is "[UNK]", as is a word that
   cannot be covered by vocabulary pieces.
"""

import functools
import itertools
import re
import unicodedata

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from bert_tf.text import tokenization

# Google's `WordpieceTokenizer(max_input_chars_per_word=200)`.
MAX_INPUT_CHARS_PER_WORD = 200
UNKNOWN_TOKEN = "[UNK]"

# Google's `_is_chinese_char` blocks (inclusive ranges).
_CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)

# Google's `_is_punctuation` counts every non-alphanumeric printable ASCII
# character as punctuation, symbols such as "$" and "^" included.
_ASCII_PUNCTUATION_RANGES = ((33, 47), (58, 64), (91, 96), (123, 126))

_CAPITAL_SIGMA = 0x03A3
_FINAL_SIGMA = 0x03C2

# Canonical combining classes are below 256; a sort key packs
# (segment, combining class) into one integer.
_COMBINING_CLASS_RADIX = 256


@functools.lru_cache(maxsize=None)
def _assigned_characters():
    """Every assigned character (category not Cn) of the running Python, as
    one string, and its categories; a single C-level sweep, done once."""
    every_character = "".join(map(chr, itertools.chain(
        range(0xD800), range(0xE000, 0x110000))))  # No surrogates in UTF-8.
    categories = list(map(unicodedata.category, every_character))
    assigned = [(char, category)
                for char, category in zip(every_character, categories)
                if category != "Cn"]
    return ("".join(char for char, _ in assigned),
            tuple(category for _, category in assigned))


@functools.lru_cache(maxsize=None)
def python_whitespace_class():
    """RE2 class of the characters Python's `str.isspace()` accepts (what
    `str.strip()` and `str.split()` remove)."""
    characters, _ = _assigned_characters()
    # Python's `re` matches `\s` exactly where `str.isspace()` is true.
    return _re2_class(_to_ranges(ord(c) for c in re.findall(r"\s",
                                                             characters)))


def split_at(text, separator_pattern):
    """Splits each string at the runs of `separator_pattern`; no empty part.

    `tensorflow_text.regex_split` would do it, but it ends a string at its
    first NUL character ("a\\x00b EU" gave one word, "a"); `str.split()`
    keeps the NUL inside its word (the tokenizer then removes it). Here the
    separators become single spaces (`tf.strings.regex_replace` keeps NULs)
    and the split is at those spaces.

    Args:
      text: string tensor [batch].
      separator_pattern: RE2 pattern of one run of separators, e.g.
        `python_whitespace_class() + "+"`; it must match " ".

    Returns:
      A string `RaggedTensor` [batch, (parts)].
    """
    spaced = tf.strings.regex_replace(text, separator_pattern, " ")
    parts = tf.strings.split(spaced, sep=" ")
    return tf.ragged.boolean_mask(parts, tf.strings.length(parts) > 0)


def _to_ranges(code_points):
    """Sorted inclusive (first, last) ranges covering `code_points`."""
    ranges = []
    for cp in sorted(set(code_points)):
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp])
    return [tuple(r) for r in ranges]


def _re2_class(ranges):
    """An RE2 character class matching exactly the given ranges."""
    parts = []
    for first, last in ranges:
        if first == last:
            parts.append("\\x{%X}" % first)
        else:
            parts.append("\\x{%X}-\\x{%X}" % (first, last))
    return "[" + "".join(parts) + "]"


class _CharacterClasses:
    """Google's character classes as RE2 patterns, from Python's unicodedata.

    Built once per process (a sweep over all code points, under a second).
    """

    def __init__(self):
        characters, categories = _assigned_characters()
        to_space, to_delete, punctuation = [], [0, 0xFFFD], []
        for char, category in zip(characters, categories):
            if char in " \t\n\r" or category == "Zs":
                to_space.append(ord(char))
            elif category == "Cc" or category == "Cf":
                to_delete.append(ord(char))
            elif category[0] == "P":
                punctuation.append(ord(char))
        # Whitespace for `str.split()` that survives Google's cleaning
        # (U+2028, U+2029): words are split there too.
        to_delete_set = set(to_delete)
        to_space.extend(ord(c) for c in re.findall(r"\s", characters)
                        if ord(c) not in to_delete_set)
        for first, last in _ASCII_PUNCTUATION_RANGES:
            punctuation.extend(range(first, last + 1))
        self.whitespace_pattern = _re2_class(_to_ranges(to_space))
        self.deleted_pattern = _re2_class(_to_ranges(to_delete))
        self.cjk_pattern = _re2_class(_CJK_RANGES)
        self.punctuation_pattern = _re2_class(_to_ranges(punctuation))


# The one instance of the process, built on first use.
_character_classes = functools.cache(_CharacterClasses)


class _CaseAndAccentTables:
    """Python's `str.lower()` + NFD + Mn deletion, as code point tables.

    * `mapped_code_points`/`mapping_splits`/`mapping_values`: for every code
      point c whose `NFD(c.lower())` is not c itself, that sequence (a ragged
      table over sorted keys). NFD of a lower-cased word is the canonical
      ordering of the concatenated per-character decompositions, so mapping
      character by character and then ordering is exact.
    * `combining_class_keys/values`: the nonzero canonical combining classes.
    * `nonspacing_mark_ranges`: category Mn, deleted after the ordering.
    * Capital sigma lower-cases to final sigma when preceded by a cased
      character and not followed by one, skipping case-ignorable characters
      either way. Python does not expose those two properties, so they are
      measured from `str.lower()` itself: `cased_ranges` holds the
      characters that count as cased (and are not skipped) and
      `case_ignorable_ranges` those that are skipped.
    """

    def __init__(self):
        characters, categories = _assigned_characters()
        # Private use characters (Co) have no case, decomposition or class.
        chars = [char for char, category in zip(characters, categories)
                 if category != "Co"]
        # The per-character calls run as C-level maps over all characters.
        targets = map(unicodedata.normalize, itertools.repeat("NFD"),
                      map(str.lower, chars))
        combining_classes = map(unicodedata.combining, chars)
        # Final-sigma probes: "xΣ" lowers to "...ς" when x counts as cased
        # and is not skipped; "AxΣ" does when x is cased or skipped.
        cased_probe = map(str.lower, [char + "\u03a3" for char in chars])
        skipped_probe = map(str.lower, ["A" + char + "\u03a3"
                                        for char in chars])
        keys, splits, values = [], [0], []
        combining_keys, combining_values = [], []
        nonspacing_marks, cased, case_ignorable = [], [], []
        for char, category, target, combining_class, cased_text, skip_text in (
                zip(chars, (c for c in categories if c != "Co"), targets,
                    combining_classes, cased_probe, skipped_probe)):
            cp = ord(char)
            if cp == _CAPITAL_SIGMA:
                target = "\u03c3"  # Non-final; final ones are found first.
            if target != char:
                keys.append(cp)
                values.extend(map(ord, target))
                splits.append(len(values))
            if combining_class:
                combining_keys.append(cp)
                combining_values.append(combining_class)
            if category == "Mn":
                nonspacing_marks.append(cp)
            if cased_text[-1] == "\u03c2":
                cased.append(cp)
            elif skip_text[-1] == "\u03c2":
                case_ignorable.append(cp)
        # numpy arrays: they become graph constants much faster than lists.
        self.mapped_code_points = np.array(keys, np.int32)
        self.mapping_splits = np.array(splits, np.int32)
        self.mapping_values = np.array(values, np.int32)
        self.combining_class_keys = np.array(combining_keys, np.int32)
        self.combining_class_values = np.array(combining_values, np.int32)
        self.nonspacing_mark_ranges = np.array(
            _to_ranges(nonspacing_marks), np.int32)
        self.cased_ranges = np.array(_to_ranges(cased), np.int32)
        self.case_ignorable_ranges = np.array(
            _to_ranges(case_ignorable), np.int32)


# The one instance of the process, built on first use.
_case_and_accent_tables = functools.cache(_CaseAndAccentTables)


def _in_ranges(code_points, ranges):
    """Whether each code point lies in one of the sorted inclusive ranges
    (an int32 array [num_ranges, 2] of first, last)."""
    starts = tf.constant(ranges[:, 0])
    ends = tf.constant(ranges[:, 1])
    index = tf.searchsorted(starts, code_points, side="right") - 1
    safe_index = tf.maximum(index, 0)
    return (index >= 0) & (code_points <= tf.gather(ends, safe_index))


def _lookup_sorted(code_points, sorted_keys):
    """(found, index) of each code point in a sorted list of keys."""
    keys = tf.constant(sorted_keys)
    index = tf.minimum(tf.searchsorted(keys, code_points, side="left"),
                       len(sorted_keys) - 1)
    return tf.gather(keys, index) == code_points, index


def _final_sigma_positions(code_points, row_ids, tables):
    """Whether each code point is a capital sigma Python lowers to "ς".

    Args:
      code_points: int32 [N], the code points of all strings, concatenated.
      row_ids: int64 [N], the string each code point belongs to.
      tables: `_CaseAndAccentTables`.

    Returns:
      bool [N].
    """
    is_cased = _in_ranges(code_points, tables.cased_ranges)
    is_skipped = _in_ranges(code_points, tables.case_ignorable_ranges)
    # For each position, the nearest non-skipped positions before and after
    # it, through the running count of non-skipped positions.
    not_skipped = tf.logical_not(is_skipped)
    kept_positions = tf.cast(tf.where(not_skipped)[:, 0], tf.int32)
    num_kept = tf.size(kept_positions)
    count_before = tf.cumsum(tf.cast(not_skipped, tf.int32), exclusive=True)
    previous = count_before - 1
    following = count_before + tf.cast(not_skipped, tf.int32)

    def context_is_cased(rank):
        # Only evaluated when a sigma (itself not skipped) exists, so
        # kept_positions is not empty.
        valid = (rank >= 0) & (rank < num_kept)
        position = tf.gather(kept_positions,
                             tf.clip_by_value(rank, 0, num_kept - 1))
        same_string = tf.gather(row_ids, position) == row_ids
        return valid & same_string & tf.gather(is_cased, position)

    is_sigma = tf.equal(code_points, _CAPITAL_SIGMA)
    return tf.cond(
        tf.reduce_any(is_sigma),
        lambda: is_sigma & context_is_cased(previous)
        & tf.logical_not(context_is_cased(following)),
        lambda: tf.zeros_like(is_sigma))


def _map_to_sequences(code_points, row_ids, tables):
    """Replaces each code point by its `NFD(lower(c))` sequence.

    Returns:
      (code_points, row_ids) of the expanded, concatenated sequences.
    """
    found, index = _lookup_sorted(code_points, tables.mapped_code_points)
    splits = tf.constant(tables.mapping_splits)
    values = tf.constant(tables.mapping_values)
    starts = tf.gather(splits, index)
    lengths = tf.where(found, tf.gather(splits, index + 1) - starts, 1)
    source = tf.repeat(tf.range(tf.size(code_points)), lengths)
    output_starts = tf.cumsum(lengths, exclusive=True)
    offset = (tf.range(tf.reduce_sum(lengths))
              - tf.gather(output_starts, source))
    source_found = tf.gather(found, source)
    value_index = tf.where(source_found, tf.gather(starts, source) + offset, 0)
    mapped = tf.where(source_found, tf.gather(values, value_index),
                      tf.gather(code_points, source))
    return mapped, tf.gather(row_ids, source)


def _order_and_strip_marks(code_points, row_ids, tables):
    """Canonical ordering (as NFD does), then deletion of category Mn.

    Ordering stably sorts each run of non-starters (combining class > 0) by
    combining class. Deleting the marks first and sorting what is left
    within the same runs gives the same result, and sorts less.
    """
    found, index = _lookup_sorted(code_points, tables.combining_class_keys)
    combining_class = tf.where(
        found,
        tf.gather(tf.constant(tables.combining_class_values), index),
        0)
    starts_string = tf.concat(
        [tf.ones([1], tf.bool)[:tf.size(row_ids)],
         tf.not_equal(row_ids[1:], row_ids[:-1])], axis=0)
    starts_segment = tf.equal(combining_class, 0) | starts_string
    segment = tf.cumsum(tf.cast(starts_segment, tf.int64))
    keep = tf.logical_not(
        _in_ranges(code_points, tables.nonspacing_mark_ranges))
    code_points = tf.boolean_mask(code_points, keep)
    row_ids = tf.boolean_mask(row_ids, keep)
    sort_key = (tf.boolean_mask(segment, keep) * _COMBINING_CLASS_RADIX
                + tf.cast(tf.boolean_mask(combining_class, keep), tf.int64))
    order = tf.argsort(sort_key, stable=True)
    # Segments never cross strings, so the row ids keep their order.
    return tf.gather(code_points, order), row_ids


def _lower_case_and_strip_accents_unicode(text, tables):
    """Python's `lower()`, NFD and Mn deletion on a 1-D string tensor."""
    decoded = tf.strings.unicode_decode(text, "UTF-8")
    code_points = decoded.flat_values
    row_ids = decoded.value_rowids()
    final_sigma = _final_sigma_positions(code_points, row_ids, tables)
    code_points = tf.where(final_sigma, _FINAL_SIGMA, code_points)
    code_points, row_ids = _map_to_sequences(code_points, row_ids, tables)
    code_points, row_ids = _order_and_strip_marks(code_points, row_ids,
                                                  tables)
    lowered = tf.RaggedTensor.from_value_rowids(
        code_points, row_ids, nrows=tf.shape(text, out_type=tf.int64)[0])
    return tf.strings.unicode_encode(lowered, "UTF-8")


def _lower_case_and_strip_accents(text, tables):
    """As Google's lower-casing branch; ASCII-only batches skip the tables."""
    is_ascii = tf.strings.regex_full_match(text, "[\\x00-\\x7f]*")
    return tf.cond(
        tf.reduce_all(is_ascii),
        lambda: tf.strings.lower(text),
        lambda: _lower_case_and_strip_accents_unicode(text, tables))


class GraphFullTokenizer:
    """Google's `FullTokenizer` as TensorFlow ops (usable in `tf.data`).

    `tokenize` and `basic_tokenize` are traced once per tokenizer (as
    `tf.function`s over a 1-D string batch); every later call, eager or from
    inside another graph such as a `tf.data` map, reuses that trace.
    """

    def __init__(self, vocab_file, do_lower_case=True):
        """Builds the tokenizer.

        Args:
          vocab_file: the model's `vocab.txt` (read as Google's `load_vocab`).
          do_lower_case: True for uncased models, False for cased ones.

        Raises:
          FileNotFoundError, ValueError: the vocab cannot be read, or lacks
            "[UNK]" (which Google's tokenizer emits for unknown words).
        """
        self.vocab_file = str(vocab_file)
        self.do_lower_case = bool(do_lower_case)
        self.vocab = tokenization.load_vocab(vocab_file)
        if UNKNOWN_TOKEN not in self.vocab:
            raise ValueError(
                f"vocab file {vocab_file} has no {UNKNOWN_TOKEN} token, which "
                "the tokenizer needs for words it cannot split")
        self._classes = _character_classes()
        self._case_tables = (
            _case_and_accent_tables() if self.do_lower_case else None)
        # Created eagerly even when the tokenizer is built inside a graph, so
        # that every dataset and function can share the table.
        with tf.init_scope():
            self._vocab_table = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(
                    keys=tf.constant(list(self.vocab.keys()), tf.string),
                    values=tf.constant(list(self.vocab.values()), tf.int64)),
                # tensorflow-text's WordPiece takes -1 as "not in the vocab".
                default_value=-1)
        self._wordpiece = tf_text.WordpieceTokenizer(
            self._vocab_table,
            suffix_indicator="##",
            # A word of up to 200 characters has at most 4 bytes each; longer
            # words are replaced by "[UNK]" before WordPiece sees them.
            max_bytes_per_word=4 * MAX_INPUT_CHARS_PER_WORD,
            token_out_type=tf.int64,
            unknown_token=UNKNOWN_TOKEN)
        # Plain TensorFlow ops: AutoGraph conversion would only cost time.
        batch_of_strings = [tf.TensorSpec([None], tf.string)]
        self._traced_basic_tokenize = tf.function(
            self._basic_tokenize, input_signature=batch_of_strings,
            autograph=False)
        self._traced_tokenize = tf.function(
            self._tokenize, input_signature=batch_of_strings,
            autograph=False)
        self._traced_tokenize_with_offsets = tf.function(
            self._tokenize_with_offsets, input_signature=batch_of_strings,
            autograph=False)

    def token_id(self, token):
        """The id of a vocabulary token (e.g. "[CLS]"), as a Python int.

        Raises:
          KeyError: naming the token and the vocab file.
        """
        if token not in self.vocab:
            raise KeyError(f"token {token!r} is not in the vocabulary "
                           f"{self.vocab_file}")
        return self.vocab[token]

    @property
    def vocab_table(self):
        """The vocabulary lookup table: a SavedModel holding this tokenizer's
        ops must track it (assign it to an attribute of the saved module)."""
        return self._vocab_table

    @property
    def vocab_size(self):
        """Number of lines of the vocab file (ids are 0..vocab_size-1)."""
        return max(self.vocab.values()) + 1

    @staticmethod
    def _as_batch(text):
        text = tf.convert_to_tensor(text, tf.string)
        if text.shape.rank == 0:
            text = text[tf.newaxis]
        return text

    def basic_tokenize(self, text):
        """Google's `BasicTokenizer`: the words that WordPiece splits.

        Args:
          text: a string, a list of strings, or a 1-D string tensor (UTF-8;
            invalid bytes are dropped).

        Returns:
          A string `RaggedTensor` [batch, (words)].
        """
        return self._traced_basic_tokenize(self._as_batch(text))

    def tokenize(self, text):
        """Word-piece ids of each string, as Google's `FullTokenizer`.

        Args:
          text: a string, a list of strings, or a 1-D string tensor.

        Returns:
          An int32 `RaggedTensor` [batch, (tokens)].
        """
        return self._traced_tokenize(self._as_batch(text))

    def tokenize_with_offsets(self, text):
        """Word pieces grouped by basic-tokenizer word, with their places.

        What an answer extractor needs to map pieces back to text (SQuAD's
        `get_final_text`): the words are those of `basic_tokenize` (lower
        cased and accent-stripped when `do_lower_case`), and each piece
        knows the bytes of its word it covers.

        Args:
          text: a string, a list of strings, or a 1-D string tensor.

        Returns:
          `(words, piece_ids, piece_starts, piece_ends)`: a string
          `RaggedTensor` [batch, (words)]; int32 ids [batch, (words),
          (pieces)] (flattened over words they are `tokenize`'s ids); int64
          byte offsets [batch, (words), (pieces)] of each piece in its word,
          start inclusive and end exclusive. A word that is "[UNK]" (it
          cannot be covered, or has more than 200 characters) has that one
          piece, whose offsets carry no meaning.
        """
        return self._traced_tokenize_with_offsets(self._as_batch(text))

    def _basic_tokenize(self, text):
        classes = self._classes
        text = tf.strings.unicode_transcode(
            text, "UTF-8", "UTF-8", errors="ignore")
        text = tf.strings.regex_replace(text, classes.whitespace_pattern, " ")
        text = tf.strings.regex_replace(text, classes.deleted_pattern, "")
        text = tf.strings.regex_replace(text, classes.cjk_pattern, r" \0 ")
        if self.do_lower_case:
            text = _lower_case_and_strip_accents(text, self._case_tables)
        text = tf.strings.regex_replace(
            text, classes.punctuation_pattern, r" \0 ")
        # Only " " separates words now; split() also drops empty words.
        return tf.strings.split(text)

    def _words_for_wordpiece(self, words):
        """Words of more than 200 characters become "[UNK]" (Google's)."""
        too_long = (tf.strings.length(words.flat_values, unit="UTF8_CHAR")
                    > MAX_INPUT_CHARS_PER_WORD)
        return words.with_flat_values(
            tf.where(too_long, UNKNOWN_TOKEN, words.flat_values))

    def _tokenize(self, text):
        words = self._words_for_wordpiece(self._basic_tokenize(text))
        pieces = self._wordpiece.tokenize(words)  # [batch, (words), (pieces)]
        return tf.cast(pieces.merge_dims(1, 2), tf.int32)

    def _tokenize_with_offsets(self, text):
        words = self._basic_tokenize(text)
        pieces, starts, ends = self._wordpiece.tokenize_with_offsets(
            self._words_for_wordpiece(words))
        return words, tf.cast(pieces, tf.int32), starts, ends
