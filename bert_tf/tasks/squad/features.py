"""SQuAD features: Google's `convert_examples_to_features`, records, tf.data.

Each `SquadExample` becomes one or more fixed-length features:

    [CLS] query [SEP] doc-window [SEP] 0 0 ...   segment ids 0 .. 0 1 .. 1 0 ..

* The query is tokenized and cut to `max_query_length` pieces.
* The context is tokenized word by word (keeping each piece's word index),
  and documents longer than `max_seq_length - len(query) - 3` pieces are cut
  into windows ("doc spans") that start `doc_stride` pieces apart; the last
  window ends at the document's end.
* A piece that lies in several windows belongs to the one where it has the
  most context: the largest `min(left, right) + 0.01 * window length`, the
  first such window on ties ("max context"). Prediction only starts answers
  at pieces in the window that owns them.
* Training: the answer's word span is mapped to pieces and then narrowed to
  the pieces that spell the tokenized answer ("improve answer span", e.g.
  "1895" inside "(1895-1943)."). A window that does not contain the whole
  answer, and every window of an impossible question, points at [CLS]
  (start = end = 0).

The results are Google's, feature for feature, including `unique_id`s
(1000000000, 1000000001, ... in order). Features are produced one at a
time (`generate_features`, or `convert_examples_to_features` with a
callback), so a training set never has to be held in memory as features.

The record format is Google's (`train.tf_record`, `eval.tf_record`): int64
`unique_ids`, `input_ids`, `input_mask`, `segment_ids` and, for training,
`start_positions`, `end_positions`, `is_impossible`.
"""

import dataclasses
import os
from typing import Dict, List, Optional

import numpy as np
import tensorflow as tf

from bert_tf import file_io
from bert_tf.data import tfrecord_files
from bert_tf.data import windows
from bert_tf.data.encoded_input import EncodedInput
from bert_tf.data.encoded_input import INPUT_IDS
from bert_tf.data.encoded_input import INPUT_MASK
from bert_tf.data.encoded_input import SEGMENT_IDS

# The first feature's id; Google's constant.
BASE_UNIQUE_ID = 1000000000

UNIQUE_IDS = "unique_ids"
START_POSITIONS = "start_positions"
END_POSITIONS = "end_positions"
IS_IMPOSSIBLE = "is_impossible"

# Beyond this many distinct words the word-piece cache starts again.
_MAX_CACHED_WORDS = 1 << 20

@dataclasses.dataclass(kw_only=True)
class SquadFeatures(EncodedInput):
    """One window of one example, with what post-processing needs.

    Attributes (besides `EncodedInput`'s `input_ids`, `input_mask`,
    `segment_ids`, `max_seq_length` long, None once dropped by
    `without_model_inputs`):
      unique_id: the feature's id (`BASE_UNIQUE_ID` + its position).
      example_index: index of its example in the example list.
      doc_span_index: which window of the example this is.
      tokens: the word pieces, [CLS] query [SEP] window [SEP] (no padding).
      token_to_orig_map: position in `tokens` -> index of the example's word
        (`doc_tokens`), for the window's pieces.
      token_is_max_context: position in `tokens` -> whether this window owns
        the piece (see the module doc), for the window's pieces.
      start_position, end_position: training targets in `tokens` (0 = [CLS]
        when the window has no answer); None when predicting.
      is_impossible: training: the example's `is_impossible` (as Google's);
        None when predicting.
    """
    unique_id: int
    example_index: int
    doc_span_index: int
    tokens: List[str]
    token_to_orig_map: Dict[int, int]
    token_is_max_context: Dict[int, bool]
    start_position: Optional[int] = None
    end_position: Optional[int] = None
    is_impossible: Optional[bool] = None

    def without_model_inputs(self):
        """A copy without the id/mask/segment lists, for post-processing.

        What `write_predictions` needs is the tokens and maps; dropping the
        three `max_seq_length` lists (written to the record file already)
        keeps a large prediction set's features small.
        """
        return dataclasses.replace(self, input_ids=None, input_mask=None,
                                   segment_ids=None)


