"""keras-hub BERT presets <-> Google's BERT checkpoints.

A keras-hub preset is a directory that `keras_hub.models.BertBackbone.
from_preset(dir)` (and the tasks' `from_preset`) load:

  config.json, model.weights.h5, metadata.json   the BertBackbone
  tokenizer.json, assets/tokenizer/vocabulary.txt the BertTokenizer
  preprocessor.json                               BertTextClassifier's
  task.json, task.weights.h5                      a BertTextClassifier

keras-hub's BertBackbone is Google's BERT with other names and, for the
attention projections, another shape (the same values):

  transformer_layer_3/self_attention_layer/query/kernel   [hidden, heads, size]
  bert/encoder/layer_3/attention/self/query/kernel        [hidden, hidden]

so the conversion renames and reshapes; nothing is transposed except the
classifier head (keras-hub's `logits/kernel` is [hidden, classes], Google's
`output_weights` [classes, hidden]). keras-hub builds, writes and reads the
files itself (the `hf` extra installs it), so the preset is exactly what
keras-hub would have saved.

What keras-hub's BertBackbone has no place for: an activation other than
Google's tanh-approximate gelu (refused), separate attention and hidden
dropout rates (one rate, the hidden one; only training sees it), the
pretraining heads `cls/...` and SQuAD's head (left out, logged).

keras-hub's BertTokenizer is not Google's: it normalizes with
tensorflow-text. The presets written here ask it to strip accents when
lower-casing, as Google's uncased models do; it still case-folds with NFKC
(the ligature "ﬁ" becomes "fi", full-width letters ASCII, where Google keeps
them), splits words at control and zero-width characters that Google deletes,
and maps Hangul to [UNK] where Google gives jamo pieces. On English text the
ids are Google's (tests/checkpoints/test_keras_hub_preset.py;
docs/checkpoints.md lists the differences measured).
"""

import json
import os

from absl import logging
import numpy as np

from bert_tf import file_io
from bert_tf import progress as progress_lib
from bert_tf.checkpoints import huggingface
from bert_tf.checkpoints import tf1_checkpoint
from bert_tf.config import BertConfig

# Every file google_to_keras_hub writes into a preset (keras-hub's names;
# the tokenizer's vocabulary under assets/), relative to the preset. An
# existing directory holding anything else, at any depth, is the user's and
# is never replaced.
PRESET_FILES = ("config.json", "model.weights.h5", "metadata.json",
                "tokenizer.json", "preprocessor.json", "task.json",
                "task.weights.h5", "assets/tokenizer/vocabulary.txt")
# The directories those files are in.
_PRESET_DIRECTORIES = ("assets", "assets/tokenizer")
BACKBONE_CLASS = "BertBackbone"
CLASSIFIER_CLASS = "BertTextClassifier"

# How a tensor's shape changes between the formats.
_SAME = "same"            # the same array
_SPLIT_HEADS = "split"    # Google [..., hidden] <-> keras-hub [..., heads, size]
_MERGE_HEADS = "merge"    # Google [hidden, hidden] <-> keras-hub [heads, size, hidden]
_TRANSPOSE = "transpose"  # Google [classes, hidden] <-> keras-hub [hidden, classes]

# (keras-hub variable path, Google name, shape change). `{layer}` is a
# layer number, `{qkv}` one of query/key/value, `{parameter}` the
# parameter's name (the same in both).
_NAME_TABLE = (
    ("token_embedding/embeddings", "bert/embeddings/word_embeddings", _SAME),
    ("position_embedding/embeddings", "bert/embeddings/position_embeddings",
     _SAME),
    ("segment_embedding/embeddings", "bert/embeddings/token_type_embeddings",
     _SAME),
    ("embeddings_layer_norm/{parameter}",
     "bert/embeddings/LayerNorm/{parameter}", _SAME),
    ("transformer_layer_{layer}/self_attention_layer/{qkv}/{parameter}",
     "bert/encoder/layer_{layer}/attention/self/{qkv}/{parameter}",
     _SPLIT_HEADS),
    ("transformer_layer_{layer}/self_attention_layer/attention_output/kernel",
     "bert/encoder/layer_{layer}/attention/output/dense/kernel",
     _MERGE_HEADS),
    ("transformer_layer_{layer}/self_attention_layer/attention_output/bias",
     "bert/encoder/layer_{layer}/attention/output/dense/bias", _SAME),
    ("transformer_layer_{layer}/self_attention_layer_norm/{parameter}",
     "bert/encoder/layer_{layer}/attention/output/LayerNorm/{parameter}",
     _SAME),
    ("transformer_layer_{layer}/feedforward_intermediate_dense/{parameter}",
     "bert/encoder/layer_{layer}/intermediate/dense/{parameter}", _SAME),
    ("transformer_layer_{layer}/feedforward_output_dense/{parameter}",
     "bert/encoder/layer_{layer}/output/dense/{parameter}", _SAME),
    ("transformer_layer_{layer}/feedforward_layer_norm/{parameter}",
     "bert/encoder/layer_{layer}/output/LayerNorm/{parameter}", _SAME),
    ("pooled_dense/{parameter}", "bert/pooler/dense/{parameter}", _SAME),
    # BertTextClassifier's head = Google's run_classifier head (both on the
    # pooled output, after dropout).
    ("logits/kernel", "output_weights", _TRANSPOSE),
    ("logits/bias", "output_bias", _SAME),
)
_PLACEHOLDERS = {"layer": r"\d+", "qkv": r"query|key|value",
                 "parameter": r"kernel|bias|gamma|beta"}
