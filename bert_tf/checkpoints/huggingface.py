"""Hugging Face BERT (safetensors + config.json) <-> Google's BERT checkpoints.

Hugging Face's PyTorch BERT holds the same tensors as Google's under other
names and, for linear layers, another layout:

  bert.encoder.layer.3.attention.self.query.weight   [out, in]
  bert/encoder/layer_3/attention/self/query/kernel   [in, out]

so a kernel is the transposed weight. Everything else is copied as is,
including `cls.seq_relationship.weight`, which both store as [2, hidden].
Hugging Face's base `BertModel` files have no `bert.` prefix
(sentence-transformers' MiniLM, for one); files of the `BertFor*` classes
have it. Older files name LayerNorm parameters `gamma`/`beta`, newer ones
`weight`/`bias`. The safetensors package's numpy API reads and writes the
files, so PyTorch is not needed.
"""

import json
import math
import os
import re
import shutil

from absl import logging
import numpy as np

from bert_tf import file_io
from bert_tf import progress as progress_lib
from bert_tf.checkpoints import hf_tokenizer
from bert_tf.checkpoints import tf1_checkpoint
from bert_tf import config as bert_config_lib
from bert_tf.config import BertConfig

HF_WEIGHTS_NAME = "model.safetensors"
HF_WEIGHTS_INDEX_NAME = "model.safetensors.index.json"
HF_CONFIG_NAME = "config.json"
GOOGLE_CONFIG_NAME = "bert_config.json"
VOCAB_NAME = "vocab.txt"

# Kinds of module: how their parameters are named and laid out.
_EMBEDDING = "embedding"    # weight <-> the scope itself
_DENSE = "dense"            # weight [out, in] <-> kernel [in, out]; bias
_LAYER_NORM = "layer_norm"  # weight|gamma <-> gamma; bias|beta <-> beta
_PARAMETER = "parameter"    # one tensor, same layout

# (Hugging Face name, Google name, kind). `{layer}` is a layer number and
# `{qkv}` one of query/key/value. Encoder names are given without `bert.`.
_NAME_TABLE = (
    ("embeddings.word_embeddings", "bert/embeddings/word_embeddings",
     _EMBEDDING),
    ("embeddings.position_embeddings", "bert/embeddings/position_embeddings",
     _EMBEDDING),
    ("embeddings.token_type_embeddings",
     "bert/embeddings/token_type_embeddings", _EMBEDDING),
    ("embeddings.LayerNorm", "bert/embeddings/LayerNorm", _LAYER_NORM),
    ("encoder.layer.{layer}.attention.self.{qkv}",
     "bert/encoder/layer_{layer}/attention/self/{qkv}", _DENSE),
    ("encoder.layer.{layer}.attention.output.dense",
     "bert/encoder/layer_{layer}/attention/output/dense", _DENSE),
    ("encoder.layer.{layer}.attention.output.LayerNorm",
     "bert/encoder/layer_{layer}/attention/output/LayerNorm", _LAYER_NORM),
    ("encoder.layer.{layer}.intermediate.dense",
     "bert/encoder/layer_{layer}/intermediate/dense", _DENSE),
    ("encoder.layer.{layer}.output.dense",
     "bert/encoder/layer_{layer}/output/dense", _DENSE),
    ("encoder.layer.{layer}.output.LayerNorm",
     "bert/encoder/layer_{layer}/output/LayerNorm", _LAYER_NORM),
    ("pooler.dense", "bert/pooler/dense", _DENSE),
    # Heads. BertForPreTraining / BertForMaskedLM:
    ("cls.predictions.transform.dense", "cls/predictions/transform/dense",
     _DENSE),
    ("cls.predictions.transform.LayerNorm",
     "cls/predictions/transform/LayerNorm", _LAYER_NORM),
    ("cls.predictions.bias", "cls/predictions/output_bias", _PARAMETER),
    # BertForPreTraining / BertForNextSentencePrediction, [2, hidden] in both:
    ("cls.seq_relationship.weight", "cls/seq_relationship/output_weights",
     _PARAMETER),
    ("cls.seq_relationship.bias", "cls/seq_relationship/output_bias",
     _PARAMETER),
    # BertForSequenceClassification = Google's run_classifier head,
    # [num_labels, hidden] in both:
    ("classifier.weight", "output_weights", _PARAMETER),
    ("classifier.bias", "output_bias", _PARAMETER),
    # BertForQuestionAnswering = Google's run_squad head, [2, hidden]:
    ("qa_outputs.weight", "cls/squad/output_weights", _PARAMETER),
    ("qa_outputs.bias", "cls/squad/output_bias", _PARAMETER),
)

