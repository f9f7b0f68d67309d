"""BertModel against Google's names and formulas (numpy) and Model Garden."""

import math
import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.config import BertConfigError
from bert_tf.modeling import layers as modeling_layers
from bert_tf.modeling import (BertModel, ClassifierHead, LayerNorm,
                              attention_bias_from_mask, gelu, get_activation)
from modeling_harness import (BERT_DROPOUT, expected_bert_variables,
                              np_bert_forward, np_layer_norm, random_batch,
                              randomize, tiny_bert_config, variables_of,
                              weights_by_path)

TOLERANCE = 1e-5


def tiny(**changes):
    return tiny_bert_config(**{**BERT_DROPOUT, **changes})


@pytest.fixture(scope="module")
def random_model():
    """A tiny float32 BertModel with random weights (do not modify)."""
    model = BertModel(tiny())
    model.build()
    randomize(model, seed=1)
    return model


@pytest.fixture(scope="module")
def padded_batch():
    config = tiny()
    return random_batch(config, batch_size=3, seq_length=12, seed=2,
                        pad_from=[None, 7, 3])


def _assert_outputs_close(actual, expected, atol=TOLERANCE):
    for key in ("sequence_output", "pooled_output", "embedding_output"):
        np.testing.assert_allclose(
            np.asarray(actual[key], np.float64), expected[key], rtol=0,
            atol=atol, err_msg=key)
    assert len(actual["encoder_outputs"]) == len(expected["encoder_outputs"])
    for layer, (got, want) in enumerate(zip(actual["encoder_outputs"],
                                            expected["encoder_outputs"])):
        np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=0,
                                   atol=atol, err_msg=f"layer {layer}")


# --- Google's variable names ---


def test_variable_paths_are_googles_names_for_two_layers():
    config = tiny()
    model = BertModel(config)
    model.build()
    assert variables_of(model) == expected_bert_variables(config)
    # Nothing beyond the weights: no dropout seed state to trip checkpoints.
    assert [v.path for v in model.variables] == [v.path for v in model.weights]


def test_paths_stay_exact_for_second_model_and_when_nested():
    config = tiny()
    expected = expected_bert_variables(config)
    first, second = BertModel(config), BertModel(config)
    first.build()
    second.build()
    assert variables_of(second) == expected

    class TaskModel(keras.Model):
        def __init__(self):
            super().__init__(name="task_model")
            self.encoder = BertModel(config)
            self.classifier = ClassifierHead(config, num_labels=3)

        def call(self, input_ids):
            return self.classifier(self.encoder(input_ids)["pooled_output"])

    task = TaskModel()
    task(np.zeros((1, 4), np.int32))  # built lazily, inside "task_model"
    assert variables_of(task) == expected + [
        ("output_weights", (3, 32)), ("output_bias", (3,))]


def test_paths_inside_a_distribution_strategy_scope(random_model,
                                                    padded_batch):
    config = tiny()
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    with strategy.scope():
        model = BertModel(config)
        model.build()
    assert variables_of(model) == expected_bert_variables(config)
    assert isinstance(model.weights[0].value, tf.distribute.DistributedValues)
    for mirrored, source in zip(model.weights, random_model.weights):
        mirrored.assign(source)

    @tf.function
    def replica_step(*inputs):
        return strategy.run(lambda *x: model(*x)["sequence_output"],
                            args=inputs)

    expected = np_bert_forward(weights_by_path(random_model), config,
                               *padded_batch)
    np.testing.assert_allclose(replica_step(*padded_batch).numpy(),
                               expected["sequence_output"], atol=TOLERANCE)


# --- Google's numbers ---


def test_outputs_match_numpy_reference(random_model, padded_batch):
    expected = np_bert_forward(weights_by_path(random_model), tiny(),
                               *padded_batch)
    _assert_outputs_close(random_model(*padded_batch), expected)