_CLASSIFIER_NAMES = ("output_weights", "output_bias")


_KERAS_HUB_PATTERNS = huggingface.name_table_patterns(_NAME_TABLE,
                                                      _PLACEHOLDERS, 0)


def keras_hub_to_google_name(path):
    """Maps a keras-hub BertBackbone / BertTextClassifier variable path to
    Google's tensor name.

    Returns:
      (google_name, shape_change), or None for a path outside Google's BERT.
    """
    for pattern, google, change in _KERAS_HUB_PATTERNS:
        match = pattern.match(path)
        if match:
            return google.format(**match.groupdict()), change
    return None


def _to_keras_hub_shape(name, array, change, shape, source):
    """Google's `array` in the keras-hub variable's `shape`."""
    if change == _TRANSPOSE:
        array = array.T
    elif change in (_SPLIT_HEADS, _MERGE_HEADS):
        array = array.reshape(shape) if array.size == np.prod(shape) else array
    if tuple(array.shape) != tuple(shape):
        raise huggingface.ConversionError(
            f"{source}: tensor {name} has shape {list(array.shape)}; the "
            f"keras-hub model built from the config needs {list(shape)}")
    return np.ascontiguousarray(array, dtype=np.float32)


def _to_google_shape(array, change):
    """A keras-hub variable's value in Google's shape."""
    if change == _TRANSPOSE:
        return np.ascontiguousarray(array.T)
    if change == _SPLIT_HEADS:    # [hidden, heads, size] or [heads, size]
        return array.reshape(array.shape[:-2] + (-1,))
    if change == _MERGE_HEADS:    # [heads, size, hidden]
        return array.reshape((-1, array.shape[-1]))
    return np.ascontiguousarray(array)


def _import_keras_hub():
    try:
        import keras_hub  # pylint: disable=import-outside-toplevel
    except ImportError as error:
        raise huggingface.ConversionError(
            "keras-hub presets need the keras-hub package: pip install -e "
            "\".[hf]\" (or pip install keras-hub)") from error
    return keras_hub


def backbone_arguments(config, *, source):
    """keras-hub BertBackbone's arguments for a Google `BertConfig`.

    Raises:
      ConversionError: an activation keras-hub's BertBackbone lacks (it has
        Google's tanh-approximate gelu only).
    """
    if config.hidden_act != "gelu":
        raise huggingface.ConversionError(
            f"{source}: hidden_act is {config.hidden_act!r}; keras-hub's "
            f"BertBackbone has only Google's 'gelu' (tanh approximation)")
    if config.attention_probs_dropout_prob != config.hidden_dropout_prob:
        logging.warning(
            "%s: keras-hub's BertBackbone has one dropout rate; using "
            "hidden_dropout_prob %g for attention too (was %g). Only "
            "training is affected.", source, config.hidden_dropout_prob,
            config.attention_probs_dropout_prob)
    return {
        "vocabulary_size": config.vocab_size,
        "num_layers": config.num_hidden_layers,
        "num_heads": config.num_attention_heads,
        "hidden_dim": config.hidden_size,
        "intermediate_dim": config.intermediate_size,
        "dropout": config.hidden_dropout_prob,
        "max_sequence_length": config.max_position_embeddings,
        "num_segments": config.type_vocab_size,
    }