# Hugging Face parameter name -> Google parameter name, per kind.
_PARAMETERS = {
    _EMBEDDING: {"weight": ""},
    _DENSE: {"weight": "kernel", "bias": "bias"},
    _LAYER_NORM: {"weight": "gamma", "bias": "beta",
                  "gamma": "gamma", "beta": "beta"},
}
# The names written when converting to Hugging Face (its current ones).
_HF_PARAMETERS = {
    _EMBEDDING: {"": "weight"},
    _DENSE: {"kernel": "weight", "bias": "bias"},
    _LAYER_NORM: {"gamma": "weight", "beta": "bias"},
}
_PLACEHOLDERS = {"layer": r"\d+", "qkv": r"query|key|value"}
_ENCODER_MODULES = ("embeddings.", "encoder.", "pooler.")
# Buffers PyTorch saves with the weights; they hold no learned values.
_HF_BUFFER_SUFFIXES = ("embeddings.position_ids", "embeddings.token_type_ids")
# Tied to other tensors in Hugging Face's MLM head; Google stores each once.
_HF_TIED_DECODER_WEIGHT = "cls.predictions.decoder.weight"
_HF_TIED_DECODER_BIAS = "cls.predictions.decoder.bias"

# Google checkpoint tensors that are training state, not model weights.
_GOOGLE_TRAINING_STATE_SUFFIXES = ("/adam_m", "/adam_v", "/Adam", "/Adam_1",
                                   "/lamb_m", "/lamb_v")
_GOOGLE_TRAINING_STATE_NAMES = ("global_step", "good_steps", "loss_scale",
                                "current_loss_scale")

# Google's activation names for Hugging Face's `hidden_act` values. Google's
# "gelu" is the tanh approximation; Hugging Face's "gelu" is exact (erf).
_HF_ACTIVATIONS = {
    "gelu_new": "gelu",
    "gelu_pytorch_tanh": "gelu",
    "gelu_fast": "gelu",
    "gelu": "gelu",
    "relu": "relu",
    "tanh": "tanh",
    "linear": "linear",
}
# bert_tf's name for the exact (erf) gelu, which Google's code lacks: a
# bert_config.json using it is readable by bert_tf only.
EXACT_GELU = "gelu_exact"
_GOOGLE_TO_HF_ACTIVATIONS = {"gelu": "gelu_new", EXACT_GELU: "gelu",
                             "relu": "relu", "tanh": "tanh",
                             "linear": "linear"}
_GOOGLE_LAYER_NORM_EPSILON = 1e-12
# Google's bert_config.json fields, with Hugging Face's BertConfig defaults:
# Google's but for these two.
_HF_DEFAULTS = {**bert_config_lib.DEFAULTS, "vocab_size": 30522,
                "type_vocab_size": 2}
# Keys of Google's released configs beyond the 11 fields (the Chinese model);
# Hugging Face's copies of those configs carry them too.
_GOOGLE_EXTRA_KEY_PATTERN = re.compile(r"^(pooler_\w+|directionality)$")


class ConversionError(ValueError):
    """Files that cannot be converted; the message names file and tensor."""


