"""The per-token classifier head: Google-style names, numpy reference."""

import numpy as np

from bert_tf.modeling import TokenClassifierHead


def test_names_shapes_and_values(tiny_config):
    head = TokenClassifierHead(tiny_config, 5)
    rng = np.random.default_rng(0)
    sequence = rng.normal(size=(2, 7, tiny_config.hidden_size)).astype(
        np.float32)
    logits = head(sequence).numpy()
    assert {w.path: tuple(w.shape) for w in head.weights} == {
        "output_weights": (5, tiny_config.hidden_size),
        "output_bias": (5,)}
    head.output_bias.assign(rng.normal(size=5).astype(np.float32))
    logits = head(sequence).numpy()
    expected = sequence @ head.output_weights.numpy().T + (
        head.output_bias.numpy())
    np.testing.assert_allclose(logits, expected, rtol=1e-5, atol=1e-6)
    # Dropout only when training.
    assert not np.allclose(head(sequence, training=True).numpy(), expected)