def google_config_from_backbone(backbone_config, *, source):
    """Google's `BertConfig` for a keras-hub BertBackbone config dict."""
    try:
        values = {
            "vocab_size": backbone_config["vocabulary_size"],
            "hidden_size": backbone_config["hidden_dim"],
            "num_hidden_layers": backbone_config["num_layers"],
            "num_attention_heads": backbone_config["num_heads"],
            "intermediate_size": backbone_config["intermediate_dim"],
            "hidden_act": "gelu",
            "hidden_dropout_prob": backbone_config.get("dropout", 0.1),
            "attention_probs_dropout_prob": backbone_config.get(
                "dropout", 0.1),
            "max_position_embeddings": backbone_config.get(
                "max_sequence_length", 512),
            "type_vocab_size": backbone_config.get("num_segments", 2),
            # keras-hub initializes BERT with Google's truncated normal 0.02.
            "initializer_range": 0.02,
        }
    except KeyError as error:
        raise huggingface.ConversionError(
            f"{source}: the BertBackbone config lacks {error}") from error
    return BertConfig.from_dict(values, source=source)


def _check_preset_dir_replaceable(output_dir, overwrite, inputs):
    """Refuses an existing `output_dir` unless `overwrite` and it holds
    nothing but a preset's files (a user's other files are never removed),
    and an `output_dir` that holds one of the `(flag, path)` `inputs`."""
    inside = os.path.realpath(output_dir) + os.sep
    for flag, path in inputs:
        if path and os.path.realpath(path).startswith(inside):
            raise huggingface.ConversionError(
                f"--output_dir {output_dir} holds the input {flag} {path}: "
                f"refusing to replace it; choose another directory")
    if not os.path.lexists(output_dir):
        return
    if not overwrite:
        raise huggingface.ConversionError(
            f"output exists (pass overwrite to replace it): {output_dir}")
    _check_only_preset_files(output_dir)


def _check_only_preset_files(output_dir):
    """Refuses to replace `output_dir` unless it is a directory holding
    nothing but files the converter writes (`PRESET_FILES`, no links), at
    any depth.

    Raises:
      ConversionError: naming the first other file or directory (and how
        many more there are).
    """
    if os.path.islink(output_dir):
        raise huggingface.ConversionError(
            f"--output_dir {output_dir} is a link, not a preset directory: "
            f"refusing to replace it; choose another directory")
    if not os.path.isdir(output_dir):
        raise huggingface.ConversionError(
            f"--output_dir {output_dir} is a file, not a preset directory")
    others = []
    for root, directories, names in os.walk(output_dir):
        for name, allowed in ([(name, _PRESET_DIRECTORIES)
                               for name in directories]
                              + [(name, PRESET_FILES) for name in names]):
            path = os.path.join(root, name)
            relative = os.path.relpath(path, output_dir).replace(os.sep, "/")
            if os.path.islink(path) or relative not in allowed:
                others.append(path)
        # A directory of the user's is named whole, not walked into.
        directories[:] = [name for name in directories
                          if os.path.join(root, name) not in others]
    if others:
        others.sort()
        more = f" (and {len(others) - 1} more)" if len(others) > 1 else ""
        raise huggingface.ConversionError(
            f"--output_dir {output_dir} also holds {others[0]}{more}, which "
            f"is not a file of the keras-hub preset this converter writes: "
            f"refusing to replace it; move it away or choose another "
            f"directory")


