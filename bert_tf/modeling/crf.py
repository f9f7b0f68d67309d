"""A linear-chain conditional random field over tag sequences.

The score of tags y_1..y_n for unary (per-word) scores u is

    score(y) = sum_t u[t, y_t] + sum_{t>1} transitions[y_{t-1}, y_t]

and p(y) = exp(score(y)) / Z with Z = sum over all K^n sequences. Training
minimizes -log p(gold) = log Z - score(gold), with log Z from the forward
algorithm; prediction is the Viterbi argmax. Sequences are the unmasked
prefix of each row (`mask` is 1 for the first `n` positions, then 0); a row
with no position has score 0 and log Z = 0.
"""

import keras
from keras import ops

from bert_tf.modeling.layers import checkpoint_scope


def sequence_scores(unary_scores, tags, mask, transitions):
    """score(tags) of each row.

    Args:
      unary_scores: float32 [batch, time, num_tags].
      tags: int32 [batch, time].
      mask: [batch, time], 1 on each row's prefix of real positions.
      transitions: float32 [num_tags, num_tags], from-tag x to-tag.

    Returns:
      float32 [batch].
    """
    mask = ops.cast(mask, "float32")
    tags = ops.cast(tags, "int32")
    num_tags = ops.shape(transitions)[-1]
    # unary_scores[b, t, tags[b, t]], as a one-hot sum (exact: one term).
    unary = ops.sum(unary_scores * ops.one_hot(tags, num_tags),
                    axis=2)  # [b, t]
    # transitions[from, to], read from the flat table at from * K + to.
    pair = ops.take(ops.reshape(transitions, [-1]),
                    tags[:, :-1] * num_tags + tags[:, 1:])  # [b, t - 1]
    return (ops.sum(unary * mask, axis=1)
            + ops.sum(pair * mask[:, 1:], axis=1))


def log_partition(unary_scores, mask, transitions):
    """log Z of each row, by the forward algorithm.

    Args:
      unary_scores: float32 [batch, time, num_tags].
      mask: [batch, time], 1 on each row's prefix of real positions.
      transitions: float32 [num_tags, num_tags].

    Returns:
      float32 [batch].
    """
    unary_scores = ops.convert_to_tensor(unary_scores)
    mask = ops.cast(mask, "bool")
    # alpha[b, j]: log-sum of the scores of all prefixes ending in tag j.
    alpha = unary_scores[:, 0]

    def step(t, alpha):
        unary = ops.take(unary_scores, t, axis=1)  # [b, k]
        real = ops.take(mask, t, axis=1)  # [b]
        candidates = alpha[:, :, None] + transitions[None]  # [b, from, to]
        new_alpha = ops.logsumexp(candidates, axis=1) + unary
        return ops.where(real[:, None], new_alpha, alpha)

    # A loop over time (its length may be known only when the graph runs).
    alpha = ops.fori_loop(1, ops.shape(unary_scores)[1], step, alpha)
    return ops.where(mask[:, 0], ops.logsumexp(alpha, axis=1), 0.0)


def log_likelihood(unary_scores, tags, mask, transitions):
    """log p(tags) = score(tags) - log Z of each row; float32 [batch]."""
    return (sequence_scores(unary_scores, tags, mask, transitions)
            - log_partition(unary_scores, mask, transitions))


def _first_argmax(values, axis):
    """The index of the first largest entry along `axis`, int32.

    `keras.ops.argmax` adds ops (for negative zeros) that TensorFlow Lite
    has no built-in for; max, equal, select and min are built-ins.
    """
    best = ops.max(values, axis=axis, keepdims=True)
    size = ops.shape(values)[axis]
    shape = [1] * len(values.shape)
    shape[axis] = -1
    index = ops.reshape(ops.arange(size, dtype="int32"), shape)
    return ops.min(ops.where(ops.equal(values, best), index, size),
                   axis=axis)


