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
- `load(run).predict`, for a training run's `--output_dir`, is the
  prediction phase of the run's recipe on the inputs, on any Keras
  backend (TensorFlow, JAX): the task's Python conversions make them the
  recipe's examples and features, the trainer runs the task's model from
  the run's newest checkpoint, and the task's own post-processing gives
  what the runner writes to `test_results.tsv`, `predictions.json`
  (n-best lists, null odds) and `test_predictions.txt` (the task spec's
  `predictor`, `bert_tf.tasks.registry`). A SavedModel of
  `export_saved_model.py` is predicted by its `serving_default`
  signature (TensorFlow).
- `embed` is the encoder's pooled and mean-pooled outputs, `fill_mask` the
  encoder and `MaskedLMHead` (the layers of the pretraining model) on the
  released checkpoint's `cls/predictions/...` variables, each with the
  Python tokenizer, on any Keras backend.

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

from bert_tf import finetuning  # noqa: E402
from bert_tf.data import python_inputs  # noqa: E402
from bert_tf.pretraining import fill_mask  # noqa: E402
from bert_tf.tasks import registry  # noqa: E402

SAVED_MODEL_FILE = "saved_model.pb"
MASK = fill_mask.MASK
DEFAULT_MAX_SEQ_LENGTH = 128


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
                                   finetuning.RUN_DESCRIPTION_FILE)):
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
    missing = [name for name, given in ((finetuning.BERT_CONFIG_FILE,
                                         bert_config),
                                        (finetuning.VOCAB_FILE, vocab))
               if given is None
               and not os.path.isfile(os.path.join(path, name))]
    if missing or not _has_checkpoint(path):
        raise ValueError(
            f"bert_tf.load: {path} is neither a checkpoint directory "
            "(bert_config.json, vocab.txt and a checkpoint), a training "
            f"run's --output_dir ({finetuning.RUN_DESCRIPTION_FILE}) nor a "
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
            or os.path.join(path, finetuning.BERT_CONFIG_FILE))
        self.vocab_file = vocab_file or os.path.join(path,
                                                      finetuning.VOCAB_FILE)
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
        self._encoder = None
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
        texts = python_inputs.strings("texts", texts)
        if not texts:
            # As `predict([])` returns []: no rows, of the embeddings' width.
            empty = np.zeros([0, self.bert_config.hidden_size], np.float32)
            return {"pooled_output": empty, "mean_pooled": empty.copy()}
        from bert_tf.features import embeddings
        if self._encoder is None:
            self._encoder, _ = self._encoder_with(head=None)
        return embeddings.sentence_embeddings(
            self._encoder, self.tokenizer(), texts, self.max_seq_length,
            self.batch_size)

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
        texts = python_inputs.strings("texts", texts)
        if not isinstance(top_k, int) or not 1 <= top_k <= (
                self.bert_config.vocab_size):
            raise ValueError(f"top_k={top_k!r} must be an int in [1, "
                             f"{self.bert_config.vocab_size}]")
        encoder, head = self._masked_lm_model()
        return fill_mask.likeliest_pieces(
            encoder, head, self.tokenizer(), texts, top_k,
            self.batch_size, self.max_seq_length)

    def tokenizer(self):
        """The model's `FullTokenizer` (its vocabulary and casing)."""
        if self._tokenizer is None:
            from bert_tf.text import tokenization
            self._tokenizer = tokenization.FullTokenizer(
                self.vocab_file, do_lower_case=self.do_lower_case)
        return self._tokenizer

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


