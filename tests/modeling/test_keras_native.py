"""Task models are Keras-native: `.keras` files and `tf.saved_model.save`.

Every task model (classification, multi-label, which is the classifier's
model, SQuAD, pretraining, tagging with and without a CRF, multiple choice)
is loaded from the Google-format checkpoint of the golden
directory (encoder) with random heads, saved, reloaded, and must give the
same outputs. The encoder's reloaded output is also compared with what
Google's own `extract_features.py` computed from that checkpoint (golden
reference), so a save that lost or scrambled weights cannot pass.
"""

import gzip
import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import checkpoints
from bert_tf.config import BertConfig
from bert_tf.modeling import BertModel
from bert_tf.pretraining.task import BertPretrainingModel
from bert_tf.tasks.classification.task import ClassificationModel
from bert_tf.tasks.multiple_choice.task import MultipleChoiceModel
from bert_tf.tasks.squad.task import SquadModel
from bert_tf.tasks.tagging.task import TaggingModel
from tests.modeling_harness import randomize

GOLDEN_LINE = 2  # "FRANCISCO at his post. Enter to him BERNARDO": one segment


@pytest.fixture(scope="module")
def golden(golden_dir):
    """(config, checkpoint prefix, features of one golden line, Google's
    last-layer output for them)."""
    model_dir = golden_dir / "models" / "cased_tiny"
    config = BertConfig.from_json_file(model_dir / "bert_config.json")
    vocab = {token: index for index, token in enumerate(
        (model_dir / "vocab.txt").read_text(encoding="utf-8").splitlines())}
    path = golden_dir / "extract_features" / "expected_output.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as records:
        record = [json.loads(line) for line in records][GOLDEN_LINE]
    tokens = [feature["token"] for feature in record["features"]]
    assert tokens.count("[SEP]") == 1  # one segment: segment ids all 0
    ids = np.array([[vocab[token] for token in tokens]], np.int32)
    features = {"input_ids": ids, "input_mask": np.ones_like(ids),
                "segment_ids": np.zeros_like(ids)}
    last_layer = np.array([[
        next(layer["values"] for layer in feature["layers"]
             if layer["index"] == -1)
        for feature in record["features"]]], np.float32)
    return config, str(model_dir / "bert_model.ckpt"), features, last_layer


def _from_google_checkpoint(model, checkpoint, seed):
    """Random heads, then the encoder strictly from the checkpoint."""
    randomize(model, seed=seed)
    checkpoints.load_checkpoint(
        [v for v in model.weights if v.path.startswith("bert/")], checkpoint)
    return model


def _masked_lm_features(features):
    seq_length = features["input_ids"].shape[1]
    return {**features,
            "masked_lm_positions": np.array([[1, 3, seq_length - 2]],
                                            np.int32),
            "masked_lm_ids": np.array([[5, 6, 7]], np.int32),
            "masked_lm_weights": np.ones([1, 3], np.float32)}


def _tagging_features(features):
    """Every other token is a word's first piece."""
    seq_length = features["input_ids"].shape[1]
    positions = np.arange(1, seq_length - 1, 2, dtype=np.int32)
    word_positions = np.zeros([1, seq_length], np.int32)
    word_positions[0, :len(positions)] = positions
    return {**features, "word_positions": word_positions,
            "word_mask": (word_positions > 0).astype(np.int32)}


def _multiple_choice_features(features):
    """Three choices: the line, and the line with its last tokens masked."""
    choices = {name: np.repeat(value[:, np.newaxis], 3, axis=1)
               for name, value in features.items()}
    for choice, cut in ((1, 3), (2, 6)):
        choices["input_mask"][0, choice, -cut:] = 0
    return choices


# kind: (build the model from a config, the model's features from the
# golden line's encoder features).
# (Multi-label classification uses ClassificationModel.)
MODELS = {
    "classification": (lambda config: ClassificationModel(config, 3), None),
    "squad": (SquadModel, None),
    "pretraining_mlm_nsp": (BertPretrainingModel, "masked_lm"),
    "pretraining_ltr": (
        lambda config: BertPretrainingModel(config, objective="ltr"),
        "masked_lm"),
    "tagging": (lambda config: TaggingModel(config, 5), "tagging"),
    "tagging_crf": (lambda config: TaggingModel(config, 5, use_crf=True),
                    "tagging"),
    "multiple_choice": (MultipleChoiceModel, "multiple_choice"),
}