@pytest.mark.parametrize("hidden_act", ["relu", "tanh", "linear"])
def test_other_activations_match_numpy_reference(hidden_act):
    config = tiny(hidden_act=hidden_act, num_hidden_layers=1)
    model = BertModel(config)
    model.build()
    randomize(model, seed=3)
    batch = random_batch(config, 2, 5, seed=4, pad_from=[None, 2])
    expected = np_bert_forward(weights_by_path(model), config, *batch)
    _assert_outputs_close(model(*batch), expected)


def test_head_size_not_a_power_of_four_matches_numpy_reference():
    # 1/sqrt(head_size) is not a power of two here: checks the scaling itself.
    config = tiny(hidden_size=30, num_attention_heads=3, num_hidden_layers=1)
    model = BertModel(config)
    model.build()
    randomize(model, seed=5)
    batch = random_batch(config, 2, 6, seed=6, pad_from=[4, None])
    expected = np_bert_forward(weights_by_path(model), config, *batch)
    _assert_outputs_close(model(*batch), expected)


def test_mask_and_token_types_default_to_ones_and_zeros(random_model):
    input_ids, _, _ = random_batch(tiny(), 2, 6, seed=7)
    implicit = random_model(input_ids)
    explicit = random_model(input_ids, np.ones_like(input_ids),
                            np.zeros_like(input_ids))
    np.testing.assert_array_equal(implicit["sequence_output"],
                                  explicit["sequence_output"])


def test_padding_does_not_change_real_tokens(random_model):
    input_ids, _, segment_ids = random_batch(tiny(), 1, 5, seed=8)
    short = random_model(input_ids, np.ones_like(input_ids), segment_ids)
    padded_ids = np.concatenate([input_ids, [[7, 9, 11]]], axis=1)
    padded_types = np.concatenate([segment_ids, [[1, 0, 1]]], axis=1)
    mask = np.array([[1, 1, 1, 1, 1, 0, 0, 0]], np.int32)
    padded = random_model(padded_ids, mask, padded_types)
    np.testing.assert_allclose(padded["sequence_output"][:, :5],
                               short["sequence_output"], atol=TOLERANCE)
    np.testing.assert_allclose(padded["pooled_output"],
                               short["pooled_output"], atol=TOLERANCE)


# --- the attention mask: Google's padding mask, and the causal option ---


def _np_attention_bias(input_mask, causal):
    """[batch, 1, from, to] bias, built entry by entry from the definitions."""
    batch, seq = input_mask.shape
    bias = np.zeros((batch, 1, seq, seq))
    for b in range(batch):
        for query in range(seq):
            for key in range(seq):
                visible = input_mask[b, key] == 1 and (
                    not causal or key <= query)
                bias[b, 0, query, key] = 0.0 if visible else -10000.0
    return bias


def test_default_attention_bias_is_googles_padding_mask():
    input_mask = np.array([[1, 1, 1, 0], [1, 0, 0, 0]], np.int32)
    bias = attention_bias_from_mask(input_mask)
    assert bias.dtype == tf.float32
    # One row per example, broadcast over heads and queries.
    assert bias.shape == (2, 1, 1, 4)
    np.testing.assert_array_equal(
        bias[:, 0, 0, :], [[0, 0, 0, -10000], [0, -10000, -10000, -10000]])
    # Broadcast over queries, it is Google's [batch, 1, from, to] adder.
    np.testing.assert_array_equal(
        np.broadcast_to(bias, (2, 1, 4, 4)),
        _np_attention_bias(input_mask, causal=False))


def test_causal_attention_bias_matches_numpy():
    input_mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0],
                           [1, 0, 0, 0, 0]], np.int32)
    bias = attention_bias_from_mask(input_mask, causal=True)
    assert bias.dtype == tf.float32 and bias.shape == (3, 1, 5, 5)
    np.testing.assert_array_equal(bias,
                                  _np_attention_bias(input_mask, causal=True))
    # Future and padding together are -10000, not -20000.
    assert float(bias[1, 0, 0, 4]) == -10000.0
    # Spelled out for the padded example: row = query, column = key.
    np.testing.assert_array_equal(bias[1, 0] / -10000.0, [
        [0, 1, 1, 1, 1],
        [0, 0, 1, 1, 1],
        [0, 0, 0, 1, 1],
        [0, 0, 0, 1, 1],
        [0, 0, 0, 1, 1]])


