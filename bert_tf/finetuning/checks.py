"""Checks of a run's settings and inputs, each error naming the flag.

A recipe's config names its fields as the program's flags, so every message
names the flag (`--vocab_file: file ... does not exist`) whether the run
came from a command line or from Python.
"""

import os

from bert_tf import file_io
from bert_tf.data import sequence_lengths


def require(config, *names):
    """Raises ValueError naming the first flag that is unset or empty."""
    for name in names:
        if getattr(config, name) in (None, ""):
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


def check_outputs_are_not_inputs(config, output_names, input_flags,
                                 data_dir_files=(), input_files=None):
    """Refuses an `--output_dir` file that is one of the run's inputs.

    Args:
      config: parsed flags with `--output_dir`.
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
    output_dir = config.output_dir
    outputs = [("--output_dir", output_dir)]
    outputs += [("--output_dir file", f"{output_dir.rstrip('/')}/{name}")
                for name in output_names]
    inputs = [(f"--{name}", getattr(config, name))
              for name in input_flags if getattr(config, name)]
    inputs += [(f"--{name}", files)
               for name, files in (input_files or {}).items()]
    data_dir = getattr(config, "data_dir", None)
    if data_dir:
        inputs += [("--data_dir file", os.path.join(data_dir, name))
                   for name in data_dir_files]
    file_io.check_outputs_are_not_inputs(outputs, inputs)


def require_weights_without_training(config, phases):
    """Without --do_train, refuses a run with no weights to use.

    Evaluating or predicting from random weights gives meaningless numbers
    that look like results; Google's Estimator did so silently.

    Args:
      config: parsed flags with `--do_train`, `--output_dir`,
        `--init_checkpoint`.
      phases: what the run would do, e.g. "--do_eval/--do_predict".

    Raises:
      ValueError: no `--do_train`, no `--init_checkpoint`, and no checkpoint
        in `--output_dir`.
    """
    import tensorflow as tf
    if config.do_train or config.init_checkpoint:
        return
    from bert_tf.training import checkpoint_manager
    output_dir = config.output_dir
    if tf.io.gfile.isdir(output_dir) and checkpoint_manager.CheckpointManager(
            output_dir, is_chief=False).latest_checkpoint:
        return
    raise ValueError(
        f"{phases} without --do_train needs trained weights, but "
        f"--output_dir={output_dir} holds no checkpoint (model.ckpt-*) and "
        "--init_checkpoint is not set: the model would be random. Pass "
        "--do_train=True, --init_checkpoint, or the --output_dir of a "
        "training run.")


def length_settings(config):
    """`(pad_to_multiple_of, length_buckets)` of the parsed flags.

    Raises:
      ValueError: naming the flag with a bad value.
    """
    multiple = config.pad_to_multiple_of
    if multiple is None:
        multiple = config.max_seq_length
    if multiple <= 0:
        raise ValueError(f"--pad_to_multiple_of={multiple} must be a "
                         "positive integer")
    buckets = sequence_lengths.parse_length_buckets(
        config.length_buckets, config.max_seq_length)
    return multiple, buckets


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
    import tensorflow as tf
    import math
    if config.do_train and not math.isfinite(config.num_train_epochs):
        raise ValueError(f"--num_train_epochs={config.num_train_epochs} "
                         "must be a finite number")
    # The trainer's own checks (batch sizes, checkpoint settings, dtype),
    # on the config the run will build (`make_trainer`).
    from bert_tf.finetuning import runtime
    trainer_config = runtime.make_trainer_config(
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
        problem = jax_engine.unsupported_settings(trainer_config, True)
        if problem:
            raise ValueError(problem)
