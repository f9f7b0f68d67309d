"""Learning a WordPiece vocabulary (`vocab.txt`) from a text corpus.

The words are those `FullTokenizer` will see: each line of the corpus is
split by bert_tf's own `BasicTokenizer` (cleaning, CJK splitting, optional
lower-casing and accent stripping, punctuation splitting), so a vocabulary
learned here fits the tokenizer that uses it, with either casing.

The vocabulary has Google's layout:

* `[PAD]` at id 0, then `[unused0]` ... `[unusedN-1]`, then `[UNK]`, `[CLS]`,
  `[SEP]`, `[MASK]` (with Google's 99 unused tokens these get Google's ids
  100-103);
* every character of the corpus's words (up to `max_alphabet_size`, most
  frequent first) and, for each character that can occur inside a word,
  its continuation form "##c" -- so any word made of those characters has a
  WordPiece split and nothing seen in the corpus becomes `[UNK]`
  (punctuation and CJK ideographs are always words of their own after
  `BasicTokenizer`, so they need no "##" form);
* learned pieces, up to `vocab_size` entries in all.

Pieces are learned by byte-pair-style merging, as Hugging Face's WordPiece
trainer does: every word starts as its characters ("low" = "l ##o ##w");
the most frequent adjacent pair of pieces, counted over the corpus, is
merged into a new piece ("##o ##w" -> "##ow"), and merging repeats until the
vocabulary is full or no pair occurs `min_pair_count` times. Ties go to
the pair that sorts first, so the result is deterministic. Each merge
updates only the words that contain its pair, which keeps learning an
8,000-piece vocabulary from a few MB of text within seconds.

The vocabulary is then used by `FullTokenizer`'s greedy longest-match-first
WordPiece, as any BERT vocabulary is.
"""

import collections
import heapq
import time

from bert_tf import file_io
from bert_tf.text import tokenization

PAD_TOKEN = "[PAD]"
UNKNOWN_TOKEN = "[UNK]"
CLASSIFICATION_TOKEN = "[CLS]"
SEPARATOR_TOKEN = "[SEP]"
MASK_TOKEN = "[MASK]"
CONTINUATION_PREFIX = "##"

# Google's released vocabularies reserve 99 unused tokens before [UNK].
DEFAULT_NUM_UNUSED_TOKENS = 99
DEFAULT_MAX_ALPHABET_SIZE = 1000
DEFAULT_MIN_PAIR_COUNT = 2
# FullTokenizer makes longer words [UNK] whole; they teach nothing.
_MAX_INPUT_CHARS_PER_WORD = 200


def reserved_tokens(num_unused_tokens=DEFAULT_NUM_UNUSED_TOKENS):
    """The special tokens that open a vocabulary, in Google's order.

    Args:
      num_unused_tokens: how many `[unusedK]` placeholders to reserve
        between `[PAD]` and `[UNK]` (Google: 99).

    Returns:
      ["[PAD]", "[unused0]", ..., "[UNK]", "[CLS]", "[SEP]", "[MASK]"].
    """
    if num_unused_tokens < 0:
        raise ValueError(f"num_unused_tokens must be >= 0, got "
                         f"{num_unused_tokens}")
    unused = [f"[unused{index}]" for index in range(num_unused_tokens)]
    return ([PAD_TOKEN] + unused +
            [UNKNOWN_TOKEN, CLASSIFICATION_TOKEN, SEPARATOR_TOKEN,
             MASK_TOKEN])


def count_words(lines, do_lower_case=True):
    """Counts the basic tokens (`BasicTokenizer` words) of some text.

    Args:
      lines: an iterable of str.
      do_lower_case: as `BasicTokenizer`'s; must match the model's.

    Returns:
      A `collections.Counter` basic token -> occurrences.
    """
    tokenizer = tokenization.BasicTokenizer(do_lower_case=do_lower_case)
    # Whitespace-separated words are counted first (Counter.update is C
    # code); each distinct one is then split by the basic tokenizer once.
    raw_counts = collections.Counter()
    for line in lines:
        raw_counts.update(tokenizer.split_words(line))
    counts = collections.Counter()
    for raw_word, count in raw_counts.items():
        for token in tokenizer.tokenize_word(raw_word):
            counts[token] += count
    return counts


