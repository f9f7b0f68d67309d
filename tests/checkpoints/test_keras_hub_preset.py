"""keras-hub presets: google_to_keras_hub and keras_hub_to_google.

References: Google's own extract_features output on the golden input
(tests/golden, final layer), computed here by keras-hub's BertBackbone
loading the converted preset in a fresh process; and keras-hub's own
BertTextClassifier logits for a preset keras-hub saved itself, reproduced
by the project's BertModel from the converted Google checkpoint. Google's
output again (all layers extract_features writes) from the checkpoint
converted back out of a preset keras-hub re-saved.
"""

import gzip
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from bert_tf import checkpoints
from bert_tf import convert
from bert_tf.config import BertConfig
from bert_tf.features import extraction
from bert_tf.modeling import BertModel
from bert_tf.text import tokenization
from tests.test_extract_features import _assert_matches_golden
from tests.test_extract_features import _golden_arguments

pytest.importorskip("keras_hub", reason='pip install -e ".[hf]"')

GOLDEN_TOLERANCE = 1e-5
# keras-hub's own classifier: ids and segments it is run on.
RANDOM_IDS = [[2, 17, 5, 9, 3, 11, 40, 3, 0, 0],
              [2, 8, 8, 30, 12, 3, 0, 0, 0, 0]]
RANDOM_SEGMENTS = [[0, 0, 0, 0, 0, 1, 1, 1, 0, 0],
                   [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]]

# Run by a fresh Python: keras-hub alone loads what google_to_keras_hub
# wrote, then saves presets of its own for keras_hub_to_google.
KERAS_HUB_SCRIPT = r"""
import json, sys
import numpy as np
import keras
import keras_hub

preset, cases_file, resaved, random_preset, out_file = sys.argv[1:]
with open(cases_file) as reader:
    cases = json.load(reader)
results = {"sequence_output": [], "token_ids": []}
backbone = keras_hub.models.BertBackbone.from_preset(preset)
for case in cases["golden"]:
    ids = np.array([case["ids"]], "int32")
    outputs = backbone({"token_ids": ids,
                        "segment_ids": np.array([case["segments"]], "int32"),
                        "padding_mask": np.ones_like(ids)})
    results["sequence_output"].append(
        np.asarray(outputs["sequence_output"])[0].tolist())
tokenizer = keras_hub.models.BertTokenizer.from_preset(preset)
for text in cases["texts"]:
    results["token_ids"].append(np.asarray(tokenizer(text)).tolist())
classifier = keras_hub.models.BertTextClassifier.from_preset(
    preset, num_classes=3)
results["classifier_logits_shape"] = list(
    classifier.predict(["Who's there?", "Nay, answer me"], verbose=0).shape)
results["classifier_backbone_is_the_preset"] = all(
    np.array_equal(a, b) for a, b in zip(classifier.backbone.get_weights(),
                                         backbone.get_weights()))
# keras-hub saves the preset itself.
backbone.save_to_preset(resaved)
tokenizer.save_to_preset(resaved)
# A classifier of keras-hub's own, every weight random, and its logits.
keras.utils.set_random_seed(7)
vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [
    f"w{i}" for i in range(45)]
random_classifier = keras_hub.models.BertTextClassifier(
    backbone=keras_hub.models.BertBackbone(
        vocabulary_size=50, num_layers=2, num_heads=2, hidden_dim=16,
        intermediate_dim=24, max_sequence_length=12, num_segments=2),
    num_classes=3,
    preprocessor=keras_hub.models.BertTextClassifierPreprocessor(
        keras_hub.models.BertTokenizer(vocabulary=vocabulary),
        sequence_length=12))
rng = np.random.default_rng(7)
for variable in random_classifier.weights:
    variable.assign(rng.normal(0, 0.5, variable.shape).astype("float32"))
random_classifier.save_to_preset(random_preset)
ids = np.array(cases["random_ids"], "int32")
# Called directly: predict() would run the preprocessor on these ids.
results["random_logits"] = np.asarray(random_classifier(
    {"token_ids": ids, "segment_ids": np.array(cases["random_segments"],
                                                "int32"),
     "padding_mask": (ids > 0).astype("int32")}, training=False)).tolist()
with open(out_file, "w") as writer:
    json.dump(results, writer)
"""


def _golden_records(golden_dir):
    path = golden_dir / "extract_features" / "expected_output.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as reader:
        return [json.loads(line) for line in reader]


def _segments(tokens):
    """Google's segment ids: 0 up to the first [SEP], 1 after it."""
    first_sep = tokens.index("[SEP]")
    return [0] * (first_sep + 1) + [1] * (len(tokens) - first_sep - 1)


