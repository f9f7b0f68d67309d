"""Reading and tokenizing the raw text of `create_pretraining_data.py`.

Google's input format: one sentence per line, an empty line between
documents. Google's reader, reproduced here exactly:

* input files are read in order, each split into lines at "\\n" only (as
  `tf.gfile.GFile.readline` does); invalid UTF-8 bytes are dropped (as
  `tokenization.convert_to_unicode` does) and reported in a warning naming
  the file and line;
* each line is stripped (`str.strip`); an empty line starts a new document,
  and the current document carries over from one file to the next;
* a non-empty line is tokenized with `FullTokenizer`; it becomes a sentence
  of the current document if it yields at least one token (a line of control
  characters neither adds a sentence nor ends the document);
* documents without sentences are dropped.

What is fast about it: with the native tokenizer built (the usual case),
a block of lines is tokenized in one call into an array of ids
(`FullTokenizer.encode_flat`). Without it, `FullTokenizer` splits a line
into whitespace-separated words (`BasicTokenizer.split_words`) and
tokenizes each word on its own, so the ids of a line are the concatenation
of the ids of its words; each distinct word is tokenized once and its ids
cached. Either way, blocks of lines are
cut into chunks that `num_workers` processes tokenize in parallel, each with
its own cache (the rare words that make most of a vocabulary mostly occur in
one chunk only, so little work is repeated); chunks come back in order as
arrays of ids. The ids are those of `FullTokenizer.tokenize` on each line,
whatever `num_workers` is.

With a Chinese word segmentation (`chinese_words`, for whole-word masking)
each line is first split into words, and a byte per token records whether a
CJK character joins the word of the character before it.

What is held: the token ids of the whole corpus in one `array('i')` (4 bytes
a token), sentence boundaries and document boundaries (8 bytes each), and the
word cache (bounded: emptied beyond `_MAX_CACHED_WORDS` distinct words). The
text itself is read in blocks (4 to 16 MB, 1 MB per worker) and dropped once
tokenized.
"""

import multiprocessing
import os
from array import array

from absl import logging

from bert_tf import file_io
from bert_tf import progress as progress_lib
from bert_tf.pretraining.errors import PretrainingDataError
from bert_tf.text import tokenization

# Text read at a time: 1 MB per worker process, within these bounds. A
# block in flight costs several times its size (bytes, text, lines, ids);
# more workers need bigger blocks to share out evenly.
_MIN_BLOCK_BYTES = 1 << 22
_BLOCK_BYTES = 1 << 24
# Fewer lines than this per worker are tokenized in-process: shipping them
# to worker processes would cost more than it saves.
_MIN_LINES_PER_WORKER = 2000
_MAX_CACHED_WORDS = 1 << 22
# Input text per worker process when the number of workers is chosen from
# the input's size (`auto_num_workers`). Measured on 2 free cores, 2 workers
# against 1: 1.06x at 1 MB, 1.36x at 5 MB, 1.39x at 50 MB (benchmarks/create_pretraining_data.py).
_BYTES_PER_AUTO_WORKER = 2 << 20
# How many invalid-UTF-8 lines of one file are named one by one.
_MAX_ENCODING_WARNINGS = 5


def load_tokenizer(vocab_file, do_lower_case):
    """Google's `FullTokenizer`, with vocabulary problems as clear errors.

    Raises:
      PretrainingDataError: the vocab file is missing or unreadable.
    """
    try:
        return tokenization.FullTokenizer(vocab_file=vocab_file,
                                          do_lower_case=do_lower_case)
    except (OSError, ValueError) as error:
        raise PretrainingDataError(str(error)) from error