def name_table_patterns(name_table, placeholders, column):
    """One side of a converter's name table, compiled for matching.

    A name table lists (name in one format, name in the other, how the
    tensor changes) rows whose names are templates with placeholders
    (`{layer}`, ...); here and in `keras_hub_preset`.

    Args:
      name_table: the rows.
      placeholders: {placeholder: the regex of its values}.
      column: 0 or 1, the side to match names against.

    Returns:
      [(regex of row[column] matching a whole name, row[1 - column],
      row[2])], in table order: a match's `groupdict()` fills the other
      side's template.
    """
    patterns = []
    for row in name_table:
        pattern = re.escape(row[column])
        for key, value in placeholders.items():
            pattern = pattern.replace(re.escape("{" + key + "}"),
                                      f"(?P<{key}>{value})")
        patterns.append((re.compile(pattern + r"\Z"), row[1 - column],
                         row[2]))
    return patterns


_HF_MODULE_PATTERNS = name_table_patterns(_NAME_TABLE, _PLACEHOLDERS, 0)
_GOOGLE_MODULE_PATTERNS = name_table_patterns(_NAME_TABLE, _PLACEHOLDERS, 1)


def hf_to_google_name(hf_name):
    """Maps a Hugging Face tensor name to Google's.

    Args:
      hf_name: e.g. `bert.encoder.layer.0.attention.self.query.weight` (the
        `bert.` prefix is optional).

    Returns:
      (google_name, transpose): `transpose` is True for linear weights,
      stored [out, in] by Hugging Face and [in, out] by Google. None for a
      name that is not part of Google's BERT.
    """
    name = hf_name
    if name.startswith("bert.") and name[5:].startswith(_ENCODER_MODULES):
        name = name[5:]
    for pattern, google, kind in _HF_MODULE_PATTERNS:
        if kind == _PARAMETER:
            if pattern.match(name):
                return google, False
            continue
        module, _, parameter = name.rpartition(".")
        match = pattern.match(module)
        if match and parameter in _PARAMETERS[kind]:
            scope = google.format(**match.groupdict())
            suffix = _PARAMETERS[kind][parameter]
            google_name = f"{scope}/{suffix}" if suffix else scope
            return google_name, kind == _DENSE and parameter == "weight"
    return None


def google_to_hf_name(google_name):
    """Maps a Google tensor name to Hugging Face's (`bert.` prefix, new
    LayerNorm names).

    Returns:
      (hf_name, transpose), or None for a name outside Google's BERT.
    """
    for pattern, hf, kind in _GOOGLE_MODULE_PATTERNS:
        if kind == _PARAMETER:
            if pattern.match(google_name):
                return hf, False
            continue
        for google_parameter, hf_parameter in _HF_PARAMETERS[kind].items():
            if google_parameter:
                scope, _, parameter = google_name.rpartition("/")
                if parameter != google_parameter:
                    continue
            else:
                scope = google_name
            match = pattern.match(scope)
            if match:
                module = hf.format(**match.groupdict())
                if module.startswith(_ENCODER_MODULES):
                    module = "bert." + module
                return (f"{module}.{hf_parameter}",
                        kind == _DENSE and google_parameter == "kernel")
    return None


def _float32(name, array, source):
    """Widens float16/bfloat16 tensors to Google's float32 (exactly)."""
    array = np.asarray(array)
    if array.dtype == np.float32:
        return array
    if array.dtype.kind == "f" or array.dtype.name == "bfloat16":
        return array.astype(np.float32)
    raise ConversionError(
        f"{source}: tensor {name} has dtype {array.dtype}, expected floats")


def _transposed(name, array, source):
    if array.ndim != 2:
        raise ConversionError(
            f"{source}: tensor {name} should be a matrix, got shape "
            f"{list(array.shape)}")
    return np.ascontiguousarray(array.T)


