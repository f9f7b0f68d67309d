"""The feed-forward expansion of a Transformer layer: dense + activation."""

import keras

from bert_tf.modeling.activations import get_activation
from bert_tf.modeling.initializers import weight_initializer


class Intermediate(keras.layers.Layer):
    """act(x W_i + b_i), widening hidden_size to intermediate_size.

    Google's `intermediate/dense`, with `hidden_act` as the activation.
    """

    def __init__(self, config, name="intermediate", **kwargs):
        super().__init__(name=name, **kwargs)
        self.config = config
        self.dense = keras.layers.Dense(
            config.intermediate_size, name="dense", dtype=self.dtype_policy,
            activation=get_activation(config.hidden_act),
            kernel_initializer=weight_initializer(config.initializer_range))

    def build(self, hidden_states_shape=None):
        self.dense.build((None, None, self.config.hidden_size))

    def call(self, hidden_states):
        """[batch, seq, hidden_size] -> [batch, seq, intermediate_size]."""
        return self.dense(hidden_states)