def _read_lines(path):
    """Yields the lines of a UTF-8 text file.

    Raises:
      FileNotFoundError: the file does not exist.
      ValueError: a line is not valid UTF-8 (the message names file, line).
    """
    try:
        reader = open(path, "rb")
    except FileNotFoundError:
        raise FileNotFoundError(f"input file {path} does not exist") from None
    with reader:
        for line_number, line in enumerate(reader, start=1):
            try:
                yield line.decode("utf-8")
            except UnicodeDecodeError as error:
                raise ValueError(
                    f"input file {path}, line {line_number}: not valid UTF-8 "
                    f"({error.reason} at byte {error.start} of the line)"
                ) from None


def count_words_in_files(input_files, do_lower_case=True):
    """Counts the basic tokens of text files (read as a stream).

    Args:
      input_files: paths or patterns, see `file_io.expand_input_patterns`.
      do_lower_case: as `BasicTokenizer`'s.

    Returns:
      A `collections.Counter` basic token -> occurrences.

    Raises:
      FileNotFoundError: an input is missing.
      ValueError: a line is not valid UTF-8, or the files hold no word; the
        message names the file (and line).
    """
    paths = file_io.expand_input_patterns(input_files, sort=True)
    counts = collections.Counter()
    for path in paths:
        counts.update(count_words(_read_lines(path), do_lower_case))
    if not counts:
        raise ValueError(
            f"no words in {', '.join(paths)}: the corpus is empty")
    return counts


def _is_always_split(character):
    """Whether `BasicTokenizer` always makes `character` a word of its own
    (punctuation, CJK ideographs), so it never needs a "##" form."""
    tokens = tokenization.BasicTokenizer(do_lower_case=False).tokenize(
        "a" + character + "a")
    return len(tokens) != 1


def alphabet(word_counts, max_alphabet_size=DEFAULT_MAX_ALPHABET_SIZE):
    """The characters a vocabulary keeps: the most frequent ones.

    Args:
      word_counts: mapping word -> count.
      max_alphabet_size: at most this many characters.

    Returns:
      A list of characters, by decreasing count, ties by code point.
    """
    character_counts = collections.Counter()
    for word, count in word_counts.items():
        for character in word:
            character_counts[character] += count
    ranked = sorted(character_counts.items(),
                    key=lambda item: (-item[1], item[0]))
    return [character for character, _ in ranked[:max_alphabet_size]]


