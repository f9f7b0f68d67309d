"""bert_tf from Python: raw text in, the runners' outputs out.

    import bert_tf

    model = bert_tf.load("uncased_L-12_H-768_A-12")      # a released checkpoint
    model.fill_mask(["The capital of France is [MASK]."], top_k=5)
    model.embed(["Hello world."])                        # pooled, mean-pooled

    bert_tf.finetune("classification", "uncased_L-12_H-768_A-12", "work/sst",
                     train=[("a great film", "1"), ("dull", "0"), ...],
                     dev=[...], num_train_epochs=3)      # -> the eval metrics
    bert_tf.load("work/sst").predict(["what a film"])    # [{"label": ..., ...}]

Nothing here is a second implementation of what the programs do:

- `finetune` runs the task's recipe, the function the program runs
  (`bert_tf.tasks.<task>.recipe.run`: classification for run_classifier.py,
  squad, tagging, multiple_choice), on a config
  built from the keyword arguments; Python lists become the recipe's
  examples directly. The `output_dir` it writes is a runner's, checkpoints,
  `eval_results.txt` and all.
- `load(...).predict` calls the `serving_default` function of the task's
  export (`bert_tf.export`): the SavedModel's own, or, for a training run's
  `--output_dir`, the export built from its newest checkpoint and its
  `bert_tf_run.json` (`bert_tf.runners.finetune.write_run_description`).
  The exports are tested to give the runners' `test_results.tsv`,
  `predictions.json` and `test_predictions.txt`.
- `embed` is the `embeddings` export; `fill_mask` the encoder and
  `MaskedLMHead` (the layers of the pretraining model) on the released
  checkpoint's `cls/predictions/...` variables.
- With another Keras backend than TensorFlow (`KERAS_BACKEND=jax`), `embed`
  and a classification run's `predict` run the pure-Python tokenizer and the
  Keras model (`_PythonServed`): there are no TensorFlow exports there.

`load` takes one of three kinds of directory:

- a released checkpoint directory (`bert_config.json`, `vocab.txt`,
  `bert_model.ckpt.*`, e.g. Google's zips): `embed`, `fill_mask`;
- a training run's `--output_dir` (its `bert_tf_run.json`, config,
  vocabulary, labels and newest checkpoint): `predict`, and `embed`;
- a SavedModel of `export_saved_model.py`: `predict`.
"""

import contextlib
import numbers
import os

from bert_tf import startup

# Before anything imports TensorFlow (a no-op once it is imported).
startup.quiet_start()

import numpy as np  # noqa: E402

from bert_tf.runners import finetune as finetune_lib  # noqa: E402

SAVED_MODEL_FILE = "saved_model.pb"
MASK = "[MASK]"
DEFAULT_MAX_SEQ_LENGTH = 128
# run_classifier.py's tasks (Google's and GLUE's, `generic`).
_CLASSIFIER_TASKS = ("cola", "mnli", "mnli-mm", "mrpc", "xnli", "sst-2",
                     "qqp", "qnli", "rte", "wnli", "sts-b", "generic")


# -- loading -------------------------------------------------------------------

def load(path, *, batch_size=32, do_lower_case=None, max_seq_length=None,
         bert_config=None, vocab=None):
    """A model from a directory, ready for raw text.

    Args:
      path: a released checkpoint directory, a training run's
        `--output_dir`, or a SavedModel of `export_saved_model.py` (see the
        module docstring).
      batch_size: inputs per model call.
      do_lower_case: the tokenizer's casing. Default: a run's own; for a
        checkpoint directory, True when no vocabulary piece has an upper-case
        letter (Google's uncased vocabularies have none). A SavedModel has
        its tokenizer inside (passing it is an error).
      max_seq_length: the longest input in word pieces, [CLS] and [SEP]
        included. Default: a run's own; 128 for a checkpoint directory
        (at most the config's `max_position_embeddings`).
      bert_config, vocab: for a checkpoint directory, the
        `bert_config.json` and `vocab.txt` to use instead of its own (e.g.
        for the `--output_dir` of Google's run_pretraining.py, which has
        only checkpoints). Training runs and SavedModels have their own.

    Returns:
      A `PretrainedModel`, `FineTunedModel` or `ExportedModel`.

    Raises:
      ValueError: `path` is none of the three kinds, or a bad argument (the
        message names it).
    """
    path = os.fspath(path)
    batch_size = _positive_int("batch_size", batch_size)
    if max_seq_length is not None:
        max_seq_length = _positive_int("max_seq_length", max_seq_length)
    if do_lower_case is not None and not isinstance(do_lower_case,
                                                    (bool, np.bool_)):
        raise ValueError(f"bert_tf.load: do_lower_case={do_lower_case!r} "
                         "must be True, False or None")
    if not os.path.isdir(path):
        raise ValueError(f"bert_tf.load: {path} is not a directory")
    model_files = {"bert_config": bert_config, "vocab": vocab}
    if os.path.isfile(os.path.join(path, SAVED_MODEL_FILE)):
        for name, value in (("do_lower_case", do_lower_case),
                            ("max_seq_length", max_seq_length),
                            *model_files.items()):
            if value is not None:
                raise ValueError(
                    f"bert_tf.load: {name} is fixed in the SavedModel {path} "
                    "(it was exported with its own)")
        return ExportedModel(path, batch_size)
    if os.path.isfile(os.path.join(path,
                                   finetune_lib.RUN_DESCRIPTION_FILE)):
        for name, value in model_files.items():
            if value is not None:
                raise ValueError(
                    f"bert_tf.load: {name} is fixed in the training run "
                    f"{path} (it trained with its own)")
        return FineTunedModel(path, batch_size, do_lower_case,
                              max_seq_length)
    for name, value in model_files.items():
        if value is not None and not os.path.isfile(value):
            raise ValueError(f"bert_tf.load: {name}={value} is not a file")
    missing = [name for name, given in ((finetune_lib.BERT_CONFIG_FILE,
                                         bert_config),
                                        (finetune_lib.VOCAB_FILE, vocab))
               if given is None
               and not os.path.isfile(os.path.join(path, name))]
    if missing or not _has_checkpoint(path):
        raise ValueError(
            f"bert_tf.load: {path} is neither a checkpoint directory "
            "(bert_config.json, vocab.txt and a checkpoint), a training "
            f"run's --output_dir ({finetune_lib.RUN_DESCRIPTION_FILE}) nor a "
            f"SavedModel ({SAVED_MODEL_FILE})"
            + (f"; it has no {' or '.join(missing)} (give it as "
               f"bert_config= or vocab=)" if missing
               else "; it has no checkpoint"))
    return PretrainedModel(path, batch_size, do_lower_case, max_seq_length,
                           bert_config_file=bert_config, vocab_file=vocab)


