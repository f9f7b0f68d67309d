"""Small building blocks the other modules share: static shapes, Google's
initializer, activations, dropout, LayerNorm, the attention mask and the
checkpoint scope that keeps variable paths Google's names.
"""

import contextlib
import functools
import math

import keras
from keras import ops

from bert_tf import backend


# -- backend ------------------------------------------------------------------
# The model code is written in `keras.ops`, so it runs on every Keras 3
# backend. A few places keep a TensorFlow op on the TensorFlow backend,
# each for a reason given where it is used (the op TensorFlow Lite converts,
# a sparse gradient, the graph-time assertion, the stateful dropout that
# Google's code draws from); `tensorflow_or_none` gives them the module,
# imported only then, so that the other backends never import TensorFlow.

def tensorflow_or_none():
    """The `tensorflow` module on the TensorFlow backend, else None."""
    if backend.name() != backend.TENSORFLOW:
        return None
    import tensorflow  # pylint: disable=import-outside-toplevel
    return tensorflow


def gather_rows(table, ids):
    """`table[ids]`: rows of an embedding table (or of any tensor).

    On TensorFlow, `tf.gather` straight from the variable: it reads only the
    looked-up rows and its gradient is sparse, as Google's lookup's.

    Args:
      table: a variable or tensor [rows, ...].
      ids: int tensor of any shape, values in [0, rows).

    Returns:
      A tensor ids.shape + table.shape[1:].
    """
    tf = tensorflow_or_none()
    if tf is not None:
        return tf.gather(table, ids)
    return ops.take(table, ids, axis=0)


def gather_positions(sequence, positions):
    """Each example's vectors at its own positions.

    Args:
      sequence: [batch, seq, width].
      positions: int tensor [batch] or [batch, count], indices into seq.

    Returns:
      [batch, width] (positions [batch]) or [batch, count, width].
    """
    tf = tensorflow_or_none()
    if tf is not None:
        # The batched gather TensorFlow Lite's built-in ops convert.
        return tf.gather(sequence, positions, batch_dims=1)
    if len(positions.shape) == 1:
        return gather_positions(sequence, positions[:, None])[:, 0]
    positions = ops.cast(positions, "int32")
    return ops.take_along_axis(sequence, positions[:, :, None], axis=1)


# -- shapes -------------------------------------------------------------------
# Tensor shapes with static dimensions where known, dynamic elsewhere.

def shape_list(tensor):
    """The shape of `tensor` as a list (Google's `get_shape_list`).

    Dimensions known when the graph is traced are Python ints (so reshapes
    stay static under XLA); the others are scalar int32 tensors.

    Args:
      tensor: a tensor of known rank.

    Returns:
      A list with one entry per dimension.
    """
    # keras.ops.shape: the static dimensions as ints, the others (only
    # under TensorFlow's graph tracing) as scalar tensors.
    return list(ops.shape(tensor))


# -- initializers -------------------------------------------------------------
# Google's weight initializer: truncated normal, two standard deviations.

def weight_initializer(stddev):
    """A new truncated-normal initializer (Google's `create_initializer`).

    A fresh object per variable matters: an unseeded Keras initializer draws
    its seed once, when it is created, so reusing one object would give every
    variable of the same shape identical values.

    Args:
      stddev: standard deviation (`config.initializer_range`, or 0.02 where
        Google's task code hard-codes it). Values beyond two standard
        deviations are redrawn, as `tf.truncated_normal_initializer` does.

    Returns:
      A `keras.initializers.TruncatedNormal`.
    """
    return keras.initializers.TruncatedNormal(mean=0.0, stddev=stddev)


# -- activations --------------------------------------------------------------
# Activation functions selectable by `bert_config.json`'s `hidden_act`.

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def gelu(x):
    """Gaussian Error Linear Unit, tanh approximation (Google's `gelu`).

    gelu(x) = x * 0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))

    Args:
      x: float tensor.

    Returns:
      `x` with the activation applied, same shape and dtype.
    """
    cdf = 0.5 * (1.0 + ops.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * (x * x * x))))
    return x * cdf


