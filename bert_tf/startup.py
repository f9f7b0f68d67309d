"""A quiet start: what every program does before TensorFlow is imported.

Importing TensorFlow prints a dozen lines from its C++ runtime before the
program says anything: `Could not find cuda drivers`, `cpu_feature_guard ...
rebuild TensorFlow`, an ERROR line (`failed call to cuInit`) on every machine
without a GPU, oneDNN notes, XLA and MLIR service lines, `TFRecordDataset
buffer_size is unspecified`, `Local rendezvous is aborting ... OUT_OF_RANGE`
at the end of each evaluation, and `Compiled cluster using XLA!` (the
optimizer update is XLA-compiled even with `--enable_xla=false`). None of them
needs the user's attention; a failure that stops a run reaches Python as an
exception whose message the program prints.

Every entry point (the runners, `create_pretraining_data.py`,
`extract_features.py`, the `bert_tf` tools with a `main`, `demo.py`,
`experiments/`) imports this module first, before anything that imports
TensorFlow:

    from bert_tf import startup
    startup.quiet_start()  # before anything imports TensorFlow

`quiet_start()`

- sets `TF_CPP_MIN_LOG_LEVEL=3` (TensorFlow's C++ logging: FATAL only) and
  the same minimum level for the Abseil C++ logging that XLA uses;
- loads TensorFlow's runtime libraries with the lines their C++ code logs
  as they load dropped (TensorFlow 2.21 logs `Could not find cuda drivers
  on your machine, GPU will not be used.` and the oneDNN note through
  Abseil, before any level can be set);
- turns off absl's Python `WARNING: Logging before flag parsing goes to
  stderr.`

and leaves the levels to the user when they asked for the lines: a
`TF_CPP_MIN_LOG_LEVEL` already set is kept (and applied to Abseil's C++
logging too; `TF_CPP_MIN_LOG_LEVEL=0` shows every line), and a command line
with `--verbosity=1` or more (`-v 1`, `--v=1`: absl's flag, which also shows
our own debug lines) changes nothing. When TensorFlow
is already imported (a test, a notebook), nothing is changed: it would be too
late for the C++ side, and the environment would leak into child processes.
"""

import contextlib
import ctypes
import importlib.util
import logging as python_logging
import os
import re
import sys
import tempfile

# TensorFlow's C++ log levels: 0 all, 1 no INFO, 2 no WARNING, 3 FATAL only.
QUIET_LEVEL = "3"
ENV_VARIABLE = "TF_CPP_MIN_LOG_LEVEL"

# absl's `--verbosity` and its short forms `-v N`, `-v=N`, `--v=N`.
_VERBOSITY_ARGUMENT = re.compile(r"^--?(?:verbosity|v)(?:=(-?\d+))?$")


def _requested_verbosity(argv):
    """The `--verbosity` value on the command line, or None if absent."""
    for index, argument in enumerate(argv[1:], start=1):
        match = _VERBOSITY_ARGUMENT.match(argument)
        if not match:
            continue
        value = match.group(1)
        if value is None and index + 1 < len(argv):
            value = argv[index + 1]
        try:
            return int(value)
        except (TypeError, ValueError):
            return None
    return None


def _quiet_abseil_cpp_logging(level):
    """Sets the Abseil C++ minimum log level inside TensorFlow's runtime.

    XLA logs through Abseil (`Compiled cluster using XLA!`, and absl's
    `WARNING: All log messages before absl::InitializeLog() ...`), which
    `TF_CPP_MIN_LOG_LEVEL` does not reach; from TensorFlow 2.21 on all of
    TensorFlow's C++ lines do. `absl::SetMinLogLevel` is exported by
    `libtensorflow_framework`; it is found by its mangled name, which
    carries Abseil's release, so another TensorFlow build may not have it:
    then the lines stay, and nothing else changes.

    The libraries are loaded with their start-up lines dropped
    (`_start_up_lines_dropped`): TensorFlow 2.21's log while they load,
    before any level can be set.
    """
    spec = importlib.util.find_spec("tensorflow")
    if spec is None or not spec.submodule_search_locations:
        return False
    directory = list(spec.submodule_search_locations)[0]
    library_path = os.path.join(directory, "libtensorflow_framework.so.2")
    if not os.path.exists(library_path):
        return False
    with _start_up_lines_dropped():
        try:
            library = ctypes.CDLL(library_path)
        except OSError:
            return False
        level_set = _set_abseil_min_log_level(library, level)
        for name in _LIBRARIES_WITH_THEIR_OWN_ABSEIL:
            path = os.path.join(directory, name)
            if os.path.exists(path):
                try:
                    # Loaded now, its start-up lines dropped; Python's
                    # import later finds it loaded and runs them no more.
                    ctypes.CDLL(path)
                except OSError:
                    pass
    return level_set


def _set_abseil_min_log_level(library, level):
    """Calls `library`'s `absl::SetMinLogLevel(level)`; False if it has
    none of the known names."""
    for symbol in _abseil_symbols():
        function = getattr(library, symbol, None)
        if function is not None:
            function.argtypes = [ctypes.c_int]
            function.restype = None
            # absl::LogSeverityAtLeast: kInfo 0, kWarning 1, kError 2,
            # kFatal 3 (TensorFlow's numbering).
            function(int(level))
            return True
    return False


# TensorFlow 2.21's libraries that carry a copy of Abseil of their own,
# whose level `SetMinLogLevel` does not reach, and which log as they load
# (`import tensorflow` loads it): the profiler's Python extension.
_LIBRARIES_WITH_THEIR_OWN_ABSEIL = (
    os.path.join("python", "profiler", "internal",
                 "_pywrap_profiler_plugin.so"),)