@pytest.fixture(scope="module")
def causal_model(random_model):
    """random_model's weights in a causal BertModel (do not modify)."""
    model = BertModel(tiny(), causal_attention=True)
    model.build()
    for target, source in zip(model.weights, random_model.weights):
        assert target.path == source.path
        target.assign(source)
    return model


def test_causal_outputs_ignore_later_tokens(causal_model, random_model):
    config = tiny()
    input_ids, input_mask, segment_ids = random_batch(
        config, 2, 10, seed=21, pad_from=[None, 8])
    t = 4
    changed_ids = input_ids.copy()
    changed_ids[:, t + 1:] = (changed_ids[:, t + 1:] + 7) % config.vocab_size
    changed_types = segment_ids.copy()
    changed_types[:, t + 1:] = 1 - changed_types[:, t + 1:]
    before = causal_model(input_ids, input_mask, segment_ids)
    after = causal_model(changed_ids, input_mask, changed_types)
    for got, want in zip(after["encoder_outputs"], before["encoder_outputs"]):
        np.testing.assert_allclose(got[:, :t + 1], want[:, :t + 1],
                                   rtol=0, atol=1e-6)
        # The later positions did change: the comparison can fail.
        assert np.abs(got[:, t + 1:] - want[:, t + 1:]).max() > 1e-3
    # The bidirectional model, same weights, sees the change everywhere.
    bidirectional_before = random_model(input_ids, input_mask, segment_ids)
    bidirectional_after = random_model(changed_ids, input_mask,
                                       changed_types)
    assert np.abs(bidirectional_after["sequence_output"][:, :t + 1]
                  - bidirectional_before["sequence_output"][:, :t + 1]
                  ).max() > 1e-3


def test_one_causal_layer_matches_numpy_on_each_prefix():
    """With one layer, causal output t = bidirectional output t of tokens 0..t.

    The reference is Google's formulas in numpy (the harness), run on each
    prefix of real tokens.
    """
    config = tiny(num_hidden_layers=1)
    model = BertModel(config, causal_attention=True)
    model.build()
    randomize(model, seed=22)
    weights = weights_by_path(model)
    input_ids, input_mask, segment_ids = random_batch(
        config, 2, 7, seed=23, pad_from=[None, 5])
    outputs = model(input_ids, input_mask, segment_ids)
    for example, length in enumerate([7, 5]):
        for t in range(length):
            prefix = slice(example, example + 1), slice(0, t + 1)
            expected = np_bert_forward(weights, config, input_ids[prefix],
                                       input_mask[prefix],
                                       segment_ids[prefix])
            np.testing.assert_allclose(
                np.asarray(outputs["sequence_output"][example, t],
                           np.float64),
                expected["sequence_output"][0, t], rtol=0, atol=TOLERANCE,
                err_msg=f"example {example}, position {t}")


def test_causal_model_has_googles_variables_and_config():
    config = tiny()
    model = BertModel(config, causal_attention=True)
    model.build()
    # Same checkpoint names as the bidirectional model.
    assert variables_of(model) == expected_bert_variables(config)
    keras_config = model.get_config()
    assert keras_config["causal_attention"] is True
    restored = BertModel.from_config(keras_config)
    assert restored.causal_attention is True
    assert BertModel(config).get_config()["causal_attention"] is False