def gelu_exact(x):
    """Gaussian Error Linear Unit with the exact normal CDF (`"gelu_exact"`).

    gelu(x) = x * 0.5 * (1 + erf(x / sqrt(2)))

    Not in Google's code: Hugging Face's `"gelu"` is this form, so a model
    converted from Hugging Face with `--exact_gelu` reproduces its outputs.

    Args:
      x: float tensor.

    Returns:
      `x` with the activation applied, same shape and dtype.
    """
    return ops.gelu(x, approximate=False)


def linear(x):
    """The identity: Google's `"linear"` (no activation)."""
    return x


_ACTIVATIONS = {
    "gelu": gelu,
    "relu": ops.relu,
    "tanh": ops.tanh,
    "linear": linear,
    "gelu_exact": gelu_exact,
}

SUPPORTED_ACTIVATIONS = tuple(_ACTIVATIONS)


def get_activation(name):
    """Maps an activation name to its function, as Google's `get_activation`.

    Args:
      name: "gelu", "relu", "tanh", "linear" or "gelu_exact" (any case). As in Google's
        code, `None` or "" mean linear and a callable is returned unchanged.

    Returns:
      A function from a tensor to a tensor of the same shape.

    Raises:
      ValueError: `name` is a string that names no supported activation.
    """
    if callable(name):
        return name
    if name is None or name == "":
        return linear
    if not isinstance(name, str):
        raise ValueError(
            f"activation must be a name or a function, got {name!r}")
    activation = _ACTIVATIONS.get(name.lower())
    if activation is None:
        raise ValueError(
            f"Unsupported activation {name!r}; supported: "
            f"{', '.join(SUPPORTED_ACTIVATIONS)}")
    return activation


# -- dropout ------------------------------------------------------------------
# Dropout applied only in training, as Google's `modeling.dropout`.

def dropout(x, rate, training, sequence_axes=()):
    """Zeroes a `rate` fraction of `x` and rescales the rest, when training.

    On TensorFlow, uses TensorFlow's stateful random op (as Google's code
    does) rather than `keras.layers.Dropout`, whose seed-generator state
    would add a variable per dropout site to every model and checkpoint;
    under `random_generator_scope` (a seeded run) the mask is a hash of each
    position and a key drawn from that generator (`_generator_dropout`).
    On the other backends (which have no stateful random op), the mask is
    `keras.random.dropout`'s, drawn from the `keras.random.SeedGenerator`
    of `random_generator_scope` (under `jax.jit` a seed generator is
    required: Keras says so when there is none).

    Args:
      x: float tensor.
      rate: probability of dropping a value, in [0, 1).
      training: Python bool (or a scalar bool tensor); dropout happens only
        when it is true. `None` means inference.
      sequence_axes: the axes of `x` that run over the input's positions
        (e.g. (1,) for [batch, seq, hidden], (2, 3) for attention
        probabilities [batch, heads, from_seq, to_seq]). Under
        `full_length_dropout_scope` a seeded mask numbers positions along
        them as in the batch padded to the full length (TensorFlow only).

    Returns:
      A tensor shaped like `x`.
    """
    if not rate or training is None or training is False:
        return x
    tf = tensorflow_or_none()
    if tf is None:
        drop = functools.partial(keras.random.dropout, seed=_GENERATOR)
    elif _GENERATOR is None:
        drop = tf.nn.dropout
    else:
        drop = functools.partial(_generator_dropout,
                                 sequence_axes=tuple(sequence_axes))
    if training is True:
        return drop(x, rate=rate)
    if tf is None:
        return ops.cond(ops.cast(training, "bool"),
                        lambda: drop(x, rate=rate), lambda: x)
    return tf.cond(tf.cast(training, tf.bool),
                   lambda: drop(x, rate=rate),
                   lambda: tf.identity(x))


# The generator `dropout` draws from while `random_generator_scope` is
# active (at trace time), else None: TensorFlow's stateful op (Keras'
# global seed generator on the other backends).
_GENERATOR = None

