"""The attention half of a Transformer layer: attention + residual output."""

import keras

from bert_tf.modeling.residual_output import ResidualOutput
from bert_tf.modeling.self_attention import MultiHeadSelfAttention


class AttentionBlock(keras.layers.Layer):
    """LayerNorm(x + dropout(SelfAttention(x) W_o + b_o)).

    Google's `attention/self/...` and `attention/output/{dense,LayerNorm}`.
    """

    def __init__(self, config, name="attention", **kwargs):
        super().__init__(name=name, **kwargs)
        self._convert_input_args = False  # keep the attention bias float32
        self.config = config
        self.self_attention = MultiHeadSelfAttention(
            config, name="self", dtype=self.dtype_policy)
        self.attention_output = ResidualOutput(
            config, name="output", dtype=self.dtype_policy)

    def build(self, hidden_states_shape=None):
        shape = (None, None, self.config.hidden_size)
        self.self_attention.build(shape)
        self.attention_output.build(shape)

    def call(self, hidden_states, attention_bias, training=False):
        """Args and shapes as `MultiHeadSelfAttention.call`.

        Returns:
          [batch_size, seq_length, hidden_size], compute dtype.
        """
        context = self.self_attention(
            hidden_states, attention_bias, training=training)
        return self.attention_output(context, hidden_states, training=training)
