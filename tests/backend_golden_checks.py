"""The golden checks on a non-TensorFlow Keras backend (run by
`test_keras_backends.py` in a pytest process of its own, since Keras picks
its backend once per process: `KERAS_BACKEND=jax pytest
tests/backend_golden_checks.py`).

Each check compares against a reference that does not run the code under
test: Google's own `extract_features.py` output (`tests/golden/`), and
Google's forward pass written in NumPy (`modeling_harness.np_bert_forward`)
for the masked-LM head and a fine-tuned classifier. The checkpoint is read
with TensorFlow (`tf.train.load_checkpoint`, installed with the package);
tokenization, batching and the model run without it.
"""

import gzip
import json
import os

import keras
import numpy as np
import pytest

from bert_tf import api
from bert_tf import checkpoints
from bert_tf.features import extract_features
from tests import modeling_harness
from tests.modeling_harness import (np_bert_forward, np_gelu, np_layer_norm,
                                    np_softmax)

# The contract: Google's numbers to float32 round-off.
TOLERANCE = 1e-5


@pytest.fixture(scope="module", autouse=True)
def _not_tensorflow():
    backend = keras.backend.backend()
    if backend == "tensorflow":
        pytest.skip("the TensorFlow backend is checked by the other tests "
                    "(run this file with KERAS_BACKEND=jax)")


@pytest.fixture(scope="module")
def tiny(cased_tiny_dir):
    return api.load(cased_tiny_dir, max_seq_length=48)


@pytest.fixture(scope="module")
def weights(cased_tiny_dir):
    with checkpoints.open_checkpoint(cased_tiny_dir) as tensors:
        return {name: np.asarray(tensors[name], np.float64)
                for name in tensors}


def _golden_features(golden_dir):
    with gzip.open(golden_dir / "extract_features" /
                   "expected_output.jsonl.gz", "rt") as reader:
        return [json.loads(line) for line in reader]


def test_extract_features_writes_googles_json(tmp_path, golden_dir,
                                              cased_tiny_dir):
    """Google's command line of tests/golden/README.md, on this backend."""
    output = tmp_path / "features.jsonl"
    count = extract_features(
        input_file=golden_dir / "extract_features" / "input.txt",
        output_file=str(output),
        bert_config_file=cased_tiny_dir / "bert_config.json",
        init_checkpoint=str(cased_tiny_dir / "bert_model.ckpt"),
        vocab_file=cased_tiny_dir / "vocab.txt", layers="-1,-2",
        max_seq_length=48, do_lower_case=False, batch_size=4)
    expected = _golden_features(golden_dir)
    written = [json.loads(line) for line in output.read_text().splitlines()]
    assert count == len(expected) == len(written)
    largest = 0.0
    for google, ours in zip(expected, written):
        assert ours["linex_index"] == google["linex_index"]
        assert [f["token"] for f in ours["features"]] == [
            f["token"] for f in google["features"]]
        for google_token, our_token in zip(google["features"],
                                           ours["features"]):
            for google_layer, our_layer in zip(google_token["layers"],
                                               our_token["layers"]):
                assert our_layer["index"] == google_layer["index"]
                largest = max(largest, np.max(np.abs(
                    np.subtract(our_layer["values"],
                                google_layer["values"]))))
    print(f"extract_features on {keras.backend.backend()}: largest "
          f"difference from Google's {largest:.2e}")
    assert largest <= TOLERANCE


def test_embed_matches_googles_extract_features(tiny, golden_dir, weights):
    modeling_harness.assert_embed_matches_googles_features(
        tiny, golden_dir, weights, count=8)