def test_model_garden_bert_encoder_agrees():
    """Same weights in Model Garden's BertEncoder: same outputs."""
    from official.nlp.modeling import networks
    import tf_keras

    config = tiny()
    model = BertModel(config)
    model.build()
    randomize(model, seed=9)
    w = {v.path: v.numpy() for v in model.weights}
    h, n = config.hidden_size, config.num_attention_heads
    d = h // n
    garden = networks.BertEncoder(
        vocab_size=config.vocab_size, hidden_size=h,
        num_layers=config.num_hidden_layers, num_attention_heads=n,
        max_sequence_length=config.max_position_embeddings,
        type_vocab_size=config.type_vocab_size,
        inner_dim=config.intermediate_size,
        inner_activation=lambda x: tf_keras.activations.gelu(
            x, approximate=True),
        output_dropout=0.0, attention_dropout=0.0, dict_outputs=True)
    batch = random_batch(config, 3, 10, seed=10, pad_from=[None, 4, 8])
    garden_inputs = dict(input_word_ids=batch[0], input_mask=batch[1],
                         input_type_ids=batch[2])
    garden(garden_inputs)

    # Model Garden's weights in creation order: (name ending, value).
    values = [
        ("word_embeddings/embeddings", w["bert/embeddings/word_embeddings"]),
        ("position_embedding/embeddings",
         w["bert/embeddings/position_embeddings"]),
        ("type_embeddings/embeddings",
         w["bert/embeddings/token_type_embeddings"]),
        ("layer_norm/gamma", w["bert/embeddings/LayerNorm/gamma"]),
        ("layer_norm/beta", w["bert/embeddings/LayerNorm/beta"]),
    ]
    for layer in range(config.num_hidden_layers):
        p = f"bert/encoder/layer_{layer}"
        for projection in ("query", "key", "value"):
            base = f"{p}/attention/self/{projection}"
            values += [
                (f"{projection}/kernel", w[f"{base}/kernel"].reshape(h, n, d)),
                (f"{projection}/bias", w[f"{base}/bias"].reshape(n, d)),
            ]
        values += [
            ("attention_output/kernel",
             w[f"{p}/attention/output/dense/kernel"].reshape(n, d, h)),
            ("attention_output/bias", w[f"{p}/attention/output/dense/bias"]),
            ("self_attention_layer_norm/gamma",
             w[f"{p}/attention/output/LayerNorm/gamma"]),
            ("self_attention_layer_norm/beta",
             w[f"{p}/attention/output/LayerNorm/beta"]),
            ("intermediate/kernel", w[f"{p}/intermediate/dense/kernel"]),
            ("intermediate/bias", w[f"{p}/intermediate/dense/bias"]),
            ("output/kernel", w[f"{p}/output/dense/kernel"]),
            ("output/bias", w[f"{p}/output/dense/bias"]),
            ("output_layer_norm/gamma", w[f"{p}/output/LayerNorm/gamma"]),
            ("output_layer_norm/beta", w[f"{p}/output/LayerNorm/beta"]),
        ]
    values += [("pooler_transform/kernel", w["bert/pooler/dense/kernel"]),
               ("pooler_transform/bias", w["bert/pooler/dense/bias"])]
    assert len(garden.weights) == len(values)
    for variable, (ending, _) in zip(garden.weights, values):
        name = re.sub(r"_\d+$", "", variable.name.split(":")[0])
        assert re.sub(r"_\d+/", "/", name).endswith(
            re.sub(r"_\d+/", "/", ending)), (variable.name, ending)
    garden.set_weights([value for _, value in values])

    expected = garden(garden_inputs, training=False)
    actual = model(*batch)
    np.testing.assert_allclose(actual["sequence_output"],
                               expected["sequence_output"], atol=TOLERANCE)
    np.testing.assert_allclose(actual["pooled_output"],
                               expected["pooled_output"], atol=TOLERANCE)
    for ours, theirs in zip(actual["encoder_outputs"],
                            expected["encoder_outputs"]):
        np.testing.assert_allclose(ours, theirs, atol=TOLERANCE)


def test_layer_norm_epsilon_is_1e_12():
    # Variance ~1e-10: an epsilon of 1e-6 or 1e-3 would flatten these rows.
    rng = np.random.default_rng(12)
    x = (rng.normal(size=(4, 32)) * 1e-5).astype(np.float32)
    gamma = rng.normal(size=32).astype(np.float32)
    beta = rng.normal(size=32).astype(np.float32)
    layer = LayerNorm()
    layer.build((None, 32))
    layer.set_weights([gamma, beta])
    assert [v.path for v in layer.weights] == ["LayerNorm/gamma",
                                               "LayerNorm/beta"]
    np.testing.assert_allclose(layer(x), np_layer_norm(
        x.astype(np.float64), gamma, beta, epsilon=1e-12), atol=1e-4)


