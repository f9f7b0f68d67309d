"""absl flags shared by the runners, and their translation into library objects.

Google's runners (run_pretraining.py, run_classifier.py, run_squad.py) each
define the same TPU and training flags; here each group is defined once and a
runner calls the `define_*` functions it needs, with its own defaults where
Google's differ (e.g. run_squad.py's `max_seq_length=384`). The `*_from_flags`
helpers turn parsed values into the library's plain objects (strategies,
`TrainerConfig`, optimizer factories). They read their values by name, so
they take parsed flags or a recipe's config alike (a config's fields are
the flags' names; `config_from_flags` builds one from parsed flags).

Library code never reads `FLAGS`; only runners pass `flags.FLAGS` to these
helpers.

A runner defines its flags in a `define_flags(flag_values=FLAGS)` function
that it calls only under `if __name__ == "__main__":`, and does its work in
`run(flag_values)`. Importing a runner then defines nothing, so tests can
import several runners into one process and parse each command line into a
fresh `flags.FlagValues()`:

    flag_values = flags.FlagValues()
    run_pretraining.define_flags(flag_values)
    flag_values(["run_pretraining.py", "--input_file=...", ...])
    run_pretraining.run(flag_values)
"""

import dataclasses
import os
import sys

from absl import app
from absl import flags

from bert_tf import cli
from bert_tf import file_io
from bert_tf import sequence_lengths
from bert_tf.training import distribution
from bert_tf.training import precision

FLAGS = flags.FLAGS


# -- definitions -----------------------------------------------------------

def define_model_flags(flag_values=FLAGS):
    """`--bert_config_file`, `--init_checkpoint`, `--output_dir` (Google's)."""
    flags.DEFINE_string(
        "bert_config_file", None,
        "The config json file corresponding to the pre-trained BERT model. "
        "This specifies the model architecture.", flag_values=flag_values)
    flags.DEFINE_string(
        "init_checkpoint", None,
        "Initial checkpoint (usually from a pre-trained BERT model): a "
        "checkpoint prefix (e.g. .../bert_model.ckpt) or a directory. Used "
        "only when --output_dir holds no checkpoint to resume from.",
        flag_values=flag_values)
    flags.DEFINE_string(
        "output_dir", None,
        "The output directory where the model checkpoints, summaries and "
        "results will be written.", flag_values=flag_values)


def define_tokenizer_flags(flag_values=FLAGS, do_lower_case=True):
    """`--vocab_file`, `--do_lower_case` (Google's)."""
    flags.DEFINE_string(
        "vocab_file", None,
        "The vocabulary file that the BERT model was trained on.",
        flag_values=flag_values)
    flags.DEFINE_bool(
        "do_lower_case", do_lower_case,
        "Whether to lower case the input text. Should be True for uncased "
        "models and False for cased models.", flag_values=flag_values)


def define_training_flags(flag_values=FLAGS, *, max_seq_length=128,
                          train_batch_size=32, eval_batch_size=8,
                          learning_rate=5e-5):
    """Google's common training flags, with Google's defaults.

    `--do_train`, `--do_eval`, `--max_seq_length`, `--train_batch_size`,
    `--eval_batch_size`, `--learning_rate`, `--save_checkpoints_steps`,
    `--iterations_per_loop`.
    """
    flags.DEFINE_bool("do_train", False, "Whether to run training.",
                      flag_values=flag_values)
    flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.",
                      flag_values=flag_values)
    flags.DEFINE_integer(
        "max_seq_length", max_seq_length,
        "The maximum total input sequence length after WordPiece "
        "tokenization. Sequences longer than this will be truncated, and "
        "sequences shorter than this will be padded. Must match the data "
        "when reading TFRecords.", flag_values=flag_values)
    flags.DEFINE_integer(
        "train_batch_size", train_batch_size,
        "Total batch size for training: examples per optimizer update, over "
        "all replicas (and accumulation steps).", flag_values=flag_values)
    flags.DEFINE_integer(
        "eval_batch_size", eval_batch_size,
        "Total batch size for eval, over all replicas.",
        flag_values=flag_values)
    flags.DEFINE_float("learning_rate", learning_rate,
                       "The initial learning rate for Adam.",
                       flag_values=flag_values)
    flags.DEFINE_integer(
        "save_checkpoints_steps", 1000,
        "How often to save the model checkpoint.", flag_values=flag_values)
    flags.DEFINE_integer(
        "iterations_per_loop", 1000,
        "How many steps to make in each call to the device (one tf.function "
        "call runs this many steps).", flag_values=flag_values)


