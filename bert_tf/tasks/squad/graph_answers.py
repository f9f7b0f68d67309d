"""SQuAD question answering as TensorFlow ops: windows in, answer text out.

The in-graph twin of `tasks/squad/features.py` (windows) and
`tasks/squad/postprocess.py` (answers), for raw-text SavedModels: both take
their settings from one `postprocess.SquadPostprocessConfig` and give the
same answers from the same logits (tests/tasks/squad/test_squad_twins.py).
One question and its context go through exactly the steps of
`run_squad.py`, inside the graph:

1. The context is split into words at Google's whitespace (" ", "\\t",
   "\\r", "\\n", U+202F); each word is tokenized on its own, so each piece
   knows its word.
2. The question keeps its first `max_query_length` pieces. Windows of at
   most `max_seq_length - len(question) - 3` context pieces start
   `doc_stride` apart (the last ends at the context's end), and each piece
   belongs to the window where it has most context (`min(left, right) +
   0.01 * window length`, the first window on ties;
   `windows.sliding_windows`).
3. Each window is `[CLS] question [SEP] window [SEP]`, segment ids 0 / 1.
4. Candidates are the pairs of the `n_best_size` best start and end
   positions of each window, with both in the window's context part, the
   start in a piece the window owns, end >= start and at most
   `max_answer_length` pieces; they are ranked by start + end logit
   (summed in float64, ties kept in window, start-rank, end-rank order,
   as Google's stable sort).
5. A candidate's text is Google's `get_final_text`: its pieces' text
   ("##" dropped) is looked up in the span's words as the tokenizer
   normalizes them, at its first occurrence (Google's `str.find`), and
   that stretch of the original words is the answer. When normalization
   changed the words' length (a stripped accent, a deleted control
   character) or a piece is "[UNK]", the whole words are the answer, as in
   Google's code.
6. The n-best list keeps the first `n_best_size` distinct texts; their
   probabilities are the softmax of their scores. SQuAD 2.0 adds the null
   answer "" (the lowest [CLS] score over windows) and predicts it when it
   beats the best non-null score by more than `null_score_diff_threshold`.
"""

import tensorflow as tf

from bert_tf.data import windows as windows_lib
from bert_tf.text import graph_tokenizer

# Google's `is_whitespace` for SQuAD contexts, as an RE2 pattern.
CONTEXT_WHITESPACE_PATTERN = r"[ \t\r\n\x{202F}]+"
# Google's score before any window's null score is seen.
NO_NULL_SCORE = 1000000.0
# The answer when no span is valid (Google's placeholder).
EMPTY_ANSWER = "empty"


def _cumulative(values):
    """[0, v0, v0 + v1, ...]: sums of the first i values, for i = 0..n."""
    return tf.concat([tf.zeros([1], values.dtype), tf.cumsum(values)], 0)