def test_initial_values_follow_googles_initializers():
    config = tiny(initializer_range=0.05)
    model = BertModel(config)
    model.build()
    values = {v.path: v.numpy() for v in model.weights}
    for path, value in values.items():
        if path.endswith(("/bias", "/beta")):
            np.testing.assert_array_equal(value, 0.0, err_msg=path)
        elif path.endswith("/gamma"):
            np.testing.assert_array_equal(value, 1.0, err_msg=path)
        else:  # truncated normal: |x| <= 2 stddev, stddev near 0.05
            assert np.abs(value).max() <= 2 * 0.05 + 1e-7, path
            assert 0.03 < value.std() < 0.06, path
    # Each variable gets its own draw (an unseeded Keras initializer reused
    # would repeat the same values).
    layer = "bert/encoder/layer_0/attention/self"
    assert not np.array_equal(values[f"{layer}/query/kernel"],
                              values[f"{layer}/key/kernel"])


# --- dropout ---


def test_dropout_only_when_training(random_model, padded_batch):
    first = random_model(*padded_batch)["sequence_output"]
    second = random_model(*padded_batch, training=False)["sequence_output"]
    np.testing.assert_array_equal(first, second)
    trained = random_model(*padded_batch, training=True)["sequence_output"]
    trained_again = random_model(*padded_batch,
                                 training=True)["sequence_output"]
    assert np.abs(trained - first).max() > 1e-3
    assert np.abs(trained - trained_again).max() > 1e-3


def seeded_dropout(x, rate, seed, full_length=None, sequence_axes=()):
    """`dropout` as a seeded training step draws it, from a fresh generator."""
    generator = tf.random.Generator.from_seed(seed)
    with modeling_layers.random_generator_scope(generator), \
            modeling_layers.full_length_dropout_scope(full_length):
        return modeling_layers.dropout(tf.constant(x), rate, True,
                                       sequence_axes=sequence_axes).numpy()


@pytest.mark.parametrize("rate", [0.1, 0.5])
def test_seeded_dropout_keeps_one_minus_rate_independently(rate):
    dropped = seeded_dropout(np.ones([16, 4, 32, 32], np.float32), rate,
                             seed=3)
    kept = dropped != 0
    np.testing.assert_allclose(dropped[kept], 1 / (1 - rate), rtol=1e-6)
    # Binomial: mean 1 - rate, standard deviation sqrt(rate (1 - rate) / n).
    n = kept.size
    sigma = math.sqrt(rate * (1 - rate) / n)
    assert abs(kept.mean() - (1 - rate)) < 5 * sigma
    # Neighbours along each axis are kept together as often as independent
    # draws would be: (1 - rate)^2.
    for axis in range(4):
        both = np.logical_and(np.delete(kept, 0, axis=axis),
                              np.delete(kept, -1, axis=axis))
        assert abs(both.mean() - (1 - rate) ** 2) < 0.02, axis
    # Another seed, another mask; the same seed, the same mask.
    other = seeded_dropout(np.ones([16, 4, 32, 32], np.float32), rate,
                           seed=4) != 0
    assert 0.3 < np.mean(other != kept) / (2 * rate * (1 - rate)) < 1.7
    np.testing.assert_array_equal(
        seeded_dropout(np.ones([16, 4, 32, 32], np.float32), rate, seed=3),
        dropped)


