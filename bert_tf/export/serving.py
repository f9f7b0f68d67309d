"""The exported modules: a raw-text `serving_default` and an ids `serving_ids`.

Each module holds a task model, the in-graph tokenizer
(`bert_tf.text.graph_tokenizer.GraphFullTokenizer`, the Python tokenizer's
ids) and the task's packing, so that a SavedModel maps raw strings to the
runner's outputs:

- `ClassifierExport`: `text_a` (and `text_b` for pair tasks) ->
  `probabilities` [batch, num_labels] (what `run_classifier.py` writes to
  `test_results.tsv`), `label` (string), `label_id`, `logits`; regression
  (STS-B) -> `score`; multi-label (`--multi_label`) -> sigmoid
  `probabilities`, `predicted` (0/1 at the runner's threshold), `labels`.
- `SquadExport`: `question`, `context` -> `answer` (the text
  `run_squad.py` writes to `predictions.json`), its `probability` and
  `score` (start + end logit), and the n-best list.
- `EmbeddingExport`: `text` -> `pooled_output` and `mean_pooled` (the mean
  of the last layer over the real tokens, [CLS] and [SEP] included).
- `TaggingExport`: `text` (words separated by whitespace) -> `labels`
  [batch, max_words] (each word's label, as `run_tagging.py` writes them
  to `test_predictions.txt`; "" after a sentence's last word), `words`
  and `num_words` (see `tagging_windows`).
- `MultipleChoiceExport`: `context` (and `question`, for the JSON-lines
  input format) and `choices` [batch, num_choices] -> `probabilities`
  [batch, num_choices] (what `run_multiple_choice.py` writes to
  `test_results.tsv`), `label` (the index of the likeliest choice) and
  `logits`.

Length-aware: `serving_default` packs a request to its longest text (in
pieces, rounded up to a multiple of `pad_to_multiple_of`, 8 by default),
not to `max_seq_length`, and tagging's windows (SQuAD's too, when asked:
see `SquadExport`) run at their longest real window
(`bert_tf.data.sequence_lengths`): a short request costs a
short request's compute, with the outputs of the full-length packing.

XLA (`enable_xla`, `export_saved_model.py --enable_xla`): every export
calls its model through `_TextExport._run_model`, which is then one
`tf.function(jit_compile=True)` in both signatures; tokenization, packing,
SQuAD's answers and tagging's windows (string ops) stay outside it. Each
new (batch, packed length) compiles once per loaded SavedModel.

`serving_ids` takes int32 `input_ids`, `input_mask`, `segment_ids`
[batch, seq_length] (multiple choice: [batch, num_choices, seq_length];
tagging also `word_positions` and `word_mask`, the first piece of each word
of a window) and returns the model's outputs (logits or pooled outputs)
for callers that tokenize themselves, at any length up to
`max_seq_length` (it runs at the length it is given); it has no string ops,
so it converts to TensorFlow Lite, where the converter fixes one shape.
"""

import contextlib
import json
import os

import tensorflow as tf

from bert_tf import file_io
from bert_tf.data import sequence_lengths
from bert_tf.export import packing
from bert_tf.tasks.squad import graph_answers as squad_answers
from bert_tf.tasks.tagging import graph_windows as tagging_windows

INPUT_IDS = "input_ids"
INPUT_MASK = "input_mask"
SEGMENT_IDS = "segment_ids"
SERVING_DEFAULT = "serving_default"
SERVING_IDS = "serving_ids"


WORD_POSITIONS = "word_positions"
WORD_MASK = "word_mask"

# Written into every export: says that this project wrote the directory,
# and which files it wrote, so that `--overwrite` replaces only that.
EXPORT_MARKER = "bert_tf_export.json"


def _ids_specs(names=(INPUT_IDS, INPUT_MASK, SEGMENT_IDS), rank=2):
    return [tf.TensorSpec([None] * rank, tf.int32, name=name)
            for name in names]


def _string_spec(name):
    return tf.TensorSpec([None], tf.string, name=name)


