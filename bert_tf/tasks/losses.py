"""The cross-entropy every BERT head is trained with, as Google writes it."""

from keras import ops


def cross_entropy(logits, label_ids):
    """Each row's cross-entropy, `-sum(one_hot(label) * log_softmax(logits))`.

    Google's heads (masked LM, next sentence, classifier, SQuAD start/end)
    all compute this in float32, whatever precision the model ran in.
    Written in `keras.ops`: the same on every Keras backend.

    Args:
      logits: [..., num_classes], any float dtype.
      label_ids: [...] integer class ids.

    Returns:
      float32 [...]: one loss per row.
    """
    logits = ops.cast(logits, "float32")
    log_probs = ops.log_softmax(logits, axis=-1)
    one_hot = ops.one_hot(ops.cast(label_ids, "int32"),
                          ops.shape(logits)[-1], dtype="float32")
    return -ops.sum(one_hot * log_probs, axis=-1)
