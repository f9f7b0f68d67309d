"""The runners' flags, made from their configs, and how a runner ends.

Each program's flags are the fields of its recipe's config (a dataclass of
`bert_tf.finetuning`, e.g. `ClassificationConfig`): `define_config_flags`
defines one flag per field made with `finetuning.fields.setting` (the
name, the type from the annotation, the default and the help), so each
default is written once; `config_from_flags` builds the config from the
parsed flags. Library code never reads `FLAGS`.

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
import sys
import typing

from absl import app
from absl import flags

from bert_tf import cli
from bert_tf.finetuning import fields

FLAGS = flags.FLAGS

# The absl definition of each annotated type.
_DEFINE = {bool: flags.DEFINE_bool, int: flags.DEFINE_integer,
           float: flags.DEFINE_float, str: flags.DEFINE_string}


def define_config_flags(config_class, flag_values=FLAGS, names=None):
    """Defines a flag per field of `config_class` that is a flag
    (`fields.setting`), with the field's name, type, default and help;
    marks the config's `REQUIRED_FLAGS` as required.

    Args:
      config_class: the program's config dataclass.
      flag_values: where to define them.
      names: only these fields (a program that shares a few of a config's
        flags, e.g. extract_features.py's length flags); None: all.
    """
    hints = typing.get_type_hints(config_class)
    for field in dataclasses.fields(config_class):
        if not fields.is_flag(field) or (names is not None
                                         and field.name not in names):
            continue
        kind = hints[field.name]
        if type(None) in typing.get_args(kind):
            kind = next(arg for arg in typing.get_args(kind)
                        if arg is not type(None))
        choices = field.metadata.get("choices")
        if typing.get_origin(kind) is list:
            flags.DEFINE_list(field.name, field.default,
                              field.metadata["help"], flag_values=flag_values)
        elif choices is not None:
            flags.DEFINE_enum(field.name, field.default, choices,
                              field.metadata["help"], flag_values=flag_values)
        else:
            _DEFINE[kind](field.name, field.default, field.metadata["help"],
                          flag_values=flag_values)
    for name in getattr(config_class, "REQUIRED_FLAGS", ()):
        if names is None or name in names:
            flags.mark_flag_as_required(name, flag_values=flag_values)


def config_from_flags(config_class, flag_values):
    """A recipe's config (a dataclass) from parsed flags: each field from
    the flag of its name; a field with no such flag keeps its default."""
    return config_class(**{
        field.name: flag_values[field.name].value
        for field in dataclasses.fields(config_class)
        if field.name in flag_values})


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
