"""Dropout applied only in training, as Google's `modeling.dropout`."""

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
    if training is True:
        return tf.nn.dropout(x, rate=rate)
    return tf.cond(tf.cast(training, tf.bool),
                   lambda: tf.nn.dropout(x, rate=rate),
                   lambda: tf.identity(x))
