"""The answer-span head of Google's `run_squad.py`."""

import keras
import tensorflow as tf

from bert_tf.config import BertConfig
from bert_tf.modeling.checkpoint_scope import checkpoint_scope
from bert_tf.modeling.initializers import weight_initializer
from bert_tf.modeling.shapes import shape_list

# run_squad.py's `create_model` hard-codes it, whatever the config says.
SPAN_INITIALIZER_STDDEV = 0.02


@keras.saving.register_keras_serializable(package="bert_tf")
class SpanHead(keras.layers.Layer):
    """Per token: [start, end] logits = sequence_output W^T + b.

    Variables: `cls/squad/output_weights` [2, hidden_size] and
    `cls/squad/output_bias` [2].
    """

    def __init__(self, config, name="squad", **kwargs):
        """Args:
          config: the encoder's `BertConfig`.
          name: the scope under "cls/"; Google's is "squad".
          **kwargs: Keras layer arguments (`dtype`, `trainable`).
        """
        super().__init__(name=name, **kwargs)
        if not isinstance(config, BertConfig):
            raise TypeError(
                f"config must be a BertConfig, got {type(config).__name__}")
        self.config = config

    def build(self, sequence_output_shape=None):
        with checkpoint_scope(f"cls/{self.name}"):
            self.output_weights = keras.Variable(
                initializer=weight_initializer(SPAN_INITIALIZER_STDDEV),
                shape=(2, self.config.hidden_size), dtype=self.variable_dtype,
                name="output_weights")
            self.output_bias = keras.Variable(
                initializer="zeros", shape=(2,), dtype=self.variable_dtype,
                autocast=False, name="output_bias")

    def call(self, sequence_output):
        """Scores every token as the answer's start and end.

        Args:
          sequence_output: [batch_size, seq_length, hidden_size].

        Returns:
          (start_logits, end_logits), float32 [batch_size, seq_length] each.
        """
        if sequence_output.shape.rank != 3:
            raise ValueError(
                f"sequence_output must be [batch_size, seq_length, "
                f"hidden_size], got shape {sequence_output.shape}")
        batch_size, seq_length, hidden_size = shape_list(sequence_output)
        flat = tf.reshape(sequence_output, [-1, hidden_size])  # [b * s, h]
        logits = tf.matmul(flat, self.output_weights, transpose_b=True)
        logits = tf.cast(logits, tf.float32) + self.output_bias  # [b * s, 2]
        logits = tf.reshape(logits, [batch_size, seq_length, 2])
        return logits[:, :, 0], logits[:, :, 1]

    def get_config(self):
        return {**super().get_config(), "config": self.config.to_dict()}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        return cls(BertConfig.from_dict(config.pop("config")), **config)