def convert_google_to_keras_hub(checkpoint, bert_config_file, output_dir, *,
                                vocab_file=None, overwrite=False,
                                do_lower_case=True):
    """Converts a Google BERT checkpoint into a keras-hub preset directory.

    Writes the BertBackbone and, with a vocabulary, the BertTokenizer and a
    BertTextClassifierPreprocessor whose sequence length is the model's
    `max_position_embeddings`, so `BertBackbone.from_preset(output_dir)` and
    `BertTextClassifier.from_preset(output_dir, num_classes=...)` load it.
    A checkpoint with Google's classifier head (`output_weights`, as
    run_classifier.py writes) becomes a whole BertTextClassifier
    (`task.json`), whose logits are run_classifier.py's. The directory is
    built beside `output_dir` and renamed into place when complete.

    Args:
      checkpoint: anything `resolve_checkpoint` accepts.
      bert_config_file: Google's `bert_config.json`.
      output_dir: the preset directory to create.
      vocab_file: default: `vocab.txt` next to the checkpoint, if any.
      overwrite: replace an existing preset at `output_dir`.
      do_lower_case: whether the model is uncased (the tokenizer's
        `lowercase` and `strip_accents`; checked against a released
        checkpoint's name as Google's runners do).

    Returns:
      `output_dir`.

    Raises:
      ConversionError: keras-hub missing, a config keras-hub cannot
        represent, missing or misshapen tensors, an existing `output_dir`
        that may not be replaced.
    """
    from bert_tf.text import tokenization
    prefix = tf1_checkpoint.resolve_checkpoint(checkpoint)
    try:
        tokenization.validate_case_matches_checkpoint(do_lower_case, prefix)
    except ValueError as error:
        raise huggingface.ConversionError(str(error)) from error
    config = BertConfig.from_json_file(bert_config_file)
    arguments = backbone_arguments(config, source=bert_config_file)
    if vocab_file is None:
        candidate = os.path.join(os.path.dirname(prefix),
                                 huggingface.VOCAB_NAME)
        vocab_file = candidate if os.path.isfile(candidate) else None
    output_dir = os.path.abspath(os.path.expanduser(os.fspath(output_dir)))
    _check_preset_dir_replaceable(
        output_dir, overwrite,
        [("--checkpoint", prefix + ".index"),
         ("--bert_config_file", bert_config_file),
         ("--vocab_file", vocab_file)])
    keras_hub = _import_keras_hub()

    progress = progress_lib.Progress("convert google_to_keras_hub", total=3,
                                     unit="stage", speed=False)
    progress.start(f"reading {prefix}")
    google = tf1_checkpoint.read_checkpoint(prefix)
    progress.update(1, note=f"converting {len(google)} tensors", force=True)
    huggingface._check_tensors_fit_config(google, config, prefix,
                                          bert_config_file)
    backbone = keras_hub.models.BertBackbone(**arguments)
    model = backbone
    preprocessor = None
    if vocab_file:
        tokenizer = keras_hub.models.BertTokenizer(
            vocabulary=os.fspath(vocab_file), lowercase=do_lower_case,
            strip_accents=do_lower_case)
        preprocessor = keras_hub.models.BertTextClassifierPreprocessor(
            tokenizer, sequence_length=config.max_position_embeddings)
    if all(name in google for name in _CLASSIFIER_NAMES):
        model = keras_hub.models.BertTextClassifier(
            backbone, num_classes=google["output_bias"].shape[0],
            preprocessor=preprocessor, activation=None,
            dropout=config.hidden_dropout_prob)
    used = set()
    for variable in model.weights:
        mapped = keras_hub_to_google_name(variable.path)
        if mapped is None:
            raise huggingface.ConversionError(
                f"keras-hub variable {variable.path} has no Google "
                f"counterpart (keras-hub {keras_hub.__version__} is newer "
                f"than this converter)")
        name, change = mapped
        if name not in google:
            raise huggingface.ConversionError(
                f"{prefix}: no tensor {name}, which keras-hub's "
                f"{type(model).__name__} needs")
        variable.assign(_to_keras_hub_shape(
            name, google[name], change, tuple(variable.shape), prefix))
        used.add(name)
    _log_left_out(google, used, prefix)

    progress.update(2, note=f"writing {output_dir}", force=True)
    # Checked again just before the old preset is replaced: a file put
    # there meanwhile is kept too.
    with file_io.atomic_directory(
            output_dir, overwrite=True,
            check_replaceable=_check_only_preset_files) as temporary:
        model.save_to_preset(temporary)
        if preprocessor is not None and model is backbone:
            preprocessor.save_to_preset(temporary)
    progress.update(3)
    progress.close()
    if not vocab_file:
        logging.warning(
            "No vocab.txt next to %s: %s has no tokenizer, so only "
            "BertBackbone.from_preset loads it.", prefix, output_dir)
    logging.info("Converted %s to the keras-hub preset %s (%s).", prefix,
                 output_dir, type(model).__name__)
    return output_dir


def _log_left_out(google, used, prefix):
    """Logs the tensors the preset has no place for (heads, optimizer)."""
    left_out = sorted(set(google) - used)
    if not left_out:
        return
    training_state = [name for name in left_out
                      if name.endswith(huggingface._GOOGLE_TRAINING_STATE_SUFFIXES)
                      or name in huggingface._GOOGLE_TRAINING_STATE_NAMES]
    heads = sorted(set(left_out) - set(training_state))
    if training_state:
        logging.info("%s: left out %d training-state tensors (optimizer "
                     "slots, global_step).", prefix, len(training_state))
    if heads:
        logging.warning(
            "%s: keras-hub's BertBackbone has no place for %d head tensors, "
            "left out: %s", prefix, len(heads), ", ".join(heads))


def _read_preset_config(preset_dir, name):
    path = os.path.join(preset_dir, name)
    if not os.path.isfile(path):
        return None, path
    try:
        with open(path, encoding="utf-8") as reader:
            return json.load(reader), path
    except (OSError, ValueError) as error:
        raise huggingface.ConversionError(
            f"cannot read {path}: {error}") from error


