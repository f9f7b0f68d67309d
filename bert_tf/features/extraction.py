"""Contextual token features from a pre-trained BERT, as Google's script.

Google's `extract_features.py`, step for step:

1. `read_examples`: each line of the input file is one example; a line
   `text_a ||| text_b` is a sentence pair.
2. `convert_examples_to_features`: WordPiece tokens framed as
   `[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]`, truncated as the original
   (a pair loses tokens from its longer side; a single text is cut), padded
   to `max_seq_length`.
3. `FeatureExtractor`: runs the encoder through the one prediction loop
   (`bert_tf.training.prediction`, in order under any strategy) and returns
   the chosen layers' outputs for every real (not padding) token. On the
   other Keras backends (JAX, PyTorch) there is no tf.data or strategy: the
   batches are cut from the features in Python and run one after another.
4. `feature_json`: one JSON object per example,
   `{"linex_index": i, "features": [{"token": ..., "layers": [{"index": -1,
   "values": [...]}, ...]}, ...]}`, values rounded to 6 decimals.

`extract_features` wires the steps and writes the JSON lines file with
`bert_tf.file_io.atomic_write` (a temporary name, renamed when complete).
"""

import collections
import contextlib
import dataclasses
import json
import os
import re

from absl import logging
import numpy as np

from bert_tf import backend
from bert_tf import file_io
from bert_tf.data.encoded_input import EncodedInput
from bert_tf.data.encoded_input import frame_pair
from bert_tf.text import tokenization

# "text_a ||| text_b"; the first group is greedy, so with several
# separators the line splits at the last one, as in Google's code.
_PAIR_RE = re.compile(r"^(.*) \|\|\| (.*)$")


class FeatureExtractionError(ValueError):
    """Input that feature extraction cannot work with (the message says why)."""


@dataclasses.dataclass
class InputExample:
    """One line of input: a text or a text pair."""
    unique_id: int
    text_a: str
    text_b: str = None


@dataclasses.dataclass(kw_only=True)
class ExtractionFeatures(EncodedInput):
    """One example as model inputs, padded to `max_seq_length`.

    Attributes (besides `EncodedInput`'s `input_ids`, `input_mask`,
    `segment_ids`, padded with zeros):
      unique_id: the example's line index (`linex_index` in the output).
      tokens: the real tokens only ([CLS] ... [SEP]).
    """
    unique_id: int
    tokens: list


def _read_lines(input_file):
    """The lines of a file as Google's `tf.gfile.GFile.readline` gives them.

    Lines end at "\\n" only and TensorFlow's line reader drops every "\\r";
    invalid UTF-8 bytes are dropped (Google's code would stop on them).
    """
    path = os.fspath(input_file)
    if "://" in path:
        import tensorflow as tf  # Remote files (gs://...) only.
        if not tf.io.gfile.exists(path):
            raise FileNotFoundError(f"input file {path} does not exist")
        with tf.io.gfile.GFile(path, "rb") as reader:
            data = reader.read()
    else:
        try:
            with open(path, "rb") as reader:
                data = reader.read()
        except FileNotFoundError:
            raise FileNotFoundError(
                f"input file {path} does not exist") from None
        except IsADirectoryError:
            raise FeatureExtractionError(
                f"input file {path} is a directory") from None
    lines = [line.replace(b"\r", b"") for line in data.split(b"\n")]
    if lines[-1] == b"":
        # Nothing (or only "\r") after the last newline: the reader is at
        # its end, not on an empty line.
        lines.pop()
    return [tokenization.convert_to_unicode(line) for line in lines]


def parse_example(line, unique_id):
    """An `InputExample` from one input line (stripped; split at " ||| ")."""
    line = line.strip()
    match = _PAIR_RE.match(line)
    if match is None:
        return InputExample(unique_id=unique_id, text_a=line)
    return InputExample(unique_id=unique_id, text_a=match.group(1),
                        text_b=match.group(2))


def read_examples(input_file):
    """Reads one `InputExample` per line of `input_file`.

    A blank line is an example too (it becomes `[CLS] [SEP]`), as in
    Google's code, so output line i always belongs to input line i.

    Raises:
      FileNotFoundError: the file does not exist (the message names it).
      FeatureExtractionError: the file has no lines at all.
    """
    lines = _read_lines(input_file)
    if not lines:
        raise FeatureExtractionError(
            f"input file {os.fspath(input_file)} is empty: it needs one text "
            f"(or 'text_a ||| text_b' pair) per line")
    return [parse_example(line, index) for index, line in enumerate(lines)]