def define_tpu_flags(flag_values=FLAGS):
    """Google's TPU flags: `--use_tpu`, `--tpu_name`, `--tpu_zone`,
    `--gcp_project`, `--master`, `--num_tpu_cores`."""
    flags.DEFINE_bool(
        "use_tpu", False,
        "Whether to use TPU. Same as --distribution_strategy=tpu.",
        flag_values=flag_values)
    flags.DEFINE_string(
        "tpu_name", None,
        "The Cloud TPU to use for training. This should be either the name "
        "used when creating the Cloud TPU, or a grpc://ip.address.of.tpu:8470 "
        "url.", flag_values=flag_values)
    flags.DEFINE_string(
        "tpu_zone", None,
        "[Optional] GCE zone where the Cloud TPU is located in. If not "
        "specified, we will attempt to automatically detect the GCE project "
        "from metadata.", flag_values=flag_values)
    flags.DEFINE_string(
        "gcp_project", None,
        "[Optional] Project name for the Cloud TPU-enabled project. If not "
        "specified, we will attempt to automatically detect the GCE project "
        "from metadata.", flag_values=flag_values)
    flags.DEFINE_string(
        "master", None,
        "[Optional] TensorFlow master URL; the TPU address when --tpu_name "
        "is not given.", flag_values=flag_values)
    flags.DEFINE_integer(
        "num_tpu_cores", 8,
        "Only used if `use_tpu` is True. Total number of TPU cores to use.",
        flag_values=flag_values)


def define_runtime_flags(flag_values=FLAGS, *,
                         pad_to_multiple_of=(
                             sequence_lengths.DEFAULT_PAD_TO_MULTIPLE_OF),
                         pad_to_multiple_of_note=""):
    """The new flags; each default keeps the original's behaviour.

    `--distribution_strategy`, `--optimizer`, `--num_accumulation_steps`,
    `--dtype`, `--allow_tf32`, `--enable_xla`, `--keep_checkpoint_max`,
    `--log_steps`, `--log_every_seconds`, `--seed`.
    """
    flags.DEFINE_enum(
        "distribution_strategy", "default", distribution.STRATEGY_NAMES,
        "How to spread training over devices: default (one device, as the "
        "original), one_device, mirrored (all local GPUs, or all logical "
        "CPUs), multi_worker_mirrored (the workers in the TF_CONFIG "
        "environment variable), tpu (--tpu_name; --use_tpu implies it).",
        flag_values=flag_values)
    flags.DEFINE_enum(
        "optimizer", "adamw", ("adamw", "lamb"),
        "adamw: Google's AdamWeightDecay (the original). lamb: layer-wise "
        "adaptive rates for large-batch pretraining.",
        flag_values=flag_values)
    flags.DEFINE_integer(
        "num_accumulation_steps", 1,
        "Split each --train_batch_size batch into this many micro-batches and "
        "sum their gradients before one update (same update, less memory).",
        flag_values=flag_values)
    flags.DEFINE_enum(
        "dtype", "float32", precision.DTYPES,
        "float32 (the original), mixed_float16 (with dynamic loss scaling) or "
        "mixed_bfloat16: compute precision; variables stay float32.",
        flag_values=flag_values)
    flags.DEFINE_bool(
        "allow_tf32", False,
        "Let float32 matmuls run in TF32 on NVIDIA GPUs from Ampere on "
        "(faster, but 10-bit mantissas: outputs then differ from Google's "
        "by more than float32 round-off). Default: float32 means float32.",
        flag_values=flag_values)
    flags.DEFINE_bool(
        "enable_xla", False,
        "Compile with XLA (jit_compile): the whole training step on one "
        "device; the forward and backward pass with several replicas.",
        flag_values=flag_values)
    flags.DEFINE_integer(
        "keep_checkpoint_max", 5,
        "How many checkpoints to keep in --output_dir (0 keeps all); the "
        "original's RunConfig default is 5.", flag_values=flag_values)
    flags.DEFINE_integer(
        "log_steps", 100,
        "Log loss, accuracies, learning rate, examples/s and ETA, and write "
        "TensorBoard summaries, every this many steps.",
        flag_values=flag_values)
    flags.DEFINE_float(
        "log_every_seconds", 30.0,
        "Also report progress (step/total, speed, ETA, running loss) when "
        "this many seconds passed without a log line, whichever of this and "
        "--log_steps comes first; a bar on a terminal. 0: --log_steps only. "
        "More of TensorFlow's own lines: --verbosity=1.",
        flag_values=flag_values)
    flags.DEFINE_integer(
        "seed", None,
        "Random seed for initialization, dropout and input shuffling, and "
        "TensorFlow's deterministic ops: the same command gives the same "
        "numbers every time on the same machine. Unset (the original): a "
        "different run every time.",
        flag_values=flag_values)
    define_length_flags(flag_values, training=True,
                        pad_to_multiple_of=pad_to_multiple_of,
                        pad_to_multiple_of_note=pad_to_multiple_of_note)