def _as_batch(value, spec):
    """`value` as the batch its `spec` ([None] or [None, None]) declares.

    A loaded signature does not check shapes: a single string (a scalar)
    where [batch] strings are expected used to fail deep in the graph
    ("slice index 0 of dimension 0 out of bounds"). One rank less than the
    spec's is one example, made a batch of one; another rank is an error
    that names the input.
    """
    rank = spec.shape.rank
    # The graph believes the spec's shape and TensorFlow's optimizer would
    # fold a rank check or a reshape against it away; the value's real
    # shape survives a serialize/parse round trip (whose static shape is
    # unknown). A few microseconds per request.
    actual = tf.io.parse_tensor(tf.io.serialize_tensor(value), value.dtype)
    given = tf.rank(actual)
    # (No quotes: TensorFlow's assertion message would escape them.)
    message = (f"input {spec.name} must have rank {rank - 1} (one "
               f"example) or {rank} (a batch)")
    with tf.control_dependencies([
            tf.debugging.assert_greater_equal(given, rank - 1,
                                              message=message),
            tf.debugging.assert_less_equal(given, rank, message=message)]):
        if rank == 1:
            batch = tf.reshape(actual, [-1])
        else:
            batch = tf.reshape(actual, [-1, tf.shape(actual)[-1]])
    batch.set_shape(spec.shape)
    return batch


def _taking_single_examples(function, specs):
    """`function`, each input first made a batch (`_as_batch`)."""
    def batched(*values):
        return function(*[_as_batch(value, spec)
                          for value, spec in zip(values, specs)])
    return batched


class _TextExport(tf.Module):
    """What every export has: the model, the tokenizer, the packing, and
    the two signatures (`serving_default` from `text_signature`,
    `serving_ids` from `serve_ids` with `ID_INPUTS` of rank `ID_RANK`)."""

    ID_INPUTS = (INPUT_IDS, INPUT_MASK, SEGMENT_IDS)
    ID_RANK = 2

    def __init__(self, model, tokenizer, max_seq_length, name=None,
                 pad_to_multiple_of=sequence_lengths.DEFAULT_PAD_TO_MULTIPLE_OF,
                 enable_xla=False):
        """Args:
          model: a Keras model with its final weights.
          tokenizer: a `GraphFullTokenizer` of the model's vocabulary.
          max_seq_length: the runner's `--max_seq_length`.
          name: the module's name.
          pad_to_multiple_of: `serving_default` runs a request at its
            longest text rounded up to a multiple of this;
            `max_seq_length` packs every request to the full length.
          enable_xla: the model call of both signatures (`_run_model`) is
            one XLA-compiled function (`jit_compile=True`, saved with the
            must-compile attribute); the tokenization, packing and string
            outputs stay outside it (XLA has no string ops). Each new input
            shape compiles once per loaded SavedModel.
        """
        super().__init__(name=name)
        # Not tracked: a tracked Keras model would save every weight a
        # second time (its Keras variables serialize themselves) beside
        # `tf_variables` below, doubling the SavedModel's size.
        self.model = self._no_dependency(model)
        self.enable_xla = bool(enable_xla)

        def call(inputs, **kwargs):
            return model(inputs, training=False, **kwargs)

        if self.enable_xla:
            # Within a signature's graph, one call of a function that
            # carries `_XlaMustCompile`: the loaded SavedModel runs it as
            # one XLA program per input shape, compiled at its first call
            # (which removes TensorFlow's per-op dispatch, most of a small
            # batch's cost on CPUs).
            call = tf.function(call, jit_compile=True)
        # A plain closure, not an attribute: a tf.function attribute of a
        # tf.Module would be saved as a function of its own beside the
        # signatures.
        self._model_call = lambda inputs, **kwargs: call(inputs, **kwargs)
        # The tf.Variables under the Keras variables, tracked directly and
        # named by their Keras paths (Google's names): the session-based
        # loaders (TensorFlow Serving, `saved_model_cli run`) restore only
        # variables the SavedModel tracks as such; without this they find
        # the model's variables uninitialized.
        self.model_variables = {variable.path: variable.value
                                for variable in model.weights}
        # Tracked so that the SavedModel holds the vocabulary table.
        self.vocab_table = tokenizer.vocab_table
        self._tokenizer = tokenizer
        self.max_seq_length = max_seq_length
        self.pad_to_multiple_of = pad_to_multiple_of
        self.length_policy = sequence_lengths.LengthPolicy(
            pad_to_multiple_of=pad_to_multiple_of)
        self._cls_id = tokenizer.token_id("[CLS]")
        self._sep_id = tokenizer.token_id("[SEP]")

    def _run_model(self, inputs, **kwargs):
        """`self.model(inputs, training=False, **kwargs)`; one
        XLA-compiled function with `enable_xla`. Every export calls its
        model through this."""
        return self._model_call(inputs, **kwargs)

    def _pack(self, text_a, text_b=None):
        ids_b = None if text_b is None else self._tokenizer.tokenize(text_b)
        return packing.pack_inputs(
            self._tokenizer.tokenize(text_a), ids_b, self.max_seq_length,
            self._cls_id, self._sep_id,
            pad_to_multiple_of=self.pad_to_multiple_of)

    def text_signature(self):
        """(function, input specs) of `serving_default`."""
        raise NotImplementedError

    def signatures(self):
        """{signature name: concrete function} for `tf.saved_model.save`."""
        serve_text, text_specs = self.text_signature()
        # `autograph=False`: the signatures are straight-line tensor code,
        # traced faster without AutoGraph's conversion of the model and the
        # tokenizer (as the trainer's steps).
        return {
            SERVING_DEFAULT: tf.function(
                _taking_single_examples(serve_text, text_specs),
                input_signature=text_specs,
                autograph=False).get_concrete_function(),
            SERVING_IDS: tf.function(
                self.serve_ids, input_signature=_ids_specs(
                    self.ID_INPUTS, self.ID_RANK),
                autograph=False).get_concrete_function(),
        }