class _PairMerger:
    """Byte-pair-style merging of WordPiece symbols over counted words.

    Each word is a list of symbols ("l", "##o", "##w"). `pair_counts` holds,
    for each adjacent pair, its occurrences weighted by word counts;
    `pair_words` the words where the pair may occur (entries are only
    added: a word that lost the pair is skipped when scanned); `heap` the
    pairs by decreasing count, with stale entries skipped on pop.
    """

    def __init__(self, word_counts):
        self.words = []
        self.counts = []
        self.pair_counts = collections.defaultdict(int)
        self.pair_words = collections.defaultdict(set)
        # Sorted, so word indices and therefore everything are deterministic.
        for word, count in sorted(word_counts.items()):
            if len(word) < 2:
                continue  # No pair to merge.
            symbols = [word[0]] + [CONTINUATION_PREFIX + character
                                   for character in word[1:]]
            index = len(self.words)
            self.words.append(symbols)
            self.counts.append(count)
            for pair in zip(symbols, symbols[1:]):
                self.pair_counts[pair] += count
                self.pair_words[pair].add(index)
        self.heap = [(-count, pair)
                     for pair, count in self.pair_counts.items()]
        heapq.heapify(self.heap)

    def pop_most_frequent(self, min_count):
        """The most frequent pair and its count, or None below `min_count`."""
        while self.heap:
            negative_count, pair = self.heap[0]
            current = self.pair_counts.get(pair, 0)
            if current != -negative_count:
                heapq.heappop(self.heap)  # Stale: the count has changed.
                continue
            if current < min_count:
                return None
            heapq.heappop(self.heap)
            return pair, current
        return None

    def merge(self, pair):
        """Replaces every occurrence of `pair` by its merged symbol.

        Words are rewritten in place, left to right, so "##a ##a ##a"
        becomes "##aa ##a". Around each occurrence only the neighbouring
        pairs change: (previous, first) becomes (previous, merged) and
        (second, next) becomes (merged, next); the changes are summed over
        all words before the counts and the heap are updated once.

        Returns:
          The merged symbol.
        """
        first, second = pair
        merged = first + second[len(CONTINUATION_PREFIX):]
        changes = collections.defaultdict(int)
        pair_words = self.pair_words
        for index in pair_words.pop(pair, ()):
            symbols = self.words[index]
            count = self.counts[index]
            position = 0
            while True:
                try:
                    position = symbols.index(first, position)
                except ValueError:
                    break  # No further occurrence (or a stale entry).
                if position + 1 == len(symbols):
                    break
                if symbols[position + 1] != second:
                    position += 1
                    continue
                if position > 0:
                    previous = symbols[position - 1]
                    changes[(previous, first)] -= count
                    changes[(previous, merged)] += count
                    pair_words[(previous, merged)].add(index)
                if position + 2 < len(symbols):
                    following = symbols[position + 2]
                    changes[(second, following)] -= count
                    changes[(merged, following)] += count
                    pair_words[(merged, following)].add(index)
                symbols[position:position + 2] = [merged]
                position += 1
        # Every occurrence is gone (the changes may list the pair itself
        # when it overlaps itself, as in "##a ##a ##a").
        self.pair_counts.pop(pair, None)
        changes.pop(pair, None)
        pair_counts = self.pair_counts
        for changed_pair, difference in changes.items():
            if not difference:
                continue
            count = pair_counts.get(changed_pair, 0) + difference
            if count > 0:
                pair_counts[changed_pair] = count
                heapq.heappush(self.heap, (-count, changed_pair))
            else:
                pair_counts.pop(changed_pair, None)
        return merged


def learn_vocab(word_counts, vocab_size, special_tokens=None,
                max_alphabet_size=DEFAULT_MAX_ALPHABET_SIZE,
                min_pair_count=DEFAULT_MIN_PAIR_COUNT):
    """Learns a WordPiece vocabulary from counted words.

    Args:
      word_counts: mapping basic token -> count, e.g. from `count_words`.
      vocab_size: the number of entries, special tokens included (the
        result is smaller only when no pair occurs `min_pair_count` times).
      special_tokens: the entries that come first; default
        `reserved_tokens()`.
      max_alphabet_size: at most this many single characters (the most
        frequent); words with other characters are left out of learning
        and become `[UNK]`.
      min_pair_count: pairs occurring fewer times are not merged.

    Returns:
      The vocabulary, a list of tokens: the special tokens, the
      characters (by code point), their "##" forms (by code point), then
      the learned pieces in the order they were learned.

    Raises:
      ValueError: `word_counts` is empty, or `vocab_size` cannot hold the
        special tokens and the characters (the message gives the sizes).
    """
    if special_tokens is None:
        special_tokens = reserved_tokens()
    usable_counts = {word: count for word, count in word_counts.items()
                     if word and count > 0
                     and len(word) <= _MAX_INPUT_CHARS_PER_WORD}
    if not usable_counts:
        raise ValueError("no words to learn a vocabulary from")
    characters = alphabet(usable_counts, max_alphabet_size)
    kept_characters = set(characters)
    usable_counts = {word: count for word, count in usable_counts.items()
                     if kept_characters.issuperset(word)}

    vocab = list(special_tokens)
    vocab.extend(sorted(characters))
    vocab.extend(sorted(CONTINUATION_PREFIX + character
                        for character in characters
                        if not _is_always_split(character)))
    if len(set(vocab)) != len(vocab):
        duplicated = sorted({t for t in vocab if vocab.count(t) > 1})
        raise ValueError(
            f"special tokens repeat or collide with characters: "
            f"{duplicated}")
    if vocab_size < len(vocab):
        raise ValueError(
            f"vocab_size {vocab_size} is too small: the {len(special_tokens)} "
            f"special tokens and {len(characters)} characters with their "
            f"\"##\" forms already take {len(vocab)} entries")

    known = set(vocab)
    merger = _PairMerger(usable_counts)
    while len(vocab) < vocab_size:
        best = merger.pop_most_frequent(min_pair_count)
        if best is None:
            break
        piece = merger.merge(best[0])
        if piece not in known:  # "##abc" can come from two different pairs.
            known.add(piece)
            vocab.append(piece)
    return vocab


