"""A per-token classification head (NER, POS tagging)."""

import keras
import tensorflow as tf

from bert_tf.config import BertConfig
from bert_tf.modeling.heads import CLASSIFIER_DROPOUT
from bert_tf.modeling.heads import CLASSIFIER_INITIALIZER_STDDEV
from bert_tf.modeling.layers import checkpoint_scope
from bert_tf.modeling.layers import dropout
from bert_tf.modeling.layers import shape_list
from bert_tf.modeling.layers import weight_initializer


@keras.saving.register_keras_serializable(package="bert_tf")
class TokenClassifierHead(keras.layers.Layer):
    """Per position: logits = dropout(sequence_output) W^T + b.

    The classifier of `run_classifier.py` applied at every position:
    variables `output_weights` [num_labels, hidden_size] and `output_bias`
    [num_labels] at the checkpoint's root, the names Google's classifier
    (and the common BERT-NER ports of it) use, with its dropout (0.1) and
    initializer (stddev 0.02).
    """

    def __init__(self, config, num_labels, name="token_classifier",
                 **kwargs):
        """Args:
          config: the encoder's `BertConfig`.
          num_labels: number of tags, a positive int.
          name: the Keras layer name (the variables have no scope).
          **kwargs: Keras layer arguments (`dtype`, `trainable`).

        Raises:
          TypeError: `config` is not a BertConfig.
          ValueError: `num_labels` is not a positive int.
        """
        super().__init__(name=name, **kwargs)
        if not isinstance(config, BertConfig):
            raise TypeError(
                f"config must be a BertConfig, got {type(config).__name__}")
        if (isinstance(num_labels, bool) or not isinstance(num_labels, int)
                or num_labels < 1):
            raise ValueError(
                f"num_labels must be a positive integer, got {num_labels!r}")
        self.config = config
        self.num_labels = num_labels

    def build(self, sequence_output_shape=None):
        with checkpoint_scope(""):
            self.output_weights = keras.Variable(
                initializer=weight_initializer(CLASSIFIER_INITIALIZER_STDDEV),
                shape=(self.num_labels, self.config.hidden_size),
                dtype=self.variable_dtype, name="output_weights")
            self.output_bias = keras.Variable(
                initializer="zeros", shape=(self.num_labels,),
                dtype=self.variable_dtype, autocast=False, name="output_bias")

    def call(self, sequence_output, training=False):
        """Scores every tag at every position.

        Args:
          sequence_output: [batch_size, seq_length, hidden_size].
          training: whether to apply dropout (rate 0.1).

        Returns:
          float32 logits [batch_size, seq_length, num_labels].
        """
        batch_size, seq_length, hidden_size = shape_list(sequence_output)
        sequence_output = dropout(sequence_output, CLASSIFIER_DROPOUT,
                                  training)
        flat = tf.reshape(sequence_output, [-1, hidden_size])  # [b * s, h]
        logits = tf.matmul(flat, self.output_weights, transpose_b=True)
        logits = tf.cast(logits, tf.float32) + self.output_bias
        return tf.reshape(logits, [batch_size, seq_length, self.num_labels])

    def get_config(self):
        return {**super().get_config(), "config": self.config.to_dict(),
                "num_labels": self.num_labels}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        return cls(BertConfig.from_dict(config.pop("config")), **config)
