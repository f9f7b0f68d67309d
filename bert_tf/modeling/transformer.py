"""The Transformer encoder, Google's post-LN block, in one place.

Reading order follows the forward pass of one layer
(`bert/encoder/layer_N/...`):

    attention/self    MultiHeadSelfAttention  scaled dot-product
    attention/output  ResidualOutput          dense, dropout, +x, LayerNorm
    attention         AttentionBlock          the two above
    intermediate      Intermediate            dense + activation
    output            ResidualOutput          dense, dropout, +x, LayerNorm
    layer_N           TransformerBlock        the whole block
    encoder           TransformerEncoder      the stack of blocks
"""

import math

import keras
import tensorflow as tf

from bert_tf.modeling.layers import LayerNorm
from bert_tf.modeling.layers import dropout
from bert_tf.modeling.layers import get_activation
from bert_tf.modeling.layers import shape_list
from bert_tf.modeling.layers import weight_initializer


# -- self attention -----------------------------------------------------------
# Multi-head dot-product self-attention (Google's `attention_layer`).

class MultiHeadSelfAttention(keras.layers.Layer):
    """Every position attends to every unmasked position, in parallel heads.

    For each head h:  softmax(Q_h K_h^T / sqrt(head_size) + bias) V_h,
    with Q = x W_q + b_q (likewise K, V) and the heads' contexts concatenated.

    Variables: `query`, `key`, `value` Dense layers with kernels
    [hidden_size, hidden_size] (Google's names and shapes; head h owns
    columns h*head_size:(h+1)*head_size).
    """

    def __init__(self, config, name="self", **kwargs):
        super().__init__(name=name, **kwargs)
        # The attention bias must reach `call` in float32; hidden states
        # already arrive in the compute dtype, so no conversion is needed.
        self._convert_input_args = False
        self.config = config
        self.num_heads = config.num_attention_heads
        self.head_size = config.attention_head_size

        def projection(name):
            initializer = weight_initializer(config.initializer_range)
            return keras.layers.Dense(
                config.hidden_size, name=name, dtype=self.dtype_policy,
                kernel_initializer=initializer)

        self.query = projection("query")
        self.key = projection("key")
        self.value = projection("value")

    def build(self, hidden_states_shape=None):
        shape = (None, None, self.config.hidden_size)
        self.query.build(shape)
        self.key.build(shape)
        self.value.build(shape)

    def call(self, hidden_states, attention_bias, training=False):
        """Attends.

        Args:
          hidden_states: [batch_size, seq_length, hidden_size].
          attention_bias: float32 [batch_size, 1, 1, seq_length], 0 for keys
            that may be attended and -10000 for padding.
          training: whether to apply attention-probability dropout.

        Returns:
          The heads' contexts, concatenated: [batch_size, seq_length,
          hidden_size], compute dtype.
        """
        batch_size, seq_length, _ = shape_list(hidden_states)

        def split_heads(projected):
            # [batch, seq, hidden] -> [batch, seq, heads, head_size]; a
            # reshape of contiguous memory, no data movement.
            return tf.reshape(
                projected,
                [batch_size, seq_length, self.num_heads, self.head_size])

        # Google scales the scores by 1/sqrt(head_size); scaling the query
        # instead is the same product, seq_length/head_size times cheaper,
        # and bit-identical when the factor is a power of two (head sizes
        # 16, 64, 256: every released BERT).
        scale = 1.0 / math.sqrt(float(self.head_size))
        query = split_heads(self.query(hidden_states)) * scale
        key = split_heads(self.key(hidden_states))
        value = split_heads(self.value(hidden_states))

        # [batch, heads, from_seq, to_seq]
        scores = tf.einsum("bfnd,btnd->bnft", query, key)
        # The mask is added, and softmax taken, in float32.
        scores = tf.cast(scores, tf.float32) + attention_bias
        probs = tf.nn.softmax(scores, axis=-1)
        probs = tf.cast(probs, self.compute_dtype)
        # Dropping whole keys to attend to, as in the original Transformer.
        probs = dropout(probs, self.config.attention_probs_dropout_prob,
                        training)

        context = tf.einsum("bnft,btnd->bfnd", probs, value)  # [b, f, n, d]
        return tf.reshape(
            context, [batch_size, seq_length, self.config.hidden_size])


# -- residual output ----------------------------------------------------------
# Dense projection + dropout + residual connection + LayerNorm (post-LN).

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


# -- attention block ----------------------------------------------------------
# The attention half of a Transformer layer: attention + residual output.

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


# -- intermediate -------------------------------------------------------------
# The feed-forward expansion of a Transformer layer: dense + activation.

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


# -- transformer block --------------------------------------------------------
# One post-LN Transformer encoder layer (Google's `layer_<i>`).

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


# -- encoder ------------------------------------------------------------------
# The stack of Transformer layers (Google's `encoder/layer_0..n-1`).

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