class _TaskPredictor:
    """`predict` of a task's model: a list of inputs in, the runner's
    results out (`_predict` of a non-empty list, by the subclass)."""

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
        if isinstance(inputs, (str, bytes)) or not isinstance(
                inputs, (list, tuple)):
            raise ValueError(f"inputs must be a list, got "
                             f"{type(inputs).__name__}")
        return self._predict(list(inputs)) if inputs else []


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
        # Any registered task's run, the built-in ones and those added
        # with `registry.register`.
        description = finetuning.read_run_description(
            path, registry.run_kinds())
        super().__init__(
            path, batch_size, do_lower_case, max_seq_length,
            default_max_seq_length=description["max_seq_length"],
            default_do_lower_case=description["do_lower_case"],
            causal_attention=description.get("causal_attention", False))
        self.description = description
        self.task = description["task"]
        self._predictor = None

    @property
    def labels(self):
        """The run's labels in label-id order (classification,
        multi-label, tagging), else None: their names where the task has
        them (GLUE's "0"/"1" tasks: SST-2's "negative", "positive")."""
        return (self.description.get("label_names")
                or self.description.get("label_list"))

    def _predict(self, inputs):
        # Built on first use (loading for `embed` alone builds no task):
        # the task's model restored once, its compiled steps kept.
        if self._predictor is None:
            spec = registry.of_run_kind(self.task)
            if spec is None:
                raise ValueError(f"predict: {self.path} is a {self.task} "
                                 "run, which predict does not serve")
            self._predictor = spec.predictor(self)
        return self._predictor(inputs)


class ExportedModel(_TaskPredictor):
    """A SavedModel of `export_saved_model.py`: `predict` through its
    `serving_default` signature (TensorFlow's, on any Keras backend)."""

    def __init__(self, path, batch_size=32):
        import tensorflow as tf
        import tensorflow_text  # noqa: F401  (registers the tokenizer ops)
        from bert_tf.export import served
        self.path = path
        self.batch_size = batch_size
        self._saved_model = tf.saved_model.load(path)
        self._served = served.Served(
            self._saved_model.signatures["serving_default"], path)
        self.task = self._served.task

    @property
    def labels(self):
        """None: a SavedModel does not hold its label list apart (each
        result names its label)."""
        return None

    def _predict(self, inputs):
        columns = self._served.columns(inputs)
        rows = self._served.call_batched(columns, self.batch_size)
        return self._served.results(rows, len(inputs))


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
    try:
        spec = registry.get(task_name)
    except KeyError:
        raise ValueError(f"finetune: task={task!r} is none of "
                         f"{', '.join(registry.names())}") from None
    if os.path.isfile(os.path.join(base_dir, SAVED_MODEL_FILE)):
        raise ValueError(f"finetune: base_dir {base_dir} is a SavedModel; "
                         "fine-tuning starts from a checkpoint directory")
    recipe, config_class = spec.recipe(), spec.config_class()
    sets = {"train": train, "eval": dev, "predict": test}
    names = dict(_SET_NAMES)
    if task_name != spec.name:
        settings = spec.finetune_aliases(task_name, sets, settings)
    if spec.finetune_sets is not None:
        sets, names = spec.finetune_sets(sets, settings)
    base = load(base_dir)  # Its files, checkpoint and casing.
    values = {"vocab_file": base.vocab_file,
              "bert_config_file": os.path.join(
                  base_dir, finetuning.BERT_CONFIG_FILE),
              "init_checkpoint": base.checkpoint,
              "do_lower_case": base.do_lower_case,
              "output_dir": output_dir}
    values.update(settings)
    fields = {field.name for field in dataclasses.fields(config_class)}
    for phase, given in sets.items():
        values.setdefault(f"do_{phase}", given is not None)
    for name in values:
        if name not in fields:
            raise ValueError(f"finetune: {recipe.PROGRAM} has no flag "
                             f"--{name}")
    given = {phase: data for phase, data in sets.items() if data is not None}
    examples = {}
    if task_name == spec.name and spec.python_examples is not None:
        examples = spec.python_examples(given, values, base, names)
    config = config_class(**values)
    try:
        finetuning.check_field_types(config)
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


# finetune's argument of each phase, for messages (squad's dev, when given,
# is its predict phase).
_SET_NAMES = {"train": "train", "eval": "dev", "predict": "test"}