def _positive_int(name, value):
    """`value` as an int; a ValueError naming argument `name` unless it is
    a positive integer (a string, a float or a bool is refused, not
    converted)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, numbers.Integral) or value < 1:
        raise ValueError(f"bert_tf.load: {name}={value!r} must be a "
                         "positive int")
    return int(value)


def _has_checkpoint(directory):
    from bert_tf import checkpoints
    try:
        checkpoints.resolve_checkpoint(directory)
    except checkpoints.CheckpointError:
        return False
    return True


def vocab_is_uncased(vocab_file):
    """True when no piece of the vocabulary (special `[...]` tokens aside)
    has an upper-case letter, as in Google's uncased vocabularies."""
    with open(vocab_file, encoding="utf-8") as reader:
        for line in reader:
            piece = line.strip()
            if piece.startswith("[") and piece.endswith("]"):
                continue
            if piece != piece.lower():
                return False
    return True


class PretrainedModel:
    """A Google-format checkpoint directory: sentence embeddings and, when
    the checkpoint has the masked-LM head, `fill_mask`.

    Attributes:
      path: the directory.
      checkpoint: the checkpoint prefix read.
      bert_config: its `BertConfig`.
      vocab_file, do_lower_case, max_seq_length: the tokenizer and inputs.
    """

    def __init__(self, path, batch_size=32, do_lower_case=None,
                 max_seq_length=None, default_max_seq_length=None,
                 default_do_lower_case=None, causal_attention=False,
                 bert_config_file=None, vocab_file=None):
        from bert_tf import checkpoints
        from bert_tf.config import BertConfig
        self.path = path
        self.batch_size = batch_size
        self.checkpoint = checkpoints.resolve_checkpoint(path)
        self.bert_config = BertConfig.from_json_file(
            bert_config_file
            or os.path.join(path, finetune_lib.BERT_CONFIG_FILE))
        self.vocab_file = vocab_file or os.path.join(path,
                                                      finetune_lib.VOCAB_FILE)
        if do_lower_case is None:
            do_lower_case = (default_do_lower_case
                             if default_do_lower_case is not None
                             else vocab_is_uncased(self.vocab_file))
        self.do_lower_case = bool(do_lower_case)
        if max_seq_length is None:
            max_seq_length = default_max_seq_length or min(
                DEFAULT_MAX_SEQ_LENGTH,
                self.bert_config.max_position_embeddings)
        if max_seq_length < 3:
            raise ValueError(f"max_seq_length={max_seq_length} cannot hold "
                             "[CLS], a word piece and [SEP]")
        self.bert_config.check_max_seq_length(max_seq_length)
        self.max_seq_length = max_seq_length
        # A run fine-tuned with --causal_attention has a left-to-right
        # encoder (its weights do not say so).
        self.causal_attention = causal_attention
        self._embedder = None
        self._masked_lm = None
        self._tokenizer = None

    # -- embeddings --

    def embed(self, texts):
        """Sentence embeddings of `texts`.

        Args:
          texts: a list of strings (each cut to `max_seq_length` pieces,
            as run_classifier.py cuts a text).

        Returns:
          {"pooled_output": float32 [n, hidden] (the pooler: dense + tanh
          on [CLS]), "mean_pooled": float32 [n, hidden] (the last layer
          averaged over the real tokens, [CLS] and [SEP] included)}.
        """
        texts = _strings("texts", texts)
        if not texts:
            # As `predict([])` returns []: no rows, of the embeddings' width.
            empty = np.zeros([0, self.bert_config.hidden_size], np.float32)
            return {"pooled_output": empty, "mean_pooled": empty.copy()}
        if self._embedder is None and not _on_tensorflow():
            self._embedder = _PythonServed(
                _EMBEDDINGS, self, self._encoder_with(head=None))
        if self._embedder is None:
            from bert_tf.export import builders
            export = builders.embedding_export(
                self.bert_config, self.vocab_file, self.do_lower_case,
                self.checkpoint, self.max_seq_length,
                causal_attention=self.causal_attention)
            self._embedder = _Served(export)
        rows = self._embedder.call_batched({"text": texts}, self.batch_size)
        return {name: rows[name] for name in ("pooled_output",
                                              "mean_pooled")}

    # -- masked LM --

    def fill_mask(self, texts, top_k=5):
        """The masked-LM head's likeliest pieces for each `[MASK]`.

        Args:
          texts: a list of strings, each with one or more `[MASK]` (written
            as such; the text around it is tokenized as usual).
          top_k: candidates per mask.

        Returns:
          One list per text, one list per `[MASK]` in it (in order), of
          `top_k` dicts `{"token": piece, "token_id": id, "probability": p}`,
          likeliest first.

        Raises:
          ValueError: the checkpoint has no masked-LM head
            (`cls/predictions/...`: Google's released checkpoints have it,
            fine-tuned and sentence-embedding ones do not), a text has no
            `[MASK]`, or one is cut off by `max_seq_length`.
        """
        from keras import ops
        texts = _strings("texts", texts)
        if not isinstance(top_k, int) or not 1 <= top_k <= (
                self.bert_config.vocab_size):
            raise ValueError(f"top_k={top_k!r} must be an int in [1, "
                             f"{self.bert_config.vocab_size}]")
        encoder, head = self._masked_lm_model()
        tokenizer = self._python_tokenizer()
        mask_id = tokenizer.vocab[MASK]
        results = []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start:start + self.batch_size]
            ids, positions = [], []
            for offset, text in enumerate(batch):
                text_ids, text_positions = self._mask_ids(
                    tokenizer, text, start + offset, mask_id)
                ids.append(text_ids)
                positions.append(text_positions)
            input_ids, input_mask, mask_positions = _pad_masked_batch(
                ids, positions)
            sequence_output = encoder(
                input_ids, input_mask=input_mask, training=False)[
                    "sequence_output"]
            logits = head(sequence_output, mask_positions)
            probabilities = ops.convert_to_numpy(
                ops.softmax(logits, axis=-1))  # [batch, masks, vocab]
            # The top_k likeliest, lower ids first among equals (as
            # tf.math.top_k orders them).
            indices = np.argsort(-probabilities, axis=-1,
                                 kind="stable")[..., :top_k]
            probabilities = np.take_along_axis(probabilities, indices,
                                               axis=-1)
            for row, text_positions in enumerate(positions):
                results.append([
                    [{"token": tokenizer.inv_vocab[int(index)],
                      "token_id": int(index),
                      "probability": float(probability)}
                     for index, probability in zip(indices[row, slot],
                                                   probabilities[row, slot])]
                    for slot in range(len(text_positions))])
        return results

    def _python_tokenizer(self):
        if self._tokenizer is None:
            from bert_tf.text import tokenization
            self._tokenizer = tokenization.FullTokenizer(
                self.vocab_file, do_lower_case=self.do_lower_case)
        return self._tokenizer

    def _mask_ids(self, tokenizer, text, index, mask_id):
        """`[CLS] pieces [SEP]` ids of one text and its masks' positions."""
        parts = text.split(MASK)
        if len(parts) == 1:
            raise ValueError(f"texts[{index}]: no {MASK} in {text!r}")
        pieces = []
        for number, part in enumerate(parts):
            if number:
                pieces.append(MASK)
            pieces.extend(tokenizer.tokenize(part))
        ids = tokenizer.convert_tokens_to_ids(pieces)
        room = self.max_seq_length - 2
        if ids[room:].count(mask_id):
            raise ValueError(
                f"texts[{index}]: a {MASK} lies beyond max_seq_length="
                f"{self.max_seq_length} word pieces")
        ids = [tokenizer.vocab["[CLS]"]] + ids[:room] + [
            tokenizer.vocab["[SEP]"]]
        return ids, [i for i, token_id in enumerate(ids)
                     if token_id == mask_id]

    def _masked_lm_model(self):
        """(encoder, masked-LM head) with the checkpoint's weights."""
        if self._masked_lm is not None:
            return self._masked_lm
        from bert_tf import checkpoints
        from bert_tf.modeling import MaskedLMHead
        names = checkpoints.checkpoint_shapes(self.checkpoint)
        if "cls/predictions/output_bias" not in names:
            raise ValueError(
                f"fill_mask: the checkpoint {self.checkpoint} has no "
                "masked-LM head (cls/predictions/...); Google's released "
                "checkpoints and run_pretraining.py's have it, fine-tuned "
                "and sentence-embedding checkpoints do not")
        self._masked_lm = self._encoder_with(
            lambda encoder: MaskedLMHead(self.bert_config,
                                         encoder.embedding_table),
            causal_attention=False)
        return self._masked_lm

    def _encoder_with(self, head, causal_attention=None):
        """(BertModel, head) built and loaded from the checkpoint.

        Args:
          head: a function from the encoder to a head layer (whose
            variables the checkpoint holds), or None for the encoder alone.
          causal_attention: default: this model's.
        """
        from bert_tf import checkpoints
        from bert_tf.modeling import BertModel
        encoder = BertModel(
            self.bert_config,
            causal_attention=(self.causal_attention
                              if causal_attention is None
                              else causal_attention))
        encoder.build()
        variables = list(encoder.weights)
        if head is not None:
            head = head(encoder)
            head.build()
            variables += head.weights
        checkpoints.load_checkpoint(variables, self.checkpoint)
        return encoder, head