def _features(kind, features):
    extra = MODELS[kind][1]
    if extra == "masked_lm":
        return _masked_lm_features(features)
    if extra == "tagging":
        return _tagging_features(features)
    if extra == "multiple_choice":
        return _multiple_choice_features(features)
    return features


def _numpy(outputs):
    return {name: np.asarray(value) for name, value in outputs.items()}


# The classifier, SQuAD and the CRF tagger in the default run; the other
# models extended (`pytest --extended`).
KINDS = [kind if kind in ("classification", "squad", "tagging_crf")
         else pytest.param(kind, marks=pytest.mark.extended(reason=(
             "the other task models; the default run checks the "
             "classifier, SQuAD and the CRF tagger")))
         for kind in sorted(MODELS)]


@pytest.mark.parametrize("kind", KINDS)
def test_keras_file_round_trip(kind, golden, tmp_path):
    config, checkpoint, encoder_features, last_layer = golden
    features = _features(kind, encoder_features)
    model = _from_google_checkpoint(MODELS[kind][0](config), checkpoint,
                                    seed=3)
    expected = _numpy(model(features))

    model.save(tmp_path / "model.keras")
    loaded = keras.models.load_model(tmp_path / "model.keras")

    assert type(loaded) is type(model)
    assert loaded.get_config() == model.get_config()
    assert sorted(v.path for v in loaded.weights) == sorted(
        v.path for v in model.weights)
    actual = _numpy(loaded(features))
    assert actual.keys() == expected.keys()
    for name in expected:
        np.testing.assert_array_equal(actual[name], expected[name])
    if kind != "pretraining_ltr":  # the LTR encoder is causal
        np.testing.assert_allclose(
            loaded.bert(encoder_features["input_ids"])["sequence_output"],
            last_layer, atol=1e-5)


@pytest.mark.parametrize("kind", KINDS)
def test_saved_model_has_int32_signature(kind, golden, tmp_path):
    config, checkpoint, features, _ = golden
    features = _features(kind, features)
    model = _from_google_checkpoint(MODELS[kind][0](config), checkpoint,
                                    seed=5)
    expected = _numpy(model(features))

    tf.saved_model.save(model, str(tmp_path / "saved_model"))
    loaded = tf.saved_model.load(str(tmp_path / "saved_model"))
    serving = loaded.signatures["serving_default"]

    inputs = serving.structured_input_signature[1]
    expected_inputs = {name: tf.float32 if name == "masked_lm_weights"
                       else tf.int32 for name in features}
    if kind != "pretraining_ltr":
        expected_inputs.pop("masked_lm_ids", None)
        expected_inputs.pop("masked_lm_weights", None)
    assert {name: spec.dtype for name, spec in inputs.items()} == (
        expected_inputs)
    actual = _numpy(serving(**{name: tf.constant(features[name])
                               for name in inputs}))
    assert actual.keys() == expected.keys()
    for name in expected:
        np.testing.assert_allclose(actual[name], expected[name], atol=1e-5)


def test_bert_model_saved_model_matches_google(golden, tmp_path):
    config, checkpoint, features, last_layer = golden
    model = BertModel(config)
    model.build()
    checkpoints.load_checkpoint(model, checkpoint)
    tf.saved_model.save(model, str(tmp_path / "encoder"))
    serving = tf.saved_model.load(
        str(tmp_path / "encoder")).signatures["serving_default"]
    outputs = serving(input_ids=tf.constant(features["input_ids"]),
                      input_mask=tf.constant(features["input_mask"]),
                      segment_ids=tf.constant(features["segment_ids"]))
    np.testing.assert_allclose(outputs["sequence_output"], last_layer,
                               atol=1e-5)
    # The signature takes any batch size and sequence length.
    padded = np.pad(features["input_ids"], [(0, 1), (0, 4)])
    mask = (np.arange(padded.shape[1]) < features["input_ids"].shape[1]
            ).astype(np.int32)[np.newaxis].repeat(2, 0)
    outputs = serving(input_ids=tf.constant(padded),
                      input_mask=tf.constant(mask),
                      segment_ids=tf.zeros_like(padded))
    np.testing.assert_allclose(
        outputs["sequence_output"][0, :last_layer.shape[1]], last_layer[0],
        atol=1e-5)