class SquadAnswerer:
    """Builds the windows of one question and extracts its answers."""

    def __init__(self, tokenizer, max_seq_length, config):
        """Args:
          tokenizer: a `GraphFullTokenizer`.
          max_seq_length: `run_squad.py`'s flag: the windows' length.
          config: a `postprocess.SquadPostprocessConfig`, the Python
            post-processing's.

        Raises:
          ValueError: the lengths cannot work (Google's checks).
        """
        config.check(max_seq_length)
        self.tokenizer = tokenizer
        self.max_seq_length = max_seq_length
        self.config = config
        self.cls_id = tokenizer.token_id("[CLS]")
        self.sep_id = tokenizer.token_id("[SEP]")
        self.unk_id = tokenizer.token_id("[UNK]")

    @property
    def num_answers(self):
        """Length of the n-best outputs (one more for the null answer)."""
        return self.config.n_best_size + int(
            self.config.version_2_with_negative)

    def output_signature(self):
        """`tf.map_fn`'s `fn_output_signature` for `answer`."""
        scalar = tf.TensorSpec([], tf.float32)
        nbest = tf.TensorSpec([self.num_answers], tf.float32)
        return {
            "answer": tf.TensorSpec([], tf.string),
            "probability": scalar, "score": scalar,
            "null_score_diff": scalar,
            "nbest_text": tf.TensorSpec([self.num_answers], tf.string),
            "nbest_probability": nbest,
            "nbest_start_logit": nbest, "nbest_end_logit": nbest,
            "nbest_count": tf.TensorSpec([], tf.int32),
        }

    def _document(self, context):
        """The context's words and pieces, and where each piece sits."""
        words = graph_tokenizer.split_at(
            context[tf.newaxis], CONTEXT_WHITESPACE_PATTERN).flat_values
        basic, pieces, piece_starts, piece_ends = (
            self.tokenizer.tokenize_with_offsets(words))
        # pieces: [words, (basic tokens), (pieces)].
        # [n]: each piece's basic token; [basic tokens]: each one's word.
        piece_basic = tf.cast(pieces.values.value_rowids(), tf.int32)
        basic_word = tf.cast(pieces.value_rowids(), tf.int32)
        basic_lengths = tf.strings.length(basic.flat_values, unit="UTF8_CHAR")
        num_words = tf.shape(words)[0]
        return {
            "words": words,
            "word_lengths": tf.strings.length(words, unit="UTF8_CHAR"),
            # [words + 1]: each word's first basic token, then their count.
            "word_basic_splits": tf.cast(pieces.row_splits, tf.int32),
            "word_tok_lengths": tf.math.unsorted_segment_sum(
                basic_lengths, basic_word, num_words),
            "basic": basic.flat_values,
            "basic_lengths": basic_lengths,
            "ids": pieces.flat_values,
            "piece_basic": piece_basic,
            "piece_word": tf.gather(basic_word, piece_basic),
            "piece_starts": piece_starts.flat_values,
            "piece_ends": piece_ends.flat_values,
        }

    def features(self, question, context):
        """The model inputs of one question's windows, and the windows.

        Args:
          question: scalar string.
          context: scalar string.

        Returns:
          `(inputs, windows)`: `inputs` a dict of int32
          [num_windows, max_seq_length] (`input_ids`, `input_mask`,
          `segment_ids`); `windows` what `answer` needs.
        """
        document = self._document(context)
        doc_ids = document["ids"]
        query = self.tokenizer.tokenize(question[tf.newaxis]).flat_values
        query = query[:self.config.max_query_length]
        query_length = tf.size(query)
        max_tokens_for_doc = self.max_seq_length - query_length - 3
        spans = windows_lib.sliding_windows(
            tf.size(doc_ids)[tf.newaxis], max_tokens_for_doc,
            self.config.doc_stride)
        starts = spans["starts"]
        lengths = spans["lengths"]
        num_windows = tf.size(starts)
        # One document: global piece numbers are the context's.
        window_pieces = spans["pieces"]
        is_max_context = window_pieces.with_flat_values(
            tf.gather(spans["owner"], window_pieces.flat_values)
            == tf.cast(window_pieces.value_rowids(), tf.int32))

        prefix = tf.concat([[self.cls_id], query, [self.sep_id]], 0)
        prefix = tf.RaggedTensor.from_tensor(
            tf.tile(prefix[tf.newaxis], [num_windows, 1]))
        separator = tf.RaggedTensor.from_tensor(
            tf.fill([num_windows, 1], self.sep_id))
        window_ids = tf.gather(doc_ids, window_pieces)
        ids = tf.concat([prefix, window_ids, separator], axis=1)
        segments = tf.concat([tf.zeros_like(prefix), tf.ones_like(window_ids),
                              tf.ones_like(separator)], axis=1)
        shape = [num_windows, self.max_seq_length]
        inputs = {
            "input_ids": ids.to_tensor(0, shape=shape),
            "input_mask": tf.ones_like(ids).to_tensor(0, shape=shape),
            "segment_ids": segments.to_tensor(0, shape=shape),
        }
        windows = {
            "document": document,
            "starts": starts,
            "lengths": lengths,
            "doc_offset": query_length + 2,
            "is_max_context": is_max_context.to_tensor(
                False, shape=[num_windows, self.max_seq_length]),
        }
        return inputs, windows

    def _candidates(self, windows, start_logits, end_logits):
        """Valid (window, start, end) spans in Google's order of discovery."""
        num_best = min(self.config.n_best_size, self.max_seq_length)
        starts = tf.math.top_k(start_logits, num_best).indices  # [w, nb]
        ends = tf.math.top_k(end_logits, num_best).indices
        offset = windows["doc_offset"]
        lengths = windows["lengths"][:, tf.newaxis]

        def in_context(positions):
            piece = positions - offset
            return (piece >= 0) & (piece < lengths)

        start_is_max = tf.gather(windows["is_max_context"],
                                 tf.maximum(starts - offset, 0), batch_dims=1)
        valid_start = in_context(starts) & start_is_max
        valid_end = in_context(ends)
        start = starts[:, :, tf.newaxis]
        end = ends[:, tf.newaxis, :]
        valid = (valid_start[:, :, tf.newaxis] & valid_end[:, tf.newaxis, :]
                 & (end >= start)
                 & (end - start + 1 <= self.config.max_answer_length))
        start_logit = tf.cast(tf.gather(start_logits, starts, batch_dims=1),
                              tf.float64)[:, :, tf.newaxis]
        end_logit = tf.cast(tf.gather(end_logits, ends, batch_dims=1),
                            tf.float64)[:, tf.newaxis, :]
        shape = tf.shape(valid)
        window = tf.broadcast_to(
            tf.range(shape[0])[:, tf.newaxis, tf.newaxis], shape)
        # Row-major flattening: window, start rank, end rank, the order in
        # which Google's loops find the candidates.
        return {
            "window": tf.boolean_mask(window, valid),
            "start": tf.boolean_mask(tf.broadcast_to(start, shape), valid),
            "end": tf.boolean_mask(tf.broadcast_to(end, shape), valid),
            "start_logit": tf.boolean_mask(
                tf.broadcast_to(start_logit, shape), valid),
            "end_logit": tf.boolean_mask(
                tf.broadcast_to(end_logit, shape), valid),
        }

    def _span_texts(self, windows, window, start, end):
        """Google's `get_final_text` of spans given by window positions."""
        document = windows["document"]
        offset = windows["doc_offset"]
        window_starts = tf.gather(windows["starts"], window)
        first_piece = window_starts + start - offset
        last_piece = window_starts + end - offset
        first_word = tf.gather(document["piece_word"], first_piece)
        last_word = tf.gather(document["piece_word"], last_piece)

        # orig_text: the span's words; tok_text: their basic tokens, each
        # sequence joined with single spaces.
        orig_text = tf.strings.reduce_join(
            tf.gather(document["words"],
                      tf.ragged.range(first_word, last_word + 1)),
            axis=1, separator=" ")
        basic_splits = document["word_basic_splits"]
        first_basic = tf.gather(basic_splits, first_word)
        tok_text = tf.strings.reduce_join(
            tf.gather(document["basic"], tf.ragged.range(
                first_basic, tf.gather(basic_splits, last_word + 1))),
            axis=1, separator=" ")

        unknown = _cumulative(tf.cast(
            tf.equal(document["ids"], self.unk_id), tf.int32))
        has_unknown = (tf.gather(unknown, last_piece + 1)
                       - tf.gather(unknown, first_piece)) > 0
        orig_before = _cumulative(document["word_lengths"])
        tok_before = _cumulative(document["word_tok_lengths"])

        def span_length(before):
            return (tf.gather(before, last_word + 1)
                    - tf.gather(before, first_word))

        length_changed = (span_length(orig_before)
                          != span_length(tok_before))

        # Characters are counted in the document's basic tokens joined with
        # single spaces: basic token k starts at basic_before[k] + k.
        basic_before = _cumulative(document["basic_lengths"])
        basic_starts = basic_before[:-1] + tf.range(
            tf.size(document["basic_lengths"]))
        span_start = (tf.gather(basic_before, first_basic) + first_basic)

        def tok_position(piece, byte_offsets):
            """Where a byte offset of a piece falls in `tok_text`."""
            basic = tf.gather(document["piece_basic"], piece)
            byte_length = tf.cast(tf.gather(byte_offsets, piece), tf.int32)
            in_basic = tf.strings.length(
                tf.strings.substr(tf.gather(document["basic"], basic),
                                  tf.zeros_like(byte_length), byte_length),
                unit="UTF8_CHAR")
            return tf.gather(basic_starts, basic) + in_basic - span_start

        # pred_text: the pieces joined, "##" dropped: where they are in
        # tok_text.
        pred_start = tok_position(first_piece, document["piece_starts"])
        pred_length = (tok_position(last_piece, document["piece_ends"])
                       - pred_start)
        pred_text = tf.strings.substr(tok_text, pred_start, pred_length,
                                      unit="UTF8_CHAR")
        # Google's `tok_text.find(pred_text)`: its first occurrence, which
        # is at or before where the pieces are.
        tries = tf.ragged.range(pred_start + 1)
        span = tf.cast(tries.value_rowids(), tf.int32)
        matches = tf.equal(
            tf.strings.substr(tf.gather(tok_text, span), tries.flat_values,
                              tf.gather(pred_length, span), unit="UTF8_CHAR"),
            tf.gather(pred_text, span))
        found_start = tf.math.unsorted_segment_min(
            tf.where(matches, tries.flat_values, tf.gather(pred_start, span)),
            span, tf.size(pred_start))

        def ns_position(tok_position):
            """A character of `tok_text` among its non-space ones."""
            absolute = span_start + tok_position
            basic = tf.searchsorted(basic_starts[tf.newaxis],
                                    absolute[tf.newaxis], side="right")[0]
            return (absolute - (tf.cast(basic, tf.int32) - 1)
                    - tf.gather(basic_before, first_basic))

        ns_start = ns_position(found_start)
        ns_end = ns_position(found_start + pred_length - 1)

        def position_in_orig_text(ns_position):
            # Each word before the character's word adds one space.
            absolute = tf.gather(orig_before, first_word) + ns_position
            word = tf.searchsorted(orig_before[1:][tf.newaxis],
                                   absolute[tf.newaxis], side="right")[0]
            return ns_position + tf.cast(word, tf.int32) - first_word

        text_start = position_in_orig_text(ns_start)
        text_end = position_in_orig_text(ns_end)
        aligned = tf.strings.substr(orig_text, text_start,
                                    text_end - text_start + 1,
                                    unit="UTF8_CHAR")
        return tf.where(has_unknown | length_changed, orig_text, aligned)

    def answer(self, windows, start_logits, end_logits):
        """The answer and n-best list of one question.

        Args:
          windows: from `features`.
          start_logits: float32 [num_windows, max_seq_length].
          end_logits: float32 [num_windows, max_seq_length].

        Returns:
          A dict matching `output_signature`.
        """
        candidates = self._candidates(windows, start_logits, end_logits)
        texts = self._span_texts(windows, candidates["window"],
                                 candidates["start"], candidates["end"])
        start_logit = candidates["start_logit"]
        end_logit = candidates["end_logit"]
        if self.config.version_2_with_negative:
            null_scores = (tf.cast(start_logits[:, 0], tf.float64)
                           + tf.cast(end_logits[:, 0], tf.float64))
            has_windows = tf.size(null_scores) > 0
            # The first window with the lowest null score.
            null_window = tf.argmin(
                tf.concat([null_scores, [NO_NULL_SCORE]], 0),
                output_type=tf.int32)
            null_start = tf.where(
                has_windows, tf.cast(tf.gather(
                    tf.concat([start_logits[:, 0], [0.0]], 0), null_window),
                    tf.float64), tf.constant(0.0, tf.float64))
            null_end = tf.where(
                has_windows, tf.cast(tf.gather(
                    tf.concat([end_logits[:, 0], [0.0]], 0), null_window),
                    tf.float64), tf.constant(0.0, tf.float64))
            score_null = tf.where(has_windows, null_start + null_end,
                                  NO_NULL_SCORE)
            texts = tf.concat([texts, [""]], 0)
            start_logit = tf.concat([start_logit, [null_start]], 0)
            end_logit = tf.concat([end_logit, [null_end]], 0)
        scores = start_logit + end_logit
        order = tf.argsort(scores, direction="DESCENDING", stable=True)
        texts = tf.gather(texts, order)
        start_logit = tf.gather(start_logit, order)
        end_logit = tf.gather(end_logit, order)
        # Distinct texts in order of first appearance; keep the first
        # n_best_size.
        distinct, index = tf.unique(texts)
        first = tf.math.unsorted_segment_min(
            tf.range(tf.size(texts)), index, tf.size(distinct))
        count = tf.minimum(tf.size(distinct), self.config.n_best_size)
        nbest_text = distinct[:count]
        nbest_start = tf.gather(start_logit, first[:count])
        nbest_end = tf.gather(end_logit, first[:count])
        if self.config.version_2_with_negative:
            # The null answer is always listed (after the n best if they
            # crowded it out).
            missing_null = tf.reduce_all(tf.not_equal(nbest_text, ""))
            extra = tf.cast(missing_null, tf.int32)
            nbest_text = tf.concat([nbest_text, [""]], 0)[:count + extra]
            nbest_start = tf.concat([nbest_start, [null_start]],
                                    0)[:count + extra]
            nbest_end = tf.concat([nbest_end, [null_end]], 0)[:count + extra]
            count += extra
        else:
            # No valid span: Google's placeholder.
            is_empty = tf.equal(count, 0)
            nbest_text = tf.cond(is_empty,
                                 lambda: tf.constant([EMPTY_ANSWER]),
                                 lambda: nbest_text)
            zero = tf.zeros([1], tf.float64)
            nbest_start = tf.cond(is_empty, lambda: zero, lambda: nbest_start)
            nbest_end = tf.cond(is_empty, lambda: zero, lambda: nbest_end)
            count = tf.maximum(count, 1)
        nbest_scores = nbest_start + nbest_end
        probabilities = tf.nn.softmax(nbest_scores)

        if self.config.version_2_with_negative:
            non_null = tf.not_equal(nbest_text, "")
            has_non_null = tf.reduce_any(non_null)
            best = tf.argmax(tf.cast(non_null, tf.int32), output_type=tf.int32)
            best_score = tf.gather(nbest_scores, best)
            score_diff = tf.where(has_non_null, score_null - best_score,
                                  score_null)
            predicts_null = (~has_non_null) | (
                score_diff > self.config.null_score_diff_threshold)
            answer = tf.where(predicts_null, "", tf.gather(nbest_text, best))
            best = tf.where(predicts_null,
                            tf.argmin(tf.cast(non_null, tf.int32),
                                      output_type=tf.int32), best)
        else:
            best = tf.constant(0)
            score_diff = tf.constant(0.0, tf.float64)
            answer = nbest_text[0]

        padding = self.num_answers - count

        def padded(values, fill):
            return tf.concat([values, tf.fill([padding], fill)], 0)

        return {
            "answer": answer,
            "probability": tf.cast(tf.gather(probabilities, best),
                                   tf.float32),
            "score": tf.cast(tf.gather(nbest_scores, best), tf.float32),
            "null_score_diff": tf.cast(score_diff, tf.float32),
            "nbest_text": padded(nbest_text, ""),
            "nbest_probability": tf.cast(
                padded(probabilities, tf.constant(0.0, tf.float64)),
                tf.float32),
            "nbest_start_logit": tf.cast(
                padded(nbest_start, tf.constant(0.0, tf.float64)),
                tf.float32),
            "nbest_end_logit": tf.cast(
                padded(nbest_end, tf.constant(0.0, tf.float64)), tf.float32),
            "nbest_count": count,
        }
