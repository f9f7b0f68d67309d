"""The MLM, next-sentence, classifier and span heads against numpy."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.modeling import (BertModel, ClassifierHead, MaskedLMHead,
                              NextSentenceHead, SpanHead)
from bert_tf.modeling.layers import dropout
from modeling_harness import (BERT_DROPOUT, NP_ACTIVATIONS, np_layer_norm,
                              randomize, tiny_bert_config, variables_of)

TOLERANCE = 1e-5
HIDDEN, VOCAB = 32, 100


def tiny():
    return tiny_bert_config(**BERT_DROPOUT)


def expected_head_variables(num_labels=3):
    """Google's names: run_pretraining.py, run_classifier.py, run_squad.py."""
    return {
        "mlm": [
            ("cls/predictions/output_bias", (VOCAB,)),
            ("cls/predictions/transform/dense/kernel", (HIDDEN, HIDDEN)),
            ("cls/predictions/transform/dense/bias", (HIDDEN,)),
            ("cls/predictions/transform/LayerNorm/gamma", (HIDDEN,)),
            ("cls/predictions/transform/LayerNorm/beta", (HIDDEN,)),
        ],
        "nsp": [("cls/seq_relationship/output_weights", (2, HIDDEN)),
                ("cls/seq_relationship/output_bias", (2,))],
        "classifier": [("output_weights", (num_labels, HIDDEN)),
                       ("output_bias", (num_labels,))],
        "span": [("cls/squad/output_weights", (2, HIDDEN)),
                 ("cls/squad/output_bias", (2,))],
    }


def build_heads(config, bert, num_labels=3):
    heads = {"mlm": MaskedLMHead(config, bert.embedding_table),
             "nsp": NextSentenceHead(config),
             "classifier": ClassifierHead(config, num_labels),
             "span": SpanHead(config)}
    for head in heads.values():
        head.build()
    return heads


@pytest.fixture(scope="module")
def encoder_and_heads():
    """A random tiny BertModel and random heads (do not modify)."""
    config = tiny()
    bert = BertModel(config)
    bert.build()
    randomize(bert, seed=21)
    heads = build_heads(config, bert)
    for seed, head in enumerate(heads.values()):
        randomize(head, seed=30 + seed)
    return bert, heads


def _np(variable):
    return np.asarray(variable.numpy(), np.float64)


def _by_path(head):
    return {v.path: _np(v) for v in head.weights}


def _random_sequence(seed, batch=3, seq=9):
    rng = np.random.default_rng(seed)
    return rng.normal(0.0, 1.0, (batch, seq, HIDDEN)).astype(np.float32)


# --- names ---


def _sorted(variables):
    return sorted(variables)

def test_head_variable_paths_and_shapes(encoder_and_heads):
    _, heads = encoder_and_heads
    expected = expected_head_variables()
    for key, head in heads.items():
        assert _sorted(variables_of(head)) == _sorted(expected[key]), key
    # The tied table belongs to the encoder, not to the MLM head.
    assert "bert/embeddings/word_embeddings" not in [
        v.path for v in heads["mlm"].weights]


def test_head_paths_inside_strategy_scope_and_twice_in_one_process():
    config = tiny()
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    with strategy.scope():
        bert = BertModel(config)
        in_scope = build_heads(config, bert, num_labels=5)
    again = build_heads(config, BertModel(config), num_labels=5)
    expected = expected_head_variables(num_labels=5)
    for heads in (in_scope, again):
        for key, head in heads.items():
            assert _sorted(variables_of(head)) == _sorted(expected[key]), key


def test_heads_nested_in_a_pretraining_model_keep_googles_names():
    config = tiny()

    class Pretrainer(keras.Model):
        def __init__(self):
            super().__init__(name="pretrainer")
            self.bert = BertModel(config)
            self.masked_lm = MaskedLMHead(config, self.bert.embedding_table)
            self.next_sentence = NextSentenceHead(config)

        def call(self, input_ids, positions):
            outputs = self.bert(input_ids)
            return (self.masked_lm(outputs["sequence_output"], positions),
                    self.next_sentence(outputs["pooled_output"]))

    model = Pretrainer()
    model(np.zeros((2, 6), np.int32), np.zeros((2, 3), np.int32))
    paths = [v.path for v in model.weights]
    assert len(paths) == len(set(paths))  # the tied table appears once
    expected = expected_head_variables()
    assert {p for p, _ in expected["mlm"] + expected["nsp"]} <= set(paths)
    assert all(p.startswith(("bert/", "cls/")) for p in paths)


