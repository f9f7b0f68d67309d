"""The one prediction loop: a model over a set of examples, outputs in order.

`predict` runs a per-example function (a model and what to keep of its
outputs) over every example of an unbatched dataset, under any
`tf.distribute` strategy, and yields the outputs batch by batch in the
examples' order. It is what `Trainer.predict` runs, and what
`bert_tf.features.extraction` runs on a bare encoder.

How order survives distribution: each example is numbered (`enumerate`)
before batching; the replicas' outputs of a step are gathered
(`strategy.gather`) with their numbers, and the host emits rows by number,
holding back only rows that arrived ahead of a missing one. So nothing is
assumed about how a strategy splits a batch over replicas or workers:

- one device / mirrored: a global batch is cut into consecutive per-replica
  slices (uneven when the batch does not divide);
- multi-worker: every worker reads the whole set (auto-sharding off), so all
  workers run the same number of steps -- gathering is a collective op --
  and rows that arrive twice are kept once;
- TPUs need full batches of one static shape: with `pad_to_full_batches`
  the last batch is filled with all-zero rows numbered -1, whose outputs
  are dropped.

Outputs stream: each batch is handed on as soon as its rows are in order,
so a caller that writes or folds them as they come never holds the whole
set's outputs.
"""

import numpy as np
import tensorflow as tf

from bert_tf import progress as progress_lib

# The number of each example, added next to its features while predicting.
# Padding rows are numbered PADDING_INDEX.
EXAMPLE_INDEX = "_example_index"
PADDING_INDEX = -1


def batch_examples(examples, global_batch_size, pad_to_full_batches=False):
    """Numbers, batches and (optionally) pads a dataset of examples.

    Args:
      examples: an unbatched `tf.data.Dataset` of feature dicts, in order.
      global_batch_size: examples per batch, over all replicas.
      pad_to_full_batches: fill the last batch with all-zero rows (numbered
        `PADDING_INDEX`) so every batch has `global_batch_size` rows.

    Returns:
      A dataset of `(indices, features)`: int64 [batch] and the batched
      feature dict.
    """
    dataset = examples.enumerate().batch(global_batch_size)

    if pad_to_full_batches:
        def pad(indices, features):
            missing = global_batch_size - tf.shape(indices)[0]

            def pad_rows(tensor, value=0):
                padding = [[0, missing]] + [[0, 0]] * (tensor.shape.rank - 1)
                padded = tf.pad(tensor, padding, constant_values=value)
                return tf.ensure_shape(
                    padded, [global_batch_size] + tensor.shape[1:])

            return (pad_rows(indices, PADDING_INDEX),
                    tf.nest.map_structure(pad_rows, features))

        dataset = dataset.map(pad)
    # Every worker reads the whole set (see the module docstring).
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = (
        tf.data.experimental.AutoShardPolicy.OFF)
    return dataset.with_options(options).prefetch(tf.data.AUTOTUNE)


class _InOrder:
    """Puts rows that arrive in any order, repeated or padded, in order."""

    def __init__(self):
        self.next_index = 0
        self._pending = None  # Rows numbered beyond a missing one.

    def add(self, indices, outputs):
        """Takes a gathered batch; returns the rows now in order, or None."""
        keep = indices >= self.next_index  # Drops padding and repeats.
        indices = indices[keep]
        outputs = {key: value[keep] for key, value in outputs.items()}
        if self._pending is not None:
            pending_indices, pending_outputs = self._pending
            indices = np.concatenate([pending_indices, indices])
            outputs = {key: np.concatenate([pending_outputs[key], value])
                       for key, value in outputs.items()}
        indices, first = np.unique(indices, return_index=True)
        outputs = {key: value[first] for key, value in outputs.items()}
        # Rows next_index, next_index + 1, ... are ready.
        ready = int(np.sum(indices == self.next_index
                           + np.arange(indices.size)))
        self._pending = None
        if ready < indices.size:
            self._pending = (indices[ready:], {key: value[ready:] for
                                               key, value in outputs.items()})
        if not ready:
            return None
        self.next_index += ready
        return {key: value[:ready] for key, value in outputs.items()}

    @property
    def num_pending(self):
        return 0 if self._pending is None else self._pending[0].size


def predict(strategy, predict_fn, examples, global_batch_size,
            pad_to_full_batches=False, num_examples=None, description="set"):
    """Yields `predict_fn`'s outputs over every example, in order.

    Args:
      strategy: the `tf.distribute.Strategy` whose scope holds the model.
      predict_fn: called in each replica on a batch of feature dicts;
        returns a dict of tensors with the batch as their first dimension
        (what to keep of each example, e.g. its logits).
      examples: an unbatched `tf.data.Dataset` of feature dicts, in order.
      global_batch_size: examples per step, over all replicas.
      pad_to_full_batches: pad the last batch to full size (TPUs).
      num_examples: when given, the number of examples the set must have;
        a different count is an error.
      description: names the set in messages, e.g. "predict records".

    Yields:
      Dicts of numpy arrays, one row per example, consecutive batches in
      the examples' order (batch sizes vary; together they cover every
      example exactly once).

    Raises:
      RuntimeError: the strategy lost an example, or the set does not have
        `num_examples` examples.
    """
    if global_batch_size < 1:
        raise ValueError(f"batch size {global_batch_size} must be positive")
    dataset = strategy.experimental_distribute_dataset(
        batch_examples(examples, global_batch_size, pad_to_full_batches))

    def replica_step(indices, features):
        outputs = dict(predict_fn(features))
        outputs[EXAMPLE_INDEX] = indices
        return outputs

    # The last batch may be partial: retrace for it only once.
    @tf.function(reduce_retracing=True)
    def step(indices, features):
        per_replica = strategy.run(replica_step, args=(indices, features))
        return {key: strategy.gather(value, axis=0)
                for key, value in per_replica.items()}

    in_order = _InOrder()
    progress = progress_lib.Progress(f"prediction over the {description}",
                                     total=num_examples, unit="example",
                                     first_interval_note="tracing included")
    progress.start("tracing the prediction step (the first batch "
                   "includes it)")
    for indices, features in dataset:
        outputs = {key: value.numpy()
                   for key, value in step(indices, features).items()}
        rows = in_order.add(outputs.pop(EXAMPLE_INDEX), outputs)
        if rows is None:
            continue
        progress.update(in_order.next_index)
        yield rows
    progress.close()
    if in_order.num_pending:
        raise RuntimeError(
            f"prediction over the {description} lost example "
            f"{in_order.next_index} under {type(strategy).__name__}")
    if num_examples is not None and in_order.next_index != num_examples:
        raise RuntimeError(
            f"prediction over {num_examples} {description} returned "
            f"{in_order.next_index} distinct ones under "
            f"{type(strategy).__name__}")
