"""Checks of a run's settings and inputs, each error naming the flag.

A recipe's config names its fields as the program's flags, so every message
names the flag (`--vocab_file: file ... does not exist`) whether the run
came from a command line or from Python.
"""

import os

import tensorflow as tf

from bert_tf import file_io
from bert_tf.data import sequence_lengths


def require(config, *names):
    """Raises ValueError naming the first flag that is unset or empty."""
    for name in names:
        if getattr(config, name) in (None, ""):
            raise ValueError(f"--{name} is required")


def check_file(flag_name, path):
    """Raises ValueError naming the flag when `path` is not an existing file."""
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
