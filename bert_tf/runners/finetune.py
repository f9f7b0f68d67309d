"""The fine-tuning core every task's recipe shares: config, set-up, phases.

A task's recipe (`bert_tf/tasks/<task>/recipe.py`, `bert_tf/pretraining/recipe.py`) is a function of a typed
configuration, a subclass of `FineTuningConfig` whose fields are named as
the runners' flags:

    config.validate()                                  # once, fields named
    bert_config = load_bert_config(config)
    ... read every input (fail before any training) ...
    steps = training_steps(config, len(train_examples))
    run = start(config)               # strategy, seed, output dir, tokenizer
    ... write the task's records, build the task ...
    trainer = make_trainer(run, task, config, steps, eval_batch_size)
    write_run_description(config, run, PROGRAM, "classification", ...)
    return run_phases(trainer, config, ...)

The `run_*.py` scripts define Google's flags (`define_flags` here holds the
shared ones), turn the parsed flags into the recipe's config
(`bert_tf.runners.flags.config_from_flags`) and call the recipe;
`bert_tf.finetune` builds the config from Python arguments. Nothing here
reads flags. The `init_checkpoint` is resolved once, in `start`, and
travels in the task (`Task.init_checkpoint`), which opens it once.
"""

import dataclasses
import functools
import json
import os
import typing
from typing import Optional

from absl import flags

from bert_tf import sequence_lengths
from bert_tf.runners import flags as runner_flags

FLAGS = flags.FLAGS


# -- flags ---------------------------------------------------------------------

def define_flags(flag_values=FLAGS, *, max_seq_length, train_batch_size=32,
                 learning_rate=5e-5, eval_batch_size=8, has_eval=True,
                 pad_to_multiple_of=8, pad_to_multiple_of_note="",
                 do_predict_help="Whether to run the model in inference "
                                 "mode on the test set."):
    """Defines the flags every fine-tuning runner has (Google's names).

    The model, tokenizer, TPU and runtime flags; Google's training flags
    (`--do_train`, `--max_seq_length`, `--train_batch_size`,
    `--learning_rate`, ...), with `--do_eval` and `--eval_batch_size` only
    when `has_eval` (Google's run_squad.py has neither); and
    `--do_predict`, `--predict_batch_size`, `--num_train_epochs`,
    `--warmup_proportion`; and `--causal_attention` (new, default off),
    which the runner passes to its task.

    Args:
      flag_values: where to define them.
      max_seq_length, train_batch_size, learning_rate, eval_batch_size: the
        runner's defaults (Google's differ between runners).
      has_eval: define `--do_eval` and `--eval_batch_size`.
      pad_to_multiple_of, pad_to_multiple_of_note: the runner's default
        for `--pad_to_multiple_of` (None: the full length), and why.
      do_predict_help: the runner's description of `--do_predict`.
    """
    runner_flags.define_model_flags(flag_values)
    runner_flags.define_tokenizer_flags(flag_values, do_lower_case=True)
    runner_flags.define_tpu_flags(flag_values)
    runner_flags.define_runtime_flags(
        flag_values, pad_to_multiple_of=pad_to_multiple_of,
        pad_to_multiple_of_note=pad_to_multiple_of_note)
    if has_eval:
        runner_flags.define_training_flags(
            flag_values, max_seq_length=max_seq_length,
            train_batch_size=train_batch_size,
            eval_batch_size=eval_batch_size, learning_rate=learning_rate)
    else:
        # Register only the shared training flags the runner has.
        training_flags = flags.FlagValues()
        runner_flags.define_training_flags(
            training_flags, max_seq_length=max_seq_length,
            train_batch_size=train_batch_size, learning_rate=learning_rate)
        for name in ("do_train", "max_seq_length", "train_batch_size",
                     "learning_rate", "save_checkpoints_steps",
                     "iterations_per_loop"):
            flag_values[name] = training_flags[name]
            flags.declare_key_flag(name, flag_values=flag_values)
    flags.DEFINE_bool("do_predict", False, do_predict_help,
                      flag_values=flag_values)
    flags.DEFINE_integer(
        "predict_batch_size", 8,
        "Total batch size for predictions, over all replicas.",
        flag_values=flag_values)
    flags.DEFINE_float(
        "num_train_epochs", 3.0,
        "Total number of training epochs (passes over the training "
        "examples) to perform.", flag_values=flag_values)
    flags.DEFINE_float(
        "warmup_proportion", 0.1,
        "Proportion of training to perform linear learning rate warmup for. "
        "E.g., 0.1 = 10% of training.", flag_values=flag_values)
    flags.DEFINE_bool(
        "causal_attention", False,
        "Fine-tune with a causal (left-to-right) attention mask: each "
        "position attends only to itself and the positions before it, as "
        "the BERT paper fine-tuned its left-to-right (LTR) model (section "
        "5.1; run_pretraining.py --pretraining_objective=ltr pretrains one). "
        "Classification and multiple choice then pool the last real token "
        "instead of [CLS], which under a causal mask sees only itself. The "
        "checkpoint's variables are the same either way; predicting from a "
        "model fine-tuned with it needs it again. Default: bidirectional, "
        "as Google's.", flag_values=flag_values)
    for name in ("vocab_file", "bert_config_file", "output_dir"):
        flags.mark_flag_as_required(name, flag_values=flag_values)