def hf_to_google_tensors(hf_tensors, *, source="Hugging Face weights"):
    """Renames (and transposes) Hugging Face BERT tensors into Google's.

    Args:
      hf_tensors: mapping Hugging Face name -> np.ndarray.
      source: the file they came from, for error messages.

    Returns:
      dict Google name -> float32 np.ndarray.

    Raises:
      ConversionError: naming the unknown tensors (buffers such as
        `position_ids` are dropped silently), a name given both with and
        without the `bert.` prefix, or an MLM decoder weight that is not tied
        to the word embeddings (Google's BERT cannot represent it).
    """
    google, origin, unknown = {}, {}, []
    for hf_name in sorted(hf_tensors):
        if hf_name.endswith(_HF_BUFFER_SUFFIXES):
            continue
        if hf_name in (_HF_TIED_DECODER_WEIGHT, _HF_TIED_DECODER_BIAS):
            continue  # checked below against the tensors they are tied to
        mapped = hf_to_google_name(hf_name)
        if mapped is None:
            unknown.append(hf_name)
            continue
        google_name, transpose = mapped
        if google_name in google:
            raise ConversionError(
                f"{source}: tensors {origin[google_name]} and {hf_name} both "
                f"map to {google_name}")
        array = _float32(hf_name, hf_tensors[hf_name], source)
        google[google_name] = (_transposed(hf_name, array, source)
                               if transpose else array)
        origin[google_name] = hf_name
    if unknown:
        raise ConversionError(
            f"{source}: {len(unknown)} tensors are not part of Google's BERT "
            f"and cannot be converted: " + ", ".join(unknown))
    _check_tied(hf_tensors, _HF_TIED_DECODER_WEIGHT,
                "bert/embeddings/word_embeddings", google, source)
    if _HF_TIED_DECODER_BIAS in hf_tensors:
        if "cls/predictions/output_bias" not in google:
            google["cls/predictions/output_bias"] = _float32(
                _HF_TIED_DECODER_BIAS, hf_tensors[_HF_TIED_DECODER_BIAS],
                source)
        _check_tied(hf_tensors, _HF_TIED_DECODER_BIAS,
                    "cls/predictions/output_bias", google, source)
    return google


def _check_tied(hf_tensors, hf_name, google_name, google, source):
    if hf_name not in hf_tensors:
        return
    tied = google.get(google_name)
    value = _float32(hf_name, hf_tensors[hf_name], source)
    if tied is None or tied.shape != value.shape or not np.array_equal(
            tied, value):
        raise ConversionError(
            f"{source}: {hf_name} is not tied to (equal to) the tensor that "
            f"becomes {google_name}; Google's BERT ties them, so this model "
            f"cannot be converted without changing it")


def google_to_hf_tensors(google_tensors, *, source="Google checkpoint"):
    """Renames (and transposes) Google BERT tensors into Hugging Face's.

    Training state (`adam_m`/`adam_v` slots, `global_step`) is dropped.

    Args:
      google_tensors: mapping Google name -> np.ndarray.
      source: the checkpoint they came from, for error messages.

    Returns:
      dict Hugging Face name -> contiguous np.ndarray (`bert.` prefix).

    Raises:
      ConversionError: naming tensors outside Google's BERT.
    """
    hf, unknown, dropped = {}, [], 0
    for google_name in sorted(google_tensors):
        if (google_name.endswith(_GOOGLE_TRAINING_STATE_SUFFIXES)
                or google_name in _GOOGLE_TRAINING_STATE_NAMES):
            dropped += 1
            continue
        mapped = google_to_hf_name(google_name)
        if mapped is None:
            unknown.append(google_name)
            continue
        hf_name, transpose = mapped
        array = np.asarray(google_tensors[google_name])
        hf[hf_name] = (_transposed(google_name, array, source) if transpose
                       else np.ascontiguousarray(array))
    if unknown:
        raise ConversionError(
            f"{source}: {len(unknown)} tensors are not part of Google's BERT "
            f"and cannot be converted: " + ", ".join(unknown))
    if dropped:
        logging.info("%s: dropped %d training-state tensors (optimizer "
                     "slots, global_step).", source, dropped)
    return hf


