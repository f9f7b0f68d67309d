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
import tensorflow as tf

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
    mask = tf.cast(mask, tf.float32)
    tags = tf.cast(tags, tf.int32)
    unary = tf.gather(unary_scores, tags, axis=2, batch_dims=2)  # [b, t]
    pair = tf.gather_nd(transitions,
                        tf.stack([tags[:, :-1], tags[:, 1:]], axis=-1))
    return (tf.reduce_sum(unary * mask, axis=1)
            + tf.reduce_sum(pair * mask[:, 1:], axis=1))


def log_partition(unary_scores, mask, transitions):
    """log Z of each row, by the forward algorithm.

    Args:
      unary_scores: float32 [batch, time, num_tags].
      mask: [batch, time], 1 on each row's prefix of real positions.
      transitions: float32 [num_tags, num_tags].

    Returns:
      float32 [batch].
    """
    mask = tf.cast(mask, tf.bool)
    # alpha[b, j]: log-sum of the scores of all prefixes ending in tag j.
    alpha = unary_scores[:, 0]

    def step(alpha, inputs):
        unary, real = inputs  # [b, k], [b]
        candidates = alpha[:, :, None] + transitions[None]  # [b, from, to]
        new_alpha = tf.reduce_logsumexp(candidates, axis=1) + unary
        return tf.where(real[:, None], new_alpha, alpha)

    if unary_scores.shape[1] != 1:
        alpha = tf.foldl(
            step, (tf.transpose(unary_scores[:, 1:], [1, 0, 2]),
                   tf.transpose(mask[:, 1:])), initializer=alpha)
    return tf.where(mask[:, 0], tf.reduce_logsumexp(alpha, axis=1), 0.0)


def log_likelihood(unary_scores, tags, mask, transitions):
    """log p(tags) = score(tags) - log Z of each row; float32 [batch]."""
    return (sequence_scores(unary_scores, tags, mask, transitions)
            - log_partition(unary_scores, mask, transitions))


def viterbi_decode(unary_scores, mask, transitions):
    """The highest-scoring tag sequence of each row.

    Two `tf.while_loop`s over time (forward: the best score of each tag
    and its backpointer; backward: follow the pointers). The pointers and
    tags are kept in fixed-size tensors written by one-hot adds rather than
    in TensorArrays, so that the graph has TensorFlow Lite built-in ops only
    (the tagging export's `serving_ids` converts).

    Args:
      unary_scores: float32 [batch, time, num_tags].
      mask: [batch, time], 1 on each row's prefix of real positions.
      transitions: float32 [num_tags, num_tags].

    Returns:
      int32 [batch, time]: the best tags on the real positions (past a
      row's end, its last tag repeated).
    """
    mask = tf.cast(mask, tf.bool)
    batch_size = tf.shape(unary_scores)[0]
    num_steps = tf.shape(unary_scores)[1]
    num_tags = tf.shape(unary_scores)[2]
    steps = tf.range(num_steps)
    # Past a row's end, each tag points to itself.
    identity = tf.broadcast_to(tf.range(num_tags), [batch_size, num_tags])

    def forward(t, delta, pointers):
        candidates = delta[:, :, None] + transitions[None]  # [b, from, to]
        best_previous = tf.argmax(candidates, axis=1, output_type=tf.int32)
        new_delta = tf.reduce_max(candidates, axis=1) + unary_scores[:, t]
        real = mask[:, t][:, None]  # [b, 1]
        step_pointers = tf.where(real, best_previous, identity)  # [b, k]
        at_t = tf.cast(tf.equal(steps, t), tf.int32)[:, None, None]
        return (t + 1, tf.where(real, new_delta, delta),
                pointers + at_t * step_pointers[None])  # [time, b, k]

    _, final_delta, pointers = tf.while_loop(
        lambda t, delta, pointers: t < num_steps, forward,
        (tf.constant(1), unary_scores[:, 0],
         tf.zeros([num_steps, batch_size, num_tags], tf.int32)))
    last_tags = tf.argmax(final_delta, axis=1, output_type=tf.int32)  # [b]

    def backward(t, tag, tags):
        at_t = tf.cast(tf.equal(steps, t), tf.int32)[:, None]
        step_pointers = tf.gather(pointers, t)  # [b, k]
        previous = tf.gather(step_pointers, tag[:, None], axis=1,
                             batch_dims=1)[:, 0]  # [b]
        return t - 1, previous, tags + at_t * tag[None]  # [time, b]

    _, _, tags = tf.while_loop(
        lambda t, tag, tags: t >= 0, backward,
        (num_steps - 1, last_tags,
         tf.zeros([num_steps, batch_size], tf.int32)))
    return tf.transpose(tags)


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
        return log_likelihood(tf.cast(unary_scores, tf.float32), tags, mask,
                              self.transitions)

    def decode(self, unary_scores, mask):
        """Viterbi tags, int32 [batch, time]."""
        return viterbi_decode(tf.cast(unary_scores, tf.float32), mask,
                              self.transitions)

    def get_config(self):
        return {**super().get_config(), "num_tags": self.num_tags}