# The records' sequence length (a scalar tensor) while
# `full_length_dropout_scope` is active (at trace time), else None.
_FULL_SEQUENCE_LENGTH = None


def _generator_dropout(x, rate, sequence_axes=()):
    """`tf.nn.dropout`'s result, its mask a function of `_GENERATOR`.

    Each call draws one 32-bit key from the generator, whatever `x`'s shape,
    and keeps the value at each position when a hash of (key, position) is
    at least `rate` of the 32-bit range. Positions are numbered as in the
    batch padded to the full length along `sequence_axes` (under
    `full_length_dropout_scope`), so a batch cut to its real length keeps
    and drops exactly what the full-length batch does at those positions,
    and the generator moves on by one key either way; the work is that of
    the cut batch (hashing costs about what drawing uniform values would).

    Args:
      x: float tensor of rank >= 1.
      rate: probability of dropping a value, in [0, 1).
      sequence_axes: the axes of `x` that run over the input's positions.

    Returns:
      A tensor shaped like `x`.
    """
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    key = _GENERATOR.uniform_full_int([], dtype=tf.uint32)
    rank = x.shape.rank
    shape = tf.shape(x, out_type=tf.int64)
    axes = {axis % rank for axis in sequence_axes}
    full_length = (None if _FULL_SEQUENCE_LENGTH is None
                   else tf.cast(_FULL_SEQUENCE_LENGTH, tf.int64))

    # The row number of each position over all axes but the last, as in the
    # full-length tensor: [d_0, ..., d_{rank-2}, 1]. The last axis enters
    # the hash by itself, so its numbering is the same whatever its length.
    row = tf.zeros([1] * rank, tf.int64)
    for axis in range(rank - 1):
        extent = (full_length if axis in axes and full_length is not None
                  else shape[axis])
        coordinates = tf.reshape(
            tf.range(shape[axis]),
            [-1 if other == axis else 1 for other in range(rank)])
        row = row * extent + coordinates
    row = _mix32(tf.bitwise.bitwise_xor(tf.cast(row, tf.uint32), key))
    column = (tf.cast(tf.range(shape[-1]), tf.uint32)
              * tf.constant(_GOLDEN_RATIO_32, tf.uint32))
    bits = _mix32(tf.bitwise.bitwise_xor(row, column))  # shaped like x

    threshold = min(int(round(rate * 2.0**32)), 2**32 - 1)
    keep = bits >= tf.constant(threshold, tf.uint32)
    return tf.where(keep, x / tf.cast(1.0 - rate, x.dtype),
                    tf.zeros_like(x))


# 2^32 / golden ratio: consecutive column numbers land far apart before mixing.
_GOLDEN_RATIO_32 = 0x9E3779B9
_MIX_MULTIPLIERS = (0x7FEB352D, 0x846CA68B)


def _mix32(x):
    """A bijective integer hash of uint32 `x` (Wellons' "lowbias32").

    Xor-shifts and odd multiplications, each invertible mod 2^32, so
    distinct inputs stay distinct; every input bit moves about half of the
    output bits, which makes the outputs of consecutive counters look
    independent and uniform: what dropout needs of them.
    """
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    for shift, multiplier in zip((16, 15), _MIX_MULTIPLIERS):
        x = tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, shift))
        x = x * tf.constant(multiplier, tf.uint32)
    return tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, 16))


@contextlib.contextmanager
def random_generator_scope(generator):
    """Makes `dropout` draw its masks from `generator` while tracing.

    A stateful random op restarts its sequence in every new process, so a
    run resumed from a checkpoint would drop other units than the run that
    was never interrupted. A `tf.random.Generator` keeps its position in a
    variable that the trainer saves with the checkpoint and restores, which
    makes a resumed run exact (under a `tf.distribute` strategy each replica
    draws its own stream).

    Args:
      generator: on TensorFlow, a `tf.random.Generator`, or None for
        TensorFlow's stateful op (Google's); on the other backends a
        `keras.random.SeedGenerator` (whose state the caller threads
        through a `jax.jit`ted step), or None for Keras' global one.
    """
    global _GENERATOR
    previous, _GENERATOR = _GENERATOR, generator
    try:
        yield
    finally:
        _GENERATOR = previous