# The base a task's own export subclasses, also outside bert_tf
# (docs/adding-a-task.md): `text_signature`, `serve_ids`, and `_pack` and
# `_run_model` to call.
TextExport = _TextExport


class ClassifierExport(_TextExport):
    """Sequence (pair) classification or regression, as run_classifier.py."""

    def __init__(self, model, tokenizer, max_seq_length, label_list,
                 is_regression=False, has_text_b=False, multi_label=False,
                 threshold=0.5,
                 pad_to_multiple_of=sequence_lengths.DEFAULT_PAD_TO_MULTIPLE_OF,
                 enable_xla=False):
        """Args:
          model: a `ClassificationModel`.
          tokenizer: a `GraphFullTokenizer`.
          max_seq_length: the runner's `--max_seq_length`.
          label_list: the label strings in label-id order (ignored for
            regression).
          is_regression: one output, returned as `score`.
          has_text_b: the task reads text pairs: `serving_default` takes
            `text_b` too (an empty one gives the one-text layout, as in
            Google's code).
          multi_label: a `run_classifier.py --multi_label` model: a sigmoid
            per label (`probabilities`, as the runner's test_results.tsv),
            `predicted` [batch, num_labels] 1 where the probability is at
            least `threshold`, and `labels` [batch, num_labels] the
            predicted labels' names ("" elsewhere).
          threshold: the runner's `--threshold` (multi_label only).
          pad_to_multiple_of, enable_xla: see `_TextExport`.
        """
        super().__init__(model, tokenizer, max_seq_length,
                         name="classifier_export",
                         pad_to_multiple_of=pad_to_multiple_of,
                         enable_xla=enable_xla)
        self.is_regression = is_regression
        self.has_text_b = has_text_b
        self.multi_label = multi_label
        self.threshold = float(threshold)
        self.label_names = tf.constant(
            [""] if is_regression else list(label_list), tf.string)

    def _outputs(self, features):
        logits = tf.cast(self._run_model(features)["logits"], tf.float32)
        if self.is_regression:
            return {"score": logits[:, 0]}
        if self.multi_label:
            probabilities = tf.sigmoid(logits)
            predicted = probabilities >= self.threshold
            names = tf.broadcast_to(self.label_names, tf.shape(logits))
            return {"probabilities": probabilities,
                    "logits": logits,
                    "predicted": tf.cast(predicted, tf.int32),
                    "labels": tf.where(predicted, names, "")}
        label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {"probabilities": tf.nn.softmax(logits, axis=-1),
                "logits": logits,
                "label_id": label_id,
                "label": tf.gather(self.label_names, label_id)}

    def serve_ids(self, input_ids, input_mask, segment_ids):
        return self._outputs({INPUT_IDS: input_ids, INPUT_MASK: input_mask,
                              SEGMENT_IDS: segment_ids})

    def serve_text(self, text_a, text_b=None):
        return self._outputs(self._pack(text_a, text_b))

    def text_signature(self):
        if self.has_text_b:
            return self.serve_text, [_string_spec("text_a"),
                                     _string_spec("text_b")]
        return (lambda text_a: self.serve_text(text_a),
                [_string_spec("text_a")])


