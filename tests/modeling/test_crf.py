"""The CRF against brute-force enumeration of every tag sequence."""

import itertools

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.modeling import crf


def _brute_force(unary, transitions, length):
    """(log Z, best tags, all scores) by enumerating K^length sequences."""
    num_tags = unary.shape[1]
    scores = {}
    for tags in itertools.product(range(num_tags), repeat=length):
        score = sum(unary[t, tag] for t, tag in enumerate(tags))
        score += sum(transitions[a, b] for a, b in zip(tags, tags[1:]))
        scores[tags] = score
    if not scores or length == 0:
        return 0.0, (), {(): 0.0}
    values = np.array(list(scores.values()))
    log_z = values.max() + np.log(np.exp(values - values.max()).sum())
    best = max(scores, key=scores.get)
    return log_z, best, scores


@pytest.mark.parametrize("num_tags, time", [(1, 3), (2, 1), (3, 4), (4, 3)])
def test_log_partition_likelihood_and_viterbi_match_enumeration(num_tags,
                                                                 time):
    rng = np.random.default_rng(num_tags * 10 + time)
    batch = 6
    unary = rng.normal(size=(batch, time, num_tags)).astype(np.float32) * 2
    transitions = rng.normal(size=(num_tags, num_tags)).astype(np.float32)
    lengths = rng.integers(0, time + 1, size=batch)
    lengths[0] = time
    mask = (np.arange(time)[None] < lengths[:, None]).astype(np.int32)
    gold = rng.integers(0, num_tags, size=(batch, time)).astype(np.int32)

    log_z = crf.log_partition(tf.constant(unary), tf.constant(mask),
                              tf.constant(transitions)).numpy()
    likelihood = crf.log_likelihood(
        tf.constant(unary), tf.constant(gold), tf.constant(mask),
        tf.constant(transitions)).numpy()
    decoded = crf.viterbi_decode(tf.constant(unary), tf.constant(mask),
                                 tf.constant(transitions)).numpy()
    for row in range(batch):
        length = lengths[row]
        reference_log_z, best, scores = _brute_force(
            unary[row, :length].astype(np.float64), transitions, length)
        assert log_z[row] == pytest.approx(reference_log_z, abs=1e-4)
        gold_score = scores[tuple(gold[row, :length])]
        assert likelihood[row] == pytest.approx(
            gold_score - reference_log_z, abs=1e-4)
        assert tuple(decoded[row, :length]) == best


def test_layer_variable_name_and_gradients():
    layer = crf.LinearChainCRF(3)
    unary = tf.Variable(tf.random.normal([2, 4, 3]))
    tags = tf.constant([[0, 1, 2, 1], [2, 2, 0, 0]])
    mask = tf.constant([[1, 1, 1, 1], [1, 1, 0, 0]])
    with tf.GradientTape() as tape:
        loss = -tf.reduce_sum(layer(unary, tags, mask))
    assert [v.path for v in layer.weights] == ["crf/transitions"]
    gradients = tape.gradient(loss, [unary, layer.transitions])
    assert all(g is not None for g in gradients)
    # Padded positions get no gradient.
    np.testing.assert_allclose(gradients[0].numpy()[1, 2:], 0.0)
