"""Google's weight initializer: truncated normal, two standard deviations."""

import keras


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
