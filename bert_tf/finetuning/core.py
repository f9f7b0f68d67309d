"""The fine-tuning core every task's recipe shares: config, set-up, phases.

A task's recipe (`bert_tf/tasks/<task>/recipe.py`) is a function of a typed
configuration, a subclass of `FineTuningConfig` whose fields are the
program's flags (`fields.setting`: name, type, default and help, from which
`bert_tf.runners.flags` makes the flags):

    config.validate()                                  # once, fields named
    bert_config = load_bert_config(config)
    ... read every input (fail before any training) ...
    steps = training_steps(config, len(train_examples))
    run = start(config)               # strategy, seed, output dir, tokenizer
    ... write the task's records, build the task ...
    trainer = make_trainer(run, task, config, steps, eval_batch_size)
    write_run_description(config, run, PROGRAM, "classification", ...)
    return run_phases(trainer, config, ...)

The `run_*.py` scripts define the flags of the recipe's config, turn the
parsed flags into a config (`bert_tf.runners.flags.config_from_flags`) and
call the recipe; `bert_tf.finetune` builds the config from Python
arguments. Nothing here reads flags. The `init_checkpoint` is resolved
once, in `start`, and travels in the task (`Task.init_checkpoint`), which
opens it once.
"""

import dataclasses
import os
import typing
from typing import Optional

from bert_tf import config as bert_config_lib
from bert_tf.data import sequence_lengths
from bert_tf.finetuning import checks
from bert_tf.finetuning import lock
from bert_tf.finetuning import runtime
from bert_tf.finetuning.fields import setting
from bert_tf.training import distribution
from bert_tf.training import precision


def bilstm_setting(prefix, head):
    """The field `<prefix>_bilstm`: a randomly initialized bidirectional
    LSTM between the encoder and the task's head (variables `bilstm/fw/...`,
    `bilstm/bw/...`), the BERT paper's "LTR & No NSP + BiLSTM" (section 5.1).

    Args:
      prefix: the field's prefix ("span" in run_squad.py, "tagging" in
        run_tagging.py).
      head: the head's name in the help text ("the span head").
    """
    return setting(
        False,
        f"Put a randomly initialized bidirectional LSTM between the encoder "
        f"and {head} (variables bilstm/fw/... and bilstm/bw/...), as the "
        f"BERT paper's 'LTR & No NSP + BiLSTM' (section 5.1): it gives a "
        f"left-to-right encoder (--causal_attention) right context. A model "
        f"fine-tuned with it predicts (--init_checkpoint of its output) "
        f"with it again.")


def bilstm_units_setting(prefix):
    """The field `<prefix>_bilstm_units` beside `bilstm_setting(prefix)`."""
    return setting(
        None,
        f"--{prefix}_bilstm: the state size of each direction (default: "
        f"half the encoder's hidden_size, so the two together are as wide "
        f"as the encoder's output).")