@pytest.mark.parametrize("sequence_axes, cut", [
    ((1,), np.s_[:, :9]),                      # [batch, seq, hidden]
    ((2, 3), np.s_[:, :, :9, :9]),             # attention probabilities
])
def test_seeded_dropout_of_a_cut_batch_is_the_full_batch_cut(sequence_axes,
                                                             cut):
    shape = [3, 16, 8] if sequence_axes == (1,) else [3, 2, 16, 16]
    x = np.random.default_rng(0).normal(size=shape).astype(np.float32)
    full = seeded_dropout(x, 0.3, seed=5, full_length=16,
                          sequence_axes=sequence_axes)
    cut_batch = seeded_dropout(x[cut], 0.3, seed=5, full_length=16,
                               sequence_axes=sequence_axes)
    np.testing.assert_array_equal(cut_batch, full[cut])
    # Numbered by the cut shape instead, the masks differ.
    unscoped = seeded_dropout(x[cut], 0.3, seed=5,
                              sequence_axes=sequence_axes)
    assert np.mean((unscoped != 0) != (full[cut] != 0)) > 0.1


def test_gradients_reach_every_variable(random_model, padded_batch):
    with tf.GradientTape() as tape:
        outputs = random_model(*padded_batch, training=True)
        loss = tf.reduce_sum(outputs["pooled_output"] ** 2)
    gradients = tape.gradient(loss, random_model.trainable_variables)
    missing = [v.path for v, g in zip(random_model.trainable_variables,
                                      gradients) if g is None]
    assert not missing


# --- execution modes ---


def test_jit_compile_matches_eager(random_model, padded_batch):
    compiled = tf.function(lambda *x: random_model(*x), jit_compile=True)
    eager = random_model(*padded_batch)
    actual = compiled(*padded_batch)
    for key in ("sequence_output", "pooled_output", "embedding_output"):
        np.testing.assert_allclose(actual[key], eager[key], atol=TOLERANCE,
                                   err_msg=key)
    for got, want in zip(actual["encoder_outputs"], eager["encoder_outputs"]):
        np.testing.assert_allclose(got, want, atol=TOLERANCE)


@pytest.mark.slow
def test_jit_compile_with_dropout(random_model, padded_batch):
    compiled = tf.function(
        lambda *x: random_model(*x, training=True)["sequence_output"],
        jit_compile=True)
    first, second = compiled(*padded_batch), compiled(*padded_batch)
    assert first.shape == (3, 12, 32)
    assert np.isfinite(first).all()
    assert np.abs(first - second).max() > 1e-3  # fresh masks each step


def test_variable_batch_size_and_sequence_length(random_model):
    config = tiny()
    spec = tf.TensorSpec([None, None], tf.int32)

    @tf.function(input_signature=[spec, spec, spec])
    def encode(*inputs):
        return random_model(*inputs)["sequence_output"]

    weights = weights_by_path(random_model)
    for batch_size, seq_length in ((1, 3), (4, 17), (2, 64)):
        batch = random_batch(config, batch_size, seq_length, seed=seq_length,
                             pad_from=[seq_length - 1] + [None] * (
                                 batch_size - 1))
        expected = np_bert_forward(weights, config, *batch)
        np.testing.assert_allclose(encode(*batch), expected["sequence_output"],
                                   atol=TOLERANCE)
    # Unknown length at trace time: the limit is checked when it runs.
    too_long = np.zeros((1, 65), np.int32)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"max_position_embeddings \(64\)"):
        encode(too_long, too_long, too_long)


def test_tf_data_input(random_model):
    config = tiny()
    input_ids, input_mask, segment_ids = random_batch(
        config, 6, 9, seed=11, pad_from=[None, 3, 5, None, 8, 1])
    dataset = tf.data.Dataset.from_tensor_slices(
        {"input_ids": input_ids, "input_mask": input_mask,
         "segment_ids": segment_ids}).batch(4)

    @tf.function
    def encode(features):
        return random_model(features["input_ids"], features["input_mask"],
                            features["segment_ids"])["pooled_output"]

    pooled = np.concatenate([encode(features) for features in dataset])
    expected = np_bert_forward(weights_by_path(random_model), config,
                               input_ids, input_mask, segment_ids)
    np.testing.assert_allclose(pooled, expected["pooled_output"],
                               atol=TOLERANCE)


@pytest.mark.parametrize("policy, tolerance", [("mixed_float16", 2e-2),
                                               ("mixed_bfloat16", 1e-1)])