def _on_tensorflow():
    """Whether Keras runs on TensorFlow (else: no exports, no in-graph
    tokenizer; `_PythonServed` serves what it can)."""
    from bert_tf import backend
    return backend.name() == backend.TENSORFLOW


def _pad_masked_batch(ids, positions):
    """input_ids and input_mask of a batch, padded to the longest, and the
    mask positions padded (with 0) to the most masks; int32 arrays."""
    length = max(len(row) for row in ids)
    masks = max(len(row) for row in positions)
    input_ids = np.zeros([len(ids), length], np.int32)
    input_mask = np.zeros([len(ids), length], np.int32)
    mask_positions = np.zeros([len(ids), masks], np.int32)
    for row, (row_ids, row_positions) in enumerate(zip(ids, positions)):
        input_ids[row, :len(row_ids)] = row_ids
        input_mask[row, :len(row_ids)] = 1
        mask_positions[row, :len(row_positions)] = row_positions
    return input_ids, input_mask, mask_positions


class _TaskPredictor:
    """`predict` over a `serving_default` function (`_serving()`, a
    `_Served`): inputs checked and batched, outputs turned into the
    runner's results."""

    def _serving(self):
        raise NotImplementedError

    def predict(self, inputs):
        """What the runner predicts for `inputs`, one result per input.

        Args:
          inputs: a list, by task:
            - one-text classification (multi-label too): strings;
            - pair classification: `(text_a, text_b)` pairs;
            - SQuAD: `(question, context)` pairs;
            - tagging: lists of words (strings without whitespace);
            - multiple choice: `(context, choices)` pairs, or dicts with
              "choices" and "context" (and "question", for a model trained
              on JSON lines); every input the same number of choices;
            - embeddings (an `embeddings` SavedModel): strings.

        Returns:
          A list of dicts:
            - classification: {"label", "probabilities"} (the probabilities
              in `labels` order, as test_results.tsv); STS-B: {"score"};
            - multi-label classification: {"labels" (the names of the
              labels whose probability is at least the run's --threshold,
              in label-list order), "probabilities" (a sigmoid per label,
              as test_results.tsv)};
            - SQuAD: {"answer" (as predictions.json), "probability",
              "nbest": [{"text", "probability", "start_logit",
              "end_logit"}] (as nbest_predictions.json)}, and
              "null_score_diff" for SQuAD 2.0;
            - tagging: {"words", "labels" (as test_predictions.txt),
              "entities": [{"type", "start", "end", "text"}] (as
              test_predictions.jsonl; not from a SavedModel, which does
              not hold its label list)};
            - multiple choice: {"label" (the likeliest choice's index),
              "probabilities" (as test_results.tsv)};
            - embeddings: {"pooled_output", "mean_pooled"}.

        Raises:
          ValueError: an input of the wrong shape for the task (named by
            its index).
        """
        served = self._serving()
        columns = served.columns(inputs)
        rows = served.call_batched(columns, self.batch_size)
        return served.results(rows, len(inputs))


class FineTunedModel(PretrainedModel, _TaskPredictor):
    """A training run's `--output_dir`: `predict` (the runner's outputs
    from its newest checkpoint) and `embed` (its encoder).

    Attributes (besides `PretrainedModel`'s):
      description: its `bert_tf_run.json`.
      task: "classification", "multi_label", "squad", "tagging" or
        "multiple_choice".
    """

    def __init__(self, path, batch_size=32, do_lower_case=None,
                 max_seq_length=None):
        description = finetune_lib.read_run_description(path)
        super().__init__(
            path, batch_size, do_lower_case, max_seq_length,
            default_max_seq_length=description["max_seq_length"],
            default_do_lower_case=description["do_lower_case"],
            causal_attention=description.get("causal_attention", False))
        self.description = description
        self.task = description["task"]
        self._served = None

    @property
    def labels(self):
        """The run's labels in label-id order (classification,
        multi-label, tagging), else None: their names where the task has
        them (GLUE's "0"/"1" tasks: SST-2's "negative", "positive")."""
        return (self.description.get("label_names")
                or self.description.get("label_list"))

    def _serving(self):
        # Built on first use: loading for `embed` alone needs no export.
        if self._served is None and not _on_tensorflow():
            self._served = self._python_served()
        if self._served is None:
            served = _Served(self._build_export())
            served.labels = self.labels
            self._served = served
        return self._served

    def _python_served(self):
        """Classification without TensorFlow (the other tasks' exports
        have in-graph post-processing that exists only in TensorFlow)."""
        import keras
        from bert_tf.modeling import ClassifierHead
        d = self.description
        if self.task != finetune_lib.CLASSIFICATION or d["is_regression"]:
            kind = ("regression" if self.task == finetune_lib.CLASSIFICATION
                    else self.task)
            raise ValueError(
                f"predict: {self.path} is a {kind} run; with KERAS_BACKEND="
                f"{keras.backend.backend()} predict serves classification "
                "only (the other tasks need the TensorFlow backend)")
        models = self._encoder_with(
            lambda encoder: ClassifierHead(self.bert_config,
                                           len(d["label_list"])))
        return _PythonServed(finetune_lib.CLASSIFICATION, self, models,
                             label_list=d["label_list"],
                             has_text_b=d["has_text_b"])

    def _build_export(self):
        from bert_tf.export import builders
        d = self.description
        common = dict(bert_config=self.bert_config,
                      vocab_file=self.vocab_file,
                      do_lower_case=self.do_lower_case,
                      init_checkpoint=self.checkpoint,
                      max_seq_length=self.max_seq_length,
                      causal_attention=self.causal_attention)
        task = d["task"]
        if task == finetune_lib.CLASSIFICATION:
            return builders.classifier_export(
                label_list=self.labels, is_regression=d["is_regression"],
                has_text_b=d["has_text_b"], **common)
        if task == finetune_lib.MULTI_LABEL:
            # export_saved_model.py's multi-label export: a sigmoid per
            # label, the run's --threshold.
            head = finetune_lib.read_multi_label_head(self.path)
            return builders.classifier_export(
                label_list=head["label_list"], has_text_b=d["has_text_b"],
                multi_label=True, threshold=head["threshold"], **common)
        if task == finetune_lib.SQUAD:
            return builders.squad_export(
                **{name: d[name] for name in (
                    "doc_stride", "max_query_length", "n_best_size",
                    "max_answer_length", "version_2_with_negative",
                    "null_score_diff_threshold")}, **common)
        if task == finetune_lib.TAGGING:
            return builders.tagging_export(
                doc_stride=d["doc_stride"], label_list=d["label_list"],
                **common)
        if task == finetune_lib.MULTIPLE_CHOICE:
            return builders.multiple_choice_export(
                has_question=d["input_format"] == "jsonl", **common)
        raise ValueError(f"predict: {self.path} is a {task} run, which "
                         "predict does not serve")


