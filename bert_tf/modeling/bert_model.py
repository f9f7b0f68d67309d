"""`BertModel`: Google's BERT encoder as a Keras 3 model (the backbone).

Sections: the pooler layer; the model (embeddings, Transformer encoder,
pooler). The config is `bert_tf.config.BertConfig`; the layers it is built
from are in `embeddings.py`, `transformer.py` and `layers.py`.
"""

import keras
from keras import ops

from bert_tf.config import BertConfig
from bert_tf.modeling.embeddings import BertEmbeddings
from bert_tf.modeling.layers import attention_bias_from_mask
from bert_tf.modeling.layers import checkpoint_scope
from bert_tf.modeling.layers import gather_positions
from bert_tf.modeling.layers import weight_initializer
from bert_tf.modeling.transformer import TransformerEncoder
from bert_tf.modeling.save_signature import int_feature_specs


# -- layers: the pooler ------------------------------------------------------
# BERT's pooler: a dense+tanh summary of the first ([CLS]) token -- or, in a
# causal encoder, of the last real token, the only one that has seen them all.

class Pooler(keras.layers.Layer):
    """pooled = tanh(token W_p + b_p): Google's `pooler/dense`.

    The token is the first ([CLS]) by default, as Google's; given
    `positions`, each example's token at its position.
    """

    def __init__(self, config, name="pooler", **kwargs):
        super().__init__(name=name, **kwargs)
        self.config = config
        self.dense = keras.layers.Dense(
            config.hidden_size, name="dense", activation="tanh",
            dtype=self.dtype_policy,
            kernel_initializer=weight_initializer(config.initializer_range))

    def build(self, sequence_output_shape=None):
        self.dense.build((None, self.config.hidden_size))

    def call(self, sequence_output, positions=None):
        """[batch, seq, hidden] -> [batch, hidden].

        Args:
          sequence_output: [batch, seq, hidden].
          positions: optional int tensor [batch], the position of the token
            to pool in each example (default: 0, the [CLS] token).
        """
        if positions is None:
            token = sequence_output[:, 0, :]  # [batch, hidden]
        else:
            token = gather_positions(sequence_output, positions)
        return self.dense(token)


def last_token_positions(input_mask):
    """Each example's last real position: the largest i with mask[i] = 1.

    Args:
      input_mask: int or bool tensor [batch, seq], 1 for real tokens.

    Returns:
      int32 [batch] (0 for an example without a real token).
    """
    mask = ops.cast(input_mask, "int32")
    seq_length = ops.shape(mask)[1]
    return ops.max(mask * ops.arange(seq_length, dtype="int32")[None, :],
                   axis=1)


# -- model: BertModel --------------------------------------------------------

def _compatible_shapes(shape, other):
    """Same rank, and equal wherever both dimensions are known."""
    return len(shape) == len(other) and all(
        a is None or b is None or a == b for a, b in zip(shape, other))


def _shape_text(tensor):
    """A tensor's static shape as TensorFlow prints it: (2, None)."""
    return f"({', '.join(str(dim) for dim in tensor.shape)}" + (
        ",)" if len(tensor.shape) == 1 else ")")

def _as_bert_config(config):
    if isinstance(config, BertConfig):
        config.validate()  # in case a field was changed after construction
        return config
    if isinstance(config, dict):
        return BertConfig.from_dict(config)
    raise TypeError(
        f"config must be a BertConfig (or a dict of its fields), got "
        f"{type(config).__name__}")