def test_mixed_precision(random_model, padded_batch, policy, tolerance):
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(policy)  # as the trainer sets it
    try:
        model = BertModel(tiny())
        model.build()
    finally:
        keras.config.set_dtype_policy(previous)
    for variable, source in zip(model.weights, random_model.weights):
        assert variable.dtype == "float32", variable.path
        variable.assign(source)
    outputs = model(*padded_batch)
    expected = random_model(*padded_batch)
    half = policy.split("_")[1]
    for key in ("sequence_output", "pooled_output", "embedding_output"):
        value = np.asarray(tf.cast(outputs[key], tf.float32))
        assert outputs[key].dtype == half, key
        assert np.isfinite(value).all(), key
        np.testing.assert_allclose(value, expected[key], atol=tolerance,
                                   err_msg=key)
    # Gradients exist and are finite in half precision too.
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.cast(
            model(*padded_batch, training=True)["pooled_output"], tf.float32))
    gradients = tape.gradient(loss, model.trainable_variables)
    assert all(g is not None and np.isfinite(tf.convert_to_tensor(g)).all()
               for g in gradients)


# --- serialization ---


def test_get_config_round_trip(tmp_path):
    config = tiny(hidden_act="relu").replace(
        directionality="bidi")  # unknown keys survive too
    model = BertModel(config, name="bert")
    keras_config = model.get_config()
    assert keras_config["config"] == config.to_dict()
    restored = BertModel.from_config(keras_config)
    assert restored.config == config and restored.name == "bert"
    serialized = keras.saving.serialize_keras_object(model)
    deserialized = keras.saving.deserialize_keras_object(serialized)
    assert isinstance(deserialized, BertModel)
    assert deserialized.config == config
    deserialized.build()
    assert variables_of(deserialized) == expected_bert_variables(config)
    # Keras' own .keras format: config and weights come back.
    model.build()
    randomize(model, seed=13)
    ids = np.arange(10, dtype=np.int32).reshape(2, 5)
    model.save(tmp_path / "bert.keras")
    loaded = keras.models.load_model(tmp_path / "bert.keras")
    assert loaded.config == config
    np.testing.assert_array_equal(loaded(ids)["pooled_output"],
                                  model(ids)["pooled_output"])


def test_embedding_table_is_the_word_embedding_variable():
    model = BertModel(tiny())
    table = model.embedding_table  # builds the model
    assert model.built
    assert table.path == "bert/embeddings/word_embeddings"
    assert tuple(table.shape) == (100, 32)
    model.build()  # building again is harmless
    assert model.embedding_table is table


# --- bad input ---


def test_sequence_longer_than_max_position_embeddings():
    model = BertModel(tiny())
    with pytest.raises(ValueError, match=r"input_ids has sequence length 65, "
                       r"longer than the model's max_position_embeddings "
                       r"\(64\)"):
        model(np.zeros((2, 65), np.int32))


def test_input_shapes_are_checked():
    model = BertModel(tiny())
    with pytest.raises(ValueError,
                       match=r"input_ids must be \[batch_size, seq_length\]"):
        model(np.zeros((5,), np.int32))
    ids = np.zeros((2, 5), np.int32)
    with pytest.raises(ValueError, match="input_mask must have the shape of "
                       "input_ids"):
        model(ids, np.ones((2, 4), np.int32))
    with pytest.raises(ValueError, match="segment_ids must have the shape"):
        model(ids, None, np.ones((3, 5), np.int32))


def test_bad_config_is_rejected():
    with pytest.raises(TypeError, match="config must be a BertConfig"):
        BertModel("bert_config.json")
    with pytest.raises(BertConfigError, match="hidden_act"):
        tiny(hidden_act="swish")
    config = tiny()
    config.hidden_act = "swish"  # changed after validation
    with pytest.raises(BertConfigError,
                       match=r"'hidden_act' is 'swish'; supported"):
        BertModel(config)


# --- activations ---