def improve_answer_span(doc_tokens, input_start, input_end, tokenizer,
                        orig_answer_text):
    """Narrows a piece span to the pieces that spell the tokenized answer.

    The annotation is character based and was widened to whole words; after
    WordPiece tokenization a sub-span may match the answer exactly ("1895"
    in "(1895-1943)."). The first (leftmost start, then longest) sub-span
    whose pieces equal the answer's pieces wins; if none does, the span is
    returned unchanged (e.g. "Japan" annotated inside "Japanese").

    Args:
      doc_tokens: the document's word pieces.
      input_start, input_end: the word-based span, in pieces (inclusive).
      tokenizer: the `FullTokenizer`.
      orig_answer_text: the annotated answer.

    Returns:
      `(start, end)` in pieces, inclusive.
    """
    answer_pieces = tokenizer.tokenize(orig_answer_text)
    num_answer_pieces = len(answer_pieces)
    for new_start in range(input_start, input_end + 1):
        for new_end in range(input_end, new_start - 1, -1):
            # Comparing piece lists is the same as Google's comparison of
            # space-joined strings, since pieces contain no spaces.
            if (new_end - new_start + 1 == num_answer_pieces
                    and doc_tokens[new_start:new_end + 1] == answer_pieces):
                return new_start, new_end
    return input_start, input_end


def _check_lengths(max_seq_length, doc_stride, max_query_length):
    if max_seq_length <= max_query_length + 3:
        raise ValueError(
            f"The max_seq_length ({max_seq_length}) must be greater than "
            f"max_query_length ({max_query_length}) + 3")
    if doc_stride <= 0:
        raise ValueError(f"doc_stride must be positive, got {doc_stride}")
    if max_query_length <= 0:
        raise ValueError(
            f"max_query_length must be positive, got {max_query_length}")


def _tokenize_document(doc_tokens, tokenizer, word_pieces):
    """Word pieces of a document, word by word, as Google's loop.

    Args:
      doc_tokens: the document's whitespace-separated words.
      tokenizer: a `FullTokenizer`.
      word_pieces: a cache word -> pieces, filled here.

    Returns:
      `(pieces, piece ids, piece -> word index, word -> first piece index)`.
    """
    tok_to_orig_index = []
    orig_to_tok_index = []
    all_doc_tokens = []
    for word_index, word in enumerate(doc_tokens):
        orig_to_tok_index.append(len(all_doc_tokens))
        pieces = word_pieces.get(word)
        if pieces is None:
            pieces = word_pieces[word] = tokenizer.tokenize(word)
        tok_to_orig_index.extend([word_index] * len(pieces))
        all_doc_tokens.extend(pieces)
    all_doc_ids = tokenizer.convert_tokens_to_ids(all_doc_tokens)
    return all_doc_tokens, all_doc_ids, tok_to_orig_index, orig_to_tok_index


