"""The additive attention mask: 0 for keys to attend to, -10000 for padding."""

import tensorflow as tf

# Google's value: large enough that softmax gives masked keys ~0 weight, small
# enough to stay finite in float16. It is added in float32, to float32 scores.
MASK_ADDER = -10000.0


def attention_bias_from_mask(input_mask):
    """Turns the padding mask into the bias added to every layer's scores.

    Google's `create_attention_mask_from_input_mask` builds a
    [batch, from_seq, to_seq] mask whose rows are all the same; this keeps the
    single row and lets broadcasting repeat it over heads and query positions.
    Computed once per forward pass and shared by every layer.

    Args:
      input_mask: int or bool tensor [batch_size, seq_length]; 1 for real
        tokens, 0 for padding.

    Returns:
      float32 tensor [batch_size, 1, 1, seq_length]: (1 - mask) * -10000.
    """
    mask = tf.cast(input_mask, tf.float32)
    bias = (1.0 - mask) * MASK_ADDER
    return bias[:, tf.newaxis, tf.newaxis, :]