class EmbeddingExport(_TextExport):
    """Sentence embeddings from a `BertModel`: pooled and mean-pooled."""

    def __init__(self, model, tokenizer, max_seq_length,
                 pad_to_multiple_of=sequence_lengths.DEFAULT_PAD_TO_MULTIPLE_OF,
                 enable_xla=False):
        """Args:
          model: a `BertModel`.
          tokenizer: a `GraphFullTokenizer`.
          max_seq_length: the longest input, in pieces with [CLS] and
            [SEP]; longer texts are cut, as in run_classifier.py.
          pad_to_multiple_of, enable_xla: see `_TextExport`.
        """
        super().__init__(model, tokenizer, max_seq_length,
                         name="embedding_export",
                         pad_to_multiple_of=pad_to_multiple_of,
                         enable_xla=enable_xla)

    def serve_ids(self, input_ids, input_mask, segment_ids):
        outputs = self._run_model(input_ids, input_mask=input_mask,
                                  segment_ids=segment_ids)
        sequence_output = tf.cast(outputs["sequence_output"], tf.float32)
        # [batch, seq, 1]: the real tokens, [CLS] and [SEP] included.
        # (expand_dims, not [:, :, tf.newaxis]: TFLite's built-in ops have
        # no strided slice that adds an axis.)
        weights = tf.expand_dims(tf.cast(input_mask, tf.float32), -1)
        mean_pooled = tf.reduce_sum(sequence_output * weights, axis=1) / (
            tf.maximum(tf.reduce_sum(weights, axis=1), 1.0))
        return {"pooled_output": tf.cast(outputs["pooled_output"],
                                         tf.float32),
                "mean_pooled": mean_pooled}

    def serve_text(self, text):
        features = self._pack(text)
        return self.serve_ids(features[INPUT_IDS], features[INPUT_MASK],
                              features[SEGMENT_IDS])

    def text_signature(self):
        return self.serve_text, [_string_spec("text")]