def test_gelu_is_googles_tanh_approximation():
    x = np.linspace(-6.0, 6.0, 49).astype(np.float32)
    expected = 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (
        x + 0.044715 * x.astype(np.float64) ** 3)))
    np.testing.assert_allclose(gelu(tf.constant(x)), expected, atol=1e-6)
    # The exact erf gelu differs here by ~1.5e-4: the approximation is used.
    assert abs(float(gelu(tf.constant(1.0))) - 0.8411920) < 1e-6


def test_get_activation():
    x = tf.constant([-2.0, -0.5, 0.0, 1.5])
    np.testing.assert_array_equal(get_activation("relu")(x), [0, 0, 0, 1.5])
    np.testing.assert_allclose(get_activation("TANH")(x), np.tanh(x),
                               atol=1e-6)
    np.testing.assert_array_equal(get_activation("linear")(x), x)
    np.testing.assert_array_equal(get_activation(None)(x), x)
    assert get_activation("Gelu") is gelu
    assert get_activation(tf.nn.swish) is tf.nn.swish
    with pytest.raises(ValueError, match=r"Unsupported activation 'swish'; "
                       r"supported: gelu, relu, tanh, linear"):
        get_activation("swish")


# --- --attention=fused ---

@pytest.fixture
def counted_fused_calls(monkeypatch):
    """Counts the calls of `keras.ops.dot_product_attention` (the fused op),
    which this test makes sure the fused model reaches."""
    calls = []
    fused = keras.ops.dot_product_attention

    def counting(*args, **kwargs):
        calls.append(1)
        return fused(*args, **kwargs)

    monkeypatch.setattr(keras.ops, "dot_product_attention", counting)
    return calls


@pytest.mark.parametrize("causal", [False, True])
def test_fused_attention_gives_googles_outputs(random_model, padded_batch,
                                               counted_fused_calls, causal):
    """`set_attention(model, "fused")`: every layer's attention is one
    `keras.ops.dot_product_attention` call, and the encoder's outputs are
    Google's (the numpy reference of its formulas, and the model's own
    einsum path) to float32 round-off, with and without dropout switched
    on (the config's dropout is 0), padded, and causal."""
    from bert_tf.modeling import transformer
    model = BertModel(tiny(hidden_dropout_prob=0.0,
                           attention_probs_dropout_prob=0.0),
                      causal_attention=causal)
    model.build()
    for target, source in zip(model.weights, random_model.weights):
        target.assign(source)
    googles = model(*padded_batch)
    assert counted_fused_calls == []
    assert transformer.set_attention(model, "fused", training=True) == 2
    expected = {key: keras.ops.convert_to_numpy(value)
                for key, value in googles.items()}
    for training in (False, True):
        fused = model(*padded_batch, training=training)
        _assert_outputs_close(fused, expected)
    assert len(counted_fused_calls) == 2 * 2  # 2 layers, 2 calls
    if not causal:
        _assert_outputs_close(fused, np_bert_forward(
            weights_by_path(model), tiny(), *padded_batch))
    transformer.set_attention(model, "google", training=True)
    model(*padded_batch)
    assert len(counted_fused_calls) == 4


def test_fused_attention_is_refused_for_training_with_attention_dropout(
        random_model, padded_batch, counted_fused_calls):
    from bert_tf.modeling import transformer
    model = BertModel(tiny(attention_probs_dropout_prob=0.1))
    model.build()
    with pytest.raises(BertConfigError) as raised:
        transformer.set_attention(model, "fused", training=True)
    assert str(raised.value) == (
        "--attention=fused has no attention-probability dropout, but "
        "attention_probs_dropout_prob is 0.1: train with --attention=google "
        "(the default) or with a copy of the config whose "
        "attention_probs_dropout_prob is 0 (evaluation and prediction take "
        "--attention=fused with any config)")
    model(*padded_batch)
    assert counted_fused_calls == []
    # Inference has no dropout: fused with any config.
    assert transformer.set_attention(model, "fused", training=False) == 2
    model(*padded_batch)
    assert len(counted_fused_calls) == 2
    with pytest.raises(ValueError, match=r"^--attention='flash' must be one "
                                         r"of google, fused$"):
        transformer.set_attention(model, "flash", training=False)