def convert_example_to_features(example, max_seq_length, tokenizer):
    """Tokenizes, frames, truncates and pads one example.

    Args:
      example: an `InputExample`.
      max_seq_length: length of the padded id lists (at least 3).
      tokenizer: a `FullTokenizer`.

    Returns:
      An `ExtractionFeatures`.
    """
    tokens_a = tokenizer.tokenize(example.text_a)
    tokens_b = tokenizer.tokenize(example.text_b) if example.text_b else []
    # A second text that has no tokens (e.g. only control characters)
    # leaves a single-text example, as Google's.
    tokens, segment_ids = frame_pair(tokens_a, tokens_b, max_seq_length)
    return ExtractionFeatures.padded(
        tokenizer.convert_tokens_to_ids(tokens), segment_ids, max_seq_length,
        unique_id=example.unique_id, tokens=tokens)


def convert_examples_to_features(examples, max_seq_length, tokenizer):
    """`convert_example_to_features` for each example.

    The first five are logged in full as Google's script logs them
    (`input_ids: 101 1996 ...`), at absl verbosity 1 (`--verbosity=1`):
    by default they are 25 lines of numbers before any progress.
    """
    if max_seq_length < 3:
        raise FeatureExtractionError(
            f"max_seq_length is {max_seq_length}; it must be at least 3 "
            f"([CLS] a [SEP] b [SEP] needs room for three special tokens)")
    features = []
    for example in examples:
        feature = convert_example_to_features(example, max_seq_length, tokenizer)
        if example.unique_id < 5:
            logging.vlog(1, "*** Example ***")
            logging.vlog(1, "unique_id: %s", feature.unique_id)
            logging.vlog(1, "tokens: %s", " ".join(feature.tokens))
            logging.vlog(1, "input_ids: %s",
                         " ".join(map(str, feature.input_ids)))
            logging.vlog(1, "input_mask: %s",
                         " ".join(map(str, feature.input_mask)))
            # Google's log label for the segment ids.
            logging.vlog(1, "input_type_ids: %s",
                         " ".join(map(str, feature.segment_ids)))
        features.append(feature)
    return features


def parse_layer_indexes(layers):
    """Parses Google's `--layers` ("-1,-2,-3,-4") into a list of ints.

    Raises:
      FeatureExtractionError: an entry is not an integer, or none is given.
    """
    if isinstance(layers, str):
        entries = layers.split(",")
    else:
        entries = list(layers)
    indexes = []
    for entry in entries:
        try:
            indexes.append(int(str(entry).strip()))
        except ValueError:
            raise FeatureExtractionError(
                f"layers: {str(entry).strip()!r} in {layers!r} is not a layer "
                f"index (expected comma-separated integers such as "
                f"-1,-2,-3,-4)") from None
    if not indexes:
        raise FeatureExtractionError("layers: no layer index given")
    return indexes


def check_layer_indexes(layer_indexes, num_hidden_layers):
    """Raises unless every index picks one of the encoder's layers.

    As Python list indexes into the per-layer outputs: 0 is the first
    Transformer layer's output, -1 the last one's.

    Raises:
      FeatureExtractionError: naming the index and the valid range.
    """
    for index in layer_indexes:
        if not -num_hidden_layers <= index < num_hidden_layers:
            raise FeatureExtractionError(
                f"layers: layer index {index} is out of range for a model "
                f"with {num_hidden_layers} layers (num_hidden_layers); valid "
                f"indexes are {-num_hidden_layers}..{num_hidden_layers - 1}")