def viterbi_decode(unary_scores, mask, transitions):
    """The highest-scoring tag sequence of each row.

    Two while loops over time (forward: the best score of each tag and its
    backpointer; backward: follow the pointers). The pointers and tags are
    kept in fixed-size tensors written by one-hot adds rather than in
    TensorArrays, so that TensorFlow's graph has TensorFlow Lite built-in
    ops only (the tagging export's `serving_ids` converts).

    Args:
      unary_scores: float32 [batch, time, num_tags].
      mask: [batch, time], 1 on each row's prefix of real positions.
      transitions: float32 [num_tags, num_tags].

    Returns:
      int32 [batch, time]: the best tags on the real positions (past a
      row's end, its last tag repeated).
    """
    unary_scores = ops.convert_to_tensor(unary_scores)
    mask = ops.cast(mask, "bool")
    batch_size, num_steps, num_tags = ops.shape(unary_scores)
    steps = ops.arange(num_steps, dtype="int32")
    tag_numbers = ops.arange(num_tags, dtype="int32")
    # Past a row's end, each tag points to itself.
    identity = ops.broadcast_to(tag_numbers, [batch_size, num_tags])

    def forward(t, delta, pointers):
        candidates = delta[:, :, None] + transitions[None]  # [b, from, to]
        best_previous = _first_argmax(candidates, axis=1)
        new_delta = (ops.max(candidates, axis=1)
                     + ops.take(unary_scores, t, axis=1))
        real = ops.take(mask, t, axis=1)[:, None]  # [b, 1]
        step_pointers = ops.where(real, best_previous, identity)  # [b, k]
        at_t = ops.cast(ops.equal(steps, t), "int32")[:, None, None]
        return (t + 1, ops.where(real, new_delta, delta),
                pointers + at_t * step_pointers[None])  # [time, b, k]

    _, final_delta, pointers = ops.while_loop(
        lambda t, delta, pointers: t < num_steps, forward,
        (ops.convert_to_tensor(1, "int32"), unary_scores[:, 0],
         ops.zeros([num_steps, batch_size, num_tags], "int32")))
    last_tags = _first_argmax(final_delta, axis=1)  # [b]

    def backward(t, tag, tags):
        at_t = ops.cast(ops.equal(steps, t), "int32")[:, None]
        step_pointers = ops.take(pointers, t, axis=0)  # [b, k]
        # step_pointers[b, tag[b]], as a one-hot sum.
        previous = ops.sum(
            ops.where(ops.equal(tag_numbers[None], tag[:, None]),
                      step_pointers, 0), axis=1)  # [b]
        return t - 1, previous, tags + at_t * tag[None]  # [time, b]

    _, _, tags = ops.while_loop(
        lambda t, tag, tags: t >= 0, backward,
        (ops.convert_to_tensor(num_steps - 1, "int32"), last_tags,
         ops.zeros([num_steps, batch_size], "int32")))
    return ops.transpose(tags)


@keras.saving.register_keras_serializable(package="bert_tf")
class LinearChainCRF(keras.layers.Layer):
    """Holds the transition scores; `crf/transitions` [num_tags, num_tags].

    The layer is called for the log-likelihood of gold tags (training) and
    `decode` gives the Viterbi tags (prediction).
    """

    def __init__(self, num_tags, name="crf", **kwargs):
        """Args:
          num_tags: number of tags.
          name: the checkpoint scope of the variable ("crf").
        """
        super().__init__(name=name, **kwargs)
        if isinstance(num_tags, bool) or not isinstance(
                num_tags, int) or num_tags < 1:
            raise ValueError(
                f"num_tags must be a positive integer, got {num_tags!r}")
        self.num_tags = num_tags

    def build(self, input_shape=None):
        with checkpoint_scope(self.name):
            # Zeros: training starts from the per-token softmax's view.
            self.transitions = keras.Variable(
                initializer="zeros", shape=(self.num_tags, self.num_tags),
                dtype="float32", autocast=False, name="transitions")

    def call(self, unary_scores, tags, mask):
        """log p(tags | unary scores), float32 [batch]."""
        return log_likelihood(ops.cast(unary_scores, "float32"), tags, mask,
                              self.transitions)

    def decode(self, unary_scores, mask):
        """Viterbi tags, int32 [batch, time]."""
        return viterbi_decode(ops.cast(unary_scores, "float32"), mask,
                              self.transitions)

    def get_config(self):
        return {**super().get_config(), "num_tags": self.num_tags}