def define_length_flags(flag_values=FLAGS, training=False,
                        pad_to_multiple_of=(
                            sequence_lengths.DEFAULT_PAD_TO_MULTIPLE_OF),
                        pad_to_multiple_of_note=""):
    """`--pad_to_multiple_of`, `--length_buckets` (and, for runners that
    train, `--group_by_length`): at which length batches run
    (`bert_tf.sequence_lengths`).

    Args:
      flag_values: where to define them.
      training: also define `--group_by_length`.
      pad_to_multiple_of: the runner's default; None: `--max_seq_length`
        (every batch at the full length).
      pad_to_multiple_of_note: added to the flag's help (why the default).
    """
    flags.DEFINE_integer(
        "pad_to_multiple_of", pad_to_multiple_of,
        "Run each batch at its longest real sequence rounded up to a "
        "multiple of this, not at --max_seq_length: the same outputs, "
        "without computing on padding (prediction also batches examples of "
        "similar length together, outputs in input order). The records on "
        "disk keep --max_seq_length. --pad_to_multiple_of=<max_seq_length> "
        "(or unset, where the default is None) runs every batch at the "
        "full length, as the original does." + pad_to_multiple_of_note,
        flag_values=flag_values)
    flags.DEFINE_string(
        "length_buckets", "",
        "Comma-separated lengths (e.g. 32,64,128) a batch may run at: the "
        "smallest that holds its longest sequence; 'auto': powers of two "
        "from 16, then --max_seq_length. Compilers build one program per "
        "shape, so --enable_xla and TPUs always use buckets (auto unless "
        "given). Empty: any multiple of --pad_to_multiple_of.",
        flag_values=flag_values)
    if training:
        flags.DEFINE_bool(
            "group_by_length", False,
            "Training batches of examples of similar length (the shuffle "
            "regrouped in windows of 50 batches, Hugging Face's "
            "group_by_length): less padding, faster, but other batches "
            "than the plain shuffle's (so other losses). Default: the "
            "original's batches, each cut to its longest sequence, which "
            "computes the same losses.", flag_values=flag_values)