class FeatureExtractor:
    """Runs a `BertModel` on features, keeping the chosen layers' outputs.

    Batches are spread over a `tf.distribute` strategy (TPU included) by
    `bert_tf.training.prediction.predict`; every batch is padded to full
    size, so the model is traced once, and the padding rows' outputs are
    dropped. Examples are grouped by length and each batch runs at its
    longest real sequence (`length_policy`); only real tokens are written,
    so the output is the full-length run's to float round-off.
    """

    def __init__(self, model, layer_indexes, batch_size, strategy=None,
                 length_policy=None):
        """Args:
          model: a built `BertModel` (with its weights loaded), created in
            `strategy`'s scope if a strategy is given.
          layer_indexes: which entries of `encoder_outputs` to keep.
          batch_size: examples per model call (global, over all replicas).
          strategy: a `tf.distribute.Strategy`; default: the current one.
          length_policy: a `bert_tf.data.sequence_lengths.LengthPolicy`; default:
            batches rounded to a multiple of 8 (buckets on TPUs).

        Raises:
          FeatureExtractionError: a layer index is out of range, or the
            batch does not split over the replicas.
        """
        from bert_tf.data import sequence_lengths

        check_layer_indexes(layer_indexes, model.config.num_hidden_layers)
        if batch_size < 1:
            raise FeatureExtractionError(
                f"batch_size is {batch_size}; it must be positive")
        self.model = model
        self.layer_indexes = list(layer_indexes)
        self.batch_size = batch_size
        if length_policy is None:
            length_policy = sequence_lengths.LengthPolicy()
        self.length_policy = length_policy
        if backend.name() != backend.TENSORFLOW:
            if strategy is not None:
                raise FeatureExtractionError(
                    "a tf.distribute strategy needs the TensorFlow backend "
                    f"(KERAS_BACKEND is {backend.name()})")
            self._strategy = None
            return
        import tensorflow as tf
        self._strategy = strategy or tf.distribute.get_strategy()
        replicas = self._strategy.num_replicas_in_sync
        if batch_size % replicas:
            raise FeatureExtractionError(
                f"batch_size {batch_size} does not split over the "
                f"{replicas} replicas; use a multiple of {replicas}")
        if isinstance(self._strategy, tf.distribute.TPUStrategy):
            self.length_policy = sequence_lengths.static_policy(
                length_policy)
        # One function object: `run` after `run` reuses the traced step.
        self._predict_fn = self._layer_outputs

    def _layer_outputs(self, features):
        """[batch, seq_length, num_chosen_layers, hidden_size], float32,
        the batch run at its length (`length_policy`)."""
        import tensorflow as tf

        from bert_tf.data import sequence_lengths

        def run(features):
            outputs = self.model(features["input_ids"],
                                 input_mask=features["input_mask"],
                                 segment_ids=features["segment_ids"],
                                 training=False)
            encoder_outputs = outputs["encoder_outputs"]
            return {"layers": tf.stack(
                [tf.cast(encoder_outputs[index], tf.float32)
                 for index in self.layer_indexes], axis=2)}

        return sequence_lengths.call_at_length(
            run, features, self.length_policy,
            ("input_ids", "input_mask", "segment_ids"), ("layers",))

    def run(self, features):
        """Yields `(feature, layer_outputs)` for each feature, in order.

        `layer_outputs` is a float32 array [num_chosen_layers, num_tokens,
        hidden_size] over the feature's real tokens.
        """
        if not features:
            return
        if self._strategy is None:
            yield from self._run_batches_in_python(features)
            return
        import tensorflow as tf

        from bert_tf.training import prediction

        columns = {
            "input_ids": [f.input_ids for f in features],
            "input_mask": [f.input_mask for f in features],
            "segment_ids": [f.segment_ids for f in features]}
        examples = tf.data.Dataset.from_tensor_slices(
            {name: np.asarray(column, np.int32)
             for name, column in columns.items()})
        remaining = iter(features)
        for outputs in prediction.predict(
                self._strategy, self._predict_fn, examples,
                self.batch_size, pad_to_full_batches=True,
                num_examples=len(features), description="input lines",
                length_policy=self.length_policy):
            for layers in outputs["layers"]:
                feature = next(remaining)
                yield feature, np.transpose(
                    layers[:len(feature.tokens)], (1, 0, 2))


    def _run_batches_in_python(self, features):
        """`run` without TensorFlow: batches of `batch_size` features in
        order, each at its `length_policy` length, the last one short."""
        from keras import ops
        max_seq_length = len(features[0].input_ids)
        for start in range(0, len(features), self.batch_size):
            batch = features[start:start + self.batch_size]
            length = self.length_policy.run_length(
                max(len(f.tokens) for f in batch), max_seq_length)
            columns = [
                np.asarray([getattr(f, name)[:length] for f in batch],
                           np.int32)
                for name in ("input_ids", "input_mask", "segment_ids")]
            outputs = self.model(columns[0], input_mask=columns[1],
                                 segment_ids=columns[2], training=False)
            encoder_outputs = outputs["encoder_outputs"]
            # [batch, seq, num_chosen_layers, hidden]
            layers = np.stack(
                [ops.convert_to_numpy(ops.cast(encoder_outputs[index],
                                               "float32"))
                 for index in self.layer_indexes], axis=2)
            for feature, feature_layers in zip(batch, layers):
                yield feature, np.transpose(
                    feature_layers[:len(feature.tokens)], (1, 0, 2))