def generate_features(examples, tokenizer, max_seq_length, doc_stride,
                      max_query_length, is_training,
                      first_unique_id=BASE_UNIQUE_ID):
    """Yields the `SquadFeatures` of `examples`, one at a time, in order.

    Args:
      examples: iterable of `SquadExample`s (training ones need positions).
      tokenizer: a `FullTokenizer`.
      max_seq_length: length of every feature, with [CLS] and two [SEP].
      doc_stride: distance between window starts, in pieces.
      max_query_length: query pieces kept.
      is_training: compute `start_position`/`end_position`.
      first_unique_id: id of the first feature.

    Yields:
      `SquadFeatures`, with `unique_id`s counting up from `first_unique_id`
      and `example_index` the position of the example in `examples`.

    Raises:
      ValueError: `max_seq_length` leaves no room for the document, or
        `doc_stride`/`max_query_length` is not positive.
    """
    _check_lengths(max_seq_length, doc_stride, max_query_length)
    unique_id = first_unique_id
    cls_id, sep_id = tokenizer.convert_tokens_to_ids(["[CLS]", "[SEP]"])
    word_pieces = {}  # word -> its pieces: words repeat across documents.
    document = None
    for example_index, example in enumerate(examples):
        query_tokens = tokenizer.tokenize(example.question_text)
        query_tokens = query_tokens[:max_query_length]
        query_ids = tokenizer.convert_tokens_to_ids(query_tokens)

        # The questions of one paragraph share its word list (see
        # `read_squad_examples`): tokenize each paragraph once.
        if document is None or document[0] is not example.doc_tokens:
            if len(word_pieces) > _MAX_CACHED_WORDS:
                word_pieces.clear()
            document = (example.doc_tokens,) + _tokenize_document(
                example.doc_tokens, tokenizer, word_pieces)
        (_, all_doc_tokens, all_doc_ids, tok_to_orig_index,
         orig_to_tok_index) = document

        tok_start_position = tok_end_position = None
        if is_training and not example.is_impossible:
            tok_start_position = orig_to_tok_index[example.start_position]
            if example.end_position < len(example.doc_tokens) - 1:
                tok_end_position = (
                    orig_to_tok_index[example.end_position + 1] - 1)
            else:
                tok_end_position = len(all_doc_tokens) - 1
            tok_start_position, tok_end_position = improve_answer_span(
                all_doc_tokens, tok_start_position, tok_end_position,
                tokenizer, example.orig_answer_text)

        # [CLS], [SEP] and [SEP] take three positions.
        max_tokens_for_doc = max_seq_length - len(query_tokens) - 3
        spans = windows.doc_spans(len(all_doc_tokens), max_tokens_for_doc,
                                  doc_stride)
        owners = windows.max_context_owners(spans, len(all_doc_tokens))
        doc_offset = len(query_tokens) + 2
        prefix_tokens = ["[CLS]"] + query_tokens + ["[SEP]"]
        prefix_ids = [cls_id] + query_ids + [sep_id]

        for span_index, span in enumerate(spans):
            span_end = span.start + span.length
            tokens = prefix_tokens + all_doc_tokens[span.start:span_end]
            tokens.append("[SEP]")
            positions = range(doc_offset, doc_offset + span.length)
            token_to_orig_map = dict(zip(
                positions, tok_to_orig_index[span.start:span_end]))
            token_is_max_context = dict(zip(positions, [
                owner == span_index
                for owner in owners[span.start:span_end]]))
            input_ids = prefix_ids + all_doc_ids[span.start:span_end]
            input_ids.append(sep_id)
            segment_ids = [0] * doc_offset + [1] * (span.length + 1)

            start_position = end_position = is_impossible = None
            if is_training:
                is_impossible = example.is_impossible
                start_position = end_position = 0
                if (not example.is_impossible
                        and tok_start_position >= span.start
                        and tok_end_position <= span_end - 1):
                    start_position = (tok_start_position - span.start
                                      + doc_offset)
                    end_position = tok_end_position - span.start + doc_offset

            yield SquadFeatures.padded(
                input_ids, segment_ids, max_seq_length,
                unique_id=unique_id,
                example_index=example_index,
                doc_span_index=span_index,
                tokens=tokens,
                token_to_orig_map=token_to_orig_map,
                token_is_max_context=token_is_max_context,
                start_position=start_position,
                end_position=end_position,
                is_impossible=is_impossible)
            unique_id += 1


def convert_examples_to_features(examples, tokenizer, max_seq_length,
                                 doc_stride, max_query_length, is_training,
                                 output_fn):
    """Google's signature: passes each feature to `output_fn`, in order.

    Returns:
      The number of features produced.
    """
    count = 0
    for feature in generate_features(examples, tokenizer, max_seq_length,
                                     doc_stride, max_query_length,
                                     is_training):
        output_fn(feature)
        count += 1
    return count


# -- records and tf.data ------------------------------------------------------

def serialize_features(feature, is_training):
    """One `SquadFeatures` as a serialized `tf.train.Example` (Google's)."""
    def int64_feature(values):
        return tf.train.Feature(
            int64_list=tf.train.Int64List(value=list(values)))

    values = {
        UNIQUE_IDS: int64_feature([feature.unique_id]),
        INPUT_IDS: int64_feature(feature.input_ids),
        INPUT_MASK: int64_feature(feature.input_mask),
        SEGMENT_IDS: int64_feature(feature.segment_ids),
    }
    if is_training:
        values[START_POSITIONS] = int64_feature([feature.start_position])
        values[END_POSITIONS] = int64_feature([feature.end_position])
        values[IS_IMPOSSIBLE] = int64_feature(
            [int(bool(feature.is_impossible))])
    example = tf.train.Example(features=tf.train.Features(feature=values))
    return example.SerializeToString()


