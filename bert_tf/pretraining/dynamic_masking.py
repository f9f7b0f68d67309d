"""Dynamic masking (RoBERTa-style): pretraining batches made from raw text.

Instead of reading instances that `create_pretraining_data.py` masked once,
this pipeline reads the raw text files (Google's format: one sentence per
line, a blank line between documents), tokenizes them in-graph with
`GraphFullTokenizer`, and draws sentence pairs and masks afresh on every
pass. Its batches have exactly the names, dtypes and shapes of
`pretraining_dataset`'s, so the trainer cannot tell the two apart.

The rules are Google's, per document:

* `max_num_tokens = max_seq_length - 3`; the target length is
  `max_num_tokens`, or with probability `short_seq_prob` uniform in
  [2, max_num_tokens].
* Sentences are accumulated into a chunk until it reaches the target or the
  document ends. A = the first `a_end` sentences (`a_end` uniform in
  [1, len(chunk) - 1], 1 for a one-sentence chunk). With probability 0.5,
  and always for a one-sentence chunk, B is a random segment (label 1)
  and the chunk's unused sentences are put back for the next chunk;
  otherwise B is the rest of the chunk (label 0).
* The pair is truncated to `max_num_tokens` by removing, from the longer
  side (B on ties), its first or last token with probability 0.5 each.
* `[CLS] A [SEP] B [SEP]`, segment ids 0 up to the first `[SEP]`, 1 after.
* `num_to_predict = min(max_predictions_per_seq, max(1, round(len(tokens) *
  masked_lm_prob)))` positions, uniformly among all but `[CLS]`/`[SEP]`;
  each becomes `[MASK]` (80%), stays (10%) or becomes a uniformly drawn
  vocabulary entry (10%). Positions are sorted.

Simplifications against Google's create_pretraining_data.py, because a
streaming pipeline cannot hold the whole corpus:

* Random next segment: Google starts at a random sentence of a random other
  document and takes sentences until B reaches `target - len(A)` tokens.
  Here the "other document" is another instance's chunk: instances are
  shuffled, then grouped in windows of `_DONOR_WINDOW`, and each takes its
  random B from the first instance of the window that comes from another
  document (the next one if all come from the same document, as Google
  falls back to the same document after 10 draws). B then starts at a
  random sentence of that chunk and can be no longer than what is left of
  the chunk, so random B segments are on average a little shorter.
* Documents end at the end of each file (Google lets a document continue
  into the next file when a file does not end with a blank line).
* A document must fit in memory (as in Google's script, which holds the
  whole corpus).
* Whole-word masking (`do_whole_word_mask`) is Google's ("##" pieces join
  the word before them); Chinese whole-word masking
  (`create_pretraining_data.py --chinese_word_segmenter/--word_boundaries`)
  is not offered here: it needs each token's word, which jieba cannot give
  in-graph, and which for pre-segmented text would have to travel beside
  the ids through chunking, random-next exchange and truncation. Use
  `create_pretraining_data.py` for it.

`write_dynamic_masking_records` writes such batches as TFRecords with the
static schema, which `pretraining_dataset` (or Google's run_pretraining.py)
reads back.
"""

import tensorflow as tf

from bert_tf import file_io
from bert_tf.pretraining import records
from bert_tf.text.graph_tokenizer import GraphFullTokenizer
from bert_tf.text.graph_tokenizer import python_whitespace_class

# Lines read from a file per step of the document splitter.
_LINES_PER_BLOCK = 1024
# Documents tokenized per call of the tokenizer.
_DOCUMENTS_PER_TOKENIZER_CALL = 32
# Instances per window in which random-next segments are exchanged.
_DONOR_WINDOW = 16
# Default instances held by the instance shuffle, per example in a batch.
_SHUFFLE_EXAMPLES_PER_BATCH_ITEM = 100
# Parallel file reads per input pipeline when training.
_CYCLE_LENGTH = 8
# Seed used for evaluation when none is given, so evaluation data is the
# same on every run.
_DEFAULT_EVAL_SEED = 12345

# Salts that make the stateless random draws of one element independent.
_SALT_TARGET, _SALT_CHUNKS = 1, 2
_SALT_DONOR_START, _SALT_TRUNCATE_A, _SALT_TRUNCATE_B = 3, 4, 5
_SALT_MASK_POSITIONS, _SALT_MASK_KIND, _SALT_MASK_KEEP = 6, 7, 8
_SALT_MASK_RANDOM_WORD, _SALT_SHORT_TARGET = 9, 10
_SALT_SWAP, _SALT_SPLIT = 11, 12

# How sequences are made (`packing`).
SENTENCE_PAIRS = "sentence_pairs"
FULL_SENTENCES = "full_sentences"
PACKINGS = (SENTENCE_PAIRS, FULL_SENTENCES)


def _seed(element_seed, salt):
    """A stateless-op seed for one kind of draw of one element."""
    return tf.stack([element_seed, tf.constant(salt, tf.int64)])


def _uniform(shape, element_seed, salt):
    return tf.random.stateless_uniform(shape, _seed(element_seed, salt),
                                       dtype=tf.float32)