def feature_json(feature, layer_outputs, layer_indexes):
    """Google's JSON object for one example.

    Args:
      feature: its `ExtractionFeatures`.
      layer_outputs: [len(layer_indexes), num_tokens, hidden_size].
      layer_indexes: the `--layers` indexes, in the order given.

    Returns:
      An `OrderedDict` `{"linex_index": ..., "features": [...]}` whose values
      are `round(x, 6)` of each float32 output.
    """
    per_layer_values = [
        [[round(x, 6) for x in token_values] for token_values in layer]
        for layer in np.asarray(layer_outputs).tolist()]
    token_features = []
    for position, token in enumerate(feature.tokens):
        layers = []
        for layer_number, layer_index in enumerate(layer_indexes):
            layers.append(collections.OrderedDict([
                ("index", layer_index),
                ("values", per_layer_values[layer_number][position]),
            ]))
        token_features.append(collections.OrderedDict([
            ("token", token), ("layers", layers)]))
    return collections.OrderedDict([
        ("linex_index", feature.unique_id), ("features", token_features)])


def extract_features(input_file, output_file, bert_config_file,
                     init_checkpoint, vocab_file, layers="-1,-2,-3,-4",
                     max_seq_length=128, do_lower_case=True, batch_size=32,
                     strategy=None, pad_to_multiple_of=None,
                     length_buckets=()):
    """Google's `extract_features.py` as a function.

    Args:
      input_file: text file, one example per line ("a" or "a ||| b").
      output_file: where the JSON lines go (written atomically).
      bert_config_file: the model's `bert_config.json`.
      init_checkpoint: the model's checkpoint (prefix or directory).
      vocab_file: the model's `vocab.txt`.
      layers: comma-separated layer indexes (or a list of ints); -1 is the
        last layer.
      max_seq_length: tokens per example after WordPiece, including [CLS]
        and [SEP]; longer examples are truncated.
      do_lower_case: True for uncased models.
      batch_size: examples per model call.
      strategy: a `tf.distribute.Strategy`; default: the current one.
      pad_to_multiple_of: each batch runs at its longest example rounded up
        to a multiple of this (`bert_tf.data.sequence_lengths`; default 8);
        `max_seq_length` runs every batch at the full length.
      length_buckets: lengths a batch may run at instead (sorted ints).

    Returns:
      The number of examples written.

    Raises:
      FileNotFoundError, FeatureExtractionError, BertConfigError,
      CheckpointError: naming the file, flag or variable at fault.
    """
    from bert_tf.checkpoints import load_checkpoint
    from bert_tf.config import BertConfig
    from bert_tf.modeling import BertModel

    layer_indexes = parse_layer_indexes(layers)
    bert_config = BertConfig.from_json_file(bert_config_file)
    check_layer_indexes(layer_indexes, bert_config.num_hidden_layers)
    bert_config.check_max_seq_length(max_seq_length)
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case)
    if len(tokenizer.vocab) > bert_config.vocab_size:
        raise FeatureExtractionError(
            f"vocab file {vocab_file} has {len(tokenizer.vocab)} entries but "
            f"the model ({bert_config_file}) has vocab_size "
            f"{bert_config.vocab_size}: they belong to different models")

    examples = read_examples(input_file)
    features = convert_examples_to_features(examples, max_seq_length,
                                            tokenizer)

    if backend.name() == backend.TENSORFLOW:
        import tensorflow as tf
        strategy = strategy or tf.distribute.get_strategy()
        scope = strategy.scope()
    else:
        scope = contextlib.nullcontext()
    with scope:
        model = BertModel(bert_config)
        model.build()
        load_checkpoint(model, init_checkpoint)
    from bert_tf.data import sequence_lengths
    policy = sequence_lengths.LengthPolicy(
        pad_to_multiple_of=(pad_to_multiple_of if pad_to_multiple_of
                            is not None else
                            sequence_lengths.DEFAULT_PAD_TO_MULTIPLE_OF),
        buckets=tuple(length_buckets))
    try:
        policy.validate()
    except ValueError as error:
        raise FeatureExtractionError(str(error)) from None
    extractor = FeatureExtractor(model, layer_indexes, batch_size, strategy,
                                 length_policy=policy)

    # The prediction loop reports the progress ("prediction over the input
    # lines: 12/12 examples ...").
    with file_io.atomic_write(output_file) as writer:
        for feature, layer_outputs in extractor.run(features):
            writer.write(json.dumps(
                feature_json(feature, layer_outputs, layer_indexes)) + "\n")
    return len(features)
