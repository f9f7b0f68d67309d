"""The next-sentence-prediction head: is segment B the real continuation?"""

import keras
import tensorflow as tf

from bert_tf.config import BertConfig
from bert_tf.modeling.checkpoint_scope import checkpoint_scope
from bert_tf.modeling.initializers import weight_initializer


@keras.saving.register_keras_serializable(package="bert_tf")
class NextSentenceHead(keras.layers.Layer):
    """logits = pooled_output W^T + b (Google's `get_next_sentence_output`).

    Class 0 means "B follows A", class 1 "B is random".

    Variables: `cls/seq_relationship/output_weights` [2, hidden_size] (stored
    transposed, as Google's) and `cls/seq_relationship/output_bias` [2].
    """

    def __init__(self, config, name="seq_relationship", **kwargs):
        """Args:
          config: the encoder's `BertConfig`.
          name: the scope under "cls/"; Google's is "seq_relationship".
          **kwargs: Keras layer arguments (`dtype`, `trainable`).
        """
        super().__init__(name=name, **kwargs)
        if not isinstance(config, BertConfig):
            raise TypeError(
                f"config must be a BertConfig, got {type(config).__name__}")
        self.config = config

    def build(self, pooled_output_shape=None):
        with checkpoint_scope(f"cls/{self.name}"):
            self.output_weights = keras.Variable(
                initializer=weight_initializer(self.config.initializer_range),
                shape=(2, self.config.hidden_size), dtype=self.variable_dtype,
                name="output_weights")
            self.output_bias = keras.Variable(
                initializer="zeros", shape=(2,), dtype=self.variable_dtype,
                autocast=False, name="output_bias")

    def call(self, pooled_output):
        """[batch_size, hidden_size] -> float32 logits [batch_size, 2]."""
        logits = tf.matmul(pooled_output, self.output_weights,
                           transpose_b=True)
        return tf.cast(logits, tf.float32) + self.output_bias

    def get_config(self):
        return {**super().get_config(), "config": self.config.to_dict()}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        return cls(BertConfig.from_dict(config.pop("config")), **config)