def hf_config_to_google(hf_config, *, source=HF_CONFIG_NAME,
                        exact_gelu=False):
    """Google's `BertConfig` for a Hugging Face BERT `config.json` dict.

    Hugging Face's "gelu" is the exact (erf) gelu while Google's "gelu" is
    its tanh approximation. By default both become Google's "gelu", with a
    warning for the former because outputs then differ by up to ~1e-3.

    Args:
      hf_config: the parsed `config.json`.
      source: its file name, for messages.
      exact_gelu: map Hugging Face's "gelu" to `EXACT_GELU` instead, which
        reproduces Hugging Face's outputs but which Google's own code cannot
        read.

    Raises:
      ConversionError: not a BERT config (`model_type`), relative position
        embeddings, or an activation Google's BERT does not have.
    """
    if not isinstance(hf_config, dict):
        raise ConversionError(f"{source}: expected a JSON object")
    model_type = hf_config.get("model_type", "bert")
    if model_type != "bert":
        raise ConversionError(
            f"{source}: model_type is {model_type!r}; only 'bert' models can "
            f"be converted to Google's BERT")
    position_type = hf_config.get("position_embedding_type", "absolute")
    if position_type != "absolute":
        raise ConversionError(
            f"{source}: position_embedding_type is {position_type!r}; "
            f"Google's BERT has only absolute position embeddings")
    values = {key: hf_config.get(key, default)
              for key, default in _HF_DEFAULTS.items()}
    hf_activation = values["hidden_act"]
    if hf_activation not in _HF_ACTIVATIONS:
        raise ConversionError(
            f"{source}: hidden_act {hf_activation!r} has no equivalent in "
            f"Google's BERT (supported: {', '.join(sorted(_HF_ACTIVATIONS))})")
    values["hidden_act"] = _HF_ACTIVATIONS[hf_activation]
    if hf_activation == "gelu" and exact_gelu:
        values["hidden_act"] = EXACT_GELU
    elif hf_activation == "gelu":
        logging.warning(
            "%s: hidden_act 'gelu' is the exact (erf) gelu in Hugging Face; "
            "Google's BERT, and this conversion, use its tanh approximation, "
            "so outputs differ from Hugging Face's (all-MiniLM-L6-v2: the "
            "last hidden state by up to ~5e-3, mean ~4e-4; convert with "
            "exact_gelu / --exact_gelu to keep the exact one).", source)
    epsilon = hf_config.get("layer_norm_eps", _GOOGLE_LAYER_NORM_EPSILON)
    if not math.isclose(epsilon, _GOOGLE_LAYER_NORM_EPSILON):
        logging.warning(
            "%s: layer_norm_eps is %g; Google's BERT uses %g, so outputs "
            "differ slightly.", source, epsilon, _GOOGLE_LAYER_NORM_EPSILON)
    for key, value in hf_config.items():
        if _GOOGLE_EXTRA_KEY_PATTERN.match(key):
            values[key] = value
    return BertConfig.from_dict(values, source=source)


def google_config_to_hf(config, *, architectures=("BertForPreTraining",)):
    """A Hugging Face `config.json` dict for a Google `BertConfig`.

    Google's tanh-approximate "gelu" is Hugging Face's "gelu_new".
    """
    values = {key: getattr(config, key) for key in _HF_DEFAULTS}
    values["hidden_act"] = _GOOGLE_TO_HF_ACTIVATIONS[config.hidden_act]
    values.update({
        "architectures": list(architectures),
        "model_type": "bert",
        "layer_norm_eps": _GOOGLE_LAYER_NORM_EPSILON,
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
    })
    for key, value in config.extra.items():
        if _GOOGLE_EXTRA_KEY_PATTERN.match(key):
            values[key] = value
    return values


