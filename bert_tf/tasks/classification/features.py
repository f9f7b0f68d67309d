"""Classifier features: Google's `convert_single_example`, records, tf.data.

An `InputExample` becomes fixed-length `input_ids`, `input_mask`,
`segment_ids` plus a label id, exactly as Google's `run_classifier.py`
builds them:

    [CLS] tokens_a [SEP]                  segment ids 0 ... 0
    [CLS] tokens_a [SEP] tokens_b [SEP]   segment ids 0 ... 0 1 ... 1

A pair is truncated one token at a time from the longer side (from
`tokens_b` when both are equally long) until it fits `max_seq_length - 3`; a
single text is cut to `max_seq_length - 2` (`encoded_input.frame_pair`).
Everything is zero-padded.

Evaluation and prediction sets may be padded to a multiple of the batch
size with `PaddingInputExample`s (Google does so on TPUs, where every batch
must be full); their features are all zeros with `is_real_example = 0`, and
metrics and outputs skip them.

The TFRecord format is Google's (`train.tf_record`, `eval.tf_record`,
`predict.tf_record`): int64 features `input_ids`, `input_mask`,
`segment_ids` of length `max_seq_length`, and `label_ids`,
`is_real_example` of length 1. For regression (STS-B) `label_ids` is a
float feature.
"""

import dataclasses
import os
from typing import Union

import numpy as np
import tensorflow as tf

from bert_tf import file_io
from bert_tf.data import tfrecord_files
from bert_tf.data.encoded_input import EncodedInput
from bert_tf.data.encoded_input import frame_pair
from bert_tf.data.encoded_input import INPUT_IDS
from bert_tf.data.encoded_input import INPUT_MASK
from bert_tf.data.encoded_input import IS_REAL_EXAMPLE
from bert_tf.data.encoded_input import SEGMENT_IDS

LABEL_IDS = "label_ids"
FEATURE_NAMES = (INPUT_IDS, INPUT_MASK, SEGMENT_IDS, LABEL_IDS,
                 IS_REAL_EXAMPLE)


class PaddingInputExample:
    """A fake example that pads a set to a multiple of the batch size.

    A distinct class rather than `None`, so that a missing example can never
    be mistaken for padding.
    """


@dataclasses.dataclass
class ClassifierFeatures(EncodedInput):
    """The model inputs of one example, and its label.

    Attributes (besides `EncodedInput`'s `input_ids`, `input_mask`,
    `segment_ids`):
      label_id: index of the label in the label list (an int), or the score
        (a float) for regression.
      is_real_example: False for `PaddingInputExample`s.
    """

    label_id: Union[int, float]
    is_real_example: bool = True


def _label_id(example, label_map):
    """The label id of an example: index, score, or 0 for unlabelled ones."""
    if label_map is None:
        # Regression: the label is the score itself.
        return 0.0 if example.label is None else float(example.label)
    if example.label is None:
        # Test examples: Google gave them the first label as a dummy.
        return 0
    if example.label not in label_map:
        raise ValueError(
            f"example {example.guid}: label {example.label!r} is not one of "
            f"{', '.join(repr(label) for label in label_map)}")
    return label_map[example.label]


def _padding_features(max_seq_length, is_regression):
    zeros = [0] * max_seq_length
    return ClassifierFeatures(input_ids=list(zeros), input_mask=list(zeros),
                              segment_ids=list(zeros),
                              label_id=0.0 if is_regression else 0,
                              is_real_example=False)


def convert_single_example(example, label_list, max_seq_length, tokenizer):
    """Turns one `InputExample` into `ClassifierFeatures`, as Google does.

    Args:
      example: an `InputExample` or a `PaddingInputExample`.
      label_list: the task's labels in id order, or None for regression.
      max_seq_length: length of every output sequence.
      tokenizer: has `tokenize(text)` and `convert_tokens_to_ids(tokens)`
        (e.g. `bert_tf.text.tokenization.FullTokenizer`).

    Returns:
      `ClassifierFeatures`.

    Raises:
      ValueError: the label is not in `label_list`, or `max_seq_length`
        cannot hold [CLS] and the [SEP]s.
    """
    is_regression = label_list is None
    if isinstance(example, PaddingInputExample):
        return _padding_features(max_seq_length, is_regression)
    label_map = (None if is_regression
                 else {label: i for i, label in enumerate(label_list)})

    tokens_a = tokenizer.tokenize(example.text_a)
    # As in Google's code, a text_b that is empty or tokenizes to nothing
    # gives the single-text layout (no second [SEP]).
    tokens_b = tokenizer.tokenize(example.text_b) if example.text_b else None
    special_tokens = 3 if tokens_b else 2
    if max_seq_length < special_tokens:
        raise ValueError(
            f"max_seq_length {max_seq_length} cannot hold the "
            f"{special_tokens} special tokens of example {example.guid}")
    tokens, segment_ids = frame_pair(tokens_a, tokens_b, max_seq_length)
    return ClassifierFeatures.padded(
        tokenizer.convert_tokens_to_ids(tokens), segment_ids, max_seq_length,
        label_id=_label_id(example, label_map), is_real_example=True)


def convert_examples_to_features(examples, label_list, max_seq_length,
                                 tokenizer):
    """`convert_single_example` over a list; see there."""
    return [convert_single_example(example, label_list, max_seq_length,
                                   tokenizer)
            for example in examples]