def length_settings_from_flags(flag_values):
    """`(pad_to_multiple_of, length_buckets)` of the parsed flags.

    Raises:
      ValueError: naming the flag with a bad value.
    """
    multiple = flag_values.pad_to_multiple_of
    if multiple is None:
        multiple = flag_values.max_seq_length
    if multiple <= 0:
        raise ValueError(f"--pad_to_multiple_of={multiple} must be a "
                         "positive integer")
    buckets = sequence_lengths.parse_length_buckets(
        flag_values.length_buckets, flag_values.max_seq_length)
    return multiple, buckets


def config_from_flags(config_class, flag_values):
    """A recipe's config (a dataclass) from parsed flags: each field from
    the flag of its name; a field with no such flag keeps its default."""
    return config_class(**{
        field.name: flag_values[field.name].value
        for field in dataclasses.fields(config_class)
        if field.name in flag_values})


# -- validation helpers ----------------------------------------------------

def require(flag_values, *names):
    """Raises ValueError naming the first flag that is unset or empty."""
    for name in names:
        if getattr(flag_values, name) in (None, ""):
            raise ValueError(f"--{name} is required")


def check_file(flag_name, path):
    """Raises ValueError naming the flag when `path` is not an existing file."""
    import tensorflow as tf
    if not tf.io.gfile.exists(path):
        raise ValueError(f"--{flag_name}: file {path} does not exist")
    if tf.io.gfile.isdir(path):
        raise ValueError(f"--{flag_name}: {path} is a directory, not a file")


def expand_file_patterns(flag_name, comma_separated):
    """Google's `--input_file`: comma-separated globs, each must match.

    Returns:
      The matching files, sorted within each pattern, in pattern order.

    Raises:
      ValueError: naming the flag and the pattern that matched nothing.
    """
    if not (comma_separated or "").strip(" ,"):
        raise ValueError(f"--{flag_name} is required")
    try:
        return file_io.expand_input_patterns(comma_separated, sort=True)
    except file_io.InputFileError as error:
        raise ValueError(f"--{flag_name}: {error}") from error


def check_outputs_are_not_inputs(flag_values, output_names, input_flags,
                                 data_dir_files=(), input_files=None):
    """Refuses an `--output_dir` file that is one of the run's inputs.

    Args:
      flag_values: parsed flags with `--output_dir`.
      output_names: the files the runner writes into `--output_dir`
        (besides checkpoints), e.g. ("eval_results.txt",).
      input_flags: names of the flags that name input files or patterns
        (unset ones are skipped).
      data_dir_files: names of the input files the runner reads from
        `--data_dir` (when set), e.g. ("train.txt", "dev.txt").
      input_files: {flag name: its files, already expanded
        (`file_io.InputFiles`)}, for flags whose globs the run expanded.

    Raises:
      file_io.OutputIsInputError: naming both flags and paths.
    """
    output_dir = flag_values.output_dir
    outputs = [("--output_dir", output_dir)]
    outputs += [("--output_dir file", f"{output_dir.rstrip('/')}/{name}")
                for name in output_names]
    inputs = [(f"--{name}", getattr(flag_values, name))
              for name in input_flags if getattr(flag_values, name)]
    inputs += [(f"--{name}", files)
               for name, files in (input_files or {}).items()]
    data_dir = getattr(flag_values, "data_dir", None)
    if data_dir:
        inputs += [("--data_dir file", os.path.join(data_dir, name))
                   for name in data_dir_files]
    file_io.check_outputs_are_not_inputs(outputs, inputs)