# --- numbers ---


def test_masked_lm_head_matches_numpy(encoder_and_heads):
    bert, heads = encoder_and_heads
    head = heads["mlm"]
    sequence_output = _random_sequence(seed=40)
    positions = np.array([[0, 3, 8], [5, 5, 1], [2, 0, 0]], np.int32)
    w = _by_path(head)
    table = _np(bert.embedding_table)

    gathered = np.stack([sequence_output[b, positions[b]]
                         for b in range(3)]).astype(np.float64)
    x = NP_ACTIVATIONS["gelu"](
        gathered @ w["cls/predictions/transform/dense/kernel"]
        + w["cls/predictions/transform/dense/bias"])
    x = np_layer_norm(x, w["cls/predictions/transform/LayerNorm/gamma"],
                      w["cls/predictions/transform/LayerNorm/beta"])
    expected = x @ table.T + w["cls/predictions/output_bias"]

    logits = head(sequence_output, positions)
    assert logits.shape == (3, 3, VOCAB) and logits.dtype == tf.float32
    np.testing.assert_allclose(logits, expected, atol=TOLERANCE)
    # int64 positions (as parsed from TFRecords) give the same logits.
    np.testing.assert_allclose(head(sequence_output,
                                    positions.astype(np.int64)), logits)


def test_masked_lm_head_is_tied_to_the_embedding_table():
    config = tiny()
    bert = BertModel(config)
    head = MaskedLMHead(config, bert.embedding_table)
    assert head.embedding_table is bert.embedding_table
    sequence_output = _random_sequence(seed=41, batch=2, seq=4)
    positions = np.array([[1, 2], [0, 3]], np.int32)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(head(sequence_output, positions) ** 2)
    gradient = tape.gradient(loss, bert.embedding_table)
    assert gradient is not None
    assert np.abs(tf.convert_to_tensor(gradient)).max() > 0
    before = head(sequence_output, positions)
    bert.embedding_table.assign(bert.embedding_table * 2.0)
    assert np.abs(head(sequence_output, positions) - before).max() > 1e-3


def test_next_sentence_head_matches_numpy(encoder_and_heads):
    _, heads = encoder_and_heads
    w = _by_path(heads["nsp"])
    pooled = _random_sequence(seed=42)[:, 0]
    expected = (pooled @ w["cls/seq_relationship/output_weights"].T
                + w["cls/seq_relationship/output_bias"])
    logits = heads["nsp"](pooled)
    assert logits.shape == (3, 2) and logits.dtype == tf.float32
    np.testing.assert_allclose(logits, expected, atol=TOLERANCE)


def test_classifier_head_matches_numpy_and_drops_out_when_training(
        encoder_and_heads):
    _, heads = encoder_and_heads
    head = heads["classifier"]
    w = _by_path(head)
    pooled = _random_sequence(seed=43, batch=64)[:, 0]
    expected = pooled @ w["output_weights"].T + w["output_bias"]
    np.testing.assert_allclose(head(pooled), expected, atol=TOLERANCE)
    np.testing.assert_array_equal(head(pooled), head(pooled, training=False))
    # Dropout 0.1 on the pooled output: the logits move, and the dropped
    # fraction over 64 x 32 values is near 0.1.
    trained = head(pooled, training=True)
    assert np.abs(trained - expected).max() > 1e-3
    dropped = dropout(tf.ones([64, HIDDEN]), 0.1, training=True)
    assert 0.05 < float(tf.reduce_mean(tf.cast(dropped == 0, tf.float32))
                        ) < 0.15


def test_span_head_matches_numpy(encoder_and_heads):
    _, heads = encoder_and_heads
    w = _by_path(heads["span"])
    sequence_output = _random_sequence(seed=44)
    both = (sequence_output.astype(np.float64)
            @ w["cls/squad/output_weights"].T
            + w["cls/squad/output_bias"])  # [batch, seq, 2]
    start, end = heads["span"](sequence_output)
    assert start.shape == end.shape == (3, 9)
    np.testing.assert_allclose(start, both[..., 0], atol=TOLERANCE)
    np.testing.assert_allclose(end, both[..., 1], atol=TOLERANCE)


