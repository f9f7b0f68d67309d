"""Multi-head dot-product self-attention (Google's `attention_layer`)."""

import math

import keras
import tensorflow as tf

from bert_tf.modeling.dropout import dropout
from bert_tf.modeling.initializers import weight_initializer
from bert_tf.modeling.shapes import shape_list


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