def require_weights_without_training(flag_values, phases):
    """Without --do_train, refuses a run with no weights to use.

    Evaluating or predicting from random weights gives meaningless numbers
    that look like results; Google's Estimator did so silently.

    Args:
      flag_values: parsed flags with `--do_train`, `--output_dir`,
        `--init_checkpoint`.
      phases: what the run would do, e.g. "--do_eval/--do_predict".

    Raises:
      ValueError: no `--do_train`, no `--init_checkpoint`, and no checkpoint
        in `--output_dir`.
    """
    import tensorflow as tf
    if flag_values.do_train or flag_values.init_checkpoint:
        return
    from bert_tf.training import checkpoint_manager
    output_dir = flag_values.output_dir
    if tf.io.gfile.isdir(output_dir) and checkpoint_manager.CheckpointManager(
            output_dir, is_chief=False).latest_checkpoint:
        return
    raise ValueError(
        f"{phases} without --do_train needs trained weights, but "
        f"--output_dir={output_dir} holds no checkpoint (model.ckpt-*) and "
        "--init_checkpoint is not set: the model would be random. Pass "
        "--do_train=True, --init_checkpoint, or the --output_dir of a "
        "training run.")


def lock_output_dir(flag_values, strategy):
    """Takes `--output_dir`'s lock for a training run (chief only), before
    the runner writes anything there; removes stale temporary files.

    See `bert_tf.training.run_lock`. The `Trainer` takes the same lock (the
    lock is reentrant within a process); runners take it earlier because
    they write feature files first.

    Raises:
      run_lock.OutputDirLockedError (a ValueError): another run holds it.
    """
    from bert_tf.training import run_lock
    is_chief = distribution.is_chief(strategy)
    run_lock.lock_output_dir(flag_values.output_dir, is_chief)
    if is_chief:
        run_lock.remove_stale_temporary_files(flag_values.output_dir)


# -- translation into library objects --------------------------------------

def strategy_from_flags(flag_values=FLAGS):
    """The `tf.distribute.Strategy` of `--distribution_strategy`/TPU flags.

    Also sets the process's TF32 mode from `--allow_tf32` (off by default):
    every runner asks for its strategy before it builds a model.
    """
    precision.set_tensor_float_32(flag_values.allow_tf32)
    return distribution.get_distribution_strategy(
        flag_values.distribution_strategy,
        use_tpu=flag_values.use_tpu,
        tpu_name=flag_values.tpu_name,
        tpu_zone=flag_values.tpu_zone,
        gcp_project=flag_values.gcp_project,
        master=flag_values.master,
        num_tpu_cores=flag_values.num_tpu_cores)


def set_seed_from_flags(flag_values=FLAGS):
    """With `--seed`: a reproducible run (`make_deterministic`)."""
    if flag_values.seed is not None:
        make_deterministic(flag_values.seed)


def make_deterministic(seed):
    """Makes this process give the same numbers every time for `seed`.

    Seeds Python, NumPy, TensorFlow and Keras, and turns on TensorFlow's op
    determinism: without it, a seeded run still differs from run to run
    (parallel reductions on GPUs and in `tf.data`'s parallel map, whose
    order depends on what else the machine runs). Thread counts need no
    setting: TensorFlow's CPU kernels split their work by the size of the
    thread pool, which depends on the machine, not on its load; so the
    guarantee is "same machine, same numbers", not across machines.
    The cost, measured by benchmarks/determinism.py, is small on CPU;
    GPU kernels without a deterministic version raise an error naming the
    op instead of running nondeterministically.

    Args:
      seed: the `--seed`.
    """
    import keras
    import tensorflow as tf
    keras.utils.set_random_seed(seed)
    tf.config.experimental.enable_op_determinism()


def trainer_config_from_flags(flag_values=FLAGS, *, num_train_steps,
                              max_eval_steps=None):
    """A `TrainerConfig` from the shared flags.

    Args:
      flag_values: parsed flags (defined by `define_model_flags`,
        `define_training_flags`, `define_runtime_flags`).
      num_train_steps: optimizer updates (a runner computes it, e.g. from
        epochs for fine-tuning).
      max_eval_steps: evaluation batches at most; None for all.
    """
    from bert_tf.training.trainer import TrainerConfig
    pad_to_multiple_of, length_buckets = length_settings_from_flags(
        flag_values)
    config = TrainerConfig(
        pad_to_multiple_of=pad_to_multiple_of,
        length_buckets=length_buckets,
        group_by_length=flag_values.group_by_length,
        output_dir=flag_values.output_dir,
        train_batch_size=flag_values.train_batch_size,
        eval_batch_size=flag_values.eval_batch_size,
        num_train_steps=num_train_steps,
        save_checkpoints_steps=flag_values.save_checkpoints_steps,
        iterations_per_loop=flag_values.iterations_per_loop,
        max_eval_steps=max_eval_steps,
        num_accumulation_steps=flag_values.num_accumulation_steps,
        keep_checkpoint_max=flag_values.keep_checkpoint_max,
        log_steps=flag_values.log_steps,
        log_every_seconds=flag_values.log_every_seconds,
        dtype=flag_values.dtype,
        enable_xla=flag_values.enable_xla,
        seed=flag_values.seed)
    config.validate()
    return config