class SquadExport(_TextExport):
    """SQuAD question answering, as run_squad.py (see `squad_answers`)."""

    def __init__(self, model, tokenizer, max_seq_length, config,
                 pad_to_multiple_of=None, enable_xla=False):
        """Args:
          model: a `SquadModel`.
          tokenizer: a `GraphFullTokenizer`.
          max_seq_length: `run_squad.py`'s flag.
          config: a `SquadPostprocessConfig` (`run_squad.py`'s windows and
            answer flags).
          pad_to_multiple_of: run_squad.py's flag: None (its default) runs
            windows at `max_seq_length`, whose n-best lists rank the
            padding's logits as Google's do.
          enable_xla: see `_TextExport` (the model of each question's
            windows: its compiled function runs inside the per-question
            loop).

        Raises:
          ValueError: the lengths cannot work (Google's checks).
        """
        super().__init__(model, tokenizer, max_seq_length,
                         name="squad_export",
                         pad_to_multiple_of=pad_to_multiple_of
                         or max_seq_length,
                         enable_xla=enable_xla)
        self._answerer = squad_answers.SquadAnswerer(
            tokenizer, max_seq_length, config)

    def serve_ids(self, input_ids, input_mask, segment_ids):
        outputs = self._run_model({INPUT_IDS: input_ids,
                                   INPUT_MASK: input_mask,
                                   SEGMENT_IDS: segment_ids})
        return {name: tf.cast(outputs[name], tf.float32)
                for name in ("start_logits", "end_logits")}

    def _answer_one(self, question_and_context):
        question, context = question_and_context
        inputs, windows = self._answerer.features(question, context)
        # The windows at their longest real one; the padding's logits at
        # run_squad.py's value for it (see `SquadTask.sequence_outputs`).
        from bert_tf.tasks.squad import task as squad_task
        logits = sequence_lengths.call_at_length(
            lambda cut: self.serve_ids(cut[INPUT_IDS], cut[INPUT_MASK],
                                       cut[SEGMENT_IDS]),
            inputs, self.length_policy, self.ID_INPUTS,
            squad_task.SquadTask.sequence_outputs)
        return self._answerer.answer(windows, logits["start_logits"],
                                     logits["end_logits"])

    def serve_text(self, question, context):
        # One question at a time: each has its own number of windows.
        return tf.map_fn(
            self._answer_one, (question, context),
            fn_output_signature=self._answerer.output_signature())

    def text_signature(self):
        return self.serve_text, [_string_spec("question"),
                                 _string_spec("context")]


class TaggingExport(_TextExport):
    """Token tagging (softmax or CRF), as run_tagging.py; see
    `tagging_windows`."""

    ID_INPUTS = (INPUT_IDS, INPUT_MASK, SEGMENT_IDS, WORD_POSITIONS,
                 WORD_MASK)

    def __init__(self, model, tokenizer, window_config, label_list,
                 pad_to_multiple_of=sequence_lengths.DEFAULT_PAD_TO_MULTIPLE_OF,
                 enable_xla=False):
        """Args:
          model: a `TaggingModel` (with a CRF: Viterbi decoding in the
            graph).
          tokenizer: a `GraphFullTokenizer`.
          window_config: a `TaggingWindowConfig` (the runner's
            `--max_seq_length` and `--doc_stride`).
          label_list: the label strings in label-id order
            (`label_list.txt`).
          pad_to_multiple_of: a request's windows run at their longest
            real one rounded up to a multiple of this (see `_TextExport`).
          enable_xla: see `_TextExport` (the CRF's Viterbi decoding is part
            of the model, so it is compiled too).

        Raises:
          ValueError: lengths that cannot work.
        """
        super().__init__(model, tokenizer, window_config.max_seq_length,
                         name="tagging_export",
                         pad_to_multiple_of=pad_to_multiple_of,
                         enable_xla=enable_xla)
        self._windows = tagging_windows.TaggingWindows(tokenizer,
                                                       window_config)
        self.label_names = tf.constant(list(label_list), tf.string)

    def _predict(self, features):
        outputs = self._run_model(features)
        return {"logits": tf.cast(outputs["logits"], tf.float32),
                "predicted_ids": outputs["predicted_ids"]}

    def serve_ids(self, input_ids, input_mask, segment_ids, word_positions,
                  word_mask):
        """Per window: `logits` [windows, seq, num_labels] and
        `predicted_ids` [windows, seq] of the word slots (`word_mask`)."""
        return self._predict({
            INPUT_IDS: input_ids, INPUT_MASK: input_mask,
            SEGMENT_IDS: segment_ids, WORD_POSITIONS: word_positions,
            WORD_MASK: word_mask})

    def serve_text(self, text):
        features, windows = self._windows.features(text)
        # The windows at their longest real one, outputs padded back.
        predicted_ids = sequence_lengths.call_at_length(
            self._predict, features, self.length_policy, self.ID_INPUTS,
            ("logits", "predicted_ids"))["predicted_ids"]
        labels = self._windows.labels(windows, predicted_ids,
                                      self.label_names)
        words = windows["words"]
        return {"labels": labels.to_tensor(""),
                "words": words.to_tensor(""),
                "num_words": tf.cast(words.row_lengths(), tf.int32)}

    def text_signature(self):
        return self.serve_text, [_string_spec("text")]