# The lines TensorFlow's C++ code logs as its libraries load: from 2.21 on
# through Abseil (`I0000 00:00:1796586499.103033   10927 cudart_stub.cc:31]
# Could not find cuda drivers on your machine, GPU will not be used.`),
# which TF_CPP_MIN_LOG_LEVEL does not reach, before any level can be set.
# INFO lines only (and Abseil's note that precedes them): a warning or an
# error while loading still reaches the user.
_START_UP_LINE = re.compile(
    r"^WARNING: All log messages before absl::InitializeLog\(\) is called "
    r"are written to STDERR$|"
    r"^(?:I\d{4} [\d:.]+\s+\d+ |\d{4}-\d\d-\d\d [\d:.]+: I )"
    r"[^\]\s]+\.cc:\d+\] (?:"
    r"Could not find cuda drivers on your machine, GPU will not be used\.|"
    r"oneDNN custom operations are on\.|"
    r"This TensorFlow binary is optimized to use available CPU "
    r"instructions)|"
    r"^To enable the following instructions: .*, in other operations, "
    r"rebuild TensorFlow with the appropriate compiler flags\.$")


def is_start_up_line(line):
    """Whether `line` (without its newline) is one TensorFlow's C++ code
    logs as its libraries load, which `quiet_start` drops."""
    return bool(_START_UP_LINE.search(line))


@contextlib.contextmanager
def _start_up_lines_dropped():
    """Inside the block, what C++ code writes to the standard error (file
    descriptor 2, which Python's `sys.stderr` cannot filter) is held; at
    its end every line but TensorFlow's start-up lines (`is_start_up_line`)
    is written out."""
    if sys.stderr is not None:
        sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:
        # No standard error to hold (a closed descriptor 2): nothing to
        # drop either.
        yield
        return
    held = tempfile.TemporaryFile()
    try:
        os.dup2(held.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        held.seek(0)
        lines = held.read().decode("utf-8", "replace").splitlines()
        held.close()
        kept = [line for line in lines if not is_start_up_line(line)]
        if kept:
            os.write(2, ("\n".join(kept) + "\n").encode())


def _abseil_symbols():
    """Mangled names of `absl::SetMinLogLevel` for recent Abseil releases."""
    name = "14SetMinLogLevelENS0_18LogSeverityAtLeastE"
    releases = ("lts_20250127", "lts_20250512", "lts_20250814",
                "lts_20240722", "lts_20240116", "lts_20230802")
    return [f"_ZN4absl{len(release)}{release}{name}" for release in releases]


def quiet_start(argv=None, environ=None, abseil_cpp=True):
    """Quiets TensorFlow's start-up unless the user asked for its lines.

    Args:
      argv: the command line; `sys.argv` if None.
      environ: the environment to update; `os.environ` if None.
      abseil_cpp: also set the Abseil C++ level (XLA's lines) now, which
        loads TensorFlow's runtime library (about 50 MB and a tenth of a
        second). Programs that import TensorFlow only on rare paths and
        never compile with XLA (create_pretraining_data.py) pass False.

    Returns:
      True when the levels were set, False when nothing was changed.
    """
    argv = sys.argv if argv is None else argv
    environ = os.environ if environ is None else environ
    # absl's Python warning is never useful: flags are parsed right after.
    from absl import logging as absl_logging
    absl_logging._warn_preinit_stderr = False  # pylint: disable=protected-access
    if "tensorflow" in sys.modules:
        return False
    verbosity = _requested_verbosity(argv)
    if verbosity is not None and verbosity >= 1:
        return False
    # The user's level (or a parent program's, e.g. demo.py's) wins and
    # applies to Abseil's C++ logging too.
    level = environ.setdefault(ENV_VARIABLE, QUIET_LEVEL)
    if (abseil_cpp and environ is os.environ
            and level.strip() in ("1", "2", "3")):
        _quiet_abseil_cpp_logging(level.strip())
    return True





def print_for_a_reader(text):
    """Prints `text` to standard output, for a reader that may stop early:
    when it closes the pipe (`python -m bert_tf | head -1`), the rest is
    dropped instead of ending the program with Python's BrokenPipeError
    traceback."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        # What is left in the buffer goes nowhere (not even at exit's
        # flush): the reader is gone.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


class _TensorFlowInfoFilter(python_logging.Filter):
    """Drops the INFO (and DEBUG) records logged from TensorFlow's or Keras'
    own files; warnings, errors and every other file's lines pass."""

    def __init__(self):
        super().__init__()
        self._directories = []
        for package in ("tensorflow", "keras", "tf_keras"):
            spec = importlib.util.find_spec(package)
            if spec is not None and spec.submodule_search_locations:
                self._directories += [os.path.join(directory, "") for directory
                                      in spec.submodule_search_locations]

    def filter(self, record):
        return record.levelno >= python_logging.WARNING or not any(
            record.pathname.startswith(directory)
            for directory in self._directories)


@contextlib.contextmanager
def tensorflow_python_info_hidden():
    """Hides TensorFlow's own Python INFO lines inside the block.

    `tf.saved_model.save` logs, at INFO, through absl and TensorFlow's
    logger, lines that need no one's attention (`Function ... contains input
    name(s) ...`, `Sharding callback duration`, `Assets written to` twice,
    `Writing fingerprint`); programs that save a SavedModel wrap the save in
    this. The program's own INFO lines stay; at `--verbosity=1` or more
    TensorFlow's stay too, as `quiet_start` leaves its C++ lines.
    """
    from absl import logging as absl_logging
    if absl_logging.get_verbosity() >= absl_logging.DEBUG:
        yield
        return
    loggers = [python_logging.getLogger(name)
               for name in ("absl", "tensorflow")]
    info_filter = _TensorFlowInfoFilter()
    for logger in loggers:
        logger.addFilter(info_filter)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(info_filter)