class ExportedModel(_TaskPredictor):
    """A SavedModel of `export_saved_model.py`: `predict` through its
    `serving_default` signature."""

    def __init__(self, path, batch_size=32):
        import tensorflow as tf
        import tensorflow_text  # noqa: F401  (registers the tokenizer ops)
        self.path = path
        self.batch_size = batch_size
        self._saved_model = tf.saved_model.load(path)
        self._served = _Served.from_signature(
            self._saved_model.signatures["serving_default"], path)
        self.task = self._served.task

    @property
    def labels(self):
        """None: a SavedModel does not hold its label list apart (each
        result names its label)."""
        return None

    def _serving(self):
        return self._served


# -- the serving function, its inputs and outputs ----------------------------

_EMBEDDINGS = "embeddings"


class _Served:
    """A `serving_default` concrete function and the task it serves,
    recognized by its input and output names (as the exports define them)."""

    def __init__(self, export):
        from bert_tf.export import serving
        function = export.signatures()[serving.SERVING_DEFAULT]
        self._init(function, "the export")

    @classmethod
    def from_signature(cls, function, path):
        served = cls.__new__(cls)
        served._init(function, path)
        return served

    def _init(self, function, where):
        import tensorflow as tf
        self.function = function
        # A SavedModel's signature takes keywords; an export's concrete
        # function was traced on positional specs: their names are the same.
        self.input_names = tuple(sorted(
            spec.name for spec in tf.nest.flatten(
                function.structured_input_signature)))
        outputs = set(function.structured_outputs)
        names = set(self.input_names)
        if names <= {"text_a", "text_b"}:
            # A multi-label export also says which labels are predicted.
            self.task = (finetune_lib.MULTI_LABEL if "predicted" in outputs
                         else finetune_lib.CLASSIFICATION)
        elif names == {"question", "context"}:
            self.task = finetune_lib.SQUAD
        elif names == {"text"}:
            self.task = (finetune_lib.TAGGING if "labels" in outputs
                         else _EMBEDDINGS)
        elif "choices" in names:
            self.task = finetune_lib.MULTIPLE_CHOICE
        else:
            raise ValueError(f"bert_tf.load: {where}'s serving_default "
                             f"takes {', '.join(self.input_names)}, which "
                             "is no bert_tf export")
        self.labels = None

    def call_batched(self, columns, batch_size):
        """Runs the function on `columns` ({input: list}) batch by batch;
        returns {output: numpy array of all rows} (tagging's ragged rows
        padded to the longest)."""
        import tensorflow as tf
        count = len(next(iter(columns.values())))
        batches = []
        for start in range(0, count, batch_size):
            inputs = {name: tf.constant(values[start:start + batch_size])
                      for name, values in columns.items()}
            batches.append({name: value.numpy() for name, value in
                            self.function(**inputs).items()})
        if not batches:
            return {}
        return {name: _concatenate([batch[name] for batch in batches])
                for name in batches[0]}

    # -- inputs --

    def columns(self, inputs):
        """{input name: list} of `inputs`, checked against the task."""
        if isinstance(inputs, (str, bytes)) or not isinstance(
                inputs, (list, tuple)):
            raise ValueError(f"inputs must be a list, got "
                             f"{type(inputs).__name__}")
        task = self.task
        if task in (finetune_lib.CLASSIFICATION, finetune_lib.MULTI_LABEL):
            if "text_b" in self.input_names:
                pairs = [_pair(i, item, "(text_a, text_b)")
                         for i, item in enumerate(inputs)]
                return {"text_a": [a for a, _ in pairs],
                        "text_b": [b for _, b in pairs]}
            return {"text_a": [_text(i, item, "a text")
                               for i, item in enumerate(inputs)]}
        if task == finetune_lib.SQUAD:
            pairs = [_pair(i, item, "(question, context)")
                     for i, item in enumerate(inputs)]
            return {"question": [q for q, _ in pairs],
                    "context": [c for _, c in pairs]}
        if task == finetune_lib.TAGGING:
            return {"text": [" ".join(_words(i, item))
                             for i, item in enumerate(inputs)]}
        if task == _EMBEDDINGS:
            return {"text": [_text(i, item, "a text")
                             for i, item in enumerate(inputs)]}
        return self._choice_columns(inputs)

    def _choice_columns(self, inputs):
        has_question = "question" in self.input_names
        columns = {"context": [], "choices": []}
        if has_question:
            columns["question"] = []
        for i, item in enumerate(inputs):
            if isinstance(item, dict):
                unknown = set(item) - {"context", "question", "choices"}
                if unknown:
                    raise ValueError(f"inputs[{i}]: unknown keys "
                                     f"{sorted(unknown)}")
                if "question" in item and not has_question:
                    raise ValueError(
                        f"inputs[{i}]: this model takes no 'question' (it "
                        "was trained on SWAG's context and choices)")
                if has_question and "question" not in item:
                    raise ValueError(f"inputs[{i}]: needs a 'question'")
                context = item.get("context", "")
                choices = item.get("choices")
                question = item.get("question", "")
            elif (isinstance(item, (list, tuple)) and len(item) == 2
                  and not has_question):
                context, choices = item
                question = ""
            else:
                expected = ("a dict with 'question', 'choices' (and "
                            "'context')" if has_question else
                            "a (context, choices) pair or a dict")
                raise ValueError(f"inputs[{i}]: expected {expected}, got "
                                 f"{item!r:.80}")
            if not isinstance(choices, (list, tuple)) or not choices or not (
                    all(isinstance(c, str) for c in choices)):
                raise ValueError(f"inputs[{i}]: 'choices' must be a "
                                 "non-empty list of strings")
            if columns["choices"] and len(choices) != len(
                    columns["choices"][0]):
                raise ValueError(
                    f"inputs[{i}]: {len(choices)} choices, but inputs[0] "
                    f"has {len(columns['choices'][0])} (all inputs need the "
                    "same number)")
            for name, value in (("context", context), ("question", question)):
                if not isinstance(value, str):
                    raise ValueError(f"inputs[{i}]: '{name}' must be a "
                                     "string")
            for text in [context, question] + list(choices):
                _unicode(f"inputs[{i}]", text)
            columns["context"].append(context)
            columns["choices"].append(list(choices))
            if has_question:
                columns["question"].append(question)
        return columns

    # -- outputs --

    def results(self, rows, count):
        """One result dict per input from the function's output rows."""
        task = self.task
        if not count:
            return []
        if task == finetune_lib.CLASSIFICATION:
            if "score" in rows:
                return [{"score": float(s)} for s in rows["score"]]
            return [{"label": _decode(label),
                     "probabilities": [float(p) for p in probabilities]}
                    for label, probabilities in zip(rows["label"],
                                                    rows["probabilities"])]
        if task == finetune_lib.MULTI_LABEL:
            # "labels" holds each predicted label's name, "" elsewhere.
            return [{"labels": [_decode(name) for name in names
                                if _decode(name)],
                     "probabilities": [float(p) for p in probabilities]}
                    for names, probabilities in zip(rows["labels"],
                                                    rows["probabilities"])]
        if task == finetune_lib.SQUAD:
            return [_squad_result(rows, i) for i in range(count)]
        if task == finetune_lib.TAGGING:
            return [_tagging_result(rows, i, self.labels)
                    for i in range(count)]
        if task == _EMBEDDINGS:
            return [{"pooled_output": rows["pooled_output"][i],
                     "mean_pooled": rows["mean_pooled"][i]}
                    for i in range(count)]
        return [{"label": int(label),
                 "probabilities": [float(p) for p in probabilities]}
                for label, probabilities in zip(rows["label"],
                                                rows["probabilities"])]


