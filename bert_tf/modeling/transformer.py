"""The Transformer encoder: Google's post-LN block, read top to bottom.

One `TransformerBlock` is one layer of the paper (Google's
`bert/encoder/layer_N`), written in the order the forward pass runs:

    attention/self              MultiHeadSelfAttention: Q, K, V, softmax
    attention/output/dense      back to hidden_size; dropout; + block input
    attention/output/LayerNorm
    intermediate/dense          up to intermediate_size; activation
    output/dense                back to hidden_size; dropout; + attention
    output/LayerNorm

The attention stays a sub-layer of its own (as in keras-hub's
`TransformerEncoder`): splitting heads, scaling, masking and softmax are one
concept, and its scope `attention/self` is Google's. `TransformerEncoder`
stacks the blocks (`bert/encoder`).
"""

import math

import keras
from keras import ops

from bert_tf.config import FUSED_ATTENTION
from bert_tf.config import GOOGLE_ATTENTION
from bert_tf.modeling.layers import LayerNorm
from bert_tf.modeling.layers import MASK_ADDER
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
        # Google's attention unless `set_attention` says otherwise; read
        # when a call is traced. Not part of `get_config`: a choice of
        # kernel for a run, not of the model.
        self.attention = GOOGLE_ATTENTION

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
            that may be attended and -10000 for padding (or [batch_size, 1,
            seq_length, seq_length] for causal attention).
          training: whether to apply attention-probability dropout.

        Returns:
          The heads' contexts, concatenated: [batch_size, seq_length,
          hidden_size], compute dtype.
        """
        batch_size, seq_length, _ = shape_list(hidden_states)

        def split_heads(projected):
            # [batch, seq, hidden] -> [batch, seq, heads, head_size]; a
            # reshape of contiguous memory, no data movement.
            return ops.reshape(
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

        attention_dropout = self.config.attention_probs_dropout_prob
        if self.attention == FUSED_ATTENTION and (
                not attention_dropout or training is None
                or training is False):
            # One fused kernel (flash attention where the backend and device
            # have one); no probabilities to drop, so only where dropout
            # does not apply (`set_attention` refuses to train a model with
            # that dropout fused). The mask: keys whose bias is 0, one row
            # per query (the shape fused kernels take), shared by the
            # heads. A key Google masks gets -10000 before the softmax,
            # whose exp is 0 in float32: masking it out is the same.
            mask = ops.broadcast_to(
                ops.greater(attention_bias, MASK_ADDER / 2),
                [batch_size, 1, seq_length, seq_length])
            context = ops.dot_product_attention(
                query, key, value, mask=mask, scale=1.0)  # [b, f, n, d]
        else:
            # [batch, heads, from_seq, to_seq]
            scores = ops.einsum("bfnd,btnd->bnft", query, key)
            # The mask is added, and softmax taken, in float32.
            scores = ops.cast(scores, "float32") + attention_bias
            probs = ops.softmax(scores, axis=-1)
            probs = ops.cast(probs, self.compute_dtype)
            # Dropping whole keys to attend to, as in the original
            # Transformer.
            probs = dropout(probs, attention_dropout, training,
                            sequence_axes=(2, 3))
            context = ops.einsum("bnft,btnd->bfnd", probs,
                                 value)             # [b, f, n, d]
        return ops.reshape(
            context, [batch_size, seq_length, self.config.hidden_size])


def set_attention(model, attention, training):
    """Makes every self-attention layer of `model` compute `attention`.

    The layers read it when a call is traced: set it before the model's
    steps are first called (the engines set it when they build the model,
    from `TrainerConfig.attention`).

    Args:
      model: a Keras layer or model holding `MultiHeadSelfAttention`
        layers (at any depth).
      attention: one of `bert_tf.config.ATTENTION_CHOICES`.
      training: whether the model is to be trained: then fused attention
        is refused where the config has attention-probability dropout.

    Returns:
      The number of attention layers set.

    Raises:
      ValueError: an unknown `attention`, or fused attention for training
        a model with attention-probability dropout (one line).
    """
    if attention not in (GOOGLE_ATTENTION, FUSED_ATTENTION):
        raise ValueError(f"--attention={attention!r} must be one of "
                         f"{GOOGLE_ATTENTION}, {FUSED_ATTENTION}")
    layers = [layer for layer in model._flatten_layers()  # pylint: disable=protected-access
              if isinstance(layer, MultiHeadSelfAttention)]
    if attention == FUSED_ATTENTION and training:
        for layer in layers:
            layer.config.check_fused_attention_trains()
    for layer in layers:
        layer.attention = attention
    return len(layers)


# -- transformer block --------------------------------------------------------
# One post-LN Transformer encoder layer (Google's `layer_<i>`).

class TransformerBlock(keras.layers.Layer):
    """Self-attention, then a position-wise feed-forward network, post-LN.

    a = LayerNorm(x + dropout(SelfAttention(x) W_o + b_o))
    y = LayerNorm(a + dropout(act(a W_i + b_i) W_2 + b_2))

    Variables (Google's names, under `layer_<i>/`):
    `attention/self/{query,key,value}/{kernel,bias}`,
    `attention/output/dense/{kernel,bias}`,
    `attention/output/LayerNorm/{gamma,beta}`,
    `intermediate/dense/{kernel,bias}`, `output/dense/{kernel,bias}`,
    `output/LayerNorm/{gamma,beta}`.
    """

    def __init__(self, config, name, **kwargs):
        super().__init__(name=name, **kwargs)
        self._convert_input_args = False  # keep the attention bias float32
        self.config = config

        def dense(width, activation=None):
            # Every Dense is named "dense" in Google's checkpoints; `build`
            # puts each under its own scope.
            return keras.layers.Dense(
                width, name="dense", activation=activation,
                dtype=self.dtype_policy,
                kernel_initializer=weight_initializer(
                    config.initializer_range))

        # Self-attention sub-layer: `attention/self` and
        # `attention/output/{dense,LayerNorm}`.
        self.self_attention = MultiHeadSelfAttention(
            config, name="self", dtype=self.dtype_policy)
        self.attention_output_dense = dense(config.hidden_size)
        self.attention_layer_norm = LayerNorm(
            name="LayerNorm", dtype=self.dtype_policy)

        # Feed-forward sub-layer: `intermediate/dense` and
        # `output/{dense,LayerNorm}`.
        self.intermediate_dense = dense(
            config.intermediate_size,
            activation=get_activation(config.hidden_act))
        self.output_dense = dense(config.hidden_size)
        self.output_layer_norm = LayerNorm(
            name="LayerNorm", dtype=self.dtype_policy)

    def build(self, hidden_states_shape=None):
        # Keras 3 names a variable by the scopes open when its layer is
        # first built, so building each sub-layer inside Google's scope
        # names gives Google's paths (a sub-layer keeps that path however
        # it is called later).
        hidden = (None, None, self.config.hidden_size)
        with keras.name_scope("attention"):
            self.self_attention.build(hidden)
            with keras.name_scope("output"):
                self.attention_output_dense.build(hidden)
                self.attention_layer_norm.build(hidden)
        with keras.name_scope("intermediate"):
            self.intermediate_dense.build(hidden)
        with keras.name_scope("output"):
            self.output_dense.build(
                (None, None, self.config.intermediate_size))
            self.output_layer_norm.build(hidden)

    def call(self, hidden_states, attention_bias, training=False):
        """Runs one layer.

        Args:
          hidden_states: [batch_size, seq_length, hidden_size].
          attention_bias: float32 [batch_size, 1, 1, seq_length] (or
            [batch_size, 1, seq_length, seq_length] for causal attention);
            see `attention_bias_from_mask`.
          training: whether to apply dropout.

        Returns:
          [batch_size, seq_length, hidden_size], compute dtype.
        """
        hidden_dropout = self.config.hidden_dropout_prob

        # Self-attention, residual, LayerNorm.
        context = self.self_attention(
            hidden_states, attention_bias,
            training=training)                     # [batch, seq, hidden]
        attention_output = self.attention_output_dense(context)
        attention_output = dropout(attention_output, hidden_dropout, training,
                                   sequence_axes=(1,))
        attention_output = self.attention_layer_norm(
            attention_output + hidden_states)      # [batch, seq, hidden]

        # Feed-forward, residual, LayerNorm.
        intermediate_output = self.intermediate_dense(
            attention_output)                      # [batch, seq, intermediate]
        layer_output = self.output_dense(
            intermediate_output)                   # [batch, seq, hidden]
        layer_output = dropout(layer_output, hidden_dropout, training,
                               sequence_axes=(1,))
        return self.output_layer_norm(
            layer_output + attention_output)       # [batch, seq, hidden]


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
