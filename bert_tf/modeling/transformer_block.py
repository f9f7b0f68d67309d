"""One post-LN Transformer encoder layer (Google's `layer_<i>`)."""

import keras

from bert_tf.modeling.attention_block import AttentionBlock
from bert_tf.modeling.intermediate import Intermediate
from bert_tf.modeling.residual_output import ResidualOutput


class TransformerBlock(keras.layers.Layer):
    """Self-attention, then a position-wise feed-forward network.

    a = LayerNorm(x + dropout(SelfAttention(x) W_o))
    y = LayerNorm(a + dropout(act(a W_i) W_2))

    Variables: `attention/self/{query,key,value}`, `attention/output/dense`,
    `attention/output/LayerNorm`, `intermediate/dense`, `output/dense`,
    `output/LayerNorm`.
    """

    def __init__(self, config, name, **kwargs):
        super().__init__(name=name, **kwargs)
        self._convert_input_args = False  # keep the attention bias float32
        self.config = config
        self.attention = AttentionBlock(
            config, name="attention", dtype=self.dtype_policy)
        self.intermediate = Intermediate(
            config, name="intermediate", dtype=self.dtype_policy)
        self.feed_forward_output = ResidualOutput(
            config, name="output", dtype=self.dtype_policy)

    def build(self, hidden_states_shape=None):
        config = self.config
        self.attention.build((None, None, config.hidden_size))
        self.intermediate.build((None, None, config.hidden_size))
        self.feed_forward_output.build(
            (None, None, config.intermediate_size))

    def call(self, hidden_states, attention_bias, training=False):
        """Args and shapes as `MultiHeadSelfAttention.call`.

        Returns:
          [batch_size, seq_length, hidden_size], compute dtype.
        """
        attention_output = self.attention(
            hidden_states, attention_bias, training=training)
        intermediate_output = self.intermediate(attention_output)
        return self.feed_forward_output(
            intermediate_output, attention_output, training=training)
