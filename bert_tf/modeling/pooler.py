"""BERT's pooler: a dense+tanh summary of the first ([CLS]) token."""

import keras

from bert_tf.modeling.initializers import weight_initializer


class Pooler(keras.layers.Layer):
    """pooled = tanh(first_token W_p + b_p): Google's `pooler/dense`."""

    def __init__(self, config, name="pooler", **kwargs):
        super().__init__(name=name, **kwargs)
        self.config = config
        self.dense = keras.layers.Dense(
            config.hidden_size, name="dense", activation="tanh",
            dtype=self.dtype_policy,
            kernel_initializer=weight_initializer(config.initializer_range))

    def build(self, sequence_output_shape=None):
        self.dense.build((None, self.config.hidden_size))

    def call(self, sequence_output):
        """[batch, seq, hidden] -> [batch, hidden]."""
        first_token = sequence_output[:, 0, :]  # [batch, hidden]
        return self.dense(first_token)
