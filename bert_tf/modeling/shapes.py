"""Tensor shapes with static dimensions where known, dynamic elsewhere."""

import tensorflow as tf


def shape_list(tensor):
    """The shape of `tensor` as a list (Google's `get_shape_list`).

    Dimensions known when the graph is traced are Python ints (so reshapes
    stay static under XLA); the others are scalar int32 tensors.

    Args:
      tensor: a tensor of known rank.

    Returns:
      A list with one entry per dimension.
    """
    static = tensor.shape.as_list()
    if all(dim is not None for dim in static):
        return static
    dynamic = tf.shape(tensor)
    return [dynamic[i] if dim is None else dim for i, dim in enumerate(static)]