@pytest.fixture(scope="module")
def keras_hub_run(golden_dir, tmp_path_factory):
    """google_to_keras_hub on the golden checkpoint, then KERAS_HUB_SCRIPT
    in a fresh process; its results and directories."""
    work = tmp_path_factory.mktemp("keras_hub")
    model_dir = golden_dir / "models" / "cased_tiny"
    preset = work / "preset"
    assert convert.main([
        "google_to_keras_hub", f"--checkpoint={model_dir / 'bert_model.ckpt'}",
        f"--bert_config_file={model_dir / 'bert_config.json'}",
        "--do_lower_case=false", f"--output_dir={preset}"]) == 0
    vocab = tokenization.load_vocab(model_dir / "vocab.txt")
    records = _golden_records(golden_dir)
    golden = []
    for record in records:
        tokens = [feature["token"] for feature in record["features"]]
        golden.append({"ids": [vocab[token] for token in tokens],
                       "segments": _segments(tokens)})
    texts = [line.split(" ||| ")[0] for line in
             (golden_dir / "extract_features" / "input.txt").read_text(
                 encoding="utf-8").splitlines()]
    cases_file = work / "cases.json"
    cases_file.write_text(json.dumps({
        "golden": golden, "texts": texts, "random_ids": RANDOM_IDS,
        "random_segments": RANDOM_SEGMENTS}))
    out_file = work / "results.json"
    ran = subprocess.run(
        [sys.executable, "-c", KERAS_HUB_SCRIPT, str(preset), str(cases_file),
         str(work / "resaved"), str(work / "random"), str(out_file)],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert ran.returncode == 0, ran.stderr[-3000:]
    return {"results": json.loads(out_file.read_text()), "work": work,
            "records": records, "texts": texts, "vocab": vocab}


def test_preset_files(keras_hub_run, golden_dir):
    preset = keras_hub_run["work"] / "preset"
    assert sorted(os.listdir(preset)) == [
        "assets", "config.json", "metadata.json", "model.weights.h5",
        "preprocessor.json", "tokenizer.json"]
    config = json.loads((preset / "config.json").read_text())
    assert config["class_name"] == "BertBackbone"
    assert config["config"]["max_sequence_length"] == 128
    preprocessor = json.loads((preset / "preprocessor.json").read_text())
    assert preprocessor["config"]["sequence_length"] == 128
    tokenizer = json.loads((preset / "tokenizer.json").read_text())
    assert (tokenizer["config"]["lowercase"],
            tokenizer["config"]["strip_accents"]) == (False, False)
    assert ((preset / "assets" / "tokenizer" / "vocabulary.txt").read_text()
            == (golden_dir / "models" / "cased_tiny" / "vocab.txt"
                ).read_text())


def test_keras_hub_backbone_gives_googles_golden_outputs(keras_hub_run):
    """keras-hub's BertBackbone, in a fresh process, on the converted
    golden checkpoint: Google's final-layer values for every token of the
    32 golden examples."""
    worst = 0.0
    outputs = keras_hub_run["results"]["sequence_output"]
    assert len(outputs) == len(keras_hub_run["records"]) == 32
    for record, output in zip(keras_hub_run["records"], outputs):
        expected = np.array([
            next(layer["values"] for layer in feature["layers"]
                 if layer["index"] == -1) for feature in record["features"]])
        worst = max(worst, float(np.max(np.abs(np.array(output) - expected))))
    assert worst <= GOLDEN_TOLERANCE, f"largest difference {worst}"


def test_keras_hub_tokenizer_and_classifier_load(keras_hub_run):
    """keras-hub's BertTokenizer from the preset gives Google's pieces on the
    golden input's English lines; the two last lines (accents, emoji, CJK)
    are where its tensorflow-text normalization may differ, and the
    README documents it. BertTextClassifier.from_preset(dir,
    num_classes=3) builds on the preset's backbone."""
    results = keras_hub_run["results"]
    ours = tokenization.FullTokenizer(
        keras_hub_run["work"] / "preset" / "assets" / "tokenizer" /
        "vocabulary.txt", do_lower_case=False)
    english = keras_hub_run["texts"][:-2]
    for text, ids in zip(english, results["token_ids"]):
        assert ids == ours.convert_tokens_to_ids(ours.tokenize(text)), text
    assert results["classifier_logits_shape"] == [2, 3]
    assert results["classifier_backbone_is_the_preset"]


def test_preset_keras_hub_saved_converts_back_to_googles_outputs(
        keras_hub_run, golden_dir):
    """The preset keras-hub re-saved, converted to Google's format: the
    project's extract_features on it reproduces Google's golden file
    (both layers), and the files are Google's."""
    google_dir = keras_hub_run["work"] / "google_back"
    assert convert.main([
        "keras_hub_to_google",
        f"--input_dir={keras_hub_run['work'] / 'resaved'}",
        f"--output_dir={google_dir}"]) == 0
    arguments = _golden_arguments(golden_dir)
    arguments.update(vocab_file=google_dir / "vocab.txt",
                     bert_config_file=google_dir / "bert_config.json",
                     init_checkpoint=google_dir / "bert_model.ckpt")
    output_file = keras_hub_run["work"] / "features.jsonl"
    extraction.extract_features(output_file=output_file, batch_size=8,
                                **arguments)
    _assert_matches_golden(output_file, golden_dir)
    model_dir = golden_dir / "models" / "cased_tiny"
    assert ((google_dir / "vocab.txt").read_bytes()
            == (model_dir / "vocab.txt").read_bytes())
    converted = BertConfig.from_json_file(google_dir / "bert_config.json")
    original = BertConfig.from_json_file(model_dir / "bert_config.json")
    assert converted == original
    back = checkpoints.read_checkpoint(google_dir)
    source = checkpoints.read_checkpoint(model_dir / "bert_model.ckpt")
    encoder = sorted(name for name in source if name.startswith("bert/"))
    assert sorted(back) == encoder
    for name in encoder:
        assert np.array_equal(back[name], source[name]), name


def test_keras_hub_classifier_converts_with_its_logits(keras_hub_run):
    """A BertTextClassifier keras-hub made and saved (random weights): the
    converted checkpoint, in the project's BertModel with Google's
    classifier head (pooled output x output_weights^T + output_bias),
    gives keras-hub's logits."""
    google_dir = keras_hub_run["work"] / "random_google"
    checkpoints.convert_keras_hub_to_google(
        keras_hub_run["work"] / "random", google_dir)
    assert sorted(os.listdir(google_dir)) == [
        "bert_config.json", "bert_model.ckpt.data-00000-of-00001",
        "bert_model.ckpt.index", "checkpoint", "vocab.txt"]
    assert (google_dir / "vocab.txt").read_text().split("\n")[:6] == [
        "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "w0"]
    config = BertConfig.from_json_file(google_dir / "bert_config.json")
    assert (config.vocab_size, config.num_hidden_layers,
            config.hidden_size, config.max_position_embeddings) == (
        50, 2, 16, 12)
    model = BertModel(config)
    model.build()
    checkpoints.load_checkpoint(model, google_dir)
    ids = np.array(RANDOM_IDS, np.int32)
    pooled = model(ids, input_mask=(ids > 0).astype(np.int32),
                   segment_ids=np.array(RANDOM_SEGMENTS, np.int32)
                   )["pooled_output"].numpy()
    head = checkpoints.read_checkpoint(google_dir)
    logits = pooled @ head["output_weights"].T + head["output_bias"]
    np.testing.assert_allclose(
        logits, keras_hub_run["results"]["random_logits"], atol=2e-5)

    # ... and back to keras-hub: a whole BertTextClassifier again.
    preset = keras_hub_run["work"] / "random_again"
    checkpoints.convert_google_to_keras_hub(
        google_dir, google_dir / "bert_config.json", preset)
    task = json.loads((preset / "task.json").read_text())
    assert task["class_name"] == "BertTextClassifier"
    assert task["config"]["num_classes"] == 3


def test_conversions_refuse_what_they_cannot_do(golden_dir, tmp_path):
    model_dir = golden_dir / "models" / "cased_tiny"
    relu = tmp_path / "bert_config.json"
    config = json.loads((model_dir / "bert_config.json").read_text())
    relu.write_text(json.dumps({**config, "hidden_act": "relu"}))
    with pytest.raises(SystemExit) as exited:
        convert.main(["google_to_keras_hub", f"--checkpoint={model_dir}",
                      f"--bert_config_file={relu}", "--do_lower_case=false",
                      f"--output_dir={tmp_path / 'preset'}"])
    assert str(exited.value.code).endswith(
        f"error: {relu}: hidden_act is 'relu'; keras-hub's BertBackbone "
        f"has only Google's 'gelu' (tanh approximation)")
    assert not (tmp_path / "preset").exists()

    # A directory of the user's is never replaced, even with --overwrite.
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    with pytest.raises(checkpoints.ConversionError,
                       match=rf"^--output_dir {mine} also holds "
                             rf"{mine}/notes.txt, which is not a file of the "
                             rf"keras-hub preset this converter writes"):
        checkpoints.convert_google_to_keras_hub(
            model_dir, model_dir / "bert_config.json", mine,
            do_lower_case=False, overwrite=True)
    assert (mine / "notes.txt").read_text() == "keep me"

    with pytest.raises(SystemExit) as exited:
        convert.main(["keras_hub_to_google", f"--input_dir={model_dir}",
                      f"--output_dir={tmp_path / 'out'}"])
    assert str(exited.value.code).endswith(
        f"error: {model_dir} is not a keras-hub preset: no "
        f"{model_dir / 'config.json'}")
    with pytest.raises(SystemExit) as exited:
        convert.main(["keras_hub_to_google", f"--output_dir={tmp_path}"])
    assert str(exited.value.code).endswith(
        "error: keras_hub_to_google needs --input_dir (the preset "
        "directory)")