def _hf_architectures(hf_tensors):
    """The Hugging Face class whose weights these are."""
    names = set(hf_tensors)
    if "classifier.weight" in names:
        return ("BertForSequenceClassification",)
    if "qa_outputs.weight" in names:
        return ("BertForQuestionAnswering",)
    if "cls.seq_relationship.weight" in names:
        return ("BertForPreTraining",)
    if "cls.predictions.bias" in names:
        return ("BertForMaskedLM",)
    return ("BertModel",)


def _read_safetensors_file(path):
    from safetensors import SafetensorError
    from safetensors.numpy import load_file
    if not os.path.isfile(path):
        raise ConversionError(f"safetensors file {path} does not exist")
    try:
        return load_file(path)
    except (SafetensorError, OSError, ValueError, TypeError) as error:
        raise ConversionError(
            f"cannot read safetensors file {path}: {error}") from error


def read_hf_safetensors(path):
    """Reads Hugging Face weights: a `.safetensors` file or a model directory
    (`model.safetensors`, or the shards listed in
    `model.safetensors.index.json`).

    Returns:
      (tensors, weights_path): dict name -> np.ndarray and the file (or
      index) read.
    """
    path = os.path.expanduser(os.fspath(path))
    if not os.path.isdir(path):
        return _read_safetensors_file(path), path
    single = os.path.join(path, HF_WEIGHTS_NAME)
    if os.path.isfile(single):
        return _read_safetensors_file(single), single
    index_path = os.path.join(path, HF_WEIGHTS_INDEX_NAME)
    if os.path.isfile(index_path):
        try:
            with open(index_path, encoding="utf-8") as reader:
                weight_map = json.load(reader)["weight_map"]
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise ConversionError(
                f"cannot read the shard index {index_path}: {error}") from error
        tensors = {}
        for shard in sorted(set(weight_map.values())):
            tensors.update(_read_safetensors_file(os.path.join(path, shard)))
        return tensors, index_path
    hint = ""
    if os.path.isfile(os.path.join(path, "pytorch_model.bin")):
        hint = (" (it has pytorch_model.bin, which needs PyTorch to read: "
                "save the model with safe_serialization=True first)")
    raise ConversionError(
        f"no {HF_WEIGHTS_NAME} or {HF_WEIGHTS_INDEX_NAME} in directory "
        f"{path}{hint}")


def _read_json(path):
    try:
        with open(path, encoding="utf-8") as reader:
            return json.load(reader)
    except OSError as error:
        raise ConversionError(
            f"cannot read {path}: {error.strerror or error}") from error
    except ValueError as error:
        raise ConversionError(f"{path}: not valid JSON: {error}") from error


def _copy_atomically(source, destination):
    with open(source, "rb") as reader, file_io.atomic_write(
            destination, "wb") as writer:
        shutil.copyfileobj(reader, writer)


def _write_json_atomically(values, path):
    with file_io.atomic_write(path) as writer:
        json.dump(values, writer, indent=2, sort_keys=True)
        writer.write("\n")


def _check_can_write(paths, overwrite, inputs):
    """Refuses outputs that exist (unless `overwrite`) or are inputs.

    Args:
      paths: the files the conversion writes.
      overwrite: whether existing outputs may be replaced.
      inputs: `(description, path)` of the files it reads.
    """
    try:
        file_io.check_outputs_are_not_inputs(
            [("--output_dir file", path) for path in paths], inputs)
    except file_io.OutputIsInputError as error:
        raise ConversionError(str(error)) from error
    existing = [p for p in paths if os.path.exists(p)]
    if existing and not overwrite:
        raise ConversionError(
            "output exists (pass overwrite to replace it): "
            + ", ".join(existing))


