"""Dropout applied only in training, as Google's `modeling.dropout`."""

import contextlib

import tensorflow as tf


def dropout(x, rate, training):
    """Zeroes a `rate` fraction of `x` and rescales the rest, when training.

    Uses TensorFlow's stateful random op (as Google's code does) rather than
    `keras.layers.Dropout`, whose seed-generator state would add a variable
    per dropout site to every model and checkpoint.

    Args:
      x: float tensor.
      rate: probability of dropping a value, in [0, 1).
      training: Python bool (or a scalar bool tensor); dropout happens only
        when it is true. `None` means inference.

    Returns:
      A tensor shaped like `x`.
    """
    if not rate or training is None or training is False:
        return x
    drop = tf.nn.dropout if _GENERATOR is None else _generator_dropout
    if training is True:
        return drop(x, rate=rate)
    return tf.cond(tf.cast(training, tf.bool),
                   lambda: drop(x, rate=rate),
                   lambda: tf.identity(x))


# The generator `dropout` draws from while `random_generator_scope` is
# active (at trace time), else None: TensorFlow's stateful op.
_GENERATOR = None


def _generator_dropout(x, rate):
    """`tf.nn.dropout`'s result, drawn from `_GENERATOR`."""
    keep = _GENERATOR.uniform(tf.shape(x), dtype=tf.float32) >= rate
    return tf.where(keep, x / tf.cast(1.0 - rate, x.dtype),
                    tf.zeros_like(x))


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
      generator: a `tf.random.Generator`, or None for TensorFlow's stateful
        op (Google's).
    """
    global _GENERATOR
    previous, _GENERATOR = _GENERATOR, generator
    try:
        yield
    finally:
        _GENERATOR = previous