class FeatureWriter(tfrecord_files.TFRecordFileWriter):
    """Writes features to a TFRecord file in Google's format, atomically.

    A `TFRecordFileWriter` (temporary name, renamed by `close()`, removed by
    `abort()` or by leaving a `with` block with an exception) that makes
    its parent directory and serializes `SquadFeatures`.

    Example:
      with FeatureWriter(path, is_training=True) as writer:
          convert_examples_to_features(..., output_fn=writer.process_feature)
    """

    def __init__(self, filename, is_training):
        """Args:
          filename: the record file to write.
          is_training: also write the training targets.
        """
        filename = os.fspath(filename)
        if not file_io.is_remote(filename):
            os.makedirs(os.path.dirname(os.path.abspath(filename)),
                        exist_ok=True)
        super().__init__(filename)
        self.is_training = is_training
        self.num_features = 0

    def process_feature(self, feature):
        """Appends one feature."""
        self.write(serialize_features(feature, self.is_training))
        self.num_features += 1


def tfrecord_feature_spec(max_seq_length, is_training):
    """The `tf.io.parse_example` spec of Google's SQuAD records."""
    spec = {
        UNIQUE_IDS: tf.io.FixedLenFeature([], tf.int64),
        INPUT_IDS: tf.io.FixedLenFeature([max_seq_length], tf.int64),
        INPUT_MASK: tf.io.FixedLenFeature([max_seq_length], tf.int64),
        SEGMENT_IDS: tf.io.FixedLenFeature([max_seq_length], tf.int64),
    }
    if is_training:
        spec[START_POSITIONS] = tf.io.FixedLenFeature([], tf.int64)
        spec[END_POSITIONS] = tf.io.FixedLenFeature([], tf.int64)
        spec[IS_IMPOSSIBLE] = tf.io.FixedLenFeature([], tf.int64)
    return spec


def read_tfrecord(input_file, max_seq_length, is_training):
    """An unbatched dataset of feature dicts from Google's SQuAD records.

    Args:
      input_file: a `train.tf_record` or `eval.tf_record`.
      max_seq_length: the records' sequence length.
      is_training: the records carry training targets.

    Returns:
      A `tf.data.Dataset` of dicts: int64 `unique_ids` (they start at 1e9,
      close to int32's limit) and int32 everything else, as accelerators
      want.
    """
    input_file = os.fspath(input_file)
    if not tf.io.gfile.exists(input_file):
        raise FileNotFoundError(f"record file not found: {input_file}")
    spec = tfrecord_feature_spec(max_seq_length, is_training)

    def decode(record):
        parsed = tf.io.parse_single_example(record, spec)
        return {name: value if name == UNIQUE_IDS
                else tf.cast(value, tf.int32)
                for name, value in parsed.items()}

    tfrecord_files.register_input_files([input_file])
    return tf.data.TFRecordDataset(input_file).map(
        decode, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)


def features_to_arrays(features, is_training):
    """Stacks `SquadFeatures` into numpy arrays keyed by record name."""
    arrays = {
        UNIQUE_IDS: np.array([f.unique_id for f in features], np.int64),
        INPUT_IDS: np.array([f.input_ids for f in features], np.int32),
        INPUT_MASK: np.array([f.input_mask for f in features], np.int32),
        SEGMENT_IDS: np.array([f.segment_ids for f in features], np.int32),
    }
    if is_training:
        arrays[START_POSITIONS] = np.array(
            [f.start_position for f in features], np.int32)
        arrays[END_POSITIONS] = np.array(
            [f.end_position for f in features], np.int32)
        arrays[IS_IMPOSSIBLE] = np.array(
            [int(bool(f.is_impossible)) for f in features], np.int32)
    return arrays


def dataset_from_features(features, is_training):
    """An unbatched dataset of feature dicts from in-memory `SquadFeatures`."""
    return tf.data.Dataset.from_tensor_slices(
        features_to_arrays(features, is_training))