class _PythonServed(_Served):
    """`_Served` without TensorFlow: the pure-Python tokenizer and the Keras
    model on any backend, giving the rows the export's `serving_default`
    gives (embeddings: `pooled_output`, `mean_pooled`; classification:
    `label`, `probabilities`)."""

    def __init__(self, task, pretrained, models, label_list=None,
                 has_text_b=False):
        """Args:
          task: `_EMBEDDINGS` or `finetune_lib.CLASSIFICATION`.
          pretrained: the `PretrainedModel` (tokenizer, max_seq_length).
          models: (BertModel, ClassifierHead or None), loaded.
          label_list: classification's labels in id order.
          has_text_b: classification of text pairs.
        """
        self.task = task
        self.input_names = (("text",) if task == _EMBEDDINGS else
                            ("text_a", "text_b") if has_text_b
                            else ("text_a",))
        self.labels = label_list
        self._tokenizer = pretrained._python_tokenizer()
        self._max_seq_length = pretrained.max_seq_length
        self._encoder, self._head = models

    def _encode(self, text_a, text_b):
        """Google's framing of one input: (ids, segment_ids), unpadded."""
        from bert_tf.data.encoded_input import frame_pair
        tokens_b = self._tokenizer.tokenize(text_b) if text_b else None
        tokens, segment_ids = frame_pair(self._tokenizer.tokenize(text_a),
                                         tokens_b, self._max_seq_length)
        return self._tokenizer.convert_tokens_to_ids(tokens), segment_ids

    def call_batched(self, columns, batch_size):
        from keras import ops
        texts_a = columns.get("text", columns.get("text_a"))
        texts_b = columns.get("text_b", [None] * len(texts_a))
        batches = []
        for start in range(0, len(texts_a), batch_size):
            encoded = [self._encode(a, b) for a, b in zip(
                texts_a[start:start + batch_size],
                texts_b[start:start + batch_size])]
            length = max(len(ids) for ids, _ in encoded)
            input_ids, input_mask, segment_ids = (
                np.zeros([len(encoded), length], np.int32) for _ in range(3))
            for row, (ids, segments) in enumerate(encoded):
                input_ids[row, :len(ids)] = ids
                input_mask[row, :len(ids)] = 1
                segment_ids[row, :len(ids)] = segments
            outputs = self._encoder(input_ids, input_mask=input_mask,
                                    segment_ids=segment_ids, training=False)
            pooled = ops.cast(outputs["pooled_output"], "float32")
            if self.task == _EMBEDDINGS:
                sequence = ops.convert_to_numpy(
                    ops.cast(outputs["sequence_output"], "float32"))
                mask = input_mask[:, :, None].astype(np.float32)
                batches.append({
                    "pooled_output": ops.convert_to_numpy(pooled),
                    "mean_pooled": (sequence * mask).sum(axis=1)
                    / mask.sum(axis=1)})
                continue
            probabilities = ops.convert_to_numpy(ops.softmax(
                self._head(pooled, training=False), axis=-1))
            batches.append({
                "label": np.array([self.labels[i] for i in
                                   probabilities.argmax(axis=-1)], object),
                "probabilities": probabilities})
        if not batches:
            return {}
        return {name: np.concatenate([batch[name] for batch in batches])
                for name in batches[0]}


def _concatenate(arrays):
    """Rows of several batches; string matrices padded with "" to the
    widest (tagging's words differ in number between batches)."""
    if arrays[0].ndim == 2 and arrays[0].dtype == object:
        width = max(array.shape[1] for array in arrays)
        arrays = [np.pad(array, [(0, 0), (0, width - array.shape[1])],
                         constant_values=b"") for array in arrays]
    return np.concatenate(arrays)


def _decode(value):
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _squad_result(rows, i):
    count = int(rows["nbest_count"][i])
    result = {
        "answer": _decode(rows["answer"][i]),
        "probability": float(rows["probability"][i]),
        "nbest": [{"text": _decode(rows["nbest_text"][i][k]),
                   "probability": float(rows["nbest_probability"][i][k]),
                   "start_logit": float(rows["nbest_start_logit"][i][k]),
                   "end_logit": float(rows["nbest_end_logit"][i][k])}
                  for k in range(count)],
    }
    if "null_score_diff" in rows:
        result["null_score_diff"] = float(rows["null_score_diff"][i])
    return result


def _tagging_result(rows, i, label_list):
    """Words and labels; the entities too where the label list (and so
    whether the labels are BIO tags) is known."""
    from bert_tf.tasks.tagging import task as tagging
    count = int(rows["num_words"][i])
    words = [_decode(word) for word in rows["words"][i][:count]]
    labels = [_decode(label) for label in rows["labels"][i][:count]]
    result = {"words": words, "labels": labels}
    if label_list is not None:
        result["entities"] = tagging.sentence_entities(
            words, labels, tagging.is_chunk_scheme(label_list))
    return result