@keras.saving.register_keras_serializable(package="bert_tf")
class BertModel(keras.Model):
    """BERT: embeddings, a stack of Transformer layers, and the pooler.

    Its variables are named exactly as in Google's checkpoints
    (`bert/embeddings/word_embeddings`,
    `bert/encoder/layer_0/attention/self/query/kernel`, ...,
    `bert/pooler/dense/bias`) wherever the model is nested, so a released
    checkpoint loads by name.

    Example:
      model = BertModel(BertConfig.from_json_file("bert_config.json"))
      outputs = model(input_ids, input_mask, segment_ids)
      outputs["pooled_output"]  # [batch_size, hidden_size]

    With `causal_attention=True` each position attends only to itself and
    the positions before it (the left-to-right LM of the BERT paper's
    ablation, section 5.1), and the pooled output is the pooler applied to
    each example's last real token (the last position where `input_mask`
    is 1) instead of [CLS]: under a causal mask [CLS] sees only itself,
    while the last token has seen the whole input -- GPT's choice for
    classification. The variables, and so the checkpoints, are the same
    either way: a model pretrained left to right can be fine-tuned with the
    causal mask (as the paper did, section 5.1) or without it.
    """

    def __init__(self, config, name="bert", causal_attention=False,
                 **kwargs):
        """Creates the layers (`build` or the first call makes the variables).

        Args:
          config: a `BertConfig` (or a dict of Google's config keys).
          name: the checkpoint scope of every variable; Google's is "bert".
          causal_attention: position i attends only to positions <= i (on
            top of the padding mask), and the pooler reads the last real
            token. False (Google's BERT): every position attends to every
            real token, and the pooler reads [CLS].
          **kwargs: Keras layer arguments such as `dtype` (a dtype policy,
            e.g. "mixed_float16") and `trainable`.

        Raises:
          TypeError: `config` is not a BertConfig or dict.
          BertConfigError: the config cannot describe a working model.
        """
        super().__init__(name=name, **kwargs)
        self.config = _as_bert_config(config)
        self.causal_attention = bool(causal_attention)
        self.embeddings = BertEmbeddings(
            self.config, name="embeddings", dtype=self.dtype_policy)
        self.encoder = TransformerEncoder(
            self.config, name="encoder", dtype=self.dtype_policy)
        self.pooler = Pooler(self.config, name="pooler",
                             dtype=self.dtype_policy)

    def build(self, input_ids_shape=None):
        """Creates every variable; input shapes do not matter."""
        if self.built:
            # `embedding_table` may already have built the model.
            return
        hidden_states_shape = (None, None, self.config.hidden_size)
        with checkpoint_scope(self.name):
            self.embeddings.build((None, None))
            self.encoder.build(hidden_states_shape)
            self.pooler.build(hidden_states_shape)

    @property
    def embedding_table(self):
        """The word-embedding variable [vocab_size, hidden_size].

        Builds the model if needed, so an MLM head can be tied to it before
        the first call.
        """
        if not self.built:
            self.build()
        return self.embeddings.word_embeddings

    def call(self, input_ids, input_mask=None, segment_ids=None,
             training=False, position_ids=None, sequence_ids=None):
        """Encodes a batch of token sequences.

        Args:
          input_ids: int tensor [batch_size, seq_length] of WordPiece ids.
          input_mask: optional int tensor [batch_size, seq_length], 1 for
            real tokens and 0 for padding (default: all ones).
          segment_ids: optional int tensor [batch_size, seq_length],
            segment A = 0, B = 1 (default: all zeros).
          training: whether to apply dropout.
          position_ids: optional int tensor [batch_size, seq_length], each
            token's position (default: 0 .. seq_length - 1).
          sequence_ids: optional int tensor [batch_size, seq_length], for
            rows that pack several sequences: the sequence of each token.
            Tokens attend only to their own sequence's tokens. Together
            with `position_ids` restarting at each sequence, every
            sequence's outputs are those it has alone in a row.

        Returns:
          A dict of tensors in the compute dtype:
            "sequence_output": [batch_size, seq_length, hidden_size], the
              last layer's output;
            "pooled_output": [batch_size, hidden_size], the pooler on
              [CLS] (on the last real token with causal attention);
            "encoder_outputs": a list of num_hidden_layers tensors
              [batch_size, seq_length, hidden_size], one per layer;
            "embedding_output": [batch_size, seq_length, hidden_size].

        Raises:
          ValueError: an input is not [batch_size, seq_length], the shapes
            differ, or the sequence is longer than max_position_embeddings.
        """
        input_ids = ops.convert_to_tensor(input_ids)
        if len(input_ids.shape) != 2:
            raise ValueError(
                f"input_ids must be [batch_size, seq_length], got shape "
                f"{_shape_text(input_ids)}")
        input_mask = (ops.ones_like(input_ids) if input_mask is None
                      else ops.convert_to_tensor(input_mask))
        segment_ids = (ops.zeros_like(input_ids) if segment_ids is None
                       else ops.convert_to_tensor(segment_ids))
        optional = tuple(
            (arg_name, ops.convert_to_tensor(tensor))
            for arg_name, tensor in (("position_ids", position_ids),
                                     ("sequence_ids", sequence_ids))
            if tensor is not None)
        for arg_name, tensor in (("input_mask", input_mask),
                                 ("segment_ids", segment_ids)) + optional:
            if not _compatible_shapes(tensor.shape, input_ids.shape):
                raise ValueError(
                    f"{arg_name} must have the shape of input_ids "
                    f"{_shape_text(input_ids)}, got {_shape_text(tensor)}")

        embedding_output = self.embeddings(
            input_ids, segment_ids, training=training,
            position_ids=position_ids)
        # One mask for all layers, float32: [batch, 1, 1, seq], or
        # [batch, 1, seq, seq] with causal attention or sequence ids.
        attention_bias = attention_bias_from_mask(
            input_mask, causal=self.causal_attention,
            sequence_ids=sequence_ids)
        encoder_outputs = self.encoder(
            embedding_output, attention_bias, training=training)
        sequence_output = encoder_outputs[-1]
        pooled_positions = (last_token_positions(input_mask)
                            if self.causal_attention else None)
        pooled_output = self.pooler(sequence_output, pooled_positions)
        return {
            "sequence_output": sequence_output,
            "pooled_output": pooled_output,
            "encoder_outputs": encoder_outputs,
            "embedding_output": embedding_output,
        }

    @property
    def _default_save_signature(self):
        """What `tf.saved_model.save(model, path)` exports as serving_default.

        int32 `input_ids`, `input_mask`, `segment_ids` [batch, seq] ->
        `sequence_output` and `pooled_output` (see `save_signature`).
        """
        import tensorflow as tf  # pylint: disable=import-outside-toplevel
        specs = int_feature_specs(("input_ids", "input_mask",
                                   "segment_ids"))

        @tf.function(input_signature=[specs])
        def serving_default(features):
            outputs = self(features["input_ids"],
                           input_mask=features["input_mask"],
                           segment_ids=features["segment_ids"],
                           training=False)
            return {"sequence_output": outputs["sequence_output"],
                    "pooled_output": outputs["pooled_output"]}

        return serving_default

    def get_config(self):
        """Keras config: Google's config dict under "config", plus Keras'."""
        return {**super().get_config(), "config": self.config.to_dict(),
                "causal_attention": self.causal_attention}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        bert_config = BertConfig.from_dict(config.pop("config"))
        return cls(bert_config, **config)
