"""What every bert_tf command line shares: absl flags and one error path.

Every program (Google's root scripts and the `python -m` modules;
`python -m bert_tf` lists them) defines absl flags in a
`define_flags(flag_values)` function and ends a run that failed on bad input
with `exit_with_error`: `<program>: error: <message>` on stderr, status 1,
no traceback (the traceback is logged at `--v=1`, for bug reports).

This module imports no TensorFlow, so a program that needs none starts fast.
"""

import sys

from absl import app
from absl import flags
from absl import logging


def exit_with_error(program, error):
    """Ends the program with `<program>: error: <message>` and status 1.

    The traceback is logged at verbosity 1 (`--v=1`), for bug reports.
    """
    logging.vlog(1, "error details", exc_info=error)
    sys.exit(f"{program}: error: {error}")


def log_info_and_above():
    """Shows absl's INFO lines (as Google's scripts do), or more when the
    command line asks for more (`--verbosity=1`: the per-example lines)."""
    logging.set_verbosity(max(logging.get_verbosity(), logging.INFO))


# Packages whose modules define absl flags of their own on import
# (TensorFlow's TPU tensor tracer: `--delta_threshold`): not the program's.
_OTHER_PACKAGES_WITH_FLAGS = ("absl", "tensorflow", "tf_keras", "keras",
                              "official")


def list_every_flag_in_help(flag_values=flags.FLAGS):
    """Makes `--help` of an `app.run` program list every flag it takes.

    absl's `--help` lists only the main module's "key flags": the flags the
    program file defines itself. A runner defines most of its flags through
    shared modules (`bert_tf.runners.flags`: `--vocab_file`,
    `--init_checkpoint`, `--output_dir`, `--do_train`, ...), which `--help`
    then left out. Every flag defined outside absl's and TensorFlow's own
    modules (`--verbosity` and the like stay under `--helpfull`) becomes a key
    flag of the main module. Call it after the flags are defined.

    Args:
      flag_values: the program's flags (absl's global FLAGS).
    """
    main_module = sys.argv[0]
    for module, module_flags in flag_values.flags_by_module_dict().items():
        if module.split(".")[0] in _OTHER_PACKAGES_WITH_FLAGS:
            continue
        for flag in module_flags:
            flag_values.register_key_flag_for_module(main_module, flag)


def _exiting_with_zero(help_flag_class):
    """`help_flag_class` (one of absl's help flags), exiting with status 0.

    absl's help flags print the help, then exit with status 1, which a
    shell script or a CI step reads as a failure.
    """

    class HelpFlag(help_flag_class):

        def parse(self, argument):
            try:
                super().parse(argument)
            except SystemExit:  # only ever after the help was printed
                sys.exit(0)

    return HelpFlag


def run_app(main):
    """Runs an absl program: `app.run(main)`, its help complete and final.

    `--help` lists every flag the program takes (`list_every_flag_in_help`)
    and, like `--helpshort`, `--helpfull` and `--helpxml`, exits with
    status 0 after printing it. Call it under `if __name__ == "__main__":`,
    after the flags are defined.

    Args:
      main: the program's `main(argv)`.
    """
    list_every_flag_in_help()
    app.define_help_flags()  # idempotent: app.run will not define them again
    for help_flag_class in (app.HelpFlag, app.HelpshortFlag,
                            app.HelpfullFlag, app.HelpXMLFlag):
        absl_flag = flags.FLAGS[help_flag_class().name]
        for name in {absl_flag.name, absl_flag.short_name} - {None}:
            delattr(flags.FLAGS, name)
        flags.DEFINE_flag(_exiting_with_zero(help_flag_class)(),
                          module_name=app.__name__)
    app.run(main)


# Each asks for the program's help (absl's own help flags belong to
# `app.run`'s global flags, not to a program's fresh `FlagValues`).
HELP_ARGUMENTS = ("-h", "-help", "--help", "--helpshort", "--helpfull")


def parse_flags(program, define_flags, argv=None, positional=False,
                known_only=False):
    """Parses a command line into fresh absl flags.

    For the `main(argv)` of programs run as `python -m ...` (and called by
    tests with their own arguments): each call gets its own `FlagValues`,
    so several command lines can run in one process. `--help` prints the
    program's docstring and flags and exits with status 0.

    Args:
      program: the name in messages, e.g. "python -m bert_tf.learn_vocab".
      define_flags: `define_flags(flag_values)` of the program.
      argv: the arguments without the program name (default:
        `sys.argv[1:]`).
      positional: accept positional arguments (e.g. a sub-command).
      known_only: leave unknown flags for another parser (e.g. Apache
        Beam's pipeline options) instead of refusing them.

    Returns:
      The parsed `flags.FlagValues`; with `positional` or `known_only`, a
      pair of it and the list of the other arguments, in order.

    Raises:
      SystemExit: a flag is unknown, malformed or missing (status 1, the
        message on stderr), or positional arguments were given; or help was
        asked for (status 0).
    """
    flag_values = flags.FlagValues()
    define_flags(flag_values)
    argv = sys.argv[1:] if argv is None else list(argv)
    if any(argument in HELP_ARGUMENTS for argument in argv):
        description = sys.modules[define_flags.__module__].__doc__ or ""
        # absl groups flags under the file that defined them; a user needs
        # the flags only.
        flag_lines = [line for line in flag_values.get_help().splitlines()
                      if line.startswith(" ")]
        from bert_tf import startup
        startup.print_for_a_reader(
            f"{description.strip()}\n\nUsage: {program} [flags]\n\n"
            + "\n".join(flag_lines))
        sys.exit(0)
    try:
        rest = flag_values([program] + argv, known_only=known_only)
    except flags.Error as error:
        exit_with_error(program, error)
    if positional or known_only:
        return flag_values, rest[1:]
    if len(rest) > 1:
        exit_with_error(program,
                        f"unexpected arguments: {' '.join(rest[1:])}")
    return flag_values


# Errors a user can fix: a bad flag value, a missing or malformed input file
# (the project's own errors -- CheckpointError, BertConfigError,
# DataFormatError, ... -- derive from these).
USER_ERRORS = (ValueError, OSError)


def run_or_exit(program, run, *args, user_errors=()):
    """`run(*args)`; an error a user can fix ends the program with its
    message (`exit_with_error`) instead of a traceback.

    Args:
      program: the name in messages.
      run: the program's work.
      *args: passed to `run`.
      user_errors: error classes to report as such besides `USER_ERRORS`
        (e.g. the trainer's `NonFiniteLossError`); anything else is a bug and
        keeps its traceback.

    Returns:
      What `run` returns.
    """
    try:
        return run(*args)
    except USER_ERRORS + tuple(user_errors) as error:
        exit_with_error(program, error)