def convert_hf_to_google(hf_path, output_dir, *, config_file=None,
                         vocab_file=None, overwrite=False, exact_gelu=False):
    """Converts Hugging Face BERT weights into a Google BERT directory.

    Writes `output_dir/bert_model.ckpt.{index,data-00000-of-00001}`, a
    `checkpoint` state file, `bert_config.json` and `vocab.txt`, i.e. what
    Google's released zips hold.

    Args:
      hf_path: a Hugging Face model directory or a `.safetensors` file.
      output_dir: created if missing.
      config_file: the Hugging Face `config.json`; default: next to the
        weights.
      vocab_file: default: `vocab.txt` next to the weights; skipped (with a
        warning) if there is none.
      overwrite: replace existing output files.
      exact_gelu: see `hf_config_to_google`.

    Returns:
      The checkpoint prefix written.

    Raises:
      ConversionError: unreadable or unknown inputs, or existing outputs and
        not `overwrite`; tensor shapes that do not fit the config.
    """
    hf_path = os.path.expanduser(os.fspath(hf_path))
    model_dir = hf_path if os.path.isdir(hf_path) else os.path.dirname(hf_path)
    config_file = config_file or os.path.join(model_dir, HF_CONFIG_NAME)
    if vocab_file is None and os.path.isfile(
            os.path.join(model_dir, VOCAB_NAME)):
        vocab_file = os.path.join(model_dir, VOCAB_NAME)
    # Three stages; a line at the start of each (a large model takes a
    # while to read and to write).
    progress = progress_lib.Progress("convert hf_to_google", total=3,
                                     unit="stage", speed=False)
    progress.start(f"reading {hf_path}")
    hf_tensors, weights_path = read_hf_safetensors(hf_path)
    progress.update(1, note=f"converting {len(hf_tensors)} tensors",
                    force=True)
    config = hf_config_to_google(_read_json(config_file), source=config_file,
                                 exact_gelu=exact_gelu)
    google = hf_to_google_tensors(hf_tensors, source=weights_path)
    _check_tensors_fit_config(google, config, weights_path, config_file)

    os.makedirs(output_dir, exist_ok=True)
    prefix = os.path.join(output_dir, tf1_checkpoint.DEFAULT_PREFIX_NAME)
    config_out = os.path.join(output_dir, GOOGLE_CONFIG_NAME)
    vocab_out = os.path.join(output_dir, VOCAB_NAME)
    _check_can_write(
        [prefix + ".index", prefix + ".data-00000-of-00001", config_out]
        + ([vocab_out] if vocab_file else []), overwrite,
        [("--input_dir/--safetensors", weights_path),
         ("--config_file", config_file), ("--vocab_file", vocab_file)])
    progress.update(2, note=f"writing {prefix}", force=True)
    tf1_checkpoint.save_checkpoint(google, prefix, overwrite=overwrite)
    progress.update(3)
    progress.close()
    config.to_json_file(config_out)
    if vocab_file:
        _copy_atomically(vocab_file, vocab_out)
    else:
        logging.warning("No vocab.txt next to %s; none copied to %s.",
                        hf_path, output_dir)
    logging.info("Converted %s (%d tensors) to %s.", weights_path,
                 len(google), prefix)
    return prefix


def _check_tensors_fit_config(google, config, weights_path, config_file):
    """Word/position/type embedding shapes against the config's sizes."""
    expected = {
        "bert/embeddings/word_embeddings":
            (config.vocab_size, config.hidden_size),
        "bert/embeddings/position_embeddings":
            (config.max_position_embeddings, config.hidden_size),
        "bert/embeddings/token_type_embeddings":
            (config.type_vocab_size, config.hidden_size),
    }
    problems = [f"{name}: config {list(shape)} vs weights "
                f"{list(google[name].shape)}"
                for name, shape in expected.items()
                if name in google and google[name].shape != shape]
    if problems:
        raise ConversionError(
            f"{config_file} does not fit {weights_path}: "
            + "; ".join(problems))