def pad_to_batch_multiple(examples, batch_size):
    """A copy of `examples` padded with `PaddingInputExample`s.

    Args:
      examples: a list of examples.
      batch_size: the length of the result is a multiple of this.

    Returns:
      A new list: `examples` followed by as few padding examples as make
      its length a multiple of `batch_size`.
    """
    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    padded = list(examples)
    padded.extend(PaddingInputExample()
                  for _ in range(-len(padded) % batch_size))
    return padded


def features_to_arrays(features, is_regression=False):
    """Stacks `ClassifierFeatures` into numpy arrays, one per feature name.

    Returns:
      A dict: `input_ids`, `input_mask`, `segment_ids` int32
      [num_examples, max_seq_length]; `label_ids` [num_examples] (int32, or
      float32 for regression); `is_real_example` int32 [num_examples].
    """
    label_dtype = np.float32 if is_regression else np.int32
    return {
        INPUT_IDS: np.array([f.input_ids for f in features], np.int32),
        INPUT_MASK: np.array([f.input_mask for f in features], np.int32),
        SEGMENT_IDS: np.array([f.segment_ids for f in features], np.int32),
        LABEL_IDS: np.array([f.label_id for f in features], label_dtype),
        IS_REAL_EXAMPLE: np.array(
            [int(f.is_real_example) for f in features], np.int32),
    }


def _int64_feature(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))


def _float_feature(values):
    return tf.train.Feature(float_list=tf.train.FloatList(value=list(values)))


def serialize_features(feature, is_regression=False):
    """One `ClassifierFeatures` as a serialized `tf.train.Example` (Google's)."""
    label = (_float_feature([feature.label_id]) if is_regression
             else _int64_feature([feature.label_id]))
    example = tf.train.Example(features=tf.train.Features(feature={
        INPUT_IDS: _int64_feature(feature.input_ids),
        INPUT_MASK: _int64_feature(feature.input_mask),
        SEGMENT_IDS: _int64_feature(feature.segment_ids),
        LABEL_IDS: label,
        IS_REAL_EXAMPLE: _int64_feature([int(feature.is_real_example)]),
    }))
    return example.SerializeToString()


def write_tfrecord(features, output_file, is_regression=False):
    """Writes features to a TFRecord file in Google's format.

    The file is written under a temporary name and renamed when complete, so
    a crash never leaves a truncated file under the real name.

    Args:
      features: iterable of `ClassifierFeatures`.
      output_file: the record file to write.
      is_regression: write `label_ids` as floats.

    Returns:
      The number of records written.
    """
    output_file = os.fspath(output_file)
    if not file_io.is_remote(output_file):
        os.makedirs(os.path.dirname(os.path.abspath(output_file)),
                    exist_ok=True)
    with tfrecord_files.TFRecordFileWriter(output_file) as writer:
        for feature in features:
            writer.write(serialize_features(feature, is_regression))
    return writer.records_written


def tfrecord_feature_spec(max_seq_length, is_regression=False):
    """The `tf.io.parse_example` spec of Google's classifier records."""
    return {
        INPUT_IDS: tf.io.FixedLenFeature([max_seq_length], tf.int64),
        INPUT_MASK: tf.io.FixedLenFeature([max_seq_length], tf.int64),
        SEGMENT_IDS: tf.io.FixedLenFeature([max_seq_length], tf.int64),
        LABEL_IDS: tf.io.FixedLenFeature(
            [], tf.float32 if is_regression else tf.int64),
        IS_REAL_EXAMPLE: tf.io.FixedLenFeature([], tf.int64),
    }


def _decode_record(record, spec):
    parsed = tf.io.parse_single_example(record, spec)
    # Records store int64; accelerators (and the model) want int32.
    return {name: tf.cast(value, tf.int32) if value.dtype == tf.int64
            else value for name, value in parsed.items()}


def read_tfrecord(input_file, max_seq_length, is_regression=False):
    """An unbatched dataset of feature dicts from Google's record file.

    Returns:
      A `tf.data.Dataset` of dicts with `FEATURE_NAMES` keys: int32 tensors,
      except a float32 `label_ids` for regression.
    """
    input_file = os.fspath(input_file)
    if not tf.io.gfile.exists(input_file):
        raise FileNotFoundError(f"record file not found: {input_file}")
    spec = tfrecord_feature_spec(max_seq_length, is_regression)
    tfrecord_files.register_input_files([input_file])
    return tf.data.TFRecordDataset(input_file).map(
        lambda record: _decode_record(record, spec),
        num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)


def dataset_from_features(features, is_regression=False):
    """An unbatched dataset of feature dicts from in-memory `ClassifierFeatures`."""
    return tf.data.Dataset.from_tensor_slices(
        features_to_arrays(features, is_regression))


def batch_dataset(dataset, batch_size, is_training, drop_remainder=None,
                  shuffle_buffer_size=100, seed=None):
    """Batches a dataset of feature dicts the way Google's input_fn does.

    Training repeats forever, shuffles (Google's buffer of 100 records by
    default) and drops the last partial batch; evaluation and prediction
    keep the input order, once through.

    Args:
      dataset: unbatched dataset of feature dicts.
      batch_size: global batch size.
      is_training: repeat and shuffle.
      drop_remainder: drop a last partial batch; defaults to `is_training`.
        Set it for evaluation on TPUs after `pad_to_batch_multiple`.
      shuffle_buffer_size: records in the shuffle buffer (training only).
      seed: shuffle seed, for reproducible training order.

    Returns:
      A batched, prefetching `tf.data.Dataset`.
    """
    if drop_remainder is None:
        drop_remainder = is_training
    if is_training:
        dataset = dataset.repeat()
        dataset = dataset.shuffle(shuffle_buffer_size, seed=seed)
    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    return dataset.prefetch(tf.data.AUTOTUNE)
