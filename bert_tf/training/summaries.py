"""Scalar summaries for TensorBoard, written with TensorFlow alone.

`tf.summary.scalar` is TensorBoard's code: TensorFlow 2.21's wheel no longer
depends on TensorBoard, and without it every call raises
`TBNotInstalledError`. The event a scalar summary writes is simple, though: a
float32 scalar tensor whose metadata names TensorBoard's "scalars" plugin.
`scalar` writes that same event with TensorFlow's own `tf.summary.write`, so
the files are the ones `tf.summary.scalar` writes, TensorBoard installed or
not (tests/training/test_trainer.py compares the two).
"""

import tensorflow as tf
from tensorflow.core.framework import summary_pb2

# TensorBoard's scalars plugin: its name, and its (empty) version-0 content.
_SCALAR_METADATA = summary_pb2.SummaryMetadata(
    plugin_data=summary_pb2.SummaryMetadata.PluginData(
        plugin_name="scalars", content=b""))


def scalar(name, value, step=None):
    """Writes `value` as a TensorBoard scalar to the default summary writer.

    Args:
      name: the summary's name; the enclosing name scope prefixes it, as
        `tf.summary.scalar` does.
      value: a real number or scalar tensor.
      step: the step; None takes the writer's default step.

    Returns:
      True when the summary was written, False when no default writer is set
      (as `tf.summary.scalar`).
    """
    with tf.summary.experimental.summary_scope(
            name, "scalar_summary", values=[value, step]) as (tag, _):
        return tf.summary.write(
            tag=tag, tensor=tf.cast(value, tf.float32), step=step,
            metadata=_SCALAR_METADATA)