def _uniform_int(shape, low, high, element_seed, salt):
    """Integers uniform in [low, high] (inclusive), like `randint`."""
    draw = _uniform(shape, element_seed, salt)
    span = tf.cast(high - low + 1, tf.float32)
    value = low + tf.cast(tf.floor(draw * span), tf.int32)
    return tf.minimum(value, high)


def pair_lengths_after_truncation(length_a, length_b, max_num_tokens):
    """Lengths Google's `truncate_seq_pair` leaves, without its loop.

    Google removes one token at a time from the longer side (B on ties)
    until the pair fits. Which end loses the token does not change the
    lengths, so they follow in closed form: the longer side is first cut
    down to the shorter one (B to one below A, since B loses ties), then
    the two sides alternate.

    Args:
      length_a, length_b: int32 tensors (scalars, or vectors for many pairs
        at once), lengths before truncation.
      max_num_tokens: the most tokens A and B may hold together.

    Returns:
      (new_length_a, new_length_b).
    """
    excess = tf.maximum(length_a + length_b - max_num_tokens, 0)
    # A at least as long: A is cut down to B's length, then B and A
    # alternate, B first (it loses ties).
    first_cut_a = tf.minimum(excess, length_a - length_b)
    rest_a = excess - first_cut_a
    if_a_longer = (length_a - first_cut_a - rest_a // 2,
                   length_b - (rest_a + 1) // 2)
    # B longer: B is cut down to one below A, then A and B alternate.
    first_cut_b = tf.minimum(excess, length_b - length_a + 1)
    rest_b = excess - first_cut_b
    if_b_longer = (length_a - (rest_b + 1) // 2,
                   length_b - first_cut_b - rest_b // 2)
    a_longer = length_a >= length_b
    return (tf.where(a_longer, if_a_longer[0], if_b_longer[0]),
            tf.where(a_longer, if_a_longer[1], if_b_longer[1]))


def _truncate(tokens, new_length, element_seed, salt):
    """Removes `len(tokens) - new_length` tokens, each from the front or the
    back with probability 0.5 (Google's `del tokens[0]` or `tokens.pop()`)."""
    removed = tf.size(tokens) - new_length
    coin = _uniform([tf.size(tokens)], element_seed, salt)
    from_front = tf.reduce_sum(
        tf.cast(coin[:removed] < 0.5, tf.int32))
    return tokens[from_front:from_front + new_length]


def _chunk_document(sentence_lengths, max_num_tokens, short_seq_prob,
                    element_seed, sentence_order=False):
    """Google's walk over one document's sentences, as instance outlines.

    Args:
      sentence_lengths: int32 [num_sentences], all positive.
      max_num_tokens: max_seq_length - 3.
      short_seq_prob: probability of a shorter target length.
      element_seed: int64 scalar, this document's random seed.
      sentence_order: ALBERT's pairs: never a random next segment (B is
        always the rest of the chunk).

    Returns:
      A dict of int32/bool vectors, one entry per instance:
      `first_sentence`, `end_sentence` (exclusive; for a random-next
      instance the end of A, the rest having been put back),
      `a_sentences` (sentences in A), `is_random_next`, `target_b_length`.
    """
    num_sentences = tf.size(sentence_lengths)
    cumulative = tf.concat([[0], tf.cumsum(sentence_lengths)], axis=0)
    target = tf.where(
        _uniform([], element_seed, _SALT_TARGET) < short_seq_prob,
        _uniform_int([], 2, max_num_tokens, element_seed, _SALT_SHORT_TARGET),
        max_num_tokens)
    # Each instance consumes at least one sentence: at most num_sentences
    # instances, two draws each.
    draws = _uniform([2 * num_sentences + 2], element_seed, _SALT_CHUNKS)

    def body(i, chunk_start, count, outlines):
        length = cumulative[i + 1] - cumulative[chunk_start]
        chunk_done = (i == num_sentences - 1) | (length >= target)

        def close_chunk():
            size = i - chunk_start + 1
            a_sentences = tf.where(
                size >= 2,
                1 + tf.minimum(
                    tf.cast(tf.floor(draws[2 * count] *
                                     tf.cast(size - 1, tf.float32)),
                            tf.int32),
                    size - 2),
                1)
            is_random = tf.logical_and(
                not sentence_order,
                (size == 1) | (draws[2 * count + 1] < 0.5))
            a_end = chunk_start + a_sentences
            length_a = cumulative[a_end] - cumulative[chunk_start]
            end = tf.where(is_random, a_end, i + 1)
            outline = tf.stack([chunk_start, end, a_sentences,
                                tf.cast(is_random, tf.int32),
                                target - length_a])
            return end, end, count + 1, outlines.write(count, outline)

        def extend_chunk():
            return i + 1, chunk_start, count, outlines

        return tf.cond(chunk_done, close_chunk, extend_chunk)

    outlines = tf.TensorArray(tf.int32, size=0, dynamic_size=True,
                              element_shape=[5])
    _, _, _, outlines = tf.while_loop(
        lambda i, *_: i < num_sentences, body,
        (tf.constant(0), tf.constant(0), tf.constant(0), outlines))
    outlines = tf.reshape(outlines.stack(), [-1, 5])
    return {
        "first_sentence": outlines[:, 0],
        "end_sentence": outlines[:, 1],
        "a_sentences": outlines[:, 2],
        "is_random_next": tf.cast(outlines[:, 3], tf.bool),
        "target_b_length": outlines[:, 4],
    }


# Tokenizers by (vocab file, its size and modification time, casing): a
# tokenizer traces its graph once, so pipelines built again (training and
# evaluation, or one per test) share it.
_TOKENIZERS = {}


def _tokenizer_for(vocab_file, do_lower_case):
    """A `GraphFullTokenizer`, shared while the vocab file is unchanged."""
    try:
        stat = tf.io.gfile.stat(str(vocab_file))
    except tf.errors.OpError:
        # Missing or unreadable: the tokenizer raises the error naming it.
        return GraphFullTokenizer(vocab_file, do_lower_case)
    key = (str(vocab_file), stat.length, stat.mtime_nsec, bool(do_lower_case))
    if key not in _TOKENIZERS:
        _TOKENIZERS[key] = GraphFullTokenizer(vocab_file, do_lower_case)
    return _TOKENIZERS[key]


class _DynamicMaskingPipeline:
    """Builds the dataset; holds the tokenizer, special ids and options."""

    def __init__(self, vocab_file, do_lower_case, max_seq_length,
                 max_predictions_per_seq, masked_lm_prob, short_seq_prob,
                 do_whole_word_mask=False, sentence_order=False):
        self.tokenizer = _tokenizer_for(vocab_file, do_lower_case)
        missing = [t for t in ("[CLS]", "[SEP]", "[MASK]")
                   if t not in self.tokenizer.vocab]
        if missing:
            raise ValueError(
                f"vocab file {vocab_file} lacks {', '.join(missing)}, which "
                "pretraining instances need")
        self.cls_id = self.tokenizer.token_id("[CLS]")
        self.sep_id = self.tokenizer.token_id("[SEP]")
        self.mask_id = self.tokenizer.token_id("[MASK]")
        # Google draws a random word from the vocab's entries, then takes
        # its id: uniform over the dict's values.
        self.vocab_ids = sorted(set(self.tokenizer.vocab.values()))
        self.max_seq_length = max_seq_length
        self.max_num_tokens = max_seq_length - 3
        self.max_predictions_per_seq = max_predictions_per_seq
        self.masked_lm_prob = masked_lm_prob
        self.short_seq_prob = short_seq_prob
        self.whitespace_pattern = python_whitespace_class()
        self.do_whole_word_mask = do_whole_word_mask
        self.sentence_order = sentence_order
        # Whole-word masking: which ids are "##" pieces, by id.
        is_continuation = [False] * (max(self.tokenizer.vocab.values()) + 1)
        for token, index in self.tokenizer.vocab.items():
            if token.startswith("##"):
                is_continuation[index] = True
        self.is_continuation = is_continuation

    # -- documents ---------------------------------------------------------

    def read_document_blocks(self, path, file_index):
        """Documents of one text file, in blocks of complete documents.

        A line that is empty after Python's `strip()` ends a document, as in
        Google's reader. Lines are read a block at a time; the lines of a
        document not yet ended wait for the next block.

        Args:
          path: the text file.
          file_index: int64 scalar, makes document ids unique across files.

        Returns:
          A dataset of (document ids int64 [d], lines RaggedTensor [d,
          (lines)]) with the blank lines removed and invalid UTF-8 bytes
          dropped. A document can be empty (several blank lines in a row).
        """
        blank_line = self.whitespace_pattern + "*"  # A full match.
        # A blank line after the last one closes the last document.
        lines = tf.data.TextLineDataset(path).concatenate(
            tf.data.Dataset.from_tensors(tf.constant("")))
        blocks = lines.batch(_LINES_PER_BLOCK)

        @tf.autograph.experimental.do_not_convert
        def split_documents(state, block):
            pending, documents_so_far = state
            block = tf.strings.unicode_transcode(
                block, "UTF-8", "UTF-8", errors="ignore")
            text = tf.concat([pending, block], axis=0)
            is_blank = tf.strings.regex_full_match(text, blank_line)
            blank_positions = tf.cast(tf.where(is_blank)[:, 0], tf.int32)
            complete = tf.reduce_max(
                tf.concat([[-1], blank_positions], axis=0)) + 1
            # Lines of complete documents, each tagged with its document
            # (= the number of blank lines before it).
            done_text = text[:complete]
            done_blank = is_blank[:complete]
            document_of_line = tf.cumsum(
                tf.cast(done_blank, tf.int64), exclusive=True)
            keep = tf.logical_not(done_blank)
            num_documents = tf.reduce_sum(tf.cast(done_blank, tf.int64))
            documents = tf.RaggedTensor.from_value_rowids(
                tf.boolean_mask(done_text, keep),
                tf.boolean_mask(document_of_line, keep),
                nrows=num_documents)
            ids = (file_index * (1 << 32) + documents_so_far
                   + tf.range(num_documents, dtype=tf.int64))
            state = (text[complete:], documents_so_far + num_documents)
            return state, (ids, documents)

        initial = (tf.zeros([0], tf.string), tf.constant(0, tf.int64))
        return blocks.scan(initial, split_documents)

    @tf.autograph.experimental.do_not_convert
    def tokenize_documents(self, document_ids, documents):
        """Tokenizes a block of documents; drops sentences with no tokens.

        Returns:
          (document ids [d], token ids RaggedTensor [d, (sentences),
          (tokens)]).
        """
        tokens = self.tokenizer.tokenize(documents.flat_values)
        has_tokens = tokens.row_lengths() > 0
        sentences = tf.ragged.boolean_mask(tokens, has_tokens)
        sentences_per_document = tf.math.unsorted_segment_sum(
            tf.cast(has_tokens, tf.int64), documents.value_rowids(),
            documents.nrows())
        return document_ids, tf.RaggedTensor.from_row_lengths(
            sentences, sentences_per_document)

    # -- instances ---------------------------------------------------------

    @tf.autograph.experimental.do_not_convert
    def document_to_instances(self, document_id, sentences, element_seed):
        """Google's chunk walk over one document.

        Returns:
          A dict of per-instance tensors (leading dimension = instances):
          `document_id`, `tokens` (ragged: A, then B when it is the actual
          next segment), `sentence_lengths` (ragged), `length_a`,
          `is_random_next`, `target_b_length`.
        """
        sentence_lengths = tf.cast(sentences.row_lengths(), tf.int32)
        outline = _chunk_document(sentence_lengths, self.max_num_tokens,
                                  self.short_seq_prob, element_seed,
                                  self.sentence_order)
        cumulative = tf.concat([[0], tf.cumsum(sentence_lengths)], axis=0)
        first, end = outline["first_sentence"], outline["end_sentence"]
        token_starts = tf.gather(cumulative, first)
        token_ranges = tf.ragged.range(token_starts,
                                       tf.gather(cumulative, end))
        tokens = tf.gather(sentences.flat_values, token_ranges)
        lengths = tf.gather(sentence_lengths, tf.ragged.range(first, end))
        length_a = (tf.gather(cumulative, first + outline["a_sentences"])
                    - token_starts)
        num_instances = tf.size(first)
        instances = {
            "document_id": tf.fill([num_instances], document_id),
            "tokens": tokens,
            "sentence_lengths": lengths,
            "length_a": length_a,
            "is_random_next": outline["is_random_next"],
            "target_b_length": outline["target_b_length"],
        }
        if not self.sentence_order:
            return instances
        # ALBERT's pairs need two segments: a one-sentence chunk is split
        # after a random token (1 .. length - 1); a one-token chunk makes
        # no instance.
        chunk_length = tf.cast(tokens.row_lengths(), tf.int32)
        split = 1 + tf.minimum(
            tf.cast(tf.floor(
                _uniform([num_instances], element_seed, _SALT_SPLIT)
                * tf.cast(chunk_length - 1, tf.float32)), tf.int32),
            tf.maximum(chunk_length - 2, 0))
        instances["length_a"] = tf.where(end - first == 1, split, length_a)
        keep = chunk_length >= 2
        return {name: tf.ragged.boolean_mask(value, keep)
                if isinstance(value, tf.RaggedTensor)
                else tf.boolean_mask(value, keep)
                for name, value in instances.items()}

    @tf.autograph.experimental.do_not_convert
    def attach_donors(self, window):
        """Gives each instance of a window the chunk of another document."""
        document_ids = window["document_id"]
        size = tf.size(document_ids)
        index = tf.range(size)
        offsets = tf.range(1, tf.maximum(size, 2))
        candidates = (index[:, tf.newaxis] + offsets[tf.newaxis, :]) % size
        other_document = tf.not_equal(tf.gather(document_ids, candidates),
                                      document_ids[:, tf.newaxis])
        # First candidate from another document; the next one if none is.
        first_other = tf.argmax(tf.cast(other_document, tf.int32), axis=1,
                                output_type=tf.int32)
        donor = tf.gather(candidates, first_other, batch_dims=1)
        window = dict(window)
        window["donor_tokens"] = tf.gather(window["tokens"], donor)
        window["donor_sentence_lengths"] = tf.gather(
            window["sentence_lengths"], donor)
        return window

    def _random_next_segment(self, instance, element_seed):
        """Google's random B: whole sentences of the donor chunk, from a
        random one on, until `target_b_length` tokens are reached."""
        lengths = instance["donor_sentence_lengths"]
        tokens = instance["donor_tokens"]
        start = _uniform_int([], 0, tf.size(lengths) - 1, element_seed,
                             _SALT_DONOR_START)
        cumulative = tf.cumsum(lengths[start:])
        reached = cumulative >= instance["target_b_length"]
        last = tf.where(tf.reduce_any(reached),
                        tf.argmax(tf.cast(reached, tf.int32),
                                  output_type=tf.int32),
                        tf.size(cumulative) - 1)
        offset = tf.reduce_sum(lengths[:start])
        return tokens[offset:offset + cumulative[last]]

    @tf.autograph.experimental.do_not_convert
    def instance_to_features(self, instance, element_seed):
        """Pair, truncation, layout and fresh masks of one instance."""
        tokens = instance["tokens"]
        length_a = instance["length_a"]
        is_random = instance["is_random_next"]
        tokens_a = tokens[:length_a]
        tokens_b = tf.cond(
            is_random,
            lambda: self._random_next_segment(instance, element_seed),
            lambda: tokens[length_a:])
        if self.sentence_order:
            # ALBERT: the two segments swapped half of the time (label 1).
            is_random = _uniform([], element_seed, _SALT_SWAP) < 0.5
            tokens_a, tokens_b = tf.cond(is_random,
                                         lambda: (tokens_b, tokens_a),
                                         lambda: (tokens_a, tokens_b))
        new_a, new_b = pair_lengths_after_truncation(
            tf.size(tokens_a), tf.size(tokens_b), self.max_num_tokens)
        tokens_a = _truncate(tokens_a, new_a, element_seed, _SALT_TRUNCATE_A)
        tokens_b = _truncate(tokens_b, new_b, element_seed, _SALT_TRUNCATE_B)
        return self._segments_to_features((tokens_a, tokens_b), is_random,
                                          element_seed)

    @tf.autograph.experimental.do_not_convert
    def pack_full_sentences(self, pending, document):
        """RoBERTa's FULL-SENTENCES packing, one document at a time.

        Whole sentences are appended to the sequence being filled, in
        corpus order, crossing document boundaries with a `[SEP]` between
        two documents, until the next sentence would not fit in
        `max_seq_length - 2` tokens ([CLS] ... [SEP] around them); the
        sequence is then complete and the sentence starts the next one. A
        sentence longer than that on its own is cut to it (its end is
        dropped).

        Args:
          pending: int32 [n], the tokens of the sequence being filled.
          document: (document id, sentences RaggedTensor [(sentences),
            (tokens)]).

        Returns:
          (the new pending tokens, the completed sequences' tokens
          RaggedTensor [(sequences), (tokens)]).
        """
        _, sentences = document
        capacity = self.max_seq_length - 2
        sentence_lengths = tf.cast(sentences.row_lengths(), tf.int32)
        flat = sentences.flat_values
        starts = tf.concat([[0], tf.cumsum(sentence_lengths)], axis=0)
        separator = tf.constant([self.sep_id], tf.int32)

        def body(index, pending, done_values, done_lengths):
            length = tf.minimum(sentence_lengths[index], capacity)
            sentence = flat[starts[index]:starts[index] + length]
            # The first sentence of a document after another document's
            # text is preceded by [SEP].
            prefix = tf.cond((index == 0) & (tf.size(pending) > 0),
                             lambda: separator,
                             lambda: tf.zeros([0], tf.int32))
            fits = (tf.size(pending) + tf.size(prefix) + length
                    <= capacity)  # Always when nothing is pending.

            def append():
                return (tf.concat([pending, prefix, sentence], axis=0),
                        done_values, done_lengths)

            def complete():
                return (sentence, tf.concat([done_values, pending], axis=0),
                        tf.concat([done_lengths, [tf.size(pending)]],
                                  axis=0))

            return (index + 1, *tf.cond(fits, append, complete))

        empty = tf.zeros([0], tf.int32)
        _, pending, values, lengths = tf.while_loop(
            lambda index, *_: index < tf.size(sentence_lengths), body,
            (tf.constant(0), pending, empty, empty),
            shape_invariants=(tf.TensorShape([]), tf.TensorShape([None]),
                              tf.TensorShape([None]),
                              tf.TensorShape([None])))
        return pending, tf.RaggedTensor.from_row_lengths(values, lengths)

    @tf.autograph.experimental.do_not_convert
    def sequence_to_features(self, tokens, element_seed):
        """[CLS] tokens [SEP] (one segment, label 0), fresh masks."""
        return self._segments_to_features((tokens,), False, element_seed)

    def _segments_to_features(self, segments, label, element_seed):
        """One instance's model features: the segments laid out as Google
        lays them out, fresh masks, padding to `max_seq_length`.

        Every objective ends here: NSP and SOP pairs (`instance_to_features`)
        and RoBERTa's one-segment sequences (`sequence_to_features`).

        Args:
          segments: (tokens_a, tokens_b) of a pair, or (tokens,): int32
            vectors, already truncated to fit with [CLS] and a [SEP] after
            each.
          label: bool scalar, the `next_sentence_labels` (NSP: B is a
            random segment; SOP: the segments are swapped; always False
            for one segment).
          element_seed: this element's seed (for the masks).

        Returns:
          The features dict of `records` (`input_ids`, `input_mask`,
          `segment_ids` [max_seq_length], the masked-LM features,
          `next_sentence_labels`).
        """
        sep = tf.constant([self.sep_id], tf.int32)
        pieces = [tf.constant([self.cls_id], tf.int32)]
        segment_ids = []
        for index, tokens in enumerate(segments):
            pieces += [tokens, sep]
            # Segment 0 is [CLS] A [SEP]; segment 1 is B [SEP].
            segment_ids.append(tf.fill(
                [tf.size(tokens) + (2 if index == 0 else 1)], index))
        input_ids = tf.concat(pieces, axis=0)
        num_tokens = tf.size(input_ids)
        features = self._mask(input_ids, element_seed)
        padding = [[0, self.max_seq_length - num_tokens]]

        def padded(values):
            return tf.ensure_shape(tf.pad(values, padding),
                                   [self.max_seq_length])

        features[records.INPUT_IDS] = padded(features[records.INPUT_IDS])
        features[records.INPUT_MASK] = padded(tf.ones([num_tokens], tf.int32))
        features[records.SEGMENT_IDS] = padded(tf.concat(segment_ids, axis=0))
        features[records.NEXT_SENTENCE_LABELS] = tf.cast(label, tf.int32)
        return features

    def _mask(self, input_ids, element_seed):
        """Google's masked-LM rule on one unpadded sequence."""
        num_tokens = tf.size(input_ids)
        is_candidate = ((input_ids != self.cls_id) &
                        (input_ids != self.sep_id))
        num_candidates = tf.reduce_sum(tf.cast(is_candidate, tf.int32))
        # Python's round() and tf.round both round half to even.
        num_to_predict = tf.cast(tf.round(
            tf.cast(num_tokens, tf.float64) * self.masked_lm_prob), tf.int32)
        num_to_predict = tf.minimum(
            tf.minimum(self.max_predictions_per_seq,
                       tf.maximum(1, num_to_predict)),
            num_candidates)
        if self.do_whole_word_mask:
            positions = self._whole_word_positions(
                input_ids, is_candidate, num_to_predict, element_seed)
            num_to_predict = tf.size(positions)
        else:
            # A uniformly random subset: the candidates with the smallest
            # random scores (what taking the head of Google's shuffled list
            # amounts to).
            scores = tf.where(
                is_candidate,
                _uniform([num_tokens], element_seed, _SALT_MASK_POSITIONS),
                2.0)
            positions = tf.sort(tf.argsort(scores)[:num_to_predict])
            positions = tf.cast(positions, tf.int32)
        original = tf.gather(input_ids, positions)
        kind = _uniform([num_to_predict], element_seed, _SALT_MASK_KIND)
        keep = _uniform([num_to_predict], element_seed, _SALT_MASK_KEEP)
        random_word = tf.gather(
            tf.constant(self.vocab_ids, tf.int32),
            _uniform_int([num_to_predict], 0, len(self.vocab_ids) - 1,
                         element_seed, _SALT_MASK_RANDOM_WORD))
        replacement = tf.where(
            kind < 0.8, self.mask_id,
            tf.where(keep < 0.5, original, random_word))
        masked = tf.tensor_scatter_nd_update(
            input_ids, positions[:, tf.newaxis], replacement)
        padding = [[0, self.max_predictions_per_seq - num_to_predict]]
        shape = [self.max_predictions_per_seq]
        return {
            records.INPUT_IDS: masked,
            records.MASKED_LM_POSITIONS: tf.ensure_shape(
                tf.pad(positions, padding), shape),
            records.MASKED_LM_IDS: tf.ensure_shape(
                tf.pad(original, padding), shape),
            records.MASKED_LM_WEIGHTS: tf.ensure_shape(
                tf.pad(tf.ones([num_to_predict], tf.float32), padding),
                shape),
        }

    def _whole_word_positions(self, input_ids, is_candidate, num_to_predict,
                              element_seed):
        """Positions to mask with Google's whole-word masking, sorted.

        Google's rule: the candidates (all but [CLS]/[SEP]) form groups, a
        "##" piece joining the group of the candidate before it (across the
        [SEP] between A and B too); the groups are shuffled and taken whole,
        in that order, skipping a group that would bring the count past
        `num_to_predict`. Here the shuffle is a random order of the groups
        (the same distribution, other draws) and the greedy pass a scan.

        Args:
          input_ids: int32 [num_tokens], unpadded.
          is_candidate: bool [num_tokens].
          num_to_predict: int32 scalar, the most positions to mask.
          element_seed: this element's seed.

        Returns:
          int32 [num_masked] positions, ascending; num_masked is at most
          num_to_predict.
        """
        candidates = tf.cast(tf.where(is_candidate)[:, 0], tf.int32)
        candidate_ids = tf.gather(input_ids, candidates)
        continues = tf.gather(
            tf.constant(self.is_continuation, tf.bool), candidate_ids)
        # The first candidate opens a group even if it is a "##" piece.
        starts_group = tf.logical_not(continues) | (
            tf.range(tf.size(candidates)) == 0)
        group_of = tf.cumsum(tf.cast(starts_group, tf.int32)) - 1
        num_groups = tf.reduce_sum(tf.cast(starts_group, tf.int32))
        group_sizes = tf.math.unsorted_segment_sum(
            tf.ones_like(group_of), group_of, num_groups)
        order = tf.argsort(_uniform([num_groups], element_seed,
                                    _SALT_MASK_POSITIONS))

        def take_if_it_fits(state, size):
            total, _ = state
            fits = total + size <= num_to_predict
            return tf.where(fits, total + size, total), fits

        _, taken_in_order = tf.scan(
            take_if_it_fits, tf.gather(group_sizes, order),
            initializer=(tf.constant(0, tf.int32), tf.constant(False)))
        taken = tf.scatter_nd(order[:, tf.newaxis], taken_in_order,
                              [num_groups])
        return tf.boolean_mask(candidates, tf.gather(taken, group_of))


def _validate(batch_size, max_seq_length, max_predictions_per_seq,
              masked_lm_prob, short_seq_prob):
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    if max_seq_length < 5:
        raise ValueError(
            f"max_seq_length must be at least 5 ([CLS] A [SEP] B [SEP] with "
            f"A and B of at least one token), got {max_seq_length}")
    if max_predictions_per_seq < 1:
        raise ValueError("max_predictions_per_seq must be positive, got "
                         f"{max_predictions_per_seq}")
    if not 0.0 < masked_lm_prob <= 1.0:
        raise ValueError(
            f"masked_lm_prob must be in (0, 1], got {masked_lm_prob}")
    if not 0.0 <= short_seq_prob <= 1.0:
        raise ValueError(
            f"short_seq_prob must be in [0, 1], got {short_seq_prob}")


def dynamic_masking_dataset(text_patterns, vocab_file, do_lower_case,
                            batch_size, max_seq_length,
                            max_predictions_per_seq, is_training,
                            input_context=None, seed=None,
                            masked_lm_prob=0.15, short_seq_prob=0.1, *,
                            shuffle_buffer_size=None,
                            do_whole_word_mask=False, sentence_order=False,
                            packing=SENTENCE_PAIRS):
    """Pretraining batches with fresh sentence pairs and masks every pass.

    Args:
      text_patterns: comma-separated string or list of globs of text files
        (one sentence per line, blank lines between documents).
      vocab_file: the model's `vocab.txt`.
      do_lower_case: as for the model (True for uncased).
      batch_size: examples per batch (per replica under a strategy).
      max_seq_length, max_predictions_per_seq: the output lengths.
      is_training: True: files shuffled, repeated forever, new pairs and
        masks on every pass. False: one pass over the files in order
        (instances are still shuffled, within the buffer, with a fixed seed
        so evaluation data is the same on every run).
      input_context: optional `tf.distribute.InputContext`; files are split
        between pipelines when there are at least as many as pipelines,
        else documents are.
      seed: makes the whole stream reproducible; None: non-deterministic
        (training) or a fixed seed (evaluation).
      masked_lm_prob, short_seq_prob: Google's flags.
      shuffle_buffer_size: instances held by the instance shuffle; default
        100 * batch_size.
      do_whole_word_mask: Google's whole-word masking: a word's "##"
        pieces are masked together (each position still gets its own
        80/10/10 draw), at most `max_predictions_per_seq` positions.
      sentence_order: ALBERT's sentence-order pairs instead of Google's
        next-sentence pairs: B is always the rest of A's chunk (a
        one-sentence chunk is split after a random token, a one-token one
        dropped), and the two are swapped half of the time, label 1.
      packing: `SENTENCE_PAIRS` (Google's [CLS] A [SEP] B [SEP]) or
        `FULL_SENTENCES` (RoBERTa's: `[CLS]` + whole sentences in corpus
        order, across documents with a `[SEP]` between two, up to
        `max_seq_length - 2` tokens, + `[SEP]`; one segment, label 0,
        `short_seq_prob` unused; the last, unfinished sequence of a pass
        is dropped).

    Returns:
      A `tf.data.Dataset` of dicts with the features, dtypes and shapes of
      `pretraining_dataset` (batches of exactly `batch_size`).

    Raises:
      ValueError: bad arguments, a pattern that matches no file, a vocab
        without [CLS]/[SEP]/[MASK]/[UNK].
    """
    _validate(batch_size, max_seq_length, max_predictions_per_seq,
              masked_lm_prob, short_seq_prob)
    if packing not in PACKINGS:
        raise ValueError(f"packing must be one of {', '.join(PACKINGS)}, "
                         f"got {packing!r}")
    if sentence_order and packing == FULL_SENTENCES:
        raise ValueError(f"{FULL_SENTENCES} packing makes one segment per "
                         f"sequence: there is no sentence order to predict")
    files = file_io.expand_input_patterns(text_patterns, sort=True)
    pipeline = _DynamicMaskingPipeline(
        vocab_file, do_lower_case, max_seq_length, max_predictions_per_seq,
        masked_lm_prob, short_seq_prob, do_whole_word_mask, sentence_order)

    num_pipelines, pipeline_id = 1, 0
    if input_context is not None:
        num_pipelines = input_context.num_input_pipelines
        pipeline_id = input_context.input_pipeline_id
    shard_by_file = num_pipelines > 1 and len(files) >= num_pipelines
    shard_by_document = num_pipelines > 1 and not shard_by_file
    if seed is None and not is_training:
        seed = _DEFAULT_EVAL_SEED
    deterministic = seed is not None or shard_by_document

    def derived_seed(offset):
        # Distinct streams per purpose and per pipeline.
        return None if seed is None else seed + 1000 * pipeline_id + offset

    file_entries = tf.data.Dataset.from_tensor_slices(
        (tf.range(len(files), dtype=tf.int64), files))
    if shard_by_file:
        file_entries = file_entries.shard(num_pipelines, pipeline_id)
        num_files = len(files[pipeline_id::num_pipelines])
    else:
        num_files = len(files)
    if is_training:
        # Document sharding needs one file order for all pipelines.
        file_seed = (seed if seed is not None
                     else (0 if shard_by_document else None))
        file_entries = file_entries.shuffle(num_files, seed=file_seed)
        file_entries = file_entries.repeat()

    @tf.autograph.experimental.do_not_convert
    def read_file(file_index, path):
        return pipeline.read_document_blocks(path, file_index)

    cycle_length = min(_CYCLE_LENGTH, num_files) if is_training else 1
    blocks = file_entries.interleave(
        read_file, cycle_length=cycle_length,
        num_parallel_calls=(tf.data.AUTOTUNE if cycle_length > 1 else None),
        deterministic=(deterministic if cycle_length > 1 else None))
    documents = blocks.unbatch()
    if shard_by_document:
        documents = documents.shard(num_pipelines, pipeline_id)
    # Tokenizing many documents per call amortizes the per-call cost.
    documents = documents.ragged_batch(_DOCUMENTS_PER_TOKENIZER_CALL).map(
        pipeline.tokenize_documents, num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=deterministic).unbatch()

    @tf.autograph.experimental.do_not_convert
    def has_sentences(document_id, sentences):
        del document_id
        return sentences.nrows() > 0

    documents = documents.filter(has_sentences)
    buffer_size = shuffle_buffer_size or (
        _SHUFFLE_EXAMPLES_PER_BATCH_ITEM * batch_size)
    if packing == FULL_SENTENCES:
        sequences = documents.scan(tf.zeros([0], tf.int32),
                                   pipeline.pack_full_sentences).unbatch()
        sequences = sequences.shuffle(buffer_size, seed=derived_seed(2),
                                      reshuffle_each_iteration=is_training)
        examples = tf.data.Dataset.zip(
            (sequences, tf.data.Dataset.random(
                seed=derived_seed(3), rerandomize_each_iteration=is_training)))
        examples = examples.map(
            pipeline.sequence_to_features,
            num_parallel_calls=tf.data.AUTOTUNE, deterministic=deterministic)
        batches = examples.batch(batch_size, drop_remainder=True)
        return batches.prefetch(tf.data.AUTOTUNE)

    @tf.autograph.experimental.do_not_convert
    def to_instances(document, element_seed):
        document_id, sentences = document
        return pipeline.document_to_instances(document_id, sentences,
                                              element_seed)

    instances = tf.data.Dataset.zip(
        (documents, tf.data.Dataset.random(
            seed=derived_seed(1), rerandomize_each_iteration=is_training)))
    instances = instances.map(
        to_instances, num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=deterministic).unbatch()
    # Evaluation sees the same instances in the same order on every pass.
    instances = instances.shuffle(buffer_size, seed=derived_seed(2),
                                  reshuffle_each_iteration=is_training)
    instances = instances.ragged_batch(_DONOR_WINDOW).map(
        pipeline.attach_donors, num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=deterministic).unbatch()

    @tf.autograph.experimental.do_not_convert
    def to_features(instance, element_seed):
        return pipeline.instance_to_features(instance, element_seed)

    examples = tf.data.Dataset.zip(
        (instances, tf.data.Dataset.random(
            seed=derived_seed(3), rerandomize_each_iteration=is_training)))
    examples = examples.map(
        to_features, num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=deterministic)
    batches = examples.batch(batch_size, drop_remainder=True)
    return batches.prefetch(tf.data.AUTOTUNE)


def _example_of(batch, index):
    """The `tf.train.Example` of one example of a batch (Google's schema)."""

    def int_feature(values):
        return tf.train.Feature(
            int64_list=tf.train.Int64List(value=[int(v) for v in values]))

    feature = {}
    for name in (records.INPUT_IDS, records.INPUT_MASK, records.SEGMENT_IDS,
                 records.MASKED_LM_POSITIONS, records.MASKED_LM_IDS):
        feature[name] = int_feature(batch[name][index])
    feature[records.MASKED_LM_WEIGHTS] = tf.train.Feature(
        float_list=tf.train.FloatList(
            value=[float(v) for v in batch[records.MASKED_LM_WEIGHTS][index]]))
    feature[records.NEXT_SENTENCE_LABELS] = int_feature(
        [batch[records.NEXT_SENTENCE_LABELS][index]])
    return tf.train.Example(features=tf.train.Features(feature=feature))


def write_dynamic_masking_records(dataset, output_files, num_batches):
    """Writes batches of a pretraining dataset as Google's TFRecords.

    The records have `create_pretraining_data.py`'s schema, so
    `pretraining_dataset` (or Google's own `run_pretraining.py`) reads them.
    Examples go round-robin across the output files, as Google's do.

    Args:
      dataset: a dataset of feature dicts (`dynamic_masking_dataset`'s, or
        any with the same features).
      output_files: comma-separated string or list of paths.
      num_batches: how many batches to write (the dataset may be endless).

    Returns:
      The number of examples written.

    Raises:
      ValueError: no output file given, or num_batches is not positive.
    """
    if isinstance(output_files, str):
        output_files = [p.strip() for p in output_files.split(",")
                        if p.strip()]
    output_files = list(output_files)
    if not output_files:
        raise ValueError("no output file given")
    if num_batches < 1:
        raise ValueError(f"num_batches must be positive, got {num_batches}")
    writers = [tf.io.TFRecordWriter(str(path)) for path in output_files]
    written = 0
    try:
        for batch in dataset.take(num_batches).as_numpy_iterator():
            for index in range(len(batch[records.INPUT_IDS])):
                example = _example_of(batch, index)
                writers[written % len(writers)].write(
                    example.SerializeToString())
                written += 1
    finally:
        for writer in writers:
            writer.close()
    return written