def unknown_token_rate(word_counts, vocab):
    """The share of word pieces that are `[UNK]` when tokenizing the words.

    Args:
      word_counts: mapping basic token -> count.
      vocab: the vocabulary (any container of tokens).

    Returns:
      [UNK] pieces / all pieces, over the counted occurrences (0.0 when
      there is nothing to tokenize).
    """
    tokenizer = tokenization.WordpieceTokenizer(vocab=set(vocab))
    unknown = total = 0
    for word, count in word_counts.items():
        pieces = tokenizer.tokenize_token(word)
        total += len(pieces) * count
        unknown += pieces.count(UNKNOWN_TOKEN) * count
    return unknown / total if total else 0.0


def write_vocab(vocab, output_file):
    """Writes `vocab.txt`: one token per line, UTF-8, atomically.

    The file is written under a temporary name in the same directory and
    renamed when complete.

    Raises:
      FileNotFoundError: the output directory does not exist.
      ValueError: a token is empty or holds whitespace (it would not read
        back as itself).
    """
    for index, token in enumerate(vocab):
        if not token or token.strip() != token or len(token.split()) != 1:
            raise ValueError(f"vocabulary entry {index} ({token!r}) is empty "
                             f"or holds whitespace")
    with file_io.atomic_write(output_file, newline="\n") as writer:
        writer.write("".join(token + "\n" for token in vocab))


VocabStats = collections.namedtuple(
    "VocabStats", ["vocab_size", "num_characters", "num_words",
                   "num_distinct_words", "unknown_rate", "seconds"])
VocabStats.__doc__ = """What `learn_vocab_from_files` did.

Fields:
  vocab_size: entries written.
  num_characters: single characters in the vocabulary.
  num_words: basic tokens in the corpus.
  num_distinct_words: distinct basic tokens.
  unknown_rate: share of [UNK] pieces when the corpus is tokenized with the
    new vocabulary.
  seconds: wall time of counting and learning.
"""


def learn_vocab_from_files(input_files, output_file, vocab_size,
                           do_lower_case=True,
                           num_unused_tokens=DEFAULT_NUM_UNUSED_TOKENS,
                           max_alphabet_size=DEFAULT_MAX_ALPHABET_SIZE,
                           min_pair_count=DEFAULT_MIN_PAIR_COUNT):
    """Learns a vocabulary from text files and writes `vocab.txt`.

    Args:
      input_files: paths or patterns (see `file_io.expand_input_patterns`) of text
        files, e.g. in Google's pretraining format.
      output_file: the `vocab.txt` to write.
      vocab_size: entries in all; see `learn_vocab`.
      do_lower_case: as `FullTokenizer`'s; must match the model's.
      num_unused_tokens: see `reserved_tokens`.
      max_alphabet_size, min_pair_count: see `learn_vocab`.

    Returns:
      A `VocabStats`.

    Raises:
      FileNotFoundError, ValueError: see `count_words_in_files`,
        `learn_vocab` and `write_vocab`.
    """
    started = time.perf_counter()
    word_counts = count_words_in_files(input_files, do_lower_case)
    vocab = learn_vocab(word_counts, vocab_size,
                        reserved_tokens(num_unused_tokens),
                        max_alphabet_size=max_alphabet_size,
                        min_pair_count=min_pair_count)
    write_vocab(vocab, output_file)
    seconds = time.perf_counter() - started
    num_characters = sum(1 for token in vocab if len(token) == 1)
    return VocabStats(
        vocab_size=len(vocab), num_characters=num_characters,
        num_words=sum(word_counts.values()),
        num_distinct_words=len(word_counts),
        unknown_rate=unknown_token_rate(word_counts, vocab),
        seconds=seconds)