def convert_google_to_hf(checkpoint, bert_config_file, output_dir, *,
                         vocab_file=None, overwrite=False,
                         do_lower_case=True):
    """Converts a Google BERT checkpoint into Hugging Face files.

    Writes `output_dir/model.safetensors` (`bert.` prefix, `weight`/`bias`
    LayerNorm names, optimizer state dropped; mode 0644), `config.json`
    and, with a vocabulary, `vocab.txt` and the tokenizer files of
    `hf_tokenizer` (`tokenizer_config.json`, `special_tokens_map.json`,
    and `tokenizer.json` when the `tokenizers` package is installed).

    Args:
      checkpoint: anything `resolve_checkpoint` accepts.
      bert_config_file: Google's `bert_config.json`.
      output_dir: created if missing.
      vocab_file: default: `vocab.txt` next to the checkpoint, if any.
      overwrite: replace existing output files.
      do_lower_case: whether the model is uncased (written to the
        tokenizer files; checked against a released checkpoint's name as
        Google's runners do).

    Returns:
      The path of the safetensors file written.
    """
    from safetensors.numpy import save as safetensors_bytes
    from bert_tf.text import tokenization
    prefix = tf1_checkpoint.resolve_checkpoint(checkpoint)
    try:
        tokenization.validate_case_matches_checkpoint(do_lower_case, prefix)
    except ValueError as error:
        raise ConversionError(str(error)) from error
    config = BertConfig.from_json_file(bert_config_file)
    if vocab_file is None:
        candidate = os.path.join(os.path.dirname(prefix), VOCAB_NAME)
        vocab_file = candidate if os.path.isfile(candidate) else None
    progress = progress_lib.Progress("convert google_to_hf", total=3,
                                     unit="stage", speed=False)
    progress.start(f"reading {prefix}")
    google = tf1_checkpoint.read_checkpoint(prefix)
    progress.update(1, note=f"converting {len(google)} tensors", force=True)
    _check_tensors_fit_config(google, config, prefix, bert_config_file)
    hf = google_to_hf_tensors(google, source=prefix)

    os.makedirs(output_dir, exist_ok=True)
    weights_out = os.path.join(output_dir, HF_WEIGHTS_NAME)
    config_out = os.path.join(output_dir, HF_CONFIG_NAME)
    vocab_out = os.path.join(output_dir, VOCAB_NAME)
    tokenizer_outs = [os.path.join(output_dir, name) for name in (
        hf_tokenizer.TOKENIZER_CONFIG_NAME,
        hf_tokenizer.SPECIAL_TOKENS_MAP_NAME,
        hf_tokenizer.TOKENIZER_JSON_NAME)]
    _check_can_write(
        [weights_out, config_out]
        + ([vocab_out] + tokenizer_outs if vocab_file else []),
        overwrite, [("--checkpoint", prefix),
                    ("--bert_config_file", bert_config_file),
                    ("--vocab_file", vocab_file)])
    progress.update(2, note=f"writing {weights_out}", force=True)
    with file_io.atomic_write(weights_out, "wb") as writer:
        # "pt" lets transformers' from_pretrained load the file.
        writer.write(safetensors_bytes(hf, metadata={"format": "pt"}))
    _write_json_atomically(
        google_config_to_hf(config, architectures=_hf_architectures(hf)),
        config_out)
    if vocab_file:
        _copy_atomically(vocab_file, vocab_out)
        hf_tokenizer.write_tokenizer_files(
            vocab_file, do_lower_case, config.max_position_embeddings,
            output_dir)
    else:
        logging.warning("No vocab.txt next to %s; none copied to %s.",
                        prefix, output_dir)
    progress.update(3)
    progress.close()
    logging.info("Converted %s (%d tensors) to %s.", prefix, len(hf),
                 weights_out)
    return weights_out
