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

Grouped by length: with a length policy that cuts batches
(`bert_tf.data.sequence_lengths`), the examples are sorted by length within
windows of 64 batches before batching, so that a batch's examples have
similar lengths and little padding; the numbering puts the outputs back in
input order (at most a window's outputs are held back).

Traced once: the step that runs `predict_fn` is a `tf.function` kept for
each `(predict_fn, strategy)` (`prediction_step`), so a caller that predicts
again with the same function -- a benchmark's rounds, every
`Trainer.predict`, every `FeatureExtractor.run` -- reuses its traces (a
first shape, the generalized shape, a partial last batch) instead of
tracing the model again on every call.
"""

import weakref

import numpy as np
import tensorflow as tf

from bert_tf import progress as progress_lib
from bert_tf.data import sequence_lengths

# The number of each example, added next to its features while predicting.
# Padding rows are numbered PADDING_INDEX.
EXAMPLE_INDEX = "_example_index"
PADDING_INDEX = -1


def batch_examples(examples, global_batch_size, pad_to_full_batches=False,
                   group_by_length=False,
                   mask_name=sequence_lengths.INPUT_MASK):
    """Numbers, batches and (optionally) pads a dataset of examples.

    Args:
      examples: an unbatched `tf.data.Dataset` of feature dicts, in order.
      global_batch_size: examples per batch, over all replicas.
      pad_to_full_batches: fill the last batch with all-zero rows (numbered
        `PADDING_INDEX`) so every batch has `global_batch_size` rows.
      group_by_length: batch examples of similar length (by the real
        tokens of `mask_name`), sorted within windows of batches; the
        batches are then not in input order (their numbers say it).
      mask_name: the feature whose non-zeros are the real tokens.

    Returns:
      A dataset of `(indices, features)`: int64 [batch] and the batched
      feature dict.
    """
    if group_by_length and mask_name in examples.element_spec:
        dataset = sequence_lengths.group_by_length_windows(
            examples.enumerate(), global_batch_size,
            sequence_lengths.mask_lengths(mask_name))
    else:
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
    """Puts rows that arrive in any order, repeated or padded, in order.

    Rows beyond a missing one are held back as the batches they came in
    (concatenated only when some of them are ready), so that rows arriving
    in length order cost one copy each, not one per batch.
    """

    def __init__(self):
        self.next_index = 0
        self._pending = []  # (indices, outputs) beyond a missing row.
        self._seen = set()

    def add(self, indices, outputs):
        """Takes a gathered batch; returns the rows now in order, or None."""
        # Drops padding and rows seen before (repeats across workers).
        keep = np.array([i >= self.next_index and int(i) not in self._seen
                         for i in indices], dtype=bool).reshape([-1])
        indices, first = np.unique(indices[keep], return_index=True)
        if indices.size:
            self._pending.append((indices, {
                key: value[keep][first] for key, value in outputs.items()}))
            self._seen.update(int(i) for i in indices)
        if self.next_index not in self._seen:
            return None
        all_indices = np.concatenate([i for i, _ in self._pending])
        order = np.argsort(all_indices, kind="stable")
        all_indices = all_indices[order]
        merged = {key: np.concatenate([o[key] for _, o in self._pending])[
            order] for key in self._pending[0][1]}
        # Rows next_index, next_index + 1, ... are ready.
        ready = int(np.sum(all_indices == self.next_index
                           + np.arange(all_indices.size)))
        self._pending = []
        self._seen = set()
        if ready < all_indices.size:
            rest = all_indices[ready:]
            self._pending.append((rest, {key: value[ready:] for
                                         key, value in merged.items()}))
            self._seen.update(int(i) for i in rest)
        self.next_index += ready
        return {key: value[:ready] for key, value in merged.items()}

    @property
    def num_pending(self):
        return sum(indices.size for indices, _ in self._pending)


# predict_fn -> {strategy: traced step}. Weak on predict_fn: an entry (and
# the graphs its step traced) lives as long as the caller's function.
_STEPS = weakref.WeakKeyDictionary()


def _build_step(strategy, call_predict_fn):
    """The `tf.function` of one prediction step under `strategy`: runs
    `call_predict_fn` in each replica, gathers its outputs and numbers."""

    # Not converted by AutoGraph (nor is the model it calls): straight-line
    # tensor code, traced faster as it is (see the trainer's step).
    @tf.autograph.experimental.do_not_convert
    def replica_step(indices, features):
        outputs = dict(call_predict_fn(features))
        outputs[EXAMPLE_INDEX] = indices
        return outputs

    # The last batch may be partial: retrace for it only once.
    @tf.function(reduce_retracing=True)
    def step(indices, features):
        per_replica = strategy.run(replica_step, args=(indices, features))
        return {key: strategy.gather(value, axis=0)
                for key, value in per_replica.items()}

    return step


def prediction_step(strategy, predict_fn):
    """The traced prediction step of `predict_fn` under `strategy`.

    Built once per `(predict_fn, strategy)` and kept while `predict_fn`
    lives, so later calls with the same function object reuse its traces.
    A caller that predicts repeatedly should therefore keep its function
    (a bound method is new on every access: keep it in an attribute). The
    step holds `predict_fn` weakly, so that keeping it does not keep the
    function alive.

    Args:
      strategy: the `tf.distribute.Strategy` whose scope holds the model.
      predict_fn: as `predict`'s.

    Returns:
      A `tf.function` of `(indices, features)` (one distributed batch)
      that returns the gathered outputs, `EXAMPLE_INDEX` included.
    """
    try:
        reference = weakref.ref(predict_fn)
    except TypeError:  # e.g. a builtin: traced anew on every call.
        return _build_step(strategy, predict_fn)
    steps = _STEPS.get(predict_fn)
    if steps is None:
        steps = _STEPS[predict_fn] = {}
    step = steps.get(strategy)
    if step is None:
        step = steps[strategy] = _build_step(
            strategy, lambda features: reference()(features))
    return step


def predict(strategy, predict_fn, examples, global_batch_size,
            pad_to_full_batches=False, num_examples=None, description="set",
            length_policy=None):
    """Yields `predict_fn`'s outputs over every example, in order.

    Args:
      strategy: the `tf.distribute.Strategy` whose scope holds the model.
      predict_fn: called in each replica on a batch of feature dicts;
        returns a dict of tensors with the batch as their first dimension
        (what to keep of each example, e.g. its logits). Traced once per
        strategy: a later call with the same function object traces no
        new shapes (`prediction_step`).
      examples: an unbatched `tf.data.Dataset` of feature dicts, in order.
      global_batch_size: examples per step, over all replicas.
      pad_to_full_batches: pad the last batch to full size (TPUs).
      num_examples: when given, the number of examples the set must have;
        a different count is an error.
      description: names the set in messages, e.g. "predict records".
      length_policy: a `sequence_lengths.LengthPolicy` that `predict_fn`
        cuts batches with: unless it is fixed-length, the examples are
        grouped by length into batches (`batch_examples`). None: in order.

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
    group_by_length = False
    if length_policy is not None:
        mask_spec = examples.element_spec.get(sequence_lengths.INPUT_MASK) if (
            isinstance(examples.element_spec, dict)) else None
        full_length = (mask_spec.shape[-1] if mask_spec is not None
                       else None)
        group_by_length = (full_length is None
                           or not length_policy.is_fixed_length(full_length))
    dataset = strategy.experimental_distribute_dataset(
        batch_examples(examples, global_batch_size, pad_to_full_batches,
                       group_by_length=group_by_length))
    step = prediction_step(strategy, predict_fn)

    def run_step(indices, features):
        return {key: value.numpy()
                for key, value in step(indices, features).items()}

    # A generator (`yield from`): its frame keeps `predict_fn` alive, which
    # the traced step holds only weakly (see `prediction_step`).
    yield from _in_order(dataset, run_step, num_examples, description,
                         type(strategy).__name__)


def predict_one_device(step, examples, global_batch_size, num_examples=None,
                       description="set"):
    """`predict` without `tf.distribute`: one device (the JAX backend).

    Every batch is padded to `global_batch_size` rows, so a compiled step
    sees one shape; the padding rows' outputs are dropped.

    Args:
      step: called on a batch (a dict of numpy arrays); returns a dict of
        arrays with the batch as their first dimension.
      examples, global_batch_size, num_examples, description: see
        `predict`.

    Yields:
      Dicts of numpy arrays, one row per example, in the examples' order.
    """
    if global_batch_size < 1:
        raise ValueError(f"batch size {global_batch_size} must be positive")
    dataset = batch_examples(examples, global_batch_size,
                             pad_to_full_batches=True)

    def run_step(indices, features):
        outputs = {key: np.asarray(value)
                   for key, value in step(features).items()}
        outputs[EXAMPLE_INDEX] = indices
        return outputs

    yield from _in_order(dataset.as_numpy_iterator(), run_step,
                         num_examples, description, "one device")


def _in_order(batches, run_step, num_examples, description, where):
    """Runs every batch and yields the outputs' rows in input order.

    Args:
      batches: yields `(indices, features)` (`batch_examples`).
      run_step: `(indices, features)` -> numpy outputs, `EXAMPLE_INDEX`
        among them.
      num_examples, description: see `predict`.
      where: the strategy's name, for messages.
    """
    in_order = _InOrder()
    progress = progress_lib.Progress(f"prediction over the {description}",
                                     total=num_examples, unit="example",
                                     first_interval_note="tracing included")
    progress.start("tracing the prediction step (the first batch "
                   "includes it)")
    for indices, features in batches:
        outputs = run_step(indices, features)
        rows = in_order.add(outputs.pop(EXAMPLE_INDEX), outputs)
        if rows is None:
            continue
        progress.update(in_order.next_index)
        yield rows
    progress.close()
    if in_order.num_pending:
        raise RuntimeError(
            f"prediction over the {description} lost example "
            f"{in_order.next_index} under {where}")
    if num_examples is not None and in_order.next_index != num_examples:
        raise RuntimeError(
            f"prediction over {num_examples} {description} returned "
            f"{in_order.next_index} distinct ones under {where}")