def available_cores():
    """Cores this process may run on (its CPU affinity, where known)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # Not on Linux.
        return os.cpu_count() or 1


def auto_num_workers(input_files, cores=None, load_average=None):
    """Worker processes worth starting for `input_files`.

    Workers pay off only on enough text and free cores: each costs a
    process start, its own tokenizer and a cold word cache, and more CPU in
    all than one process; on cores busy with other work that extra CPU
    makes the run slower, not faster. One worker per
    `_BYTES_PER_AUTO_WORKER` of input, at most one per free core (the cores
    less the whole part of the 1-minute load average), at least 1 (then
    everything runs in this process, so the default is never slower than
    `num_workers=1`). A file whose size cannot be read cheaply (remote)
    counts as large.

    Args:
      input_files: the input paths.
      cores: cores to use at most (default: `available_cores()`).
      load_average: the machine's 1-minute load average (default: the
        system's, 0 where it is not known).

    Returns:
      An int in [1, cores].
    """
    cores = cores or available_cores()
    if load_average is None:
        try:
            load_average = os.getloadavg()[0]
        except OSError:  # Not available on this system.
            load_average = 0.0
    free_cores = max(1, cores - int(load_average))
    total = 0
    for path in input_files:
        try:
            total += os.path.getsize(path)
        except OSError:  # Remote, or unreadable (reported when read).
            total += cores * _BYTES_PER_AUTO_WORKER
    return max(1, min(free_cores, total // _BYTES_PER_AUTO_WORKER))


class TokenizedCorpus:
    """Token ids of every sentence of every document, in reading order.

    Attributes:
      token_ids: `array('i')`, the ids of all sentences, concatenated.
      sentence_starts: `array('q')`; sentence s is
        `token_ids[sentence_starts[s]:sentence_starts[s + 1]]`.
      document_starts: `array('q')`; document d is sentences
        `document_starts[d]` to `document_starts[d + 1] - 1`.
      input_files: the files read, for messages.
      joins_previous: None, or (with a word segmentation) a `bytearray`
        parallel to `token_ids`: 1 where a CJK character token belongs to
        the same word as the token before it (`chinese_words`).
    """

    def __init__(self, token_ids, sentence_starts, document_starts,
                 input_files, joins_previous=None):
        self.token_ids = token_ids
        self.sentence_starts = sentence_starts
        self.document_starts = document_starts
        self.input_files = list(input_files)
        self.joins_previous = joins_previous

    @property
    def num_documents(self):
        return len(self.document_starts) - 1

    @property
    def num_sentences(self):
        return len(self.sentence_starts) - 1

    @property
    def num_tokens(self):
        return len(self.token_ids)

    def document(self, index):
        """Document `index` as a list of sentences (lists of ids)."""
        starts = self.sentence_starts
        return [self.token_ids[starts[s]:starts[s + 1]].tolist()
                for s in range(self.document_starts[index],
                               self.document_starts[index + 1])]


class _LineTokenizer:
    """Token ids of lines, through a word -> ids cache.

    `FullTokenizer` splits a line into whitespace-separated words
    (`BasicTokenizer.split_words`) and tokenizes each word on its own, so
    the ids of a line are the concatenation of the ids of its words; each
    distinct word is tokenized once.
    """

    def __init__(self, tokenizer, segmentation=None):
        """Args:
          tokenizer: a `FullTokenizer`.
          segmentation: None, or a `chinese_words.SEGMENTATIONS` entry for
            `tokenize_segmented_lines`.
        """
        self._tokenizer = tokenizer
        self._split_words = tokenizer.basic_tokenizer.split_words
        self._cache = {}
        self._segmenter = None
        if segmentation is not None:
            from bert_tf.pretraining import chinese_words
            self._segmenter = chinese_words.WordSegmenter(segmentation)

    def _word_ids(self, word):
        if len(self._cache) >= _MAX_CACHED_WORDS:
            self._cache.clear()
        vocab = self._tokenizer.vocab
        # `word` comes from `split_words`: its pieces need no second split
        # and no cache of the tokenizer's own (this one holds the ids).
        pieces = self._tokenizer.word_pieces(word)
        try:
            ids = self._cache[word] = tuple([vocab[piece] for piece in pieces])
        except KeyError as error:
            # Only "[UNK]" can be missing: every other piece comes from the
            # vocabulary.
            raise PretrainingDataError(
                f"vocab file {self._tokenizer.vocab_file} has no "
                f"{error.args[0]!r} token, which the word {word!r} needs"
            ) from None
        return ids

    def tokenize_lines(self, lines):
        """Ids of each line, stripped, for `tokenize_corpus`.

        Args:
          lines: `str` lines.

        Returns:
          (ids, lengths): `array('i')` of the ids of all lines
          concatenated, and `array('i')` with each line's number of ids, or
          -1 for a line that is empty once stripped (a document break).
        """
        if self._tokenizer.is_native:
            stripped = [line.strip() for line in lines]
            try:
                ids, lengths = self._tokenizer.encode_flat(stripped)
            except tokenization.UnknownVocabularyEntryError:
                pass  # No "[UNK]" entry: the word loop below names a word.
            else:
                for index, line in enumerate(stripped):
                    if not line:
                        lengths[index] = -1  # A document break.
                return ids, lengths
        ids = array("i")
        lengths = array("i")
        extend = ids.extend
        append_length = lengths.append
        split_words = self._split_words
        cache_get = self._cache.get
        word_ids = self._word_ids
        for line in lines:
            line = line.strip()
            if not line:
                append_length(-1)
                continue
            line_ids = []
            for word in split_words(line):
                pieces = cache_get(word)
                if pieces is None:
                    pieces = word_ids(word)
                line_ids += pieces
            extend(line_ids)
            append_length(len(line_ids))
        return ids, lengths

    def tokenize_segmented_lines(self, lines):
        """`tokenize_lines` with the word segmentation's joins.

        Each line is segmented into words first (`WordSegmenter.segment`,
        which for `word_tag` also gives the text without tags); its ids are
        those of `tokenize_lines` on that text.

        Returns:
          (ids, lengths, joins): as `tokenize_lines`, and a `bytearray`
          parallel to ids: 1 for a CJK character token of the same word as
          the CJK character token just before it.
        """
        from bert_tf.pretraining.chinese_words import is_cjk_character
        ids = array("i")
        lengths = array("i")
        joins = bytearray()
        split_words = self._split_words
        cache_get = self._cache.get
        word_ids = self._word_ids
        segment = self._segmenter.segment
        for line in lines:
            line = line.strip()
            if not line:
                lengths.append(-1)
                continue
            text, cjk_words = segment(line)
            line_ids = []
            line_joins = []
            cjk_index = 0
            previous_word = -1  # Word of the previous token if CJK, else -1.
            for word in split_words(text):
                pieces = cache_get(word)
                if pieces is None:
                    pieces = word_ids(word)
                if is_cjk_character(word) and cjk_index < len(cjk_words):
                    # One CJK character: one token ([UNK] if unknown).
                    current = cjk_words[cjk_index]
                    cjk_index += 1
                    line_joins.append(current == previous_word)
                    previous_word = current
                elif pieces:
                    line_joins.extend([False] * len(pieces))
                    previous_word = -1
                line_ids += pieces
            if cjk_index != len(cjk_words):
                # The segmenter saw other CJK characters than the tokenizer
                # (cannot happen with the segmenters here): no joins rather
                # than wrong ones.
                line_joins = [False] * len(line_ids)
            ids.extend(line_ids)
            lengths.append(len(line_ids))
            joins.extend(line_joins)
        return ids, lengths, joins


# The line tokenizer of a worker process, set by `_init_worker`.
_worker_line_tokenizer = None


def _init_worker(vocab_file, do_lower_case, segmentation):
    global _worker_line_tokenizer
    _worker_line_tokenizer = _LineTokenizer(tokenization.FullTokenizer(
        vocab_file=vocab_file, do_lower_case=do_lower_case), segmentation)


def _tokenize_lines_in_worker(lines):
    # Arrays travel back as bytes: far cheaper to pickle than lists.
    if _worker_line_tokenizer._segmenter is not None:
        ids, lengths, joins = (
            _worker_line_tokenizer.tokenize_segmented_lines(lines))
        return ids.tobytes(), lengths.tobytes(), bytes(joins)
    ids, lengths = _worker_line_tokenizer.tokenize_lines(lines)
    return ids.tobytes(), lengths.tobytes(), None


def _decode_block(block, path, first_line_number, warnings_left):
    """UTF-8 text of a block of whole lines; invalid bytes are dropped.

    Returns:
      (text, warnings_left): each line with invalid bytes is reported (up to
      `warnings_left` of them by line number).
    """
    try:
        return block.decode("utf-8"), warnings_left
    except UnicodeDecodeError:
        pass
    lines = block.split(b"\n")
    for offset, line in enumerate(lines):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as error:
            if warnings_left > 0:
                logging.warning(
                    "%s:%d: invalid UTF-8 (%s at byte %d of the line); the "
                    "invalid bytes are dropped, as Google's script does",
                    path, first_line_number + offset, error.reason,
                    error.start)
            elif warnings_left == 0:
                logging.warning(
                    "%s: more lines with invalid UTF-8; their invalid bytes "
                    "are dropped too", path)
            warnings_left -= 1
    return block.decode("utf-8", "ignore"), warnings_left


def _line_blocks(path, block_bytes=_BLOCK_BYTES):
    """Yields lists of the lines of `path` (split at b"\\n"), block by block.

    Text after the last newline is a last line; a final newline does not
    start an empty one (as `readline` reads it).
    """
    if file_io.is_remote(path):
        import tensorflow as tf  # Only for remote files.
        reader = tf.io.gfile.GFile(path, "rb")
    else:
        try:
            reader = open(path, "rb")
        except OSError as error:
            raise PretrainingDataError(
                f"cannot read input file {path}: "
                f"{error.strerror or error}") from error
    line_number = 1
    warnings_left = _MAX_ENCODING_WARNINGS
    with reader:
        pending = b""
        while True:
            data = reader.read(block_bytes)
            if not data:
                break
            data = pending + data
            cut = data.rfind(b"\n")
            if cut < 0:
                pending = data
                continue
            block, pending = data[:cut], data[cut + 1:]
            text, warnings_left = _decode_block(
                block, path, line_number, warnings_left)
            lines = text.split("\n")
            line_number += block.count(b"\n") + 1
            yield lines
        if pending:
            text, warnings_left = _decode_block(
                pending, path, line_number, warnings_left)
            yield [text]


class _ParallelLineTokenizer:
    """`_LineTokenizer.tokenize_lines` over chunks of lines, in processes.

    Each worker process has its own word cache; a word that only one chunk
    contains (most distinct words of real text) is tokenized once, and the
    ids of a line do not depend on which process made them.
    """

    def __init__(self, tokenizer, num_workers, segmentation=None):
        self._tokenizer = tokenizer
        self._segmentation = segmentation
        self._local = _LineTokenizer(tokenizer, segmentation)
        self._num_workers = max(1, num_workers)
        self._pool = None

    def tokenize_lines(self, lines):
        """(ids, lengths, joins) of `lines`: `_LineTokenizer`'s
        `tokenize_lines` (joins None) or, with a segmentation,
        `tokenize_segmented_lines`."""
        workers = self._num_workers
        if workers == 1 or len(lines) < workers * _MIN_LINES_PER_WORKER:
            if self._segmentation is not None:
                return self._local.tokenize_segmented_lines(lines)
            return self._local.tokenize_lines(lines) + (None,)
        if self._pool is None:
            self._pool = multiprocessing.get_context().Pool(
                workers, initializer=_init_worker,
                initargs=(self._tokenizer.vocab_file,
                          self._tokenizer.do_lower_case,
                          self._segmentation))
        # A few chunks per worker balance the load; `imap` keeps the order.
        chunk = max(_MIN_LINES_PER_WORKER, -(-len(lines) // (workers * 4)))
        chunks = (lines[i:i + chunk] for i in range(0, len(lines), chunk))
        ids, lengths = array("i"), array("i")
        joins = None if self._segmentation is None else bytearray()
        for chunk_ids, chunk_lengths, chunk_joins in self._pool.imap(
                _tokenize_lines_in_worker, chunks):
            ids.frombytes(chunk_ids)
            lengths.frombytes(chunk_lengths)
            if joins is not None:
                joins += chunk_joins
        return ids, lengths, joins

    def close(self, abort=False):
        """Stops the worker processes (at once if `abort`)."""
        if self._pool is not None:
            if abort:
                self._pool.terminate()
            else:
                self._pool.close()
            self._pool.join()
            self._pool = None


def tokenize_corpus(input_files, tokenizer, num_workers=1,
                    word_segmentation=None):
    """Reads and tokenizes the input files into documents of sentences.

    Args:
      input_files: paths, in reading order (see `file_io.expand_input_patterns`).
      tokenizer: a `FullTokenizer` (its `vocab_file` and `do_lower_case`
        configure the worker processes' own tokenizers).
      num_workers: processes that tokenize new words (1: in this process).
        The result does not depend on it.
      word_segmentation: None, or one of `chinese_words.SEGMENTATIONS`:
        split lines into words and record which CJK character tokens join
        the previous one (`TokenizedCorpus.joins_previous`).

    Returns:
      A `TokenizedCorpus`, documents in reading order (not shuffled).

    Raises:
      PretrainingDataError: a file cannot be read, or no line of any file
        yields a token (the message names the files).
    """
    token_ids = array("i")
    sentence_starts = array("q", [0])
    document_starts = array("q", [0])
    joins_previous = None if word_segmentation is None else bytearray()
    line_tokenizer = _ParallelLineTokenizer(tokenizer, num_workers,
                                            word_segmentation)
    block_bytes = min(_BLOCK_BYTES,
                      max(_MIN_BLOCK_BYTES, num_workers * (1 << 20)))
    progress = progress_lib.Progress("create_pretraining_data: tokenize",
                                     unit="line")
    progress.start(f"reading {len(input_files)} file"
                   f"{'' if len(input_files) == 1 else 's'}")
    completed = False
    try:
        for path in input_files:
            for lines in _line_blocks(path, block_bytes):
                ids, lengths, joins = line_tokenizer.tokenize_lines(lines)
                progress.update(progress.count + len(lines))
                token_ids.extend(ids)
                if joins_previous is not None:
                    joins_previous += joins
                end = sentence_starts[-1]
                for length in lengths:
                    if length > 0:
                        end += length
                        sentence_starts.append(end)
                    elif length < 0 and (len(sentence_starts) - 1
                                         > document_starts[-1]):
                        # An empty line ends the current document, if any.
                        document_starts.append(len(sentence_starts) - 1)
        completed = True
    finally:
        line_tokenizer.close(abort=not completed)
        progress.close()
    if len(sentence_starts) - 1 > document_starts[-1]:
        document_starts.append(len(sentence_starts) - 1)
    if len(document_starts) == 1:
        raise PretrainingDataError(
            "no text to make pretraining data from: no line of the input "
            f"files ({', '.join(map(str, input_files))}) yields a token")
    return TokenizedCorpus(token_ids, sentence_starts, document_starts,
                           input_files, joins_previous)
