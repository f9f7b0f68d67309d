"""The sequence-classification head of Google's `run_classifier.py`."""

import keras
import tensorflow as tf

from bert_tf.config import BertConfig
from bert_tf.modeling.checkpoint_scope import checkpoint_scope
from bert_tf.modeling.dropout import dropout
from bert_tf.modeling.initializers import weight_initializer

# run_classifier.py's `create_model` hard-codes both, whatever the config says.
CLASSIFIER_DROPOUT = 0.1
CLASSIFIER_INITIALIZER_STDDEV = 0.02


@keras.saving.register_keras_serializable(package="bert_tf")
class ClassifierHead(keras.layers.Layer):
    """logits = dropout(pooled_output) W^T + b.

    Variables: `output_weights` [num_labels, hidden_size] and `output_bias`
    [num_labels], at the checkpoint's root with no scope, exactly as
    `run_classifier.py` names them.
    """

    def __init__(self, config, num_labels, name="classifier", **kwargs):
        """Args:
          config: the encoder's `BertConfig`.
          num_labels: number of classes, a positive int.
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

    def build(self, pooled_output_shape=None):
        with checkpoint_scope(""):
            self.output_weights = keras.Variable(
                initializer=weight_initializer(CLASSIFIER_INITIALIZER_STDDEV),
                shape=(self.num_labels, self.config.hidden_size),
                dtype=self.variable_dtype, name="output_weights")
            self.output_bias = keras.Variable(
                initializer="zeros", shape=(self.num_labels,),
                dtype=self.variable_dtype, autocast=False, name="output_bias")

    def call(self, pooled_output, training=False):
        """Classifies.

        Args:
          pooled_output: [batch_size, hidden_size].
          training: whether to apply dropout (rate 0.1) to `pooled_output`.

        Returns:
          float32 logits [batch_size, num_labels].
        """
        pooled_output = dropout(pooled_output, CLASSIFIER_DROPOUT, training)
        logits = tf.matmul(pooled_output, self.output_weights,
                           transpose_b=True)
        return tf.cast(logits, tf.float32) + self.output_bias

    def get_config(self):
        return {**super().get_config(), "config": self.config.to_dict(),
                "num_labels": self.num_labels}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        return cls(BertConfig.from_dict(config.pop("config")), **config)
