"""Length-aware batches: compute on the real tokens, not on the padding.

Every record and feature array is padded to `max_seq_length` (Google's files
are unchanged), but the encoder's cost grows with the length it runs at --
attention with its square. A batch of short sentences padded to 128 spends
most of its time on padding. So each batch is cut, just before the model
runs, to its longest real sequence rounded up to a multiple
(`--pad_to_multiple_of`), and every sequence-shaped output is padded back to
the input's length afterwards. The outputs at the real tokens are those of
the full-length run to float round-off: a padded key's attention weight is
`exp(-10000 + x)`, 0 in float32, and positions, segments and the other
tokens' values are unchanged.

Three shapes of policy (`LengthPolicy`):

- `pad_to_multiple_of = m` (default 8): the batch runs at
  `min(ceil(longest / m) * m, full length)`. `m >= max_seq_length` is
  Google's behaviour (every batch at the full length).
- `buckets = (16, 32, 64, 128)`: the batch runs at the smallest bucket that
  holds its longest sequence. XLA and TPUs compile one program per input
  shape; buckets bound them to one per bucket (`call_at_length` builds one
  static branch per bucket, chosen at run time with `tf.switch_case`), and
  a data-dependent slice is not allowed inside a compiled program anyway.
- `group_by_length` (training only): the shuffle is regrouped so that each
  batch holds sequences of similar length (Hugging Face's
  `group_by_length`): faster, but other batches than the plain shuffle's.

Prediction always groups by length (`group_by_length_windows`): within a
window of batches the examples are sorted by length, and the prediction loop
puts the outputs back in input order.
"""

import dataclasses
from typing import Tuple

# TensorFlow is imported where it is used: a program's --help (which
# imports this module through its flags) answers without it.

INPUT_MASK = "input_mask"
# The default rounding: a multiple of 8 keeps the matmuls' shapes friendly
# to vector units while wasting at most 7 positions.
DEFAULT_PAD_TO_MULTIPLE_OF = 8
# The smallest bucket of `default_buckets`.
SMALLEST_DEFAULT_BUCKET = 16
# Prediction sorts by length within windows of this many batches (a bounded
# amount of outputs is held back to restore the order).
DEFAULT_GROUPING_WINDOW_BATCHES = 64
# `group_by_length` training sorts windows of this many batches, then
# shuffles the batches of each window (Hugging Face's "megabatches" of 50).
TRAINING_GROUPING_WINDOW_BATCHES = 50


def default_buckets(max_seq_length, smallest=SMALLEST_DEFAULT_BUCKET):
    """Powers of two from `smallest` below `max_seq_length`, then it.

    Example: 128 -> (16, 32, 64, 128); 384 -> (16, 32, 64, 128, 256, 384).
    """
    buckets = []
    length = smallest
    while length < max_seq_length:
        buckets.append(length)
        length *= 2
    buckets.append(max_seq_length)
    return tuple(buckets)


def parse_length_buckets(text, max_seq_length, flag_name="length_buckets"):
    """`--length_buckets`: "" (none), "auto" or comma-separated lengths.

    Args:
      text: the flag's value.
      max_seq_length: the longest length; it is always the last bucket
        (added when missing), and no bucket may exceed it.
      flag_name: names the flag in errors.

    Returns:
      A sorted tuple of lengths, or () for none.

    Raises:
      ValueError: naming the flag and the bad entry.
    """
    text = (text or "").strip()
    if not text:
        return ()
    if text == "auto":
        return default_buckets(max_seq_length)
    buckets = set()
    for entry in text.split(","):
        entry = entry.strip()
        try:
            length = int(entry)
        except ValueError:
            raise ValueError(
                f"--{flag_name}={text!r}: {entry!r} is not a length (give "
                "comma-separated integers, or auto)") from None
        if not 0 < length <= max_seq_length:
            raise ValueError(
                f"--{flag_name}={text!r}: {length} is not in [1, "
                f"--max_seq_length={max_seq_length}]")
        buckets.add(length)
    buckets.add(max_seq_length)
    return tuple(sorted(buckets))


