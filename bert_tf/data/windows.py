"""Sliding windows over tokenized documents: Google's, in Python and as
TensorFlow ops.

A document longer than a window is cut into windows that overlap
(`doc_spans`): they start 0, s, 2 s, ... pieces in, with
s = min(window length, doc_stride), until one reaches the document's end.
Each piece belongs to the window where it has most context
(`max_context_owners`): the highest
`min(pieces left of it, pieces right of it) + 0.01 * window length`, the
first window on ties. SQuAD's features (a question's context) and the
tagger's (a long sentence) both cut their inputs so. `sliding_windows` does
the same to a batch of documents at once inside a TensorFlow graph, for the
raw-text exports of both tasks (`tasks/squad/graph_answers.py`,
`tasks/tagging/graph_windows.py`).
"""

import collections

import numpy as np
import tensorflow as tf

# One window of a document: its first piece and how many pieces it has.
DocSpan = collections.namedtuple("DocSpan", ["start", "length"])


def doc_spans(num_doc_tokens, max_tokens_for_doc, doc_stride):
    """Google's sliding windows over a tokenized document.

    Args:
      num_doc_tokens: pieces in the document.
      max_tokens_for_doc: the most pieces a window holds.
      doc_stride: distance between the starts of consecutive windows.

    Returns:
      A list of `DocSpan`s covering the document (empty for an empty one).
    """
    spans = []
    start = 0
    while start < num_doc_tokens:
        length = min(num_doc_tokens - start, max_tokens_for_doc)
        spans.append(DocSpan(start=start, length=length))
        if start + length == num_doc_tokens:
            break
        start += min(length, doc_stride)
    return spans


def max_context_owners(spans, num_doc_tokens):
    """For each piece of the document, the window where it has most context.

    A piece's score in a window is `min(pieces left of it, pieces right of
    it) + 0.01 * window length`; the highest score wins, the first window on
    ties (Google's `_check_is_max_context`, for all pieces at once).

    Args:
      spans: the document's `DocSpan`s.
      num_doc_tokens: pieces in the document.

    Returns:
      A list: piece index -> index of its owning span (-1 if no span holds
      it).
    """
    best_scores = np.full([num_doc_tokens], -np.inf)
    owners = np.full([num_doc_tokens], -1)
    for span_index, span in enumerate(spans):
        end = span.start + span.length - 1
        positions = np.arange(span.start, end + 1)
        # float64, as Google's Python floats: the same sums, the same ties.
        scores = (np.minimum(positions - span.start, end - positions)
                  + 0.01 * span.length)
        better = scores > best_scores[span.start:end + 1]
        best_scores[span.start:end + 1][better] = scores[better]
        owners[span.start:end + 1][better] = span_index
    return owners.tolist()




def sliding_windows(num_pieces, max_window_pieces, doc_stride):
    """The windows of a batch of documents, and each piece's owner.

    Pieces are numbered globally: document d's pieces come after those of
    documents 0..d-1 (the order of a flattened `RaggedTensor`); windows are
    numbered globally too, document by document.

    Args:
      num_pieces: int32 [documents], pieces in each document.
      max_window_pieces: the most pieces a window holds (a Python int or a
        scalar int32 tensor, at least 1).
      doc_stride: the runner's `--doc_stride` (a Python int, at least 1).

    Returns:
      A dict:
        `document`: int32 [windows], each window's document;
        `starts`: int32 [windows], its first piece within the document;
        `lengths`: int32 [windows], its number of pieces;
        `first_piece`: int32 [windows], the global index of its first
          piece;
        `pieces`: int32 `RaggedTensor` [windows, (pieces)], the global
          index of each of its pieces;
        `owner`: int32 [total pieces], the global window where each piece
          has most context.
    """
    num_pieces = tf.cast(num_pieces, tf.int32)
    step = tf.minimum(max_window_pieces, doc_stride)
    num_windows = tf.where(
        num_pieces > 0,
        1 + (tf.maximum(num_pieces - max_window_pieces, 0) + step - 1)
        // step,
        0)
    window_index = tf.ragged.range(num_windows)  # [documents, (windows)]
    document = tf.cast(window_index.value_rowids(), tf.int32)
    starts = window_index.flat_values * step
    lengths = tf.minimum(tf.gather(num_pieces, document) - starts,
                         max_window_pieces)
    first_piece = tf.gather(tf.cumsum(num_pieces, exclusive=True),
                            document) + starts
    pieces = tf.ragged.range(first_piece, first_piece + lengths)

    flat_pieces = pieces.flat_values
    flat_windows = tf.cast(pieces.value_rowids(), tf.int32)
    total_pieces = tf.reduce_sum(num_pieces)
    left = flat_pieces - tf.gather(first_piece, flat_windows)
    length = tf.gather(lengths, flat_windows)
    # float64, as Google's Python floats: the same sums, the same ties.
    scores = (tf.cast(tf.minimum(left, length - 1 - left), tf.float64)
              + 0.01 * tf.cast(length, tf.float64))
    best = tf.math.unsorted_segment_max(scores, flat_pieces, total_pieces)
    owner = tf.math.unsorted_segment_min(
        tf.where(scores == tf.gather(best, flat_pieces), flat_windows,
                 tf.size(starts)),
        flat_pieces, total_pieces)
    return {"document": document, "starts": starts, "lengths": lengths,
            "first_piece": first_piece, "pieces": pieces, "owner": owner}