def define_bilstm_flags(flag_values, prefix, head):
    """Defines `--<prefix>_bilstm` and `--<prefix>_bilstm_units`.

    A randomly initialized bidirectional LSTM between the encoder and the
    runner's head (variables `bilstm/fw/...`, `bilstm/bw/...`), the BERT
    paper's "LTR & No NSP + BiLSTM" (section 5.1).

    Args:
      flag_values: where to define them.
      prefix: the flags' prefix ("span" in run_squad.py, "tagging" in
        run_tagging.py).
      head: the head's name in the help text ("the span head").
    """
    flags.DEFINE_bool(
        f"{prefix}_bilstm", False,
        f"Put a randomly initialized bidirectional LSTM between the encoder "
        f"and {head} (variables bilstm/fw/... and bilstm/bw/...), as the "
        f"BERT paper's 'LTR & No NSP + BiLSTM' (section 5.1): it gives a "
        f"left-to-right encoder (--causal_attention) right context. A model "
        f"fine-tuned with it predicts (--init_checkpoint of its output) "
        f"with it again.", flag_values=flag_values)
    flags.DEFINE_integer(
        f"{prefix}_bilstm_units", None,
        f"--{prefix}_bilstm: the state size of each direction (default: "
        f"half the encoder's hidden_size, so the two together are as wide "
        f"as the encoder's output).", flag_values=flag_values)