def _unicode(where, text):
    """`text`, refused if it is not Unicode text that UTF-8 can encode.

    A Python string may hold a lone surrogate ("\\ud800": text decoded
    from broken UTF-16, or with errors="surrogateescape"), which TensorFlow
    refuses deep inside with a message naming no input; this names it.

    Args:
      where: the input, for the message ("inputs[3]", "texts[0]").
      text: a string.

    Raises:
      ValueError: `<where>: ... lone surrogate ...`.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ValueError(
            f"{where}: character {error.start} of {text!r:.60} is a lone "
            f"surrogate {text[error.start]!r}, which is not Unicode text "
            "and cannot be encoded as UTF-8 (was it decoded from broken "
            "UTF-16, or with errors='surrogateescape'?)") from None
    return text


def _strings(name, values):
    if isinstance(values, (str, bytes)) or not isinstance(values,
                                                          (list, tuple)):
        raise ValueError(f"{name} must be a list of strings, got "
                         f"{type(values).__name__}")
    for i, value in enumerate(values):
        if not isinstance(value, str):
            raise ValueError(f"{name}[{i}] must be a string, got "
                             f"{type(value).__name__}")
        _unicode(f"{name}[{i}]", value)
    return list(values)


def _text(i, item, what):
    if not isinstance(item, str):
        raise ValueError(f"inputs[{i}]: expected {what} (a string), got "
                         f"{item!r:.80}")
    return _unicode(f"inputs[{i}]", item)


def _pair(i, item, what):
    if (isinstance(item, (str, bytes)) or not isinstance(item, (list, tuple))
            or len(item) != 2 or not all(isinstance(t, str) for t in item)):
        raise ValueError(f"inputs[{i}]: expected a pair {what} of strings, "
                         f"got {item!r:.80}")
    return tuple(_unicode(f"inputs[{i}]", text) for text in item)


def _words(i, item, where="inputs"):
    """A list of words, checked: `where[i]` names it in messages."""
    if isinstance(item, str) or not isinstance(item, (list, tuple)):
        raise ValueError(f"{where}[{i}]: expected a list of words, got "
                         f"{item!r:.80}")
    for word in item:
        if not isinstance(word, str) or not word or word != "".join(
                word.split()):
            raise ValueError(f"{where}[{i}]: word {word!r} must be a "
                             "non-empty string without whitespace")
        _unicode(f"{where}[{i}]", word)
    return list(item)


# -- fine-tuning ---------------------------------------------------------------

def finetune(task, base_dir, output_dir, *, train=None, dev=None, test=None,
             verbose=True, **settings):
    """Fine-tunes with the recipe of `task`; returns the recipe's results.

    The task's recipe (`bert_tf.tasks.<task>.recipe`: what
    `run_classifier.py`, `run_squad.py`, `run_tagging.py` and
    `run_multiple_choice.py` run) runs in this process on a config of
    `vocab_file`, `bert_config_file` and `init_checkpoint` from `base_dir`,
    `output_dir`, and `settings` (any of the program's flags by name, e.g.
    `max_seq_length=64, num_train_epochs=2.0`). `output_dir` is then a
    normal runner output directory (checkpoints, `eval_results.txt`, ...)
    that `load` predicts from.

    Args:
      task: "classification" (your labelled texts: run_classifier.py's
        generic task), "squad", "tagging", "multiple_choice", or one of
        run_classifier.py's task names (cola, mrpc, ..., generic), which
        read `data_dir=...` and take `do_train`/`do_eval`/`do_predict`.
      base_dir: the model to start from: a released checkpoint directory
        (bert_config.json, vocab.txt, bert_model.ckpt) or a training run's
        output directory.
      output_dir: the runner's `--output_dir`.
      train, dev, test: each a file in the program's input format (its
        `--train_file`, `--eval_file`, `--predict_file`; not for
        classification) or a Python list:
          - classification: `(text, label)` or `(text_a, text_b, label)`
            (test: texts or pairs); labels are strings, or all numbers or
            all booleans (read as text: `1` is the class "1");
          - tagging: `(words, labels)` pairs of equal-length lists (test:
            lists of words);
          - multiple_choice: dicts {"question", "choices", optionally
            "context", and "answer" (an index)}, the JSON-lines format;
          - squad: dicts {"question", "context", "answers": [{"text",
            "answer_start"}], optionally "id", "is_impossible"}, or
            without "answers" to predict (SQuAD's JSON, one paragraph
            each); `dev` and `test` are both what is predicted, so give
            one of them (with answers, the predictions are scored).
        Each given set turns its phase on (`do_train`, `do_eval`,
        `do_predict`) unless `settings` say otherwise.
      verbose: report as the program does on a command line (absl's INFO
        lines on stderr: what it reads, progress with speed and ETA,
        checkpoints, results); False for warnings and errors only.
      **settings: the program's flags; `do_lower_case` defaults to the
        casing of `base_dir` (a run's own, else that of its vocabulary).

    Returns:
      The recipe's results: "eval" (the metrics of eval_results.txt),
      "train" (the last training log), "predict" / "predictions" (what
      the run predicted), for the phases that ran.

    Raises:
      ValueError: a bad task, base directory, setting or input, named
        (`train[3]`, `labels`, ...).
    """
    import dataclasses

    base_dir, output_dir = os.fspath(base_dir), os.fspath(output_dir)
    task_name = str(task).lower()
    if task_name in _CLASSIFIER_TASKS:
        recipe_name = finetune_lib.CLASSIFICATION
    elif task_name in _RECIPE_TASKS:
        recipe_name = task_name
    else:
        raise ValueError(
            f"finetune: task={task!r} is none of classification, squad, "
            f"tagging, multiple_choice, {', '.join(_CLASSIFIER_TASKS)}")
    if os.path.isfile(os.path.join(base_dir, SAVED_MODEL_FILE)):
        raise ValueError(f"finetune: base_dir {base_dir} is a SavedModel; "
                         "fine-tuning starts from a checkpoint directory")
    recipe, config_class = _recipe(recipe_name)
    sets = {"train": train, "eval": dev, "predict": test}
    if task_name in _CLASSIFIER_TASKS:
        if any(data is not None for data in sets.values()):
            raise ValueError(
                f"finetune: task={task_name!r} reads data_dir=... (and "
                "do_train/do_eval/do_predict); train/dev/test are for "
                "task='classification'")
        settings = {"task_name": task_name, **settings}
    if task_name == finetune_lib.SQUAD and dev is not None:
        if test is not None:
            raise ValueError("finetune: squad predicts one file "
                             "(--predict_file): give dev or test, not both")
        sets["predict"], sets["eval"] = dev, None
    base = load(base_dir)  # Its files, checkpoint and casing.
    values = {"vocab_file": base.vocab_file,
              "bert_config_file": os.path.join(
                  base_dir, finetune_lib.BERT_CONFIG_FILE),
              "init_checkpoint": base.checkpoint,
              "do_lower_case": base.do_lower_case,
              "output_dir": output_dir}
    values.update(settings)
    for phase, given in sets.items():
        if phase != "eval" or task_name != finetune_lib.SQUAD:
            values.setdefault(f"do_{phase}", given is not None)
    fields = {field.name for field in dataclasses.fields(config_class)}
    for name in values:
        if name not in fields:
            raise ValueError(f"finetune: {recipe.PROGRAM} has no flag "
                             f"--{name}")
    given = {phase: data for phase, data in sets.items() if data is not None}
    names = dict(_SET_NAMES)
    if task_name == finetune_lib.SQUAD and dev is not None:
        names["predict"] = "dev"
    inputs = {finetune_lib.CLASSIFICATION: _classification_inputs,
              finetune_lib.TAGGING: _tagging_inputs,
              finetune_lib.MULTIPLE_CHOICE: _choice_inputs,
              finetune_lib.SQUAD: _squad_inputs}.get(task_name)
    examples = {}
    if inputs is not None:
        examples = inputs(given, values, base, names)
    config = config_class(**values)
    try:
        finetune_lib.check_field_types(config)
    except ValueError as error:
        raise ValueError(f"finetune: {error}") from None
    with _program_logging(verbose):
        return recipe.run(config, **examples)


@contextlib.contextmanager
def _program_logging(verbose):
    """absl's INFO lines shown (as `app.run` shows a program's) while the
    block runs, when `verbose`; the previous verbosity back after it."""
    from absl import logging
    previous = logging.get_verbosity()
    # The absl logger's own level, put back as it was after the verbosity:
    # `set_verbosity` of the previous verbosity alone would set an
    # inherited (unset) level to the one it inherited, and later changes of
    # the root logger's level would no longer reach absl's lines.
    previous_level = logging.get_absl_logger().level
    if verbose:
        # Outside `app.run` absl's handler is not on the root logger, and
        # Python's last-resort handler prints warnings only.
        logging.use_absl_handler()
        logging.set_verbosity(max(previous, logging.INFO))
    else:
        logging.set_verbosity(min(previous, logging.WARNING))
    try:
        yield
    finally:
        logging.set_verbosity(previous)
        logging.get_absl_logger().setLevel(previous_level)


# finetune's own tasks, each run by its recipe (classification's takes
# run_classifier.py's task names too).
_RECIPE_TASKS = (finetune_lib.CLASSIFICATION, finetune_lib.SQUAD,
                 finetune_lib.TAGGING, finetune_lib.MULTIPLE_CHOICE)


def _recipe(task):
    """The recipe module of one of `_RECIPE_TASKS`, and its config class
    (imported on demand: `import bert_tf` stays free of TensorFlow)."""
    if task == finetune_lib.CLASSIFICATION:
        from bert_tf.tasks.classification import recipe as classification_recipe
        return (classification_recipe,
                classification_recipe.ClassificationConfig)
    if task == finetune_lib.SQUAD:
        from bert_tf.tasks.squad import recipe as squad_recipe
        return squad_recipe, squad_recipe.SquadConfig
    if task == finetune_lib.TAGGING:
        from bert_tf.tasks.tagging import recipe as tagging_recipe
        return tagging_recipe, tagging_recipe.TaggingConfig
    from bert_tf.tasks.multiple_choice import recipe as multiple_choice_recipe
    return (multiple_choice_recipe,
            multiple_choice_recipe.MultipleChoiceConfig)


# finetune's argument of each phase, for messages (squad's dev, when given,
# is its predict phase).
_SET_NAMES = {"train": "train", "eval": "dev", "predict": "test"}


def _files_and_lists(given, values, names):
    """Sets given as files become the `<phase>_file` settings; the lists
    are returned, each checked to be a non-empty list.

    Raises:
      ValueError: a set is neither, or empty (naming its argument).
    """
    lists = {}
    for phase, data in given.items():
        name = names[phase]
        if isinstance(data, (str, os.PathLike)):
            values[f"{phase}_file"] = os.fspath(data)
            continue
        if not isinstance(data, (list, tuple)):
            raise ValueError(f"finetune: {name} must be a file or a list, "
                             f"got {type(data).__name__}")
        if not data:
            raise ValueError(f"finetune: {name}: no examples")
        lists[phase] = data
    return lists


def _classification_inputs(given, values, base, names):
    """Python lists as the generic task's `InputExample`s.

    Labels are read as text; a label that is None, or labels of mixed
    types (1, 1.0, True and "1" would be four classes), are refused.
    """
    from bert_tf.tasks.classification import glue_processors
    values["task_name"] = "generic"
    examples, pairs, first_label = {}, set(), None
    for phase, data in given.items():
        name = names[phase]
        if not isinstance(data, (list, tuple)):
            raise ValueError(
                f"finetune: {name} of task='classification' must be a list "
                "(for files: task='generic', data_dir=...)")
        if not data:
            raise ValueError(f"finetune: {name}: no examples")
        labelled = phase != "predict"
        phase_examples = []
        for i, item in enumerate(data):
            if labelled:
                ok = (isinstance(item, (list, tuple)) and len(item) in (2, 3)
                      and all(isinstance(t, str) for t in item[:-1]))
                texts, label = (tuple(item[:-1]), item[-1]) if ok else ((),
                                                                        None)
            else:
                ok = isinstance(item, str) or (
                    isinstance(item, (list, tuple)) and len(item) == 2
                    and all(isinstance(t, str) for t in item))
                texts, label = ((item,) if isinstance(item, str)
                                else tuple(item)), None
            if not ok:
                expected = ("(text, label) or (text_a, text_b, label)"
                            if labelled else "a text or (text_a, text_b)")
                raise ValueError(f"finetune: {name}[{i}]: expected "
                                 f"{expected}, got {item!r:.80}")
            if labelled:
                where = f"{name}[{i}]"
                _check_label(where, label, first_label)
                first_label = first_label or (where, label)
                label = str(label)
            pairs.add(len(texts) == 2)
            phase_examples.append(glue_processors.InputExample(
                guid=f"{name}-{i}", text_a=texts[0],
                text_b=texts[1] if len(texts) == 2 else None, label=label))
        examples[f"{phase}_examples"] = phase_examples
    if len(pairs) > 1:
        raise ValueError("finetune: mixed single texts and text pairs in "
                         "train/dev/test")
    if "train" in given:
        label_list = sorted({example.label
                             for example in examples["train_examples"]})
    else:
        # The model's own labels (a classification run's base_dir).
        label_list = getattr(base, "labels", None)
        if label_list is None:
            raise ValueError(
                "finetune: labels: without train, base_dir must be a "
                "classification run's output directory (its labels)")
    values.setdefault("label_list", label_list)
    for i, example in enumerate(examples.get("eval_examples", ())):
        if example.label not in label_list:
            raise ValueError(
                f"finetune: dev[{i}]: label {example.label!r} is not one of "
                f"the labels {', '.join(map(repr, label_list))}")
    return examples


def _check_label(where, label, first):
    """A classification label: not None, of the first label's type.

    Args:
      where: the example, e.g. "train[3]".
      label: its label.
      first: `(where, label)` of the first label, or None.

    Raises:
      ValueError: naming the example and saying how labels are read.
    """
    if label is None:
        raise ValueError(f"finetune: {where}: label None: a labelled "
                         "example needs a label (texts to predict go in "
                         "test)")
    if not isinstance(label, (str, int, float)):
        raise ValueError(f"finetune: {where}: label {label!r:.80} must be "
                         "a string or a number")
    if isinstance(label, str) and not label.strip():
        raise ValueError(f"finetune: {where}: empty label {label!r}")
    if first is not None and type(label) is not type(first[1]):
        raise ValueError(
            f"finetune: {where}: label {label!r} is of type "
            f"{type(label).__name__}, but {first[0]}'s label {first[1]!r} "
            f"is of type {type(first[1]).__name__}: labels are read as "
            f"text, so these would be two classes {str(first[1])!r} and "
            f"{str(label)!r}; give every label as one type")


def _tagging_inputs(given, values, base, names):
    """Tagging lists as `TaggingFile`s, as their CoNLL file would read:
    `word label` lines, a blank line after each sentence."""
    lists = _files_and_lists(given, values, names)
    files = {phase: _tagging_file(names[phase], data)
             for phase, data in lists.items()}
    if "train" in files and not values.get("label_list_file"):
        # Named here by item; the recipe would name a line of the set.
        known = {label for sentence in files["train"].sentences
                 for label in sentence.labels}
        for phase, tagging_file in files.items():
            for i, sentence in enumerate(tagging_file.sentences):
                unknown = sorted(set(sentence.labels or ()) - known)
                if unknown:
                    raise ValueError(
                        f"finetune: {names[phase]}[{i}]: label "
                        f"{unknown[0]!r} does not occur in train (labels: "
                        f"{' '.join(sorted(known))})")
    return {f"{phase}_examples": tagging_file
            for phase, tagging_file in files.items()}


def _tagging_file(name, sentences):
    from bert_tf.tasks.tagging import examples as tagging_examples
    lines, tagged = [], []
    for i, item in enumerate(sentences):
        _check_tagging_labels_are_a_list(name, i, item)
        if (isinstance(item, (list, tuple)) and len(item) == 2
                and all(isinstance(part, (list, tuple)) for part in item)):
            words, labels = item
            if len(words) != len(labels):
                raise ValueError(f"finetune: {name}[{i}]: {len(words)} words "
                                 f"but {len(labels)} labels")
        else:
            words, labels = item, None
        words = _words(i, words, f"finetune: {name}") if words else []
        if not words:
            raise ValueError(f"finetune: {name}[{i}]: no words")
        if labels is None and name != "test":
            raise ValueError(f"finetune: {name}[{i}]: expected (words, "
                             "labels)")
        if tagged and (labels is None) != (tagged[0].labels is None):
            raise ValueError(f"finetune: {name}[{i}]: labelled and "
                             f"unlabelled sentences mixed ({name}[0] is "
                             f"{'un' if tagged[0].labels is None else ''}"
                             "labelled)")
        for label in labels or ():
            if not isinstance(label, str) or not label or label != "".join(
                    label.split()):
                raise ValueError(f"finetune: {name}[{i}]: label {label!r} "
                                 "must be a non-empty string without "
                                 "whitespace")
        numbers = list(range(len(lines) + 1, len(lines) + len(words) + 1))
        lines += [word if labels is None else f"{word} {label}"
                  for word, label in zip(words, labels or words)]
        lines.append("")
        tagged.append(tagging_examples.TaggedSentence(
            list(words), None if labels is None else list(labels), numbers,
            "0"))
    return tagging_examples.TaggingFile(
        name, tagging_examples.CONLL, lines, tagged,
        tagged[0].labels is not None)


def _check_tagging_labels_are_a_list(name, i, item):
    """Refuses `(words, "B-PER O")`: labels given as one string (read as
    words otherwise, and blamed as such)."""
    if (isinstance(item, (list, tuple)) and len(item) == 2
            and isinstance(item[0], (list, tuple))
            and isinstance(item[1], str)):
        raise ValueError(f"finetune: {name}[{i}]: labels {item[1]!r:.80} "
                         "must be a list of labels, one per word")


def _choice_inputs(given, values, base, names):
    """Multiple-choice dicts as `MultipleChoiceExample`s (the JSON-lines
    records of run_multiple_choice.py's `--input_format=jsonl`)."""
    from bert_tf.tasks.multiple_choice import examples as multiple_choice
    lists = _files_and_lists(given, values, names)
    if lists:
        values["input_format"] = "jsonl"
    examples, num_choices = {}, None
    for phase, records in lists.items():
        name = names[phase]
        phase_examples = []
        for i, record in enumerate(records):
            if not isinstance(record, dict):
                raise ValueError(f"finetune: {name}[{i}]: expected a dict "
                                 "with 'question' and 'choices'")
            try:
                example = multiple_choice.parse_record(name, i, record,
                                                       num_choices)
            except multiple_choice.MultipleChoiceDataError as error:
                # The reader names a file's line; this is the list's item.
                raise ValueError(
                    f"finetune: {name}[{i}]: "
                    f"{str(error).removeprefix(f'{name}:{i}: ')}") from None
            if example.label is None and phase != "predict":
                raise ValueError(f"finetune: {name}[{i}]: no 'answer' (a "
                                 f"{name} example needs one)")
            num_choices = len(example.choices)
            phase_examples.append(example)
        examples[f"{phase}_examples"] = phase_examples
    return examples


def _squad_inputs(given, values, base, names):
    """SQuAD dicts as a SQuAD JSON's articles, one paragraph per
    question."""
    lists = _files_and_lists(given, values, names)
    return {f"{phase}_articles": _squad_articles(names[phase], records)
            for phase, records in lists.items()}


def _answer_start(name, i, start):
    """An answer's `answer_start` as an int (a number or a string of
    digits, as SQuAD's JSON may give it), else a ValueError naming the
    question."""
    if isinstance(start, str) and start.strip().isdigit():
        return int(start)
    if isinstance(start, int) and not isinstance(start, bool) and start >= 0:
        return start
    raise ValueError(f"finetune: {name}[{i}]: answer_start {start!r:.80} "
                     "must be a character offset (an integer >= 0)")


def _squad_articles(name, records):
    paragraphs = []
    for i, record in enumerate(records):
        if not isinstance(record, dict) or not isinstance(
                record.get("question"), str) or not isinstance(
                record.get("context"), str):
            raise ValueError(f"finetune: {name}[{i}]: expected a dict with "
                             "'question' and 'context' strings")
        question = {"id": str(record.get("id", f"{name}-{i}")),
                    "question": record["question"]}
        if "is_impossible" in record:
            question["is_impossible"] = bool(record["is_impossible"])
        if "answers" in record:
            answers = []
            for answer in record["answers"]:
                if not isinstance(answer, dict) or not isinstance(
                        answer.get("text"), str):
                    raise ValueError(f"finetune: {name}[{i}]: an answer "
                                     "must be a dict with 'text'")
                start = answer.get("answer_start")
                if start is None:
                    start = record["context"].find(answer["text"])
                    if start < 0:
                        raise ValueError(
                            f"finetune: {name}[{i}]: answer "
                            f"{answer['text']!r} is not in the context")
                answers.append({"text": answer["text"],
                                "answer_start": _answer_start(name, i,
                                                              start)})
            question["answers"] = answers
        paragraphs.append({"context": record["context"], "qas": [question]})
    return [{"title": name, "paragraphs": paragraphs}]
