"""The additive attention mask: 0 for keys to attend to, -10000 for the rest.

The rest is padding and, for a left-to-right (causal) encoder, every key after
the query's own position.
"""

import tensorflow as tf

# Google's value: large enough that softmax gives masked keys ~0 weight, small
# enough to stay finite in float16. It is added in float32, to float32 scores.
MASK_ADDER = -10000.0


def attention_bias_from_mask(input_mask, causal=False):
    """Turns the padding mask into the bias added to every layer's scores.

    Google's `create_attention_mask_from_input_mask` builds a
    [batch, from_seq, to_seq] mask whose rows are all the same; by default
    this keeps the single row and lets broadcasting repeat it over heads and
    query positions. With `causal`, the rows differ (query i may only see
    keys j <= i, as in the left-to-right LM of the BERT paper's ablation,
    section 5.1), so the full [from_seq, to_seq] square is built. Either way
    it is computed once per forward pass and shared by every layer.

    A key that is padding, or in the future, or both, gets exactly -10000:
    the two masks are multiplied (logical and) before the bias is formed.

    Args:
      input_mask: int or bool tensor [batch_size, seq_length]; 1 for real
        tokens, 0 for padding.
      causal: also hide from each query position every later key position.

    Returns:
      float32 tensor, `(1 - mask) * -10000`:
        [batch_size, 1, 1, seq_length] by default;
        [batch_size, 1, seq_length, seq_length] with `causal`, indexed
        [batch, head (broadcast), query, key].
    """
    mask = tf.cast(input_mask, tf.float32)
    # [batch, 1, 1, to_seq]: one row, repeated over heads and queries.
    # (expand_dims, not [:, None, None, :]: TensorFlow Lite's built-in ops
    # have no strided slice that adds axes.)
    mask = tf.expand_dims(tf.expand_dims(mask, 1), 1)
    if causal:
        seq_length = tf.shape(input_mask)[1]
        # Lower triangle of ones, [from_seq, to_seq]: 1 where key <= query.
        causal_mask = tf.linalg.band_part(
            tf.ones([seq_length, seq_length], tf.float32), -1, 0)
        # [batch, 1, 1, to] * [1, 1, from, to] -> [batch, 1, from, to].
        mask = mask * causal_mask[tf.newaxis, tf.newaxis, :, :]
    return (1.0 - mask) * MASK_ADDER
