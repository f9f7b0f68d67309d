"""`BiLSTM`: a bidirectional LSTM over the encoder's sequence output.

The BERT paper's "LTR & No NSP + BiLSTM" row (section 5.1, table 5): a
left-to-right encoder sees no right context, so for SQuAD the authors
added a randomly initialized BiLSTM between it and the span head; its
backward direction carries each token's right context. Not in Google's
released code, so the names follow TensorFlow 1's `bidirectional_dynamic_rnn`
with an `LSTMCell`, under a `bilstm` scope, with Keras' three tensors per
direction (input and recurrent kernels apart, gates in Keras' i, f, c, o
order):

    bilstm/fw/lstm_cell/kernel            [input_size, 4 * units]
    bilstm/fw/lstm_cell/recurrent_kernel  [units, 4 * units]
    bilstm/fw/lstm_cell/bias              [4 * units]
    bilstm/bw/lstm_cell/...               (the same, right to left)
"""

import keras
from keras import ops

from bert_tf.modeling.layers import checkpoint_scope


@keras.saving.register_keras_serializable(package="bert_tf")
class BiLSTM(keras.layers.Layer):
    """[batch, seq, input_size] -> [batch, seq, 2 * units].

    Position t's output is the concatenation of a left-to-right LSTM's
    state after reading tokens 0..t and a right-to-left LSTM's state after
    reading the real tokens from the last one down to t. Padding (where
    `input_mask` is 0; BERT pads at the end) is skipped: the right-to-left
    direction starts at each example's last real token, so a padded
    example gets, at its real positions, what it would get unpadded.
    """

    def __init__(self, units, name="bilstm", **kwargs):
        """Args:
          units: the state size of each direction, a positive int.
          name: the checkpoint scope of the variables ("bilstm").
          **kwargs: Keras layer arguments (`dtype`, `trainable`).

        Raises:
          ValueError: `units` is not a positive int.
        """
        super().__init__(name=name, **kwargs)
        if isinstance(units, bool) or not isinstance(units, int) or units < 1:
            raise ValueError(f"BiLSTM units must be a positive integer, got "
                             f"{units!r}")
        self.units = units
        # Under serving's bfloat16 policy the LSTMs keep their (small)
        # variables in float32 and compute in bfloat16: the orthogonal
        # initializer's QR decomposition has no bfloat16 kernel.
        policy = self.dtype_policy
        if policy.variable_dtype == "bfloat16":
            policy = keras.DTypePolicy("mixed_bfloat16")
        # Keras' defaults: glorot-uniform kernels, orthogonal recurrent
        # kernels, forget-gate bias 1 -- the random initialization.
        self.forward_lstm = keras.layers.LSTM(
            units, return_sequences=True, name="fw", dtype=policy)
        self.backward_lstm = keras.layers.LSTM(
            units, return_sequences=True, go_backwards=True, name="bw",
            dtype=policy)

    def build(self, sequence_shape):
        input_shape = (None, None, sequence_shape[-1])
        with checkpoint_scope(self.name):
            self.forward_lstm.build(input_shape)
            self.backward_lstm.build(input_shape)

    def call(self, sequence, input_mask=None, training=False):
        """Runs both directions.

        Args:
          sequence: [batch, seq, input_size].
          input_mask: optional int tensor [batch, seq], 1 for real tokens
            (default: all real).
          training: unused (no dropout); Keras' argument.

        Returns:
          [batch, seq, 2 * units]: forward states, then backward states.
          At padding positions the forward half repeats the last real
          state and the backward half is zero.
        """
        del training
        mask = None if input_mask is None else ops.cast(input_mask, "bool")
        forward = self.forward_lstm(sequence, mask=mask)
        # go_backwards reads the sequence from its end and returns the
        # states in that (reversed) order; reversed back, position t holds
        # the state after reading tokens seq-1 .. t (padding skipped).
        backward = ops.flip(self.backward_lstm(sequence, mask=mask), axis=1)
        return ops.concatenate([forward, backward], axis=-1)

    def get_config(self):
        return {**super().get_config(), "units": self.units}
