"""BERT's input embeddings: word + token type + position, then LayerNorm."""

import keras

from bert_tf.modeling.layers import LayerNorm
from bert_tf.modeling.layers import dropout
from bert_tf.modeling.layers import gather_rows
from bert_tf.modeling.layers import tensorflow_or_none
from bert_tf.modeling.layers import weight_initializer


class BertEmbeddings(keras.layers.Layer):
    """Google's `embedding_lookup` + `embedding_postprocessor`.

    embeddings = dropout(LayerNorm(word[input_ids] + token_type[segment_ids]
                                   + position[0:seq_length]))

    (or + position[position_ids], for rows that pack several sequences, each
    numbered from 0).

    Variables (under the enclosing "bert" scope): `embeddings/word_embeddings`
    [vocab_size, hidden_size], `embeddings/token_type_embeddings`
    [type_vocab_size, hidden_size], `embeddings/position_embeddings`
    [max_position_embeddings, hidden_size] and
    `embeddings/LayerNorm/{gamma,beta}`.
    """

    def __init__(self, config, name="embeddings", **kwargs):
        super().__init__(name=name, **kwargs)
        self.config = config
        self.layer_norm = LayerNorm(name="LayerNorm", dtype=self.dtype_policy)

    def build(self, input_ids_shape=None):
        config = self.config
        # The tables are read in float32 (autocast=False): a lookup needs only
        # its rows, not a half-precision copy of the whole table.
        self.word_embeddings = self.add_weight(
            name="word_embeddings",
            shape=(config.vocab_size, config.hidden_size),
            initializer=weight_initializer(config.initializer_range),
            autocast=False)
        self.token_type_embeddings = self.add_weight(
            name="token_type_embeddings",
            shape=(config.type_vocab_size, config.hidden_size),
            initializer=weight_initializer(config.initializer_range),
            autocast=False)
        self.position_embeddings = self.add_weight(
            name="position_embeddings",
            shape=(config.max_position_embeddings, config.hidden_size),
            initializer=weight_initializer(config.initializer_range),
            autocast=False)
        self.layer_norm.build((None, None, config.hidden_size))

    def call(self, input_ids, segment_ids, training=False,
             position_ids=None):
        """Embeds a batch of token ids.

        Args:
          input_ids: int tensor [batch_size, seq_length].
          segment_ids: int tensor [batch_size, seq_length].
          training: whether to apply dropout.
          position_ids: optional int tensor [batch_size, seq_length], each
            token's position (default: 0 .. seq_length - 1 in every row).

        Returns:
          Tensor [batch_size, seq_length, hidden_size] in the compute dtype.

        Raises:
          ValueError: seq_length is known and exceeds max_position_embeddings.
        """
        max_positions = self.config.max_position_embeddings
        seq_length = input_ids.shape[1]
        if seq_length is not None and seq_length > max_positions:
            raise ValueError(
                f"input_ids has sequence length {seq_length}, longer than "
                f"the model's max_position_embeddings ({max_positions}); "
                f"use a max_seq_length of at most {max_positions}")
        if seq_length is None:
            # Only TensorFlow traces graphs of unknown sequence length.
            tf = tensorflow_or_none()
            too_long_check = tf.debugging.assert_less_equal(
                tf.shape(input_ids)[1], max_positions,
                message=(f"input_ids is longer than the model's "
                         f"max_position_embeddings ({max_positions})"))
            # In a graph, the check must run before the position slice:
            # otherwise the sum below may fail first, on mismatched shapes.
            with tf.control_dependencies([too_long_check]):
                seq_length = tf.identity(tf.shape(input_ids)[1])

        # Gathering from the variable reads only the looked-up rows.
        # [batch, seq, hidden] each:
        words = gather_rows(self.word_embeddings.value, input_ids)
        token_types = gather_rows(
            self.token_type_embeddings.value, segment_ids)
        if position_ids is None:
            # Positions 0..seq_length-1, broadcast over the batch:
            # [1, seq, hidden].
            positions = self.position_embeddings.value[:seq_length][None]
        else:
            # [batch, seq, hidden]
            positions = gather_rows(self.position_embeddings.value,
                                    position_ids)
        embeddings = words + token_types + positions
        embeddings = self.layer_norm(embeddings)
        return dropout(embeddings, self.config.hidden_dropout_prob, training,
                       sequence_axes=(1,))
