"""The cross-entropy every BERT head is trained with, as Google writes it."""

import tensorflow as tf


def cross_entropy(logits, label_ids):
    """Each row's cross-entropy, `-sum(one_hot(label) * log_softmax(logits))`.

    Google's heads (masked LM, next sentence, classifier, SQuAD start/end)
    all compute this in float32, whatever precision the model ran in.

    Args:
      logits: [..., num_classes], any float dtype.
      label_ids: [...] integer class ids.

    Returns:
      float32 [...]: one loss per row.
    """
    logits = tf.cast(logits, tf.float32)
    log_probs = tf.nn.log_softmax(logits, axis=-1)
    one_hot = tf.one_hot(tf.cast(label_ids, tf.int32),
                         depth=tf.shape(logits)[-1], dtype=tf.float32)
    return -tf.reduce_sum(one_hot * log_probs, axis=-1)