def test_fill_mask_matches_googles_masked_lm_head(tiny, weights,
                                                  cased_tiny_dir):
    vocab = (cased_tiny_dir / "vocab.txt").read_text(
        encoding="utf-8").splitlines()
    ids = {piece: i for i, piece in enumerate(vocab)}
    # By hand: the pieces of the cased vocabulary, [MASK] kept whole.
    pieces = ["[CLS]", "The", "[MASK]", "of", "the", "k", "##ing", ".",
              "[SEP]"]
    [result] = tiny.fill_mask(["The [MASK] of the  king."], top_k=4)
    row = np.array([[ids[p] for p in pieces]])
    hidden = np_bert_forward(weights, tiny.bert_config, row,
                             np.ones_like(row), np.zeros_like(row))[
                                 "sequence_output"][0, [2]]
    hidden = np_layer_norm(
        np_gelu(hidden @ weights["cls/predictions/transform/dense/kernel"]
                + weights["cls/predictions/transform/dense/bias"]),
        weights["cls/predictions/transform/LayerNorm/gamma"],
        weights["cls/predictions/transform/LayerNorm/beta"])
    probabilities = np_softmax(
        hidden @ weights["bert/embeddings/word_embeddings"].T
        + weights["cls/predictions/output_bias"])[0]
    top = np.argsort(-probabilities)[:4]
    assert [c["token_id"] for c in result[0]] == list(top)
    assert [c["token"] for c in result[0]] == [vocab[i] for i in top]
    np.testing.assert_allclose([c["probability"] for c in result[0]],
                               probabilities[top], atol=TOLERANCE)


def _fine_tuned_classifier(directory, cased_tiny_dir, weights, labels):
    """A run_classifier.py --output_dir: the tiny encoder and a random
    classifier head (`output_weights`, `output_bias`) in a checkpoint."""
    rng = np.random.default_rng(35)
    tensors = {name: value.astype(np.float32)
               for name, value in weights.items()}
    tensors["output_weights"] = rng.normal(
        scale=0.5, size=(len(labels), 32)).astype(np.float32)
    tensors["output_bias"] = rng.normal(size=len(labels)).astype(np.float32)
    os.makedirs(directory)
    checkpoints.save_checkpoint(tensors,
                                os.path.join(directory, "model.ckpt-1"))
    for name in ("bert_config.json", "vocab.txt"):
        (directory / name).write_bytes((cased_tiny_dir / name).read_bytes())
    (directory / "bert_tf_run.json").write_text(json.dumps({
        "program": "run_classifier.py", "task": "classification",
        "max_seq_length": 48, "do_lower_case": False,
        "causal_attention": False, "label_list": labels,
        "is_regression": False, "has_text_b": True}))
    return tensors


def test_fine_tuned_classifier_probabilities_are_googles(tmp_path,
                                                         cased_tiny_dir,
                                                         weights):
    labels = ["contradiction", "entailment", "neutral"]
    run_dir = tmp_path / "run"
    tensors = _fine_tuned_classifier(run_dir, cased_tiny_dir, weights,
                                     labels)
    model = api.load(run_dir)
    pairs = [("The king of the land.", "A man at his home."),
             ("at his", "The end of the day of the king")]
    results = model.predict(pairs)
    tokenizer = model.tokenizer()
    for (text_a, text_b), result in zip(pairs, results):
        tokens_a, tokens_b = (tokenizer.tokenize(text_a),
                              tokenizer.tokenize(text_b))
        tokens = ["[CLS]"] + tokens_a + ["[SEP]"] + tokens_b + ["[SEP]"]
        row = np.array([tokenizer.convert_tokens_to_ids(tokens)])
        segments = np.array([[0] * (len(tokens_a) + 2)
                             + [1] * (len(tokens_b) + 1)])
        pooled = np_bert_forward(weights, model.bert_config, row,
                                 np.ones_like(row), segments)[
                                     "pooled_output"][0]
        expected = np_softmax(pooled @ tensors["output_weights"].T
                              + tensors["output_bias"])
        np.testing.assert_allclose(result["probabilities"], expected,
                                   atol=TOLERANCE)
        assert result["label"] == labels[int(np.argmax(expected))]