def optimizer_factory_from_flags(flag_values=FLAGS, *, num_train_steps,
                                 num_warmup_steps):
    """A zero-argument callable building `--optimizer` with Google's schedule.

    The trainer calls it inside the strategy's scope.
    """
    if num_warmup_steps < 0:
        raise ValueError(f"--num_warmup_steps={num_warmup_steps} must be >= 0")
    if flag_values.learning_rate <= 0:
        raise ValueError(
            f"--learning_rate={flag_values.learning_rate} must be positive")
    name = flag_values.optimizer
    learning_rate = flag_values.learning_rate

    def create():
        from bert_tf.training import optimization
        return optimization.create_optimizer(
            name, learning_rate, num_train_steps, num_warmup_steps)

    return create


def exit_after_signal(program, interrupted):
    """Ends the program after a signal stopped training (and it saved).

    The exit status is the shell's for that signal (143 for SIGTERM), so a
    scheduler sees that the run did not finish.
    """
    print(f"{program}: stopped: {interrupted}", file=sys.stderr, flush=True)
    sys.exit(128 + interrupted.signal_number)


def run_main(program, run, argv, flag_values):
    """A runner's `main`: `run(flag_values)`, a bad flag or input ending it.

    Errors a user can fix — a bad flag, a missing or malformed input file, a
    checkpoint that does not fit the config (ValueError, FileNotFoundError,
    CheckpointError), a loss that became NaN — end the program with their
    message (`bert_tf.cli.exit_with_error`) instead of a traceback. SIGTERM
    during training ends it after the checkpoint (`exit_after_signal`).

    Args:
      program: the runner's file name, e.g. "run_classifier.py".
      run: the runner's `run(flag_values)`.
      argv: what absl left of the command line after parsing flags.
      flag_values: the parsed `flags.FlagValues`.

    Raises:
      app.UsageError: there are positional arguments.
    """
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
    from bert_tf.training.trainer import NonFiniteLossError
    from bert_tf.training.trainer import TrainingInterrupted
    try:
        # Nothing is returned: absl's app.run would exit with it as status.
        cli.run_or_exit(program, _run_naming_damaged_records, run,
                        flag_values,
                        user_errors=(NonFiniteLossError, DataLossMessage))
    except TrainingInterrupted as interrupted:
        exit_after_signal(program, interrupted)


def _run_naming_damaged_records(run, flag_values):
    """`run(flag_values)`, a `DataLossError` turned into `DataLossMessage`."""
    import tensorflow as tf
    try:
        return run(flag_values)
    except tf.errors.DataLossError as error:
        raise DataLossMessage(error) from error


class DataLossMessage(Exception):
    """A `tf.errors.DataLossError` told as the file and offset at fault.

    TensorFlow's message ("corrupted record at 69955", after a graph
    traceback) names no file; the record files this process's input
    pipelines read are scanned to find the damaged one.
    """

    def __init__(self, error):
        from bert_tf.data import tfrecord_files
        message = tfrecord_files.describe_data_loss()
        if message is None:
            first_line = (error.message or str(error)).strip().splitlines()
            message = ("input data is damaged: "
                       + (first_line[0] if first_line else "DataLossError"))
        super().__init__(message)