def convert_keras_hub_to_google(preset_dir, output_dir, *, overwrite=False):
    """Converts a keras-hub BERT preset directory into a Google BERT
    directory.

    Writes `output_dir/bert_model.ckpt.{index,data-00000-of-00001}`, a
    `checkpoint` state file, `bert_config.json` and, when the preset has a
    tokenizer, `vocab.txt`; with a BertTextClassifier (`task.json`), its
    head as Google's `output_weights`/`output_bias`, which
    run_classifier.py's prediction reads.

    Args:
      preset_dir: a local keras-hub preset (as `save_to_preset` or
        `google_to_keras_hub` wrote it).
      output_dir: created if missing.
      overwrite: replace existing output files.

    Returns:
      The checkpoint prefix written.

    Raises:
      ConversionError: keras-hub missing, a directory that is not a
        keras-hub BERT preset, existing outputs and not `overwrite`.
    """
    preset_dir = os.path.abspath(os.path.expanduser(os.fspath(preset_dir)))
    backbone_config, config_path = _read_preset_config(preset_dir,
                                                       "config.json")
    if backbone_config is None:
        raise huggingface.ConversionError(
            f"{preset_dir} is not a keras-hub preset: no {config_path}")
    if backbone_config.get("class_name") != BACKBONE_CLASS:
        raise huggingface.ConversionError(
            f"{config_path}: class_name is "
            f"{backbone_config.get('class_name')!r}; only keras-hub "
            f"{BACKBONE_CLASS} presets are Google's BERT")
    config = google_config_from_backbone(backbone_config.get("config", {}),
                                         source=config_path)
    task_config, _ = _read_preset_config(preset_dir, "task.json")
    is_classifier = bool(task_config) and (
        task_config.get("class_name") == CLASSIFIER_CLASS)
    has_tokenizer = os.path.isfile(os.path.join(preset_dir,
                                                "tokenizer.json"))

    os.makedirs(output_dir, exist_ok=True)
    prefix = os.path.join(output_dir, tf1_checkpoint.DEFAULT_PREFIX_NAME)
    config_out = os.path.join(output_dir, huggingface.GOOGLE_CONFIG_NAME)
    vocab_out = os.path.join(output_dir, huggingface.VOCAB_NAME)
    huggingface._check_can_write(
        [prefix + ".index", prefix + ".data-00000-of-00001", config_out]
        + ([vocab_out] if has_tokenizer else []), overwrite,
        [("--input_dir", os.path.join(preset_dir, "model.weights.h5"))])
    keras_hub = _import_keras_hub()

    progress = progress_lib.Progress("convert keras_hub_to_google", total=3,
                                     unit="stage", speed=False)
    progress.start(f"reading {preset_dir}")
    try:
        if is_classifier:
            model = keras_hub.models.BertTextClassifier.from_preset(
                preset_dir, load_weights=True)
        else:
            model = keras_hub.models.BertBackbone.from_preset(preset_dir)
        tokenizer = (keras_hub.models.BertTokenizer.from_preset(preset_dir)
                     if has_tokenizer else None)
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise huggingface.ConversionError(
            f"keras-hub cannot load the preset {preset_dir}: {error}"
        ) from error
    progress.update(1, note="converting", force=True)
    google = {}
    for variable in model.weights:
        mapped = keras_hub_to_google_name(variable.path)
        if mapped is None:
            raise huggingface.ConversionError(
                f"{preset_dir}: variable {variable.path} is not part of "
                f"Google's BERT and cannot be converted")
        name, change = mapped
        google[name] = _to_google_shape(
            np.asarray(variable.numpy(), dtype=np.float32), change)
    huggingface._check_tensors_fit_config(google, config, preset_dir,
                                          config_path)

    progress.update(2, note=f"writing {prefix}", force=True)
    tf1_checkpoint.save_checkpoint(google, prefix, overwrite=overwrite)
    config.to_json_file(config_out)
    if tokenizer is not None:
        with file_io.atomic_write(vocab_out) as writer:
            writer.write("".join(f"{token}\n"
                                 for token in tokenizer.get_vocabulary()))
        logging.info(
            "%s: the tokenizer %s lower-case; pass --do_lower_case=%s to "
            "the runners.", preset_dir,
            "does" if tokenizer.lowercase else "does not",
            str(bool(tokenizer.lowercase)).lower())
    else:
        logging.warning("%s has no tokenizer; no vocab.txt written to %s.",
                        preset_dir, output_dir)
    progress.update(3)
    progress.close()
    logging.info("Converted the keras-hub preset %s (%d tensors) to %s.",
                 preset_dir, len(google), prefix)
    return prefix