@contextlib.contextmanager
def full_length_dropout_scope(full_length):
    """Makes seeded `dropout` number positions as in the full-length batch.

    A batch cut to its longest real sequence (length-aware batches) is the
    full-length computation on the real tokens; without this scope its
    seeded dropout masks would still differ, because positions would be
    numbered by the cut shape. With it, a seeded run's losses equal those
    of the run that pads every batch to `max_seq_length`, dropout included.
    Has no effect on TensorFlow's stateful op (unseeded runs).

    Args:
      full_length: the records' sequence length: an int or a scalar int
        tensor of the graph being traced.
    """
    global _FULL_SEQUENCE_LENGTH
    previous, _FULL_SEQUENCE_LENGTH = _FULL_SEQUENCE_LENGTH, full_length
    try:
        yield
    finally:
        _FULL_SEQUENCE_LENGTH = previous


# -- layer norm ---------------------------------------------------------------
# Layer normalization as Google's BERT uses it (`LayerNorm/gamma`, `beta`).

_HALF_PRECISION = ("float16", "bfloat16")


class LayerNorm(keras.layers.Layer):
    """Normalizes the last axis to zero mean and unit variance, then scales.

    y = (x - mean(x)) / sqrt(var(x) + epsilon) * gamma + beta

    with epsilon 1e-12 (Google's `tf.contrib.layers.layer_norm` call). Under
    a 16-bit policy (mixed, or serving's bfloat16) the statistics, `gamma`
    and `beta` stay in float32: inputs are converted to float32 on the way
    in and the result is cast back to the compute dtype.
    """

    def __init__(self, epsilon=1e-12, name="LayerNorm", **kwargs):
        super().__init__(name=name, **kwargs)
        self.epsilon = epsilon

    @property
    def input_dtype(self):
        # Keras converts floating inputs to this dtype before `call`.
        if self.compute_dtype in _HALF_PRECISION:
            return "float32"
        return self.compute_dtype

    def build(self, input_shape):
        width = input_shape[-1]
        if width is None:
            raise ValueError(
                f"{self.name}: the last dimension of the input must be known")
        # float32 under every policy (a bfloat16 one stores the other
        # variables in bfloat16), and autocast=False: read in float32 even
        # inside a float16 call.
        self.gamma = self.add_weight(
            name="gamma", shape=(width,), initializer="ones",
            dtype="float32", autocast=False)
        self.beta = self.add_weight(
            name="beta", shape=(width,), initializer="zeros",
            dtype="float32", autocast=False)

    def call(self, inputs):
        # `tf.nn.moments`' formula: the mean of squared deviations from the
        # mean (not E[x^2] - E[x]^2, as `keras.ops.moments` computes it).
        mean = ops.mean(inputs, axis=-1, keepdims=True)
        variance = ops.mean(
            ops.square(inputs - ops.stop_gradient(mean)), axis=-1,
            keepdims=True)
        normalized = (inputs - mean) * ops.rsqrt(variance + self.epsilon)
        outputs = normalized * self.gamma + self.beta
        return ops.cast(outputs, self.compute_dtype)

    def get_config(self):
        return {**super().get_config(), "epsilon": self.epsilon}


# -- attention mask -----------------------------------------------------------
# The additive attention mask: 0 for keys to attend to, -10000 for the rest.
#
# The rest is padding and, for a left-to-right (causal) encoder, every key
# after
# the query's own position.

# Google's value: large enough that softmax gives masked keys ~0 weight, small
# enough to stay finite in float16. It is added in float32, to float32 scores.
MASK_ADDER = -10000.0


