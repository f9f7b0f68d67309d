"""Batches of feature arrays held in memory, for the tasks whose examples
are converted in the recipe's process (tagging, multiple choice,
multi-label, and a task added outside bert_tf as docs/adding-a-task.md
shows); `bert_tf.tasks.base.InMemoryArraysTask` reads them through
`in_memory_dataset`, and their losses and metrics weight rows by
`example_weights`.

Evaluation on TPUs needs every batch of one static shape. As the classifier
pads its evaluation set with `PaddingInputExample`s (Google's rule:
`is_real_example = 0`, a multiple of the batch size, then
`drop_remainder=True`), `in_memory_dataset(..., pad_to_full_batches=True)`
appends all-zero rows up to a multiple of the global batch size and adds an
`is_real_example` column (1 for the set's rows, 0 for the padding); the
tasks weight losses and metrics by `example_weights`, so the padding counts
for nothing.
"""

import keras
from keras import ops
import numpy as np
import tensorflow as tf

from bert_tf.data.encoded_input import IS_REAL_EXAMPLE


def pad_to_batch_multiple(arrays, batch_size):
    """`arrays` with all-zero rows appended up to a multiple of `batch_size`.

    Args:
      arrays: dict of numpy arrays, one row per example (no
        `is_real_example` column yet).
      batch_size: the multiple (the global batch size).

    Returns:
      A new dict: every array padded with zero rows, plus `is_real_example`
      int32 [padded rows], 1 for the original rows and 0 for the padding.
    """
    num_rows = len(next(iter(arrays.values())))
    num_padding = -num_rows % batch_size
    padded = {}
    for name, array in arrays.items():
        array = np.asarray(array)
        padding = np.zeros((num_padding,) + array.shape[1:], array.dtype)
        padded[name] = np.concatenate([array, padding])
    padded[IS_REAL_EXAMPLE] = np.concatenate(
        [np.ones([num_rows], np.int32), np.zeros([num_padding], np.int32)])
    return padded


def example_weights(features):
    """float32 [batch]: `is_real_example` when the batch has it, else ones.

    In `keras.ops`: it runs inside the trainer's step on every backend.
    """
    if IS_REAL_EXAMPLE in features:
        return ops.cast(features[IS_REAL_EXAMPLE], "float32")
    first = keras.tree.flatten(features)[0]
    return ops.ones([ops.shape(first)[0]], "float32")


def shard_for_input_pipeline(dataset, input_context):
    """The share of `dataset` that this input pipeline reads.

    Args:
      dataset: a `tf.data.Dataset` of examples.
      input_context: the `tf.distribute.InputContext`, or None.

    Returns:
      Every `num_input_pipelines`-th example from this pipeline's id on
      (`dataset` itself with one pipeline).
    """
    if input_context is not None and input_context.num_input_pipelines > 1:
        return dataset.shard(input_context.num_input_pipelines,
                             input_context.input_pipeline_id)
    return dataset


def in_memory_dataset(arrays, training, per_replica_batch_size,
                      input_context=None, seed=None,
                      pad_to_full_batches=False):
    """A `tf.data.Dataset` of batches of `arrays`, sharded per input pipeline.

    Args:
      arrays: dict of numpy arrays, one row per example.
      training: repeat and shuffle all the rows (they are in memory, so the
        shuffle covers the whole set), and drop a partial last batch.
      per_replica_batch_size: rows per batch.
      input_context: the `tf.distribute.InputContext`, if any: each input
        pipeline reads its own shard.
      seed: the shuffle's seed (`--seed`), for reproducible runs.
      pad_to_full_batches: (not training) every batch full, of one static
        shape, as TPUs need: the rows are first padded with weight-0 rows
        (`pad_to_batch_multiple`) to a multiple of the global batch
        (`per_replica_batch_size` times the replicas in sync).

    Returns:
      The dataset of feature dicts.
    """
    if pad_to_full_batches and not training:
        num_replicas = (input_context.num_replicas_in_sync
                        if input_context is not None else 1)
        arrays = pad_to_batch_multiple(
            arrays, per_replica_batch_size * num_replicas)
    dataset = shard_for_input_pipeline(
        tf.data.Dataset.from_tensor_slices(arrays), input_context)
    if training:
        num_rows = len(next(iter(arrays.values())))
        dataset = dataset.repeat().shuffle(num_rows, seed=seed)
        return dataset.batch(per_replica_batch_size,
                             drop_remainder=True).prefetch(tf.data.AUTOTUNE)
    return dataset.batch(
        per_replica_batch_size,
        drop_remainder=pad_to_full_batches).prefetch(tf.data.AUTOTUNE)
