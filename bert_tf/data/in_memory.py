"""Batches of feature arrays held in memory, for the tasks whose examples
are converted in the runner's process (tagging, multiple choice,
multi-label)."""

import tensorflow as tf


def in_memory_dataset(arrays, training, per_replica_batch_size,
                      input_context=None, seed=None):
    """A `tf.data.Dataset` of batches of `arrays`, sharded per input pipeline.

    Args:
      arrays: dict of numpy arrays, one row per example.
      training: repeat and shuffle all the rows (they are in memory, so the
        shuffle covers the whole set), and drop a partial last batch.
      per_replica_batch_size: rows per batch.
      input_context: the `tf.distribute.InputContext`, if any: each input
        pipeline reads its own shard.
      seed: the shuffle's seed (`--seed`), for reproducible runs.

    Returns:
      The dataset of feature dicts.
    """
    dataset = tf.data.Dataset.from_tensor_slices(arrays)
    if input_context is not None and input_context.num_input_pipelines > 1:
        dataset = dataset.shard(input_context.num_input_pipelines,
                                input_context.input_pipeline_id)
    if training:
        num_rows = len(next(iter(arrays.values())))
        dataset = dataset.repeat().shuffle(num_rows, seed=seed)
        return dataset.batch(per_replica_batch_size,
                             drop_remainder=True).prefetch(tf.data.AUTOTUNE)
    return dataset.batch(per_replica_batch_size).prefetch(tf.data.AUTOTUNE)
