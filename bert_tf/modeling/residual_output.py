"""Dense projection + dropout + residual connection + LayerNorm (post-LN)."""

import keras

from bert_tf.modeling.dropout import dropout
from bert_tf.modeling.initializers import weight_initializer
from bert_tf.modeling.layer_norm import LayerNorm


class ResidualOutput(keras.layers.Layer):
    """LayerNorm(residual + dropout(inputs W + b)).

    Google's closing step of both halves of a Transformer layer: named
    `attention/output` after self-attention and `output` after the
    intermediate layer, each with a `dense` and a `LayerNorm`.
    """

    def __init__(self, config, name="output", **kwargs):
        super().__init__(name=name, **kwargs)
        self.config = config
        self.dense = keras.layers.Dense(
            config.hidden_size, name="dense", dtype=self.dtype_policy,
            kernel_initializer=weight_initializer(config.initializer_range))
        self.layer_norm = LayerNorm(name="LayerNorm", dtype=self.dtype_policy)

    def build(self, inputs_shape):
        self.dense.build(inputs_shape)
        self.layer_norm.build((None, None, self.config.hidden_size))

    def call(self, inputs, residual, training=False):
        """Projects `inputs` to hidden_size and adds them to `residual`.

        Args:
          inputs: [batch_size, seq_length, width] (hidden_size after
            attention, intermediate_size after the intermediate layer).
          residual: [batch_size, seq_length, hidden_size], the sub-layer's
            input.
          training: whether to apply dropout.

        Returns:
          [batch_size, seq_length, hidden_size], compute dtype.
        """
        projected = self.dense(inputs)
        projected = dropout(projected, self.config.hidden_dropout_prob,
                            training)
        return self.layer_norm(projected + residual)
