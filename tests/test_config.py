"""BertConfig: Google's bert_config.json read, validated and written back."""

import json

import pytest

from bert_tf.config import BertConfig, BertConfigError

# The fields and defaults of Google's modeling.BertConfig, written out by hand.
GOOGLE_DEFAULTS = {
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "max_position_embeddings": 512,
    "type_vocab_size": 16,
    "initializer_range": 0.02,
}

CHINESE_BASE = {
    "attention_probs_dropout_prob": 0.1,
    "directionality": "bidi",
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "hidden_size": 768,
    "initializer_range": 0.02,
    "intermediate_size": 3072,
    "max_position_embeddings": 512,
    "num_attention_heads": 12,
    "num_hidden_layers": 12,
    "pooler_fc_size": 768,
    "pooler_num_attention_heads": 12,
    "pooler_num_fc_layers": 3,
    "pooler_size_per_head": 128,
    "pooler_type": "first_token_transform",
    "type_vocab_size": 2,
    "vocab_size": 21128,
}


def test_defaults_are_googles():
    config = BertConfig(vocab_size=30522)
    values = config.to_dict()
    for field, value in GOOGLE_DEFAULTS.items():
        assert values[field] == value, field


def test_reads_golden_config(cased_tiny_dir):
    config = BertConfig.from_json_file(cased_tiny_dir / "bert_config.json")
    assert config.vocab_size == 2000
    assert config.hidden_size == 32
    assert config.num_hidden_layers == 2
    assert config.num_attention_heads == 2
    assert config.attention_head_size == 16
    assert config.max_position_embeddings == 128
    assert config.type_vocab_size == 2


def test_unknown_keys_survive_a_round_trip(tmp_path):
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps(CHINESE_BASE))
    config = BertConfig.from_json_file(path)
    assert config.extra["pooler_type"] == "first_token_transform"
    out = tmp_path / "written.json"
    config.to_json_file(out)
    assert json.loads(out.read_text()) == CHINESE_BASE
    # Google's layout: indent 2, sorted keys, trailing newline.
    assert out.read_text() == json.dumps(
        CHINESE_BASE, indent=2, sort_keys=True) + "\n"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp")]


@pytest.mark.parametrize("changes, field, fragment", [
    ({"hidden_size": 30, "num_attention_heads": 4}, "hidden_size",
     "not a multiple of num_attention_heads (4)"),
    ({"hidden_act": "swish"}, "hidden_act", "'swish'"),
    ({"num_hidden_layers": 0}, "num_hidden_layers", "must be positive"),
    ({"vocab_size": "30522"}, "vocab_size", "positive integer"),
    ({"hidden_dropout_prob": 1.5}, "hidden_dropout_prob", "probability"),
    ({"initializer_range": -1}, "initializer_range", "positive number"),
])
def test_rejects_configs_that_cannot_work(tmp_path, changes, field, fragment):
    values = dict(CHINESE_BASE, **changes)
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps(values))
    with pytest.raises(BertConfigError) as error:
        BertConfig.from_json_file(path)
    message = str(error.value)
    assert f"'{field}'" in message
    assert fragment in message
    assert str(path) in message


def test_missing_vocab_size_is_named(tmp_path):
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps({"hidden_size": 32}))
    with pytest.raises(BertConfigError, match="'vocab_size' is missing"):
        BertConfig.from_json_file(path)


def test_missing_file_is_named(tmp_path):
    path = tmp_path / "nope.json"
    with pytest.raises(BertConfigError, match="nope.json"):
        BertConfig.from_json_file(path)


def test_invalid_json_is_named(tmp_path):
    path = tmp_path / "bert_config.json"
    path.write_text('{"vocab_size": 10,,}')
    with pytest.raises(BertConfigError, match=r"bert_config.json: not valid JSON \(line 1"):
        BertConfig.from_json_file(path)


def test_replace_validates():
    config = BertConfig(vocab_size=10, hidden_size=32, num_attention_heads=2)
    assert config.replace(num_hidden_layers=3).num_hidden_layers == 3
    with pytest.raises(BertConfigError, match="num_attention_heads"):
        config.replace(num_attention_heads=5)


def test_max_seq_length_beyond_the_position_embeddings_is_googles_error(
        cased_tiny_dir):
    path = cased_tiny_dir / "bert_config.json"
    config = BertConfig.from_json_file(path)
    positions = config.max_position_embeddings
    config.check_max_seq_length(positions)  # exactly full: fine
    with pytest.raises(BertConfigError) as raised:
        config.check_max_seq_length(positions + 1)
    # Google's run_classifier.py / run_squad.py text, then the file.
    assert str(raised.value) == (
        f"Cannot use sequence length {positions + 1} because the BERT model "
        f"was only trained up to sequence length {positions} "
        f"(--max_seq_length exceeds the model's max_position_embeddings of "
        f"{path})")