def bilstm_units(config, prefix, bert_config):
    """The BiLSTM's per-direction size from `define_bilstm_flags`' fields
    (`<prefix>_bilstm`, `<prefix>_bilstm_units`), or None without
    `<prefix>_bilstm`.

    Raises:
      ValueError: `--<prefix>_bilstm_units` without `--<prefix>_bilstm`, or
        not positive.
    """
    enabled = getattr(config, f"{prefix}_bilstm")
    units = getattr(config, f"{prefix}_bilstm_units")
    if units is not None:
        if not enabled:
            raise ValueError(f"--{prefix}_bilstm_units needs --{prefix}_bilstm")
        if units <= 0:
            raise ValueError(f"--{prefix}_bilstm_units={units} must be "
                             f"positive")
    if not enabled:
        return None
    return units if units is not None else max(1, bert_config.hidden_size // 2)


# -- configuration ---------------------------------------------------------

@dataclasses.dataclass
class RunConfig:
    """What every training program is told (run_pretraining.py and the
    fine-tuning runners): the model, tokenizer, Google's training and TPU
    flags and the new runtime flags. Each field is the flag of its name
    (`bert_tf.runners.flags`), with the flag's default.
    """
    bert_config_file: Optional[str] = None
    vocab_file: Optional[str] = None
    output_dir: Optional[str] = None
    init_checkpoint: Optional[str] = None
    do_lower_case: bool = True
    do_train: bool = False
    do_eval: bool = False
    max_seq_length: int = 128
    train_batch_size: int = 32
    eval_batch_size: int = 8
    learning_rate: float = 5e-5
    save_checkpoints_steps: int = 1000
    iterations_per_loop: int = 1000
    # Google's TPU flags.
    use_tpu: bool = False
    tpu_name: Optional[str] = None
    tpu_zone: Optional[str] = None
    gcp_project: Optional[str] = None
    master: Optional[str] = None
    num_tpu_cores: int = 8
    # The new runtime flags (`bert_tf.runners.flags.define_runtime_flags`).
    distribution_strategy: str = "default"
    optimizer: str = "adamw"
    num_accumulation_steps: int = 1
    dtype: str = "float32"
    allow_tf32: bool = False
    enable_xla: bool = False
    keep_checkpoint_max: int = 5
    log_steps: int = 100
    log_every_seconds: float = 30.0
    seed: Optional[int] = None
    pad_to_multiple_of: Optional[int] = (
        sequence_lengths.DEFAULT_PAD_TO_MULTIPLE_OF)
    length_buckets: str = ""
    group_by_length: bool = False


@dataclasses.dataclass
class FineTuningConfig(RunConfig):
    """What every fine-tuning run is told: `RunConfig` and the fine-tuning
    flags `define_flags` adds. A task's recipe takes a subclass with the
    task's own fields.

    `validate` checks the fields once, before anything is read or written;
    its messages name the field as the flag (`--max_seq_length=0 ...`).
    """
    do_predict: bool = False
    predict_batch_size: int = 8
    num_train_epochs: float = 3.0
    warmup_proportion: float = 0.1
    causal_attention: bool = False

    # The phases a run without training may ask for (run_squad.py has no
    # --do_eval), for `require_weights_without_training`'s message.
    PREDICTING_PHASES = ("do_eval", "do_predict")

    def validate(self):
        """Checks the shared fields; raises ValueError naming the first bad
        one. A task's config extends it with its own."""
        check_field_types(self)
        runner_flags.require(self, "vocab_file", "bert_config_file",
                             "output_dir")
        runner_flags.check_file("bert_config_file", self.bert_config_file)
        runner_flags.check_file("vocab_file", self.vocab_file)
        check_output_dir_is_no_file(self.output_dir)
        if self.do_eval or self.do_predict:
            check_eval_results_are_a_runs(self.output_dir)
        if self.predict_batch_size <= 0:
            raise ValueError(f"--predict_batch_size="
                             f"{self.predict_batch_size} must be positive")
        runner_flags.length_settings_from_flags(self)
        if self.do_train:
            if self.num_train_epochs <= 0:
                raise ValueError(
                    f"--num_train_epochs={self.num_train_epochs} must be "
                    "positive")
            if not 0 <= self.warmup_proportion <= 1:
                raise ValueError(f"--warmup_proportion="
                                 f"{self.warmup_proportion} must be in "
                                 "[0, 1]")
        from bert_tf.text import tokenization
        tokenization.validate_case_matches_checkpoint(
            self.do_lower_case, self.init_checkpoint)
        check_training_settings(self)

    def require_a_phase(self):
        """Google's run_classifier.py check: some phase must run."""
        if not (self.do_train or self.do_eval or self.do_predict):
            raise ValueError(
                "At least one of `do_train`, `do_eval` or `do_predict' must "
                "be True.")


def check_output_dir_is_no_file(output_dir):
    """Refuses an `--output_dir` that names an existing file (the run would
    end with "[Errno 17] File exists" when it makes the directory).

    Raises:
      ValueError: naming the flag and the file.
    """
    import tensorflow as tf
    if tf.io.gfile.exists(output_dir) and not tf.io.gfile.isdir(output_dir):
        raise ValueError(f"--output_dir: {output_dir} is a file, not a "
                         "directory")


def check_eval_results_are_a_runs(output_dir):
    """Refuses to overwrite an `eval_results.txt` in `--output_dir` that no
    run wrote (a run writes `name = value` lines; a user's own file of that
    name would be replaced by the evaluation's).

    Raises:
      ValueError: naming the file.
    """
    import re
    import tensorflow as tf
    path = os.path.join(output_dir, "eval_results.txt")
    if not tf.io.gfile.exists(path) or tf.io.gfile.isdir(path):
        return
    from bert_tf import file_io
    try:
        text = file_io.read_bytes(path).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        text = ""
    if text and all(re.fullmatch(r"[^\s=]+ = \S.*", line)
                    for line in text.splitlines()):
        return
    raise ValueError(
        f"--output_dir: {path} is not a run's evaluation results (name = "
        "value lines) and would be overwritten by this run's; move it or "
        "use another --output_dir")


def releases_output_dir(recipe_run):
    """Decorates a task recipe's `run(config, ...)`: the lock on
    `config.output_dir` that the run takes (`start`, the `Trainer`) is
    released when it returns or fails, not when the Python process exits
    (a notebook's failed call would keep a command-line run out). A lock the
    caller held before stays held.
    """
    @functools.wraps(recipe_run)
    def run(config, *args, **kwargs):
        from bert_tf.training import run_lock
        output_dir = getattr(config, "output_dir", None)
        held = (not isinstance(output_dir, (str, os.PathLike))
                or run_lock.holds_output_dir(output_dir))
        try:
            return recipe_run(config, *args, **kwargs)
        finally:
            if not held:
                run_lock.release_output_dir(output_dir)
    return run


def check_given_examples(config, given, example_class, argument="{}_examples",
                         one=False):
    """Refuses a recipe's in-memory examples of the wrong kind (a string,
    dicts instead of examples) or none, naming the argument, before the
    recipe reads, checks or writes anything.

    Args:
      config: the run's config (which phases run).
      given: {"train"/"eval"/"predict": what the caller passed, or None}.
      example_class: what each example must be (e.g. `InputExample`).
      argument: the argument's name, with "{}" for the phase.
      one: the argument is one `example_class` (a `TaggingFile`), not a
        list of them.

    Raises:
      ValueError: naming the argument (and the example's index).
    """
    wanted = {"train": config.do_train, "eval": config.do_eval,
              "predict": config.do_predict}
    kind = example_class.__name__
    a_kind = f"{'an' if kind[0] in 'AEIOU' else 'a'} {kind}"
    for phase, examples in given.items():
        if examples is None or not wanted[phase]:
            continue
        name = argument.format(phase)
        if one:
            if not isinstance(examples, example_class):
                raise ValueError(f"{name} must be {a_kind}, not "
                                 f"{type(examples).__name__}")
            continue
        if not isinstance(examples, (list, tuple)):
            raise ValueError(f"{name} must be a list of {kind}s, not "
                             f"{type(examples).__name__}")
        if not examples:
            raise ValueError(f"{name}: no examples")
        for i, example in enumerate(examples):
            if not isinstance(example, example_class):
                raise ValueError(f"{name}[{i}] must be {a_kind}, not "
                                 f"{type(example).__name__}")


def check_training_settings(config):
    """Checks the fields the trainer and the optimizer read, with the others
    in `validate`: a run refused for one of them has not yet written its
    records or run description into `--output_dir` (a finished run's among
    them), nor divided by `--train_batch_size`.

    Raises:
      ValueError: naming the first bad flag.
    """
    import math
    if config.do_train and not math.isfinite(config.num_train_epochs):
        raise ValueError(f"--num_train_epochs={config.num_train_epochs} "
                         "must be a finite number")
    # The trainer's own checks (batch sizes, checkpoint settings, dtype),
    # on the config the run will build (`make_trainer`).
    trainer_config = runner_flags.trainer_config_from_flags(
        config, num_train_steps=0)
    if config.do_train:
        if not (config.learning_rate > 0
                and math.isfinite(config.learning_rate)):
            raise ValueError(f"--learning_rate={config.learning_rate} must "
                             "be positive")
        from bert_tf.training import optimization
        if str(config.optimizer).lower() not in optimization.OPTIMIZER_NAMES:
            raise ValueError(
                f"--optimizer={config.optimizer!r} must be one of "
                f"{', '.join(optimization.OPTIMIZER_NAMES)}")
    from bert_tf import backend
    if backend.name() == backend.JAX:
        from bert_tf.training.engines import jax_engine
        from bert_tf.training import lamb
        problem = jax_engine.unsupported_settings(trainer_config, True)
        if (problem is None and config.do_train
                and config.optimizer.lower() == "lamb"):
            problem = lamb.backend_problem()
        if problem:
            raise ValueError(problem)


# What each annotation accepts from Python (`check_field_types`).
_FIELD_KINDS = {int: ((int,), "an integer"),
                float: ((int, float), "a number"),
                bool: ((bool,), "True or False"),
                str: ((str,), "a string")}


def check_field_types(config):
    """Refuses a field of the wrong type (a config built from Python, e.g.
    `max_seq_length="64"`), naming it; path-like values become strings.

    Raises:
      ValueError: `<field>=<value> must be <kind>`.
    """
    hints = typing.get_type_hints(type(config))
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        hint = hints[field.name]
        optional = type(None) in typing.get_args(hint)
        if optional:
            hint = next(arg for arg in typing.get_args(hint)
                        if arg is not type(None))
        if value is None and optional:
            continue
        if hint is str and isinstance(value, os.PathLike):
            setattr(config, field.name, os.fspath(value))
            continue
        if hint not in _FIELD_KINDS:
            continue
        accepted, kind = _FIELD_KINDS[hint]
        if not isinstance(value, accepted) or (
                hint is not bool and isinstance(value, bool)):
            raise ValueError(f"{field.name}={value!r:.80} must be {kind}")


def load_bert_config(config):
    """The `bert_config_file`'s `BertConfig` (the file checked first)."""
    runner_flags.require(config, "bert_config_file")
    runner_flags.check_file("bert_config_file", config.bert_config_file)
    from bert_tf.config import BertConfig
    return BertConfig.from_json_file(config.bert_config_file)


# -- steps -------------------------------------------------------------------

def num_training_steps(num_examples, train_batch_size, num_train_epochs,
                       warmup_proportion):
    """Google's step counts: `(num_train_steps, num_warmup_steps)`.

    `int(num_examples / train_batch_size * num_train_epochs)` and
    `int(num_train_steps * warmup_proportion)`, exactly as the originals
    compute them (run_squad.py counts questions, not windows).
    """
    num_train_steps = int(num_examples / train_batch_size * num_train_epochs)
    return num_train_steps, int(num_train_steps * warmup_proportion)


@dataclasses.dataclass(frozen=True)
class TrainingSteps:
    """`num_train_steps` and `num_warmup_steps` of a run (0 without
    training)."""
    num_train_steps: int = 0
    num_warmup_steps: int = 0


def training_steps(config, num_train_examples):
    """The run's `TrainingSteps` from `num_train_epochs` and friends.

    Raises:
      ValueError: the flags give no training step at all.
    """
    if not config.do_train:
        return TrainingSteps()
    num_train_steps, num_warmup_steps = num_training_steps(
        num_train_examples, config.train_batch_size,
        config.num_train_epochs, config.warmup_proportion)
    if num_train_steps <= 0:
        raise ValueError(
            f"{num_train_examples} training examples / "
            f"--train_batch_size={config.train_batch_size} * "
            f"--num_train_epochs={config.num_train_epochs} gives no "
            "training step")
    return TrainingSteps(num_train_steps, num_warmup_steps)


# -- set-up ------------------------------------------------------------------

@dataclasses.dataclass
class FineTuningRun:
    """What a fine-tuning run sets up once, before converting its data.

    Attributes:
      strategy: the `tf.distribute.Strategy` of the flags.
      on_tpu: whether it is a TPU strategy (TPUs need full batches).
      tokenizer: the `FullTokenizer` of `--vocab_file`/`--do_lower_case`.
      init_checkpoint: `--init_checkpoint` resolved to a checkpoint prefix,
        or None.
    """
    strategy: object
    on_tpu: bool
    tokenizer: object
    init_checkpoint: Optional[str]


def start(config):
    """Strategy, seed, output directory, tokenizer, initial checkpoint.

    The strategy comes before any other TensorFlow work: multi-worker and
    TPU strategies must configure the runtime before it starts.
    """
    import tensorflow as tf

    from bert_tf import checkpoints
    from bert_tf.text import tokenization
    from bert_tf.training import distribution

    # A run that does not train needs weights to evaluate or predict with.
    runner_flags.require_weights_without_training(
        config, "/".join(f"--{name}" for name in config.PREDICTING_PHASES))
    strategy = runner_flags.strategy_from_flags(config)
    runner_flags.set_seed_from_flags(config)
    on_tpu = distribution.resolve_strategy_name(
        config.distribution_strategy, config.use_tpu) == "tpu"
    if config.do_train:
        # Before the runner writes feature files into --output_dir.
        runner_flags.lock_output_dir(config, strategy)
    init_checkpoint = None
    if config.init_checkpoint:
        init_checkpoint = checkpoints.resolve_checkpoint(
            config.init_checkpoint)
    tf.io.gfile.makedirs(config.output_dir)
    tokenizer = tokenization.FullTokenizer(
        vocab_file=config.vocab_file,
        do_lower_case=config.do_lower_case)
    return FineTuningRun(strategy, on_tpu, tokenizer, init_checkpoint)


def arrays_data_config(run, config, arrays):
    """The data of a task whose sets are arrays in memory (multi-label,
    multiple choice).

    Args:
      run: the `FineTuningRun` (TPUs need full evaluation batches, padded
        with weight-0 examples).
      config: the run's `FineTuningConfig`.
      arrays: {"train"/"eval"/"predict": the phase's feature arrays}, for
        the phases that run.

    Returns:
      A `tasks.base.ArraysDataConfig`.
    """
    from bert_tf.tasks import base
    return base.ArraysDataConfig(
        train_arrays=arrays.get("train"), eval_arrays=arrays.get("eval"),
        predict_arrays=arrays.get("predict"),
        max_seq_length=config.max_seq_length, seed=config.seed,
        pad_to_full_batches=run.on_tpu)


def make_trainer(run, task, config, steps, eval_batch_size):
    """The `Trainer` of a fine-tuning task, with an optimizer when training.

    Args:
      run: the `FineTuningRun`.
      task: the task (its `init_checkpoint` set from `run`).
      config: the run's `FineTuningConfig`.
      steps: the run's `TrainingSteps`.
      eval_batch_size: the batch size of evaluation (run_squad.py's is
        `--predict_batch_size`).
    """
    from bert_tf.training import trainer as trainer_lib

    trainer_config = runner_flags.trainer_config_from_flags(
        dataclasses.replace(config, eval_batch_size=eval_batch_size),
        num_train_steps=steps.num_train_steps, max_eval_steps=None)
    optimizer_factory = None
    if config.do_train:
        optimizer_factory = runner_flags.optimizer_factory_from_flags(
            config, num_train_steps=steps.num_train_steps,
            num_warmup_steps=steps.num_warmup_steps)
    return trainer_lib.Trainer(task, trainer_config, run.strategy,
                               optimizer_factory=optimizer_factory)


def define_data_file_flags(flag_values, data_dir_help, file_names):
    """Defines `--data_dir` and `--train_file`/`--eval_file`/`--predict_file`
    (each overriding `--data_dir`'s file; see `phase_input_file`).

    Args:
      flag_values: the `FlagValues` to define them in.
      data_dir_help: what `--data_dir` holds.
      file_names: {"train"|"eval"|"predict": the file's name(s) inside
        `--data_dir`, as the help should say them}.
    """
    flags.DEFINE_string("data_dir", None, data_dir_help,
                        flag_values=flag_values)
    described = {"train": "Training file", "eval": "Evaluation file",
                 "predict": "File to predict"}
    for phase, description in described.items():
        flags.DEFINE_string(
            f"{phase}_file", None,
            f"{description} (default: <data_dir>/{file_names[phase]}).",
            flag_values=flag_values)


def phase_input_file(config, phase, default_name):
    """The input file of a phase: `--<phase>_file`, else `--data_dir`'s.

    Args:
      config: a config with `data_dir` and `<phase>_file` fields.
      phase: "train", "eval" or "predict".
      default_name: the file's name inside `--data_dir` (e.g. "dev.txt").

    Raises:
      ValueError: naming the flag, or the missing file.
    """
    path = getattr(config, f"{phase}_file")
    if path:
        runner_flags.check_file(f"{phase}_file", path)
        return path
    if not config.data_dir:
        raise ValueError(f"--{phase}_file or --data_dir is required")
    path = os.path.join(config.data_dir, default_name)
    import tensorflow as tf
    if not tf.io.gfile.exists(path):
        raise ValueError(f"--data_dir: {path} does not exist (or pass "
                         f"--{phase}_file)")
    return path


def run_phases(trainer, config, *, num_predict_examples,
               pad_to_full_batches, predicted, before_phase=None):
    """Trains, evaluates and predicts, as `--do_train/--do_eval/--do_predict`
    ask; evaluation and prediction write the task's files.

    Args:
      trainer: the run's `Trainer`.
      config: the run's `FineTuningConfig`.
      num_predict_examples: the examples (or windows) the predict set has.
      pad_to_full_batches: pad the last prediction batch (TPUs).
      predicted: `predicted(state)` -> what "predict" holds in the result,
        from the task's aggregated prediction state.
      before_phase: optional `before_phase(mode)`, called before each phase
        (e.g. to log what it runs on).

    Returns:
      A dict: "train" (the last training log), "eval" (the eval results),
      "predict" (`predicted(state)`), for the phases that ran.
    """
    from bert_tf import modes

    results = {}
    for mode, wanted in ((modes.TRAIN, config.do_train),
                         (modes.EVAL, config.do_eval),
                         (modes.PREDICT, config.do_predict)):
        if not wanted:
            continue
        if before_phase is not None:
            before_phase(mode)
        if mode == modes.TRAIN:
            results["train"] = trainer.train()
        elif mode == modes.EVAL:
            results["eval"] = trainer.evaluate()
        else:
            state, _ = trainer.run_predictions(
                modes.PREDICT, config.predict_batch_size,
                num_examples=num_predict_examples,
                pad_to_full_batches=pad_to_full_batches)
            results["predict"] = predicted(state)
    trainer.release_train_input()
    return results


# -- what a training run leaves for prediction --------------------------------

# Written into a training run's --output_dir beside its checkpoints, so that
# the directory alone predicts (`bert_tf.load`, like a released checkpoint
# directory): the model's config and vocabulary, and what the task needs.
RUN_DESCRIPTION_FILE = "bert_tf_run.json"
BERT_CONFIG_FILE = "bert_config.json"
VOCAB_FILE = "vocab.txt"
# The task kinds of a run description (`bert_tf.api` serves each).
CLASSIFICATION = "classification"
MULTI_LABEL = "multi_label"
SQUAD = "squad"
TAGGING = "tagging"
MULTIPLE_CHOICE = "multiple_choice"
TASK_KINDS = (CLASSIFICATION, MULTI_LABEL, SQUAD, TAGGING, MULTIPLE_CHOICE)


def write_run_description(config, run, program, task, **settings):
    """Makes a training run's `--output_dir` loadable by itself.

    Copies `--bert_config_file` and `--vocab_file` into it as
    `bert_config.json` and `vocab.txt` (as a released checkpoint directory
    has them) and writes `bert_tf_run.json`: the program, the task kind,
    `max_seq_length`, `do_lower_case`, `causal_attention` and the task's
    own `settings` (labels, windows, ...). Only a run that trains writes
    them (a prediction run describes no model of its own), and only its
    chief (the worker that writes checkpoints). Each file is written under
    a temporary name and renamed.

    Args:
      config: the run's `FineTuningConfig`.
      run: the `FineTuningRun` (its strategy says who the chief is).
      program: the runner's file name, e.g. "run_classifier.py".
      task: one of `TASK_KINDS`.
      **settings: JSON-serializable task settings.

    Raises:
      ValueError: `--output_dir` already holds a `bert_config.json` or
        `vocab.txt` that differs from the run's (another model's files,
        which are not overwritten).
    """
    from bert_tf.training import distribution
    check_finished_run_matches(config, task, settings.get("label_list"))
    if not config.do_train or not distribution.is_chief(run.strategy):
        return
    if task not in TASK_KINDS:
        raise ValueError(f"unknown task kind {task!r}")
    from bert_tf import file_io
    copy_model_files(config, ("bert_config_file", "vocab_file"))
    description = {
        "program": program, "task": task,
        "max_seq_length": config.max_seq_length,
        "do_lower_case": config.do_lower_case,
        "causal_attention": config.causal_attention, **settings}
    with file_io.atomic_write(
            os.path.join(config.output_dir, RUN_DESCRIPTION_FILE)) as writer:
        json.dump(description, writer, indent=2, ensure_ascii=False)
        writer.write("\n")


def check_finished_run_matches(config, task, label_list):
    """Refuses a run into the `--output_dir` of a run that trained (a
    checkpoint and its `bert_tf_run.json` there) when the run would resume
    or use that model under another task or other labels, or (training)
    rewrite its description with another `max_seq_length`: the old model
    would be evaluated against, and served under, the new labels.

    Args:
      config: the run's `FineTuningConfig`.
      task: the run's task kind (one of `TASK_KINDS`).
      label_list: the run's labels in label-id order, or None (a task
        without labels).

    Raises:
      ValueError: naming each setting that differs, the run's and this
        one's.
    """
    try:
        description = read_run_description(config.output_dir)
    except (FileNotFoundError, ValueError):
        return
    from bert_tf.training import checkpoint_manager
    checkpoint = checkpoint_manager.CheckpointManager(
        config.output_dir, is_chief=False).latest_checkpoint
    if checkpoint is None:
        return
    differences = []
    if description.get("task") != task:
        differences.append(f"task {description.get('task')} (this run: "
                           f"{task})")
    elif description.get("label_list") != (
            None if label_list is None else list(label_list)):
        differences.append(
            f"labels {_listed(description.get('label_list'))} (this run: "
            f"{_listed(label_list)})")
    if config.do_train and description.get(
            "max_seq_length") != config.max_seq_length:
        differences.append(
            f"max_seq_length {description.get('max_seq_length')} (this "
            f"run: {config.max_seq_length})")
    if differences:
        raise ValueError(
            f"--output_dir: {config.output_dir} holds a model trained "
            f"({os.path.basename(checkpoint)}) with {'; '.join(differences)}"
            ", which this run would use under its own; use another "
            "--output_dir")


def _listed(labels):
    """Labels as a message shows them."""
    if labels is None:
        return "none"
    return ", ".join(str(label) for label in labels)


# The file a model flag is copied to in a run's --output_dir.
MODEL_FILE_OF_FLAG = {"bert_config_file": BERT_CONFIG_FILE,
                      "vocab_file": VOCAB_FILE}


def copy_model_files(config, flag_names):
    """Copies the files of model flags into `--output_dir`, as a released
    checkpoint directory has them (`bert_config.json`, `vocab.txt`).

    A file already there with the same bytes is left as it is; nothing is
    written unless every copy can be (each under a temporary name, then
    renamed).

    Args:
      config: the run's config (`RunConfig` or a subclass).
      flag_names: of `MODEL_FILE_OF_FLAG`; a field without a value is
        skipped.

    Raises:
      ValueError: `--output_dir` already holds such a file that differs
        (another model's file, which is not overwritten); the message names
        it.
    """
    from bert_tf import file_io
    copies = []
    for flag in flag_names:
        if not getattr(config, flag):
            continue
        content = file_io.read_bytes(getattr(config, flag), f"--{flag}")
        target = os.path.join(config.output_dir, MODEL_FILE_OF_FLAG[flag])
        if _existing_bytes(target) not in (None, content):
            raise ValueError(
                f"--output_dir: {target} exists and differs from --{flag}="
                f"{getattr(config, flag)} (another model's file is not "
                "overwritten; use another --output_dir)")
        copies.append((target, content))
    for target, content in copies:
        if _existing_bytes(target) is None:
            with file_io.atomic_write(target, "wb") as writer:
                writer.write(content)


def _existing_bytes(path):
    """The content of `path`, or None where there is no such file."""
    from bert_tf import file_io
    try:
        return file_io.read_bytes(path)
    except FileNotFoundError:
        return None


def read_run_description(output_dir):
    """`bert_tf_run.json` of a training run's directory as a dict.

    Raises:
      FileNotFoundError: there is none (not a training run's directory).
      ValueError: it is not a description (the message names the file).
    """
    from bert_tf import file_io
    path = os.path.join(os.fspath(output_dir), RUN_DESCRIPTION_FILE)
    content = file_io.read_bytes(path, "run description")
    try:
        description = json.loads(content.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: not a JSON run description ({error})"
                         ) from None
    if not isinstance(description, dict) or description.get(
            "task") not in TASK_KINDS:
        raise ValueError(f"{path}: no 'task' among {', '.join(TASK_KINDS)}")
    return description


# A run_classifier.py --multi_label run of an earlier version recorded its
# head here instead of in bert_tf_run.json; read where a run has only it.
EARLIER_MULTI_LABEL_FILE = "multi_label.json"


def read_multi_label_head(output_dir):
    """The multi-label head a training run's directory records, or None.

    The checkpoints of a `run_classifier.py --multi_label` run hold a
    softmax classifier's variables (`output_weights`, `output_bias`); only
    its `bert_tf_run.json` (task `multi_label`, with the run's labels and
    `--threshold`) says they are a sigmoid per label. Read by
    `export_saved_model.py` and `bert_tf.load`. A directory with no
    `bert_tf_run.json` but an earlier version's `multi_label.json` (the same
    two fields) is read from that.

    Args:
      output_dir: the training run's `--output_dir` (the checkpoint's
        directory).

    Returns:
      None (not a multi-label run's directory), or a dict with
      `label_list` (the labels in label-id order), `threshold` and `path`
      (the file read, for messages).

    Raises:
      ValueError: the record is not one (the message names the file).
    """
    from bert_tf import file_io
    output_dir = os.fspath(output_dir)
    path = os.path.join(output_dir, RUN_DESCRIPTION_FILE)
    try:
        record = read_run_description(output_dir)
    except FileNotFoundError:
        path = os.path.join(output_dir, EARLIER_MULTI_LABEL_FILE)
        try:
            content = file_io.read_bytes(path, "multi-label record")
        except FileNotFoundError:
            return None
        try:
            record = json.loads(content.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ValueError(f"{path}: not a JSON multi-label record "
                             f"({error})") from None
        if not isinstance(record, dict):
            raise ValueError(f"{path}: not a multi-label record")
    else:
        if record["task"] != MULTI_LABEL:
            return None
    labels, threshold = record.get("label_list"), record.get("threshold")
    if not (isinstance(labels, list) and labels
            and all(isinstance(label, str) for label in labels)):
        raise ValueError(f"{path}: 'label_list' is not a list of label "
                         "names")
    if isinstance(threshold, bool) or not isinstance(threshold,
                                                     (int, float)):
        raise ValueError(f"{path}: 'threshold' is not a number")
    return {"label_list": labels, "threshold": float(threshold),
            "path": path}