@dataclasses.dataclass(frozen=True)
class LengthPolicy:
    """At which length a batch runs.

    Attributes:
      pad_to_multiple_of: round the batch's longest real sequence up to a
        multiple of this (capped at the input's length). Use
        `max_seq_length` (or more) for Google's fixed-length batches.
      buckets: when not empty, the sorted lengths a batch may run at (the
        smallest that holds its longest sequence); `pad_to_multiple_of` is
        then not used. The last bucket must be the input's full length.
      group_by_length: training batches of similar lengths (see the module
        docstring).
      static_shapes: every batch at one of a fixed set of lengths (XLA,
        TPUs): `buckets`, or `default_buckets` of the input's length when
        none are given.
    """
    pad_to_multiple_of: int = DEFAULT_PAD_TO_MULTIPLE_OF
    buckets: Tuple[int, ...] = ()
    group_by_length: bool = False
    static_shapes: bool = False

    def validate(self):
        """Raises ValueError naming the flag whose value cannot work."""
        if (isinstance(self.pad_to_multiple_of, bool)
                or not isinstance(self.pad_to_multiple_of, int)
                or self.pad_to_multiple_of <= 0):
            raise ValueError(f"--pad_to_multiple_of={self.pad_to_multiple_of!r}"
                             " must be a positive integer")
        if list(self.buckets) != sorted(set(self.buckets)) or any(
                not isinstance(b, int) or b <= 0 for b in self.buckets):
            raise ValueError(f"--length_buckets={self.buckets!r} must be "
                             "increasing positive lengths")

    def buckets_for(self, max_seq_length):
        """The bucket lengths used for inputs of `max_seq_length` (ending
        with it), or () when the length is only rounded."""
        if not self.buckets and not self.static_shapes:
            return ()
        if not self.buckets:
            if self.pad_to_multiple_of >= max_seq_length:
                return (max_seq_length,)
            return default_buckets(max_seq_length)
        return tuple(b for b in self.buckets if b < max_seq_length) + (
            max_seq_length,)

    def is_fixed_length(self, max_seq_length):
        """Whether every batch runs at `max_seq_length` (Google's way)."""
        buckets = self.buckets_for(max_seq_length)
        if buckets:
            return buckets == (max_seq_length,)
        return self.pad_to_multiple_of >= max_seq_length

    def run_length(self, longest, max_seq_length):
        """The length a batch whose longest sequence is `longest` runs at
        (Python ints; what the traced programs do, for tests and serving)."""
        buckets = self.buckets_for(max_seq_length)
        if buckets:
            for bucket in buckets:
                if bucket >= longest:
                    return bucket
            return max_seq_length
        multiple = self.pad_to_multiple_of
        return min(-(-max(longest, 1) // multiple) * multiple, max_seq_length)


FIXED_LENGTH = LengthPolicy(pad_to_multiple_of=1 << 30)


def static_policy(policy):
    """`policy` with static shapes (XLA, TPUs): buckets, the default ones
    when it has none."""
    if policy is None:
        return None
    return dataclasses.replace(policy, static_shapes=True)


# -- lengths -------------------------------------------------------------------

def real_lengths(input_mask):
    """int32 [batch]: each row's last real position + 1.

    Args:
      input_mask: [batch, ..., seq] (1 for real tokens); the dimensions
        between (e.g. the choices of multiple choice) are reduced with max.
    """
    import tensorflow as tf
    input_mask = tf.convert_to_tensor(input_mask)
    seq_length = tf.shape(input_mask)[-1]
    positions = tf.range(1, seq_length + 1, dtype=tf.int32)
    real = tf.cast(tf.not_equal(input_mask, 0), tf.int32) * positions
    lengths = tf.reduce_max(real, axis=-1)
    while lengths.shape.rank > 1:
        lengths = tf.reduce_max(lengths, axis=-1)
    return lengths


def _round_up(longest, multiple, full_length):
    import tensorflow as tf
    multiple = tf.constant(multiple, tf.int32)
    rounded = (tf.maximum(longest, 1) + multiple - 1) // multiple * multiple
    return tf.minimum(rounded, full_length)


def _cut(features, names, length):
    """The named features' last axis cut to `length` (others unchanged)."""
    cut = dict(features)
    for name in names:
        if name in cut:
            cut[name] = cut[name][..., :length]
    return cut


def output_fills(sequence_outputs):
    """`{name: fill value}` from a tuple of names (fill 0) or a dict."""
    if isinstance(sequence_outputs, dict):
        return dict(sequence_outputs)
    return {name: 0 for name in sequence_outputs}


def _pad_back(outputs, fills, lengths, full_length, static_full_length):
    """The named outputs' axis 1 back at `full_length`, every position at or
    beyond its row's real length (`lengths`) set to the output's fill.

    Filling each row's padding (not only what the cut removed) makes the
    outputs independent of which batch a row ran in. Applies to a dict, or
    to the dicts of a tuple.
    """
    import tensorflow as tf
    if isinstance(outputs, (tuple, list)):
        return type(outputs)(_pad_back(value, fills, lengths, full_length,
                                       static_full_length)
                             for value in outputs)
    if not isinstance(outputs, dict) or not fills:
        return outputs
    padded = dict(outputs)
    for name, fill in fills.items():
        if name not in padded:
            continue
        value = padded[name]
        fill = tf.cast(fill, value.dtype)
        positions = tf.range(tf.shape(value)[1], dtype=tf.int32)
        real = positions[tf.newaxis, :] < lengths[:, tf.newaxis]
        real = tf.reshape(real, tf.concat(
            [tf.shape(real), tf.ones([value.shape.rank - 2], tf.int32)], 0))
        value = tf.where(real, value, fill)
        missing = full_length - tf.shape(value)[1]
        paddings = ([[0, 0], [0, missing]]
                    + [[0, 0]] * (value.shape.rank - 2))
        value = tf.pad(value, paddings, constant_values=fill)
        if static_full_length is not None:
            shape = value.shape.as_list()
            shape[1] = static_full_length
            value = tf.ensure_shape(value, shape)
        padded[name] = value
    return padded


def call_at_length(fn, features, policy, sequence_features,
                   sequence_outputs=(), mask_name=INPUT_MASK):
    """`fn(features)` run on the batch cut to the policy's length.

    Args:
      fn: called on a feature dict; returns anything (a dict of outputs,
        gradients, ...). Must not depend on the features' length except
        through the named sequence features.
      features: a batch: dict of tensors, the sequence features [batch, ...,
        seq] padded to the full length.
      policy: a `LengthPolicy`, or None for the full length.
      sequence_features: the names of the features whose last axis is the
        sequence (cut); others pass unchanged.
      sequence_outputs: names of `fn`'s dict outputs whose axis 1 is the
        sequence (a tuple, fill 0, or a dict from name to fill value):
        padded back to the full length, so that every batch's outputs have
        the full-length shape; each row's positions from its real length on
        hold the fill value (whatever length its batch ran at). A
        fixed-length policy leaves them as the model computed them.
      mask_name: the feature whose non-zeros are the real tokens.

    Returns:
      `fn`'s result. With buckets, each bucket is one static-shape branch
      (`fn` is traced once per bucket) of a `tf.switch_case`.
    """
    import tensorflow as tf
    if policy is None or mask_name not in features:
        return fn(features)
    mask = features[mask_name]
    static_full_length = mask.shape[-1]
    if (static_full_length is not None
            and policy.is_fixed_length(static_full_length)):
        return fn(features)
    full_length = tf.shape(mask)[-1]
    lengths = real_lengths(mask)
    if lengths.shape.rank == 0:
        lengths = lengths[tf.newaxis]
    longest = tf.reduce_max(lengths)
    fills = output_fills(sequence_outputs)

    if not (policy.buckets or policy.static_shapes):
        length = _round_up(longest, policy.pad_to_multiple_of, full_length)
        return _pad_back(fn(_cut(features, sequence_features, length)),
                         fills, lengths, full_length, static_full_length)

    if static_full_length is None:
        raise ValueError(
            "length buckets need inputs of a static sequence length; "
            f"{mask_name} has shape {mask.shape}")
    buckets = list(policy.buckets_for(static_full_length))

    def branch(bucket):
        def run():
            cut = _cut(features, sequence_features, bucket)
            for name in sequence_features:
                if name in cut:
                    shape = cut[name].shape.as_list()
                    shape[-1] = bucket
                    cut[name] = tf.ensure_shape(cut[name], shape)
            return _pad_back(fn(cut), fills, lengths, full_length,
                             static_full_length)
        return run

    # The first bucket that holds the longest sequence.
    index = tf.reduce_sum(tf.cast(
        tf.constant(buckets, tf.int32) < longest, tf.int32))
    index = tf.minimum(index, len(buckets) - 1)
    return tf.switch_case(index, [branch(b) for b in buckets])


# -- grouping by length (tf.data) ----------------------------------------------

def _sorted_window(window, length_of, descending=True):
    import tensorflow as tf
    lengths = length_of(window)
    order = tf.argsort(lengths, direction="DESCENDING" if descending
                       else "ASCENDING", stable=True)
    return tf.nest.map_structure(lambda t: tf.gather(t, order), window)


def group_by_length_windows(dataset, batch_size, length_of,
                            window_batches=DEFAULT_GROUPING_WINDOW_BATCHES,
                            drop_remainder=False):
    """Batches an unbatched dataset so that each batch has similar lengths.

    The elements are taken in windows of `window_batches * batch_size`,
    each window sorted by length (longest first, stable), then batched: a
    batch never mixes windows, so only the last batch of the whole set is
    partial. The order is deterministic.

    Args:
      dataset: unbatched; each element a structure of tensors.
      batch_size: elements per batch.
      length_of: maps a *batched* element (a window) to int32 [window]
        lengths.
      window_batches: batches per sorted window.
      drop_remainder: drop a last partial batch.

    Returns:
      The batched dataset.
    """
    window_size = batch_size * window_batches
    windows = dataset.batch(window_size)
    windows = windows.map(lambda *window: _sorted_window(
        window if len(window) > 1 else window[0], length_of))
    return windows.unbatch().batch(batch_size, drop_remainder=drop_remainder)


def mask_lengths(mask_name=INPUT_MASK):
    """A `length_of` for `group_by_length_windows` over feature dicts (or
    `(index, features)` pairs)."""
    def length_of(element):
        features = element[-1] if isinstance(element, tuple) else element
        return real_lengths(features[mask_name])
    return length_of


def regroup_training_batches(dataset, batch_size, seed=None,
                             mask_name=INPUT_MASK,
                             window_batches=TRAINING_GROUPING_WINDOW_BATCHES):
    """`group_by_length` for a shuffled, batched training dataset.

    The shuffled stream of examples is cut into windows of `window_batches`
    batches; each window is sorted by length and batched, and the window's
    batches are shuffled (the longest first, as Hugging Face does, so a
    batch that does not fit in memory fails at the first step). Each batch
    then holds sequences of similar length: less padding, other batches.

    Args:
      dataset: batched (`batch_size`, full batches) and already shuffled.
      batch_size: the batches' size (per replica).
      seed: shuffles the batches within each window (`--seed`).
      mask_name: the feature whose non-zeros are the real tokens.
      window_batches: batches per window.

    Returns:
      A dataset of `batch_size` batches.
    """
    import tensorflow as tf
    length_of = mask_lengths(mask_name)
    windows = dataset.unbatch().batch(batch_size * window_batches,
                                      drop_remainder=True)

    def regroup(window):
        window = _sorted_window(window, length_of)
        batches = tf.nest.map_structure(
            lambda t: tf.reshape(t, tf.concat(
                [[window_batches, batch_size], tf.shape(t)[1:]], 0)), window)
        # The longest batch first, then the others in random order.
        order = tf.concat([[0], 1 + tf.random.shuffle(
            tf.range(window_batches - 1), seed=seed)], 0)
        return tf.data.Dataset.from_tensor_slices(
            tf.nest.map_structure(lambda t: tf.gather(t, order), batches))

    return windows.flat_map(regroup)