def attention_bias_from_mask(input_mask, causal=False, sequence_ids=None):
    """Turns the padding mask into the bias added to every layer's scores.

    Google's `create_attention_mask_from_input_mask` builds a
    [batch, from_seq, to_seq] mask whose rows are all the same; by default
    this keeps the single row and lets broadcasting repeat it over heads and
    query positions. With `causal`, the rows differ (query i may only see
    keys j <= i, as in the left-to-right LM of the BERT paper's ablation,
    section 5.1), so the full [from_seq, to_seq] square is built. Either way
    it is computed once per forward pass and shared by every layer.

    With `sequence_ids` (rows that pack several sequences), a query sees
    only the keys of its own sequence: the square is block-diagonal.

    A key that is padding, or in the future, or in another sequence, or
    several of these, gets exactly -10000: the masks are multiplied
    (logical and) before the bias is formed.

    Args:
      input_mask: int or bool tensor [batch_size, seq_length]; 1 for real
        tokens, 0 for padding.
      causal: also hide from each query position every later key position.
      sequence_ids: optional int tensor [batch_size, seq_length], the
        sequence each token belongs to; also hide from each query every key
        of another sequence.

    Returns:
      float32 tensor, `(1 - mask) * -10000`:
        [batch_size, 1, 1, seq_length] by default;
        [batch_size, 1, seq_length, seq_length] with `causal` or
        `sequence_ids`, indexed [batch, head (broadcast), query, key].
    """
    mask = ops.cast(input_mask, "float32")
    # [batch, 1, 1, to_seq]: one row, repeated over heads and queries.
    # (expand_dims, not [:, None, None, :]: TensorFlow Lite's built-in ops
    # have no strided slice that adds axes.)
    mask = ops.expand_dims(ops.expand_dims(mask, 1), 1)
    if causal:
        seq_length = ops.shape(input_mask)[1]
        # Lower triangle of ones, [from_seq, to_seq]: 1 where key <= query.
        causal_mask = ops.tril(ops.ones([seq_length, seq_length], "float32"))
        # [batch, 1, 1, to] * [1, 1, from, to] -> [batch, 1, from, to].
        mask = mask * causal_mask[None, None, :, :]
    if sequence_ids is not None:
        # [batch, 1, from, to]: 1 where query and key share a sequence.
        same_sequence = ops.cast(ops.equal(
            ops.expand_dims(ops.expand_dims(sequence_ids, 1), 3),
            ops.expand_dims(ops.expand_dims(sequence_ids, 1), 2)), "float32")
        mask = mask * same_sequence
    return (1.0 - mask) * MASK_ADDER


# -- checkpoint scope ---------------------------------------------------------
# Variable paths that are Google's checkpoint names, however layers nest.
#
# Keras 3 names a variable `<scope>/<name>`, where the scope is the chain of
# layer names around the layer that created it (`outer_model/bert/...` once
# `BertModel` sits inside a task model). Google's checkpoints name the same
# tensors from the root: `bert/...`, `cls/predictions/...`, and, for
# `run_classifier.py`, plain `output_weights`. `checkpoint_scope` pins the
# scope
# while a layer builds its variables and sub-layers, so the names stay Google's
# whatever model the layer ends up in. (A sub-layer remembers the scope it was
# first built in; that is why every layer here builds its sub-layers eagerly in
# `build`, never lazily in `call`.)

@contextlib.contextmanager
def checkpoint_scope(scope):
    """Variables created inside get the path `scope/<variable name>`.

    Args:
      scope: absolute scope such as "bert", "cls/predictions" or "" (the
        checkpoint's root: the variable path is just its name).

    Yields:
      Nothing; the scope is active inside the `with` block.
    """
    if not isinstance(scope, str) or scope.startswith("/") or scope.endswith(
            "/") or "//" in scope:
        raise ValueError(
            f"checkpoint scope must be a '/'-separated name such as "
            f"'cls/predictions' (or '' for the root), got {scope!r}")
    parent, _, last = scope.rpartition("/")
    # `override_parent` discards the enclosing scopes; with parent == "" and
    # last == "" the path is empty and variables are named from the root.
    with keras.name_scope(last, override_parent=parent):
        yield
