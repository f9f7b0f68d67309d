"""Shared helpers for the tests: the tiny model, and modeling references.

`tiny_bert_config` is the one tiny `BertConfig` of the test suite (2 layers,
hidden 32). The independent references: Google's variable names written out
by hand, and a float64 numpy forward pass that follows Google's
`modeling.py` formulas line by line without using any bert_tf code.
"""

import math

import numpy as np

from bert_tf.config import BertConfig


# BERT's default dropout, for tests whose tiny model keeps it.
BERT_DROPOUT = dict(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)


def tiny_bert_config(**changes):
    """2 layers, hidden 32, vocab 100, 64 positions; dropout off so runs are
    comparable (pass `hidden_dropout_prob=...` to change any value)."""
    values = dict(vocab_size=100, hidden_size=32, num_hidden_layers=2,
                  num_attention_heads=2, intermediate_size=64,
                  max_position_embeddings=64, type_vocab_size=2,
                  hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    values.update(changes)
    return BertConfig(**values)

# --- Google's checkpoint names, as listed by tf.train.list_variables on a ---
# --- released BERT checkpoint (model variables only, Google's order).     ---


def expected_bert_variables(config):
    """[(name, shape)] of Google's `bert/...` variables for `config`."""
    h, i = config.hidden_size, config.intermediate_size
    names = [
        ("bert/embeddings/word_embeddings", (config.vocab_size, h)),
        ("bert/embeddings/token_type_embeddings", (config.type_vocab_size, h)),
        ("bert/embeddings/position_embeddings",
         (config.max_position_embeddings, h)),
        ("bert/embeddings/LayerNorm/gamma", (h,)),
        ("bert/embeddings/LayerNorm/beta", (h,)),
    ]
    for layer in range(config.num_hidden_layers):
        prefix = f"bert/encoder/layer_{layer}"
        for projection in ("query", "key", "value"):
            names += [
                (f"{prefix}/attention/self/{projection}/kernel", (h, h)),
                (f"{prefix}/attention/self/{projection}/bias", (h,)),
            ]
        names += [
            (f"{prefix}/attention/output/dense/kernel", (h, h)),
            (f"{prefix}/attention/output/dense/bias", (h,)),
            (f"{prefix}/attention/output/LayerNorm/gamma", (h,)),
            (f"{prefix}/attention/output/LayerNorm/beta", (h,)),
            (f"{prefix}/intermediate/dense/kernel", (h, i)),
            (f"{prefix}/intermediate/dense/bias", (i,)),
            (f"{prefix}/output/dense/kernel", (i, h)),
            (f"{prefix}/output/dense/bias", (h,)),
            (f"{prefix}/output/LayerNorm/gamma", (h,)),
            (f"{prefix}/output/LayerNorm/beta", (h,)),
        ]
    names += [
        ("bert/pooler/dense/kernel", (h, h)),
        ("bert/pooler/dense/bias", (h,)),
    ]
    return names


def google_bert_shapes(vocab_size=100, hidden=32, layers=2, intermediate=64,
                       positions=64, types=2, heads=True):
    """{name: shape} of a Google pretraining checkpoint's model tensors:
    `expected_bert_variables`, and the `cls/...` heads unless `heads` is
    False."""
    config = BertConfig(
        vocab_size=vocab_size, hidden_size=hidden, num_hidden_layers=layers,
        num_attention_heads=1, intermediate_size=intermediate,
        max_position_embeddings=positions, type_vocab_size=types)
    shapes = dict(expected_bert_variables(config))
    if heads:
        shapes.update({
            "cls/predictions/transform/dense/kernel": (hidden, hidden),
            "cls/predictions/transform/dense/bias": (hidden,),
            "cls/predictions/transform/LayerNorm/gamma": (hidden,),
            "cls/predictions/transform/LayerNorm/beta": (hidden,),
            "cls/predictions/output_bias": (vocab_size,),
            "cls/seq_relationship/output_weights": (2, hidden),
            "cls/seq_relationship/output_bias": (2,),
        })
    return shapes


def random_tensors(shapes, seed=0, scale=0.5):
    """Random float32 values; LayerNorm gammas around 1 as in trained BERTs."""
    rng = np.random.default_rng(seed)
    tensors = {}
    for name, shape in shapes.items():
        value = rng.normal(0.0, scale, size=shape).astype(np.float32)
        if name.endswith("/gamma"):
            value += 1.0
        tensors[name] = value
    return tensors


def variables_of(layer):
    """[(path, shape)] of a Keras layer's weights, in its order."""
    return [(v.path, tuple(v.shape)) for v in layer.weights]


def randomize(layer, seed, scale=0.3):
    """Gives every weight random values (LayerNorm gammas near 1).

    Initial values (zero biases, unit gammas) would hide a missing bias or a
    swapped gamma/beta; random ones do not.
    """
    rng = np.random.default_rng(seed)
    for variable in layer.weights:
        values = rng.normal(0.0, scale, size=tuple(variable.shape))
        if variable.path.endswith("/gamma"):
            values = 1.0 + values
        variable.assign(values.astype(np.float32))


def weights_by_path(layer):
    """{path: float64 numpy array} of a layer's weights."""
    return {v.path: np.asarray(v.numpy(), np.float64) for v in layer.weights}


def random_batch(config, batch_size, seq_length, seed, pad_from=None):
    """Random (input_ids, input_mask, segment_ids), int32.

    Args:
      pad_from: optional list, one per example, of the first padding
        position (None: no padding).
    """
    rng = np.random.default_rng(seed)
    input_ids = rng.integers(0, config.vocab_size, (batch_size, seq_length))
    segment_ids = rng.integers(0, config.type_vocab_size,
                                  (batch_size, seq_length))
    input_mask = np.ones((batch_size, seq_length))
    for example, start in enumerate(pad_from or []):
        if start is not None:
            input_mask[example, start:] = 0
            input_ids[example, start:] = 0
            segment_ids[example, start:] = 0
    return (input_ids.astype(np.int32), input_mask.astype(np.int32),
            segment_ids.astype(np.int32))


# --- Google's formulas in numpy (float64) ---


def np_gelu(x):
    return 0.5 * x * (1.0 + np.tanh(
        math.sqrt(2.0 / math.pi) * (x + 0.044715 * np.power(x, 3))))


NP_ACTIVATIONS = {
    "gelu": np_gelu,
    "relu": lambda x: np.maximum(x, 0.0),
    "tanh": np.tanh,
    "linear": lambda x: x,
}


def np_layer_norm(x, gamma, beta, epsilon=1e-12):
    mean = x.mean(axis=-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + epsilon) * gamma + beta


def np_softmax(x):
    x = x - x.max(axis=-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)


def np_bert_forward(w, config, input_ids, input_mask, segment_ids):
    """Google's `BertModel` forward pass (inference) in float64 numpy.

    Args:
      w: {Google variable name: array}.

    Returns:
      dict with embedding_output, encoder_outputs (list), sequence_output,
      pooled_output.
    """
    batch, seq = input_ids.shape
    heads = config.num_attention_heads
    head_size = config.hidden_size // heads
    act = NP_ACTIVATIONS[config.hidden_act]

    x = (w["bert/embeddings/word_embeddings"][input_ids]
         + w["bert/embeddings/token_type_embeddings"][segment_ids]
         + w["bert/embeddings/position_embeddings"][:seq][None])
    x = np_layer_norm(x, w["bert/embeddings/LayerNorm/gamma"],
                      w["bert/embeddings/LayerNorm/beta"])
    embedding_output = x

    # create_attention_mask_from_input_mask: [batch, from, to].
    mask = np.ones((batch, seq, 1)) * input_mask[:, None, :]
    adder = (1.0 - mask[:, None, :, :]) * -10000.0  # [batch, 1, from, to]

    def dense(t, name):
        return t @ w[f"{name}/kernel"] + w[f"{name}/bias"]

    def heads_first(t):  # [b, s, h] -> [b, n, s, d]
        return t.reshape(batch, seq, heads, head_size).transpose(0, 2, 1, 3)

    layers = []
    for layer in range(config.num_hidden_layers):
        p = f"bert/encoder/layer_{layer}"
        q = heads_first(dense(x, f"{p}/attention/self/query"))
        k = heads_first(dense(x, f"{p}/attention/self/key"))
        v = heads_first(dense(x, f"{p}/attention/self/value"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(head_size) + adder
        context = np_softmax(scores) @ v  # [b, n, s, d]
        context = context.transpose(0, 2, 1, 3).reshape(batch, seq, -1)
        attention = np_layer_norm(
            dense(context, f"{p}/attention/output/dense") + x,
            w[f"{p}/attention/output/LayerNorm/gamma"],
            w[f"{p}/attention/output/LayerNorm/beta"])
        intermediate = act(dense(attention, f"{p}/intermediate/dense"))
        x = np_layer_norm(
            dense(intermediate, f"{p}/output/dense") + attention,
            w[f"{p}/output/LayerNorm/gamma"], w[f"{p}/output/LayerNorm/beta"])
        layers.append(x)

    pooled = np.tanh(dense(x[:, 0], "bert/pooler/dense"))
    return {"embedding_output": embedding_output, "encoder_outputs": layers,
            "sequence_output": x, "pooled_output": pooled}


def assert_embed_matches_googles_features(model, golden_dir, weights,
                                          count):
    """`model.embed` against Google's extract_features golden output.

    mean_pooled: Google's last layer averaged over every token it wrote
    ([CLS] and [SEP] included); pooled_output: tanh(dense([CLS])) in numpy
    from the checkpoint's `weights`, on Google's [CLS] vector. Google's
    values are rounded to 6 decimals: 1e-5 and the rounding.

    Args:
      model: a `bert_tf.load`ed model of the golden tiny checkpoint.
      golden_dir: tests/golden.
      weights: {name: array} of that checkpoint.
      count: how many one-text lines of the golden input to embed (lines
        "a ||| b" are pairs to extract_features).
    """
    import gzip
    import json
    lines = (golden_dir / "extract_features" / "input.txt").read_text(
        encoding="utf-8").splitlines()
    with gzip.open(golden_dir / "extract_features" /
                   "expected_output.jsonl.gz", "rt") as reader:
        expected = [json.loads(line) for line in reader]
    chosen = [i for i, line in enumerate(lines) if "|||" not in line][:count]
    assert len(chosen) >= 8
    vectors = model.embed([lines[i] for i in chosen])
    for row, index in enumerate(chosen):
        last_layer = np.array(
            [[layer["values"] for layer in feature["layers"]
              if layer["index"] == -1][0]
             for feature in expected[index]["features"]])
        np.testing.assert_allclose(vectors["mean_pooled"][row],
                                   last_layer.mean(axis=0), atol=2e-5)
        pooled = np.tanh(last_layer[0] @ weights["bert/pooler/dense/kernel"]
                         + weights["bert/pooler/dense/bias"])
        np.testing.assert_allclose(vectors["pooled_output"][row], pooled,
                                   atol=2e-5)