class MultipleChoiceExport(_TextExport):
    """Multiple choice, as run_multiple_choice.py: each choice packed as
    `[CLS] context [SEP] choice [SEP]`, a softmax over the choices."""

    ID_RANK = 3  # [batch, num_choices, seq]

    def __init__(self, model, tokenizer, max_seq_length, has_question=False,
                 pad_to_multiple_of=sequence_lengths.DEFAULT_PAD_TO_MULTIPLE_OF,
                 enable_xla=False):
        """Args:
          model: a `MultipleChoiceModel`.
          tokenizer: a `GraphFullTokenizer`.
          max_seq_length: the runner's `--max_seq_length`.
          has_question: `serving_default` takes a `question` too, put after
            the context as the JSON-lines reader does (`"context question"`,
            or the question alone when the context is "").
          pad_to_multiple_of: see `_TextExport` (a request's choices are
            packed to its longest one).
          enable_xla: see `_TextExport`.
        """
        super().__init__(model, tokenizer, max_seq_length,
                         name="multiple_choice_export",
                         pad_to_multiple_of=pad_to_multiple_of,
                         enable_xla=enable_xla)
        self.has_question = has_question

    def serve_ids(self, input_ids, input_mask, segment_ids):
        """Takes [batch, num_choices, seq]; returns [batch, num_choices]
        `probabilities` and `logits`, and `label` [batch]."""
        logits = tf.cast(self._run_model({
            INPUT_IDS: input_ids, INPUT_MASK: input_mask,
            SEGMENT_IDS: segment_ids})["logits"], tf.float32)
        return {"probabilities": tf.nn.softmax(logits, axis=-1),
                "logits": logits,
                "label": tf.argmax(logits, axis=-1, output_type=tf.int32)}

    def serve_text(self, context, choices, question=None):
        if question is not None:
            context = tf.where(tf.equal(context, ""), question,
                               tf.strings.join([context, question], " "))
        shape = tf.shape(choices)  # [batch, num_choices]
        # The context's pieces once, repeated for each of its choices.
        example = tf.repeat(tf.range(shape[0]), shape[1])
        ids_a = tf.gather(self._tokenizer.tokenize(context), example)
        ids_b = self._tokenizer.tokenize(tf.reshape(choices, [-1]))
        features = packing.pack_inputs(
            ids_a, ids_b, self.max_seq_length, self._cls_id, self._sep_id,
            pad_to_multiple_of=self.pad_to_multiple_of)
        length = tf.shape(features[INPUT_IDS])[1]
        grouped = {name: tf.reshape(value, [shape[0], shape[1], length])
                   for name, value in features.items()}
        return self.serve_ids(grouped[INPUT_IDS], grouped[INPUT_MASK],
                              grouped[SEGMENT_IDS])

    def text_signature(self):
        choices = tf.TensorSpec([None, None], tf.string, name="choices")
        if self.has_question:
            return (lambda context, question, choices: self.serve_text(
                context, choices, question),
                [_string_spec("context"), _string_spec("question"), choices])
        return (lambda context, choices: self.serve_text(context, choices),
                [_string_spec("context"), choices])


def _files_under(directory):
    """Relative paths of the files (and links) under `directory`, sorted."""
    found = []
    for root, directories, names in os.walk(directory):
        for name in names + [d for d in directories
                             if os.path.islink(os.path.join(root, d))]:
            found.append(os.path.relpath(os.path.join(root, name),
                                         directory))
    return sorted(found)


