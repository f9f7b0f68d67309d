"""The masked-LM head: predicts the original token at masked positions."""

import keras
import tensorflow as tf

from bert_tf.config import BertConfig
from bert_tf.modeling.activations import get_activation
from bert_tf.modeling.checkpoint_scope import checkpoint_scope
from bert_tf.modeling.initializers import weight_initializer
from bert_tf.modeling.layer_norm import LayerNorm
from bert_tf.modeling.shapes import shape_list


class _Untracked:
    """Holds a variable without making it a weight of the holder.

    The word-embedding table belongs to `BertModel`; were the head to track
    it too, `head.weights` would list a variable that is not the head's.
    """

    def __init__(self, value):
        self.value = value


@keras.saving.register_keras_serializable(package="bert_tf")
class MaskedLMHead(keras.layers.Layer):
    """Google's `get_masked_lm_output` (logits; the loss is the task's).

    x = LayerNorm(act(gather(sequence_output, positions) W_t + b_t))
    logits = x E^T + output_bias,   E = the word-embedding table (tied).

    Gathering the masked positions first keeps the vocabulary projection, the
    costliest matmul of pretraining, to the few predicted positions.

    Variables: `cls/predictions/transform/dense/{kernel,bias}`,
    `cls/predictions/transform/LayerNorm/{gamma,beta}`,
    `cls/predictions/output_bias` [vocab_size].
    """

    def __init__(self, config, embedding_table, name="predictions",
                 **kwargs):
        """Args:
          config: the encoder's `BertConfig`.
          embedding_table: the encoder's word-embedding variable
            [vocab_size, hidden_size] (`BertModel.embedding_table`).
          name: the scope under "cls/"; Google's is "predictions".
          **kwargs: Keras layer arguments (`dtype`, `trainable`).

        Raises:
          TypeError: `config` is not a BertConfig.
          ValueError: the table's shape is not [vocab_size, hidden_size].
        """
        super().__init__(name=name, **kwargs)
        if not isinstance(config, BertConfig):
            raise TypeError(
                f"config must be a BertConfig, got {type(config).__name__}")
        expected = (config.vocab_size, config.hidden_size)
        table_shape = tuple(getattr(embedding_table, "shape", ()) or ())
        if table_shape != expected:
            raise ValueError(
                f"embedding_table must be [vocab_size, hidden_size] = "
                f"{list(expected)} for this config, got "
                f"{list(table_shape) or repr(embedding_table)}")
        self.config = config
        self._embedding_table = _Untracked(embedding_table)
        self.transform_dense = keras.layers.Dense(
            config.hidden_size, name="dense", dtype=self.dtype_policy,
            activation=get_activation(config.hidden_act),
            kernel_initializer=weight_initializer(config.initializer_range))
        self.transform_layer_norm = LayerNorm(
            name="LayerNorm", dtype=self.dtype_policy)

    @property
    def embedding_table(self):
        """The tied word-embedding variable (owned by the encoder)."""
        return self._embedding_table.value

    def build(self, sequence_output_shape=None):
        scope = f"cls/{self.name}"
        with checkpoint_scope(f"{scope}/transform"):
            self.transform_dense.build((None, None, self.config.hidden_size))
            self.transform_layer_norm.build(
                (None, None, self.config.hidden_size))
        with checkpoint_scope(scope):
            # Added to float32 logits, so kept float32 (autocast=False).
            self.output_bias = keras.Variable(
                initializer="zeros", shape=(self.config.vocab_size,),
                dtype=self.variable_dtype, autocast=False,
                name="output_bias")

    def call(self, sequence_output, masked_lm_positions):
        """Scores every vocabulary entry at the masked positions.

        Args:
          sequence_output: [batch_size, seq_length, hidden_size].
          masked_lm_positions: int tensor [batch_size, num_predictions],
            indices into each example's sequence (padding entries may be 0).

        Returns:
          float32 logits [batch_size, num_predictions, vocab_size].
        """
        if sequence_output.shape.rank != 3:
            raise ValueError(
                f"sequence_output must be [batch_size, seq_length, "
                f"hidden_size], got shape {sequence_output.shape}")
        if masked_lm_positions.shape.rank != 2:
            raise ValueError(
                f"masked_lm_positions must be [batch_size, num_predictions], "
                f"got shape {masked_lm_positions.shape}")
        hidden_size = self.config.hidden_size
        batch_size, num_predictions = shape_list(masked_lm_positions)

        # Per example: [batch, seq, hidden] -> [batch, predictions, hidden].
        gathered = tf.gather(sequence_output, masked_lm_positions,
                             batch_dims=1)
        transformed = self.transform_layer_norm(
            self.transform_dense(gathered))
        flat = tf.reshape(transformed, [-1, hidden_size])  # [b * p, hidden]
        table = tf.cast(self.embedding_table, self.compute_dtype)
        # transpose_b: the [vocab, hidden] table is used as stored, uncopied.
        logits = tf.matmul(flat, table, transpose_b=True)  # [b * p, vocab]
        logits = tf.cast(logits, tf.float32) + self.output_bias
        return tf.reshape(
            logits, [batch_size, num_predictions, self.config.vocab_size])

    def get_config(self):
        return {**super().get_config(), "config": self.config.to_dict()}

    @classmethod
    def from_config(cls, config):
        raise ValueError(
            "MaskedLMHead shares the encoder's word embeddings and cannot be "
            "rebuilt from its config alone; create it as "
            "MaskedLMHead(bert_config, bert_model.embedding_table)")
