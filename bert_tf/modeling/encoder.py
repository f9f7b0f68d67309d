"""The stack of Transformer layers (Google's `encoder/layer_0..n-1`)."""

import keras

from bert_tf.modeling.transformer_block import TransformerBlock


class TransformerEncoder(keras.layers.Layer):
    """`num_hidden_layers` TransformerBlocks applied in turn."""

    def __init__(self, config, name="encoder", **kwargs):
        super().__init__(name=name, **kwargs)
        self._convert_input_args = False  # keep the attention bias float32
        self.config = config
        self.blocks = [
            TransformerBlock(config, name=f"layer_{index}",
                             dtype=self.dtype_policy)
            for index in range(config.num_hidden_layers)]

    def build(self, hidden_states_shape=None):
        for block in self.blocks:
            block.build((None, None, self.config.hidden_size))

    def call(self, hidden_states, attention_bias, training=False):
        """Runs every layer.

        Args:
          hidden_states: [batch_size, seq_length, hidden_size], the
            embedding output.
          attention_bias: float32 [batch_size, 1, 1, seq_length], or
            [batch_size, 1, seq_length, seq_length] for causal attention;
            see `attention_bias_from_mask`.
          training: whether to apply dropout.

        Returns:
          A list with each layer's output, [batch_size, seq_length,
          hidden_size] each, first layer first (Google's
          `get_all_encoder_layers`).
        """
        outputs = []
        for block in self.blocks:
            hidden_states = block(hidden_states, attention_bias,
                                  training=training)
            outputs.append(hidden_states)
        return outputs