def check_replaceable_export(export_dir):
    """Refuses to replace `export_dir` unless it is an export this project
    wrote, holding nothing else.

    `--overwrite` must never delete a training run, a vocabulary or files a
    user put there: only a directory with the `EXPORT_MARKER` that
    `save_export` writes, and only the files the marker lists, may go (or
    an empty directory).

    Args:
      export_dir: an existing path.

    Raises:
      FileExistsError: `export_dir` is not a directory, has no marker, or
        holds a file the export did not write (the message names it).
    """
    refusal = (f"--overwrite replaces only a SavedModel that "
               f"export_saved_model.py wrote, and {export_dir}")
    advice = "choose another --export_dir"
    if not os.path.isdir(export_dir):
        raise FileExistsError(f"{refusal} is a file, not such a directory: "
                              f"refusing to delete it; {advice}")
    present = _files_under(export_dir)
    if not present:
        return  # Empty: nothing to lose.
    try:
        with open(os.path.join(export_dir, EXPORT_MARKER),
                  encoding="utf-8") as reader:
            written = json.load(reader)["files"]
    except (OSError, ValueError, KeyError, TypeError):
        raise FileExistsError(
            f"{refusal} is not one (it has no {EXPORT_MARKER}): refusing to "
            f"delete it; {advice}") from None
    others = sorted(set(present) - set(written) - {EXPORT_MARKER})
    if others:
        more = f" (and {len(others) - 1} more)" if len(others) > 1 else ""
        raise FileExistsError(
            f"{refusal} also holds {os.path.join(export_dir, others[0])}"
            f"{more}, which the export did not write: refusing to delete "
            f"it; move it away or {advice}")


def check_export_dir(export_dir, overwrite=False):
    """Refuses, before any slow work, the `export_dir` that `save_export`
    would refuse (see there)."""
    file_io.check_replaceable_directory(export_dir, overwrite,
                                        check_replaceable_export)


@contextlib.contextmanager
def export_directory(export_dir, overwrite=False, description="SavedModel"):
    """A temporary directory that becomes `export_dir` when the block ends.

    Every export format is written this way: beside `export_dir`, renamed
    at the end (a failed export leaves nothing half-written under the real
    name), with `EXPORT_MARKER` listing its files, so that an existing
    `export_dir` is replaced only if it is such an export and holds nothing
    else (`check_replaceable_export`).

    Args:
      export_dir: the directory to create.
      overwrite: replace an existing `export_dir` (an export of this
        project's only).
      description: what is written, for a full disk's message.

    Yields:
      The temporary directory to write the export's files into.

    Raises:
      FileExistsError: `export_dir` exists and not `overwrite`, or it is not
        an export this project wrote (see `check_replaceable_export`).
      file_io.WriteError: the disk is full (nothing was written under
        `export_dir`, which is as it was).
    """
    with file_io.atomic_directory(
            export_dir, overwrite,
            check_replaceable=check_replaceable_export) as temporary:
        with file_io.naming_write_errors(export_dir, description):
            yield temporary
            marker = {"written_by": "bert_tf export_saved_model.py",
                      "files": _files_under(temporary)}
            with open(os.path.join(temporary, EXPORT_MARKER), "w",
                      encoding="utf-8") as writer:
                json.dump(marker, writer, indent=1)
                writer.write("\n")


def save_export(module, export_dir, overwrite=False):
    """Writes `module` as a SavedModel, atomically (`export_directory`).

    Args:
      module: one of this module's exports.
      export_dir: the SavedModel directory to create.
      overwrite: replace an existing `export_dir` (an export of this
        project's only).

    Raises:
      FileExistsError, file_io.WriteError: see `export_directory`.
    """
    with export_directory(export_dir, overwrite) as temporary:
        tf.saved_model.save(module, temporary,
                            signatures=module.signatures())