def test_heads_under_jit_match_eager(encoder_and_heads):
    _, heads = encoder_and_heads
    sequence_output = _random_sequence(seed=48, batch=2, seq=6)
    positions = np.array([[1, 4], [0, 5]], np.int32)

    def forward(sequence_output, masked_positions):
        pooled_output = sequence_output[:, 0]
        return (heads["mlm"](sequence_output, masked_positions),
                heads["nsp"](pooled_output),
                heads["classifier"](pooled_output),
                heads["span"](sequence_output))

    eager = forward(sequence_output, positions)
    compiled = tf.function(forward, jit_compile=True)(sequence_output,
                                                       positions)
    for got, want in zip(tf.nest.flatten(compiled), tf.nest.flatten(eager)):
        np.testing.assert_allclose(got, want, atol=TOLERANCE)


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_heads_under_mixed_precision_give_float32_logits(encoder_and_heads,
                                                         policy):
    bert, heads = encoder_and_heads
    config = tiny()
    sequence_output = _random_sequence(seed=45, batch=2, seq=5)
    positions = np.array([[1, 2], [3, 4]], np.int32)
    mixed = {"mlm": MaskedLMHead(config, bert.embedding_table, dtype=policy),
             "nsp": NextSentenceHead(config, dtype=policy),
             "classifier": ClassifierHead(config, 3, dtype=policy),
             "span": SpanHead(config, dtype=policy)}
    for key, head in mixed.items():
        head.build()
        for variable, source in zip(head.weights, heads[key].weights):
            assert variable.dtype == "float32"
            variable.assign(source)
    half_sequence = tf.cast(sequence_output, policy.split("_")[1])
    pairs = [
        (mixed["mlm"](half_sequence, positions),
         heads["mlm"](sequence_output, positions)),
        (mixed["nsp"](half_sequence[:, 0]),
         heads["nsp"](sequence_output[:, 0])),
        (mixed["classifier"](half_sequence[:, 0]),
         heads["classifier"](sequence_output[:, 0])),
        (mixed["span"](half_sequence)[0], heads["span"](sequence_output)[0]),
    ]
    for got, want in pairs:
        assert got.dtype == tf.float32
        assert np.isfinite(got).all()
        np.testing.assert_allclose(got, want, atol=0.1 * (
            1 + np.abs(want).max()))


# --- serialization and bad input ---


def test_head_configs_round_trip():
    config = tiny()
    for head in (NextSentenceHead(config), ClassifierHead(config, 7),
                 SpanHead(config)):
        head.build()
        restored = type(head).from_config(head.get_config())
        assert restored.config == config and restored.name == head.name
        restored.build()
        assert variables_of(restored) == variables_of(head)
    assert ClassifierHead.from_config(
        ClassifierHead(config, 7).get_config()).num_labels == 7
    mlm = MaskedLMHead(config, BertModel(config).embedding_table)
    with pytest.raises(ValueError, match=r"cannot be rebuilt from its config "
                       r"alone; create it as MaskedLMHead\(bert_config, "
                       r"bert_model.embedding_table\)"):
        MaskedLMHead.from_config(mlm.get_config())


def test_bad_head_arguments():
    config = tiny()
    for bad in (0, -1, 2.0, "2", True):
        with pytest.raises(ValueError, match=r"num_labels must be a positive "
                           r"integer, got " + repr(bad).replace(".", r"\.")):
            ClassifierHead(config, bad)
    with pytest.raises(ValueError, match=r"embedding_table must be "
                       r"\[vocab_size, hidden_size\] = \[100, 32\] for this "
                       r"config, got \[200, 32\]"):
        MaskedLMHead(config, tf.Variable(tf.zeros([200, 32])))
    with pytest.raises(TypeError, match="config must be a BertConfig"):
        NextSentenceHead(config.to_dict())
    head = MaskedLMHead(config, BertModel(config).embedding_table)
    with pytest.raises(ValueError, match=r"masked_lm_positions must be "
                       r"\[batch_size, num_predictions\]"):
        head(_random_sequence(seed=46), np.array([1, 2], np.int32))
    with pytest.raises(ValueError, match=r"sequence_output must be "
                       r"\[batch_size, seq_length, hidden_size\]"):
        SpanHead(config)(_random_sequence(seed=47)[:, 0])