def bilstm_units(config, prefix, bert_config):
    """The BiLSTM's per-direction size from the fields of
    `bilstm_setting` and `bilstm_units_setting`
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

# `--pad_to_multiple_of`'s help; a program with another default adds why.
PAD_TO_MULTIPLE_OF_HELP = (
    "Run each batch at its longest real sequence rounded up to a "
    "multiple of this, not at --max_seq_length: the same outputs, "
    "without computing on padding (prediction also batches examples of "
    "similar length together, outputs in input order). The records on "
    "disk keep --max_seq_length. --pad_to_multiple_of=<max_seq_length> "
    "(or unset, where the default is None) runs every batch at the "
    "full length, as the original does.")


@dataclasses.dataclass
class RunConfig:
    """What every training program is told (run_pretraining.py and the
    fine-tuning runners): the model, tokenizer, Google's training and TPU
    flags and the new runtime flags. Each field is the flag of its name,
    with its default and help (`fields.setting`).
    """
    # Google's model and tokenizer flags.
    bert_config_file: Optional[str] = setting(
        None,
        "The config json file corresponding to the pre-trained BERT model. "
        "This specifies the model architecture.")
    vocab_file: Optional[str] = setting(
        None, "The vocabulary file that the BERT model was trained on.")
    output_dir: Optional[str] = setting(
        None,
        "The output directory where the model checkpoints, summaries and "
        "results will be written.")
    init_checkpoint: Optional[str] = setting(
        None,
        "Initial checkpoint (usually from a pre-trained BERT model): a "
        "checkpoint prefix (e.g. .../bert_model.ckpt) or a directory. Used "
        "only when --output_dir holds no checkpoint to resume from.")
    do_lower_case: bool = setting(
        True,
        "Whether to lower case the input text. Should be True for uncased "
        "models and False for cased models.")
    # Google's training flags.
    do_train: bool = setting(False, "Whether to run training.")
    do_eval: bool = setting(False, "Whether to run eval on the dev set.")
    max_seq_length: int = setting(
        128,
        "The maximum total input sequence length after WordPiece "
        "tokenization. Sequences longer than this will be truncated, and "
        "sequences shorter than this will be padded. Must match the data "
        "when reading TFRecords.")
    train_batch_size: int = setting(
        32,
        "Total batch size for training: examples per optimizer update, over "
        "all replicas (and accumulation steps).")
    eval_batch_size: int = setting(
        8, "Total batch size for eval, over all replicas.")
    learning_rate: float = setting(5e-5,
                                   "The initial learning rate for Adam.")
    save_checkpoints_steps: int = setting(
        1000, "How often to save the model checkpoint.")
    iterations_per_loop: int = setting(
        1000,
        "How many steps to make in each call to the device (one tf.function "
        "call runs this many steps).")
    # Google's TPU flags.
    use_tpu: bool = setting(
        False, "Whether to use TPU. Same as --distribution_strategy=tpu.")
    tpu_name: Optional[str] = setting(
        None,
        "The Cloud TPU to use for training. This should be either the name "
        "used when creating the Cloud TPU, or a grpc://ip.address.of.tpu:8470 "
        "url.")
    tpu_zone: Optional[str] = setting(
        None,
        "[Optional] GCE zone where the Cloud TPU is located in. If not "
        "specified, we will attempt to automatically detect the GCE project "
        "from metadata.")
    gcp_project: Optional[str] = setting(
        None,
        "[Optional] Project name for the Cloud TPU-enabled project. If not "
        "specified, we will attempt to automatically detect the GCE project "
        "from metadata.")
    master: Optional[str] = setting(
        None,
        "[Optional] TensorFlow master URL; the TPU address when --tpu_name "
        "is not given.")
    num_tpu_cores: int = setting(
        8, "Only used if `use_tpu` is True. Total number of TPU cores to use.")
    # The new runtime flags; each default keeps the original's behaviour.
    distribution_strategy: str = setting(
        "default",
        "How to spread training over devices: default (one device, as the "
        "original), one_device, mirrored (all local GPUs, or all logical "
        "CPUs), multi_worker_mirrored (the workers in the TF_CONFIG "
        "environment variable; on KERAS_BACKEND=jax, one jax.distributed "
        "job of them), tpu (--tpu_name; --use_tpu implies it).",
        choices=distribution.STRATEGY_NAMES)
    optimizer: str = setting(
        "adamw",
        "adamw: Google's AdamWeightDecay (the original). lamb: layer-wise "
        "adaptive rates for large-batch pretraining.",
        choices=("adamw", "lamb"))
    num_accumulation_steps: int = setting(
        1,
        "Split each --train_batch_size batch into this many micro-batches and "
        "sum their gradients before one update (same update, less memory).")
    dtype: str = setting(
        "float32",
        "float32 (the original), mixed_float16 (with dynamic loss scaling) or "
        "mixed_bfloat16: compute precision; variables stay float32.",
        choices=precision.DTYPES)
    allow_tf32: bool = setting(
        False,
        "Let float32 matmuls run in TF32 on NVIDIA GPUs from Ampere on "
        "(faster, but 10-bit mantissas: outputs then differ from Google's "
        "by more than float32 round-off). Default: float32 means float32.")
    enable_xla: bool = setting(
        False,
        "Compile with XLA (jit_compile): the whole training step on one "
        "device; the forward and backward pass with several replicas.")
    attention: str = setting(
        bert_config_lib.GOOGLE_ATTENTION,
        "How self-attention is computed. google (the original): einsum, "
        "the -10000 mask added and softmax taken in float32, attention-"
        "probability dropout. fused: one keras.ops.dot_product_attention "
        "call, a fused flash-attention kernel where the backend has one "
        "for the device and dtype (on KERAS_BACKEND=jax, cuDNN's on NVIDIA "
        "GPUs in bfloat16 and float16), else the same arithmetic; the "
        "same outputs to round-off in float32 (in 16 bits its softmax may "
        "run in 16 bits). It has no attention-probability dropout, so "
        "training with it needs a bert config whose "
        "attention_probs_dropout_prob is 0 (refused otherwise); "
        "evaluation and prediction take it with any config.",
        choices=bert_config_lib.ATTENTION_CHOICES)
    keep_checkpoint_max: int = setting(
        5,
        "How many checkpoints to keep in --output_dir (0 keeps all); the "
        "original's RunConfig default is 5.")
    log_steps: int = setting(
        100,
        "Log loss, accuracies, learning rate, examples/s and ETA, and write "
        "TensorBoard summaries, every this many steps.")
    log_every_seconds: float = setting(
        30.0,
        "Also report progress (step/total, speed, ETA, running loss) when "
        "this many seconds passed without a log line, whichever of this and "
        "--log_steps comes first; a bar on a terminal. 0: --log_steps only. "
        "More of TensorFlow's own lines: --verbosity=1.")
    seed: Optional[int] = setting(
        None,
        "Random seed for initialization, dropout and input shuffling, and "
        "TensorFlow's deterministic ops: the same command gives the same "
        "numbers every time on the same machine. Unset (the original): a "
        "different run every time.")
    pad_to_multiple_of: Optional[int] = setting(
        sequence_lengths.DEFAULT_PAD_TO_MULTIPLE_OF, PAD_TO_MULTIPLE_OF_HELP)
    length_buckets: str = setting(
        "",
        "Comma-separated lengths (e.g. 32,64,128) a batch may run at: the "
        "smallest that holds its longest sequence; 'auto': powers of two "
        "from 16, then --max_seq_length. Compilers build one program per "
        "shape, so --enable_xla and TPUs always use buckets (auto unless "
        "given). Empty: any multiple of --pad_to_multiple_of.")
    group_by_length: bool = setting(
        False,
        "Training batches of examples of similar length (the shuffle "
        "regrouped in windows of 50 batches, Hugging Face's "
        "group_by_length): less padding, faster, but other batches "
        "than the plain shuffle's (so other losses). Default: the "
        "original's batches, each cut to its longest sequence, which "
        "computes the same losses.")

    # The flags a command line must give (`mark_flag_as_required`).
    REQUIRED_FLAGS = ()


@dataclasses.dataclass
class FineTuningConfig(RunConfig):
    """What every fine-tuning run is told: `RunConfig` and the fine-tuning
    flags. A task's recipe takes a subclass with the task's own fields.

    `validate` checks the fields once, before anything is read or written;
    its messages name the field as the flag (`--max_seq_length=0 ...`).
    """
    do_predict: bool = setting(
        False, "Whether to run the model in inference mode on the test set.")
    predict_batch_size: int = setting(
        8, "Total batch size for predictions, over all replicas.")
    num_train_epochs: float = setting(
        3.0,
        "Total number of training epochs (passes over the training "
        "examples) to perform.")
    warmup_proportion: float = setting(
        0.1,
        "Proportion of training to perform linear learning rate warmup for. "
        "E.g., 0.1 = 10% of training.")
    causal_attention: bool = setting(
        False,
        "Fine-tune with a causal (left-to-right) attention mask: each "
        "position attends only to itself and the positions before it, as "
        "the BERT paper fine-tuned its left-to-right (LTR) model (section "
        "5.1; run_pretraining.py --pretraining_objective=ltr pretrains one). "
        "Classification and multiple choice then pool the last real token "
        "instead of [CLS], which under a causal mask sees only itself. The "
        "checkpoint's variables are the same either way; predicting from a "
        "model fine-tuned with it needs it again. Default: bidirectional, "
        "as Google's.")

    REQUIRED_FLAGS = ("vocab_file", "bert_config_file", "output_dir")

    # The phases a run without training may ask for (run_squad.py has no
    # --do_eval), for `require_weights_without_training`'s message.
    PREDICTING_PHASES = ("do_eval", "do_predict")

    def validate(self):
        """Checks the shared fields; raises ValueError naming the first bad
        one. A task's config extends it with its own."""
        check_field_types(self)
        checks.require(self, "vocab_file", "bert_config_file",
                             "output_dir")
        checks.check_file("bert_config_file", self.bert_config_file)
        checks.check_file("vocab_file", self.vocab_file)
        checks.check_output_dir_is_no_file(self.output_dir)
        if self.do_eval or self.do_predict:
            checks.check_eval_results_are_a_runs(self.output_dir)
        if self.predict_batch_size <= 0:
            raise ValueError(f"--predict_batch_size="
                             f"{self.predict_batch_size} must be positive")
        checks.length_settings(self)
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
        checks.check_training_settings(self)

    def require_a_phase(self):
        """Google's run_classifier.py check: some phase must run."""
        if not (self.do_train or self.do_eval or self.do_predict):
            raise ValueError(
                "At least one of `do_train`, `do_eval` or `do_predict' must "
                "be True.")


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
    """The `bert_config_file`'s `BertConfig` (the file checked first), and
    the checks of the run's settings against it that every program makes
    before anything is written: `--attention=fused` with `--do_train` needs
    a model without attention-probability dropout.

    Raises:
      ValueError: the file, the config in it, or a setting it rules out.
    """
    checks.require(config, "bert_config_file")
    checks.check_file("bert_config_file", config.bert_config_file)
    from bert_tf.config import BertConfig
    bert_config = BertConfig.from_json_file(config.bert_config_file)
    if config.do_train and (
            config.attention == bert_config_lib.FUSED_ATTENTION):
        bert_config.check_fused_attention_trains()
    return bert_config


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
    checks.require_weights_without_training(
        config, "/".join(f"--{name}" for name in config.PREDICTING_PHASES))
    strategy = runtime.make_strategy(config)
    runtime.set_seed(config)
    on_tpu = distribution.resolve_strategy_name(
        config.distribution_strategy, config.use_tpu) == "tpu"
    if config.do_train:
        # Before the runner writes feature files into --output_dir.
        lock.lock_output_dir(config, strategy)
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

    trainer_config = runtime.make_trainer_config(
        dataclasses.replace(config, eval_batch_size=eval_batch_size),
        num_train_steps=steps.num_train_steps, max_eval_steps=None)
    optimizer_factory = None
    if config.do_train:
        optimizer_factory = runtime.make_optimizer_factory(
            config, num_train_steps=steps.num_train_steps,
            num_warmup_steps=steps.num_warmup_steps)
    return trainer_lib.Trainer(task, trainer_config, run.strategy,
                               optimizer_factory=optimizer_factory)


# What `phase_file_setting`'s help calls each phase's file.
_PHASE_FILE_DESCRIPTIONS = {"train": "Training file",
                            "eval": "Evaluation file",
                            "predict": "File to predict"}


def phase_file_setting(phase, file_names):
    """The field `<phase>_file`: the phase's input file, overriding
    `--data_dir`'s (see `phase_input_file`).

    Args:
      phase: "train", "eval" or "predict".
      file_names: the file's name(s) inside `--data_dir`, as the help
        should say them.
    """
    return setting(None, f"{_PHASE_FILE_DESCRIPTIONS[phase]} (default: "
                         f"<data_dir>/{file_names}).")


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
        checks.check_file(f"{phase}_file", path)
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
