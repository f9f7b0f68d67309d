"""Google's TF1 name-based checkpoints: find, read, load into a model, write.

A TF1 name-based checkpoint is a prefix (`.../bert_model.ckpt`) with a
`prefix.index` file and one or more `prefix.data-NNNNN-of-MMMMM` files; it maps
names such as `bert/encoder/layer_0/attention/self/query/kernel` to tensors.
Our Keras variables carry exactly those names as their `.path`, so loading is
"for each variable, read the tensor of the same name", and saving writes each
tensor under its name, which Google's own `tf.compat.v1.train.Saver` reads.

Overwrite protection. A checkpoint that is being read is never overwritten:
every prefix opened by `open_checkpoint` (for as long as the returned mapping
is open) or by `load_checkpoint` (for the duration of the call) is registered
in this process, and `save_checkpoint` refuses to write onto a registered
prefix, onto the prefix its `tensors` mapping reads from, and onto an
explicitly given `source` checkpoint (the one the values were loaded from:
overwriting it would destroy, e.g., the pretrained weights a fine-tuning run
started from).
"""

import collections
import contextlib
import dataclasses
import glob
import os
import threading
import uuid

from absl import logging
import tensorflow as tf

from bert_tf import backend
from bert_tf import file_io

# The file `tf.train.latest_checkpoint` reads in a checkpoint directory.
CHECKPOINT_STATE_FILE = "checkpoint"
# The prefix of every released BERT checkpoint; preferred when a directory
# holds several.
DEFAULT_PREFIX_NAME = "bert_model.ckpt"
_INDEX_SUFFIX = ".index"
# Names a user may paste instead of the prefix itself.
_CHECKPOINT_FILE_SUFFIXES = (".index", ".meta", ".data-00000-of-00001")
# Optimizer and bookkeeping tensors that a model never loads.
_OPTIMIZER_SLOT_SUFFIXES = ("/adam_m", "/adam_v", "/Adam", "/Adam_1",
                            "/lamb_m", "/lamb_v", "/Momentum")
_BOOKKEEPING_NAMES = ("global_step", "good_steps", "loss_scale",
                      "current_loss_scale")
# Task heads' tensors: the pretraining heads, Google's classifier, SQuAD's.
_HEAD_PREFIXES = ("cls/", "output_weights", "output_bias")


class CheckpointError(ValueError):
    """A checkpoint that cannot be found, read, loaded or written."""


class DamagedCheckpointError(CheckpointError):
    """A checkpoint whose files cannot be read (truncated, corrupt)."""


class CheckpointNotFoundError(CheckpointError, FileNotFoundError):
    """No checkpoint exists at the given path."""


@dataclasses.dataclass
class LoadReport:
    """What `load_checkpoint` did.

    Attributes:
      checkpoint: the checkpoint prefix that was read.
      loaded: names of the variables that were assigned, in model order.
      unused: checkpoint tensors no variable asked for (optimizer slots,
        `global_step`, heads the model lacks), sorted.
      missing: (strict=False only) variables with no tensor of their name.
      mismatched: (strict=False only) variables whose shape differs from the
        tensor of their name; these keep their values.
    """
    checkpoint: str
    loaded: list = dataclasses.field(default_factory=list)
    unused: list = dataclasses.field(default_factory=list)
    missing: list = dataclasses.field(default_factory=list)
    mismatched: list = dataclasses.field(default_factory=list)


# Checkpoints being read in this process: normalised prefix -> open count.
_PREFIXES_BEING_READ = collections.Counter()
_PREFIXES_LOCK = threading.Lock()


def _normalize_prefix(prefix):
    """A comparable spelling of a prefix (absolute, symlinks resolved)."""
    prefix = os.fspath(prefix)
    if "://" in prefix:  # gs://, hdfs://: compare verbatim.
        return prefix
    return os.path.realpath(os.path.expanduser(prefix))


def _register_reader(prefix):
    with _PREFIXES_LOCK:
        _PREFIXES_BEING_READ[_normalize_prefix(prefix)] += 1


def _unregister_reader(prefix):
    key = _normalize_prefix(prefix)
    with _PREFIXES_LOCK:
        _PREFIXES_BEING_READ[key] -= 1
        if _PREFIXES_BEING_READ[key] <= 0:
            del _PREFIXES_BEING_READ[key]


def _is_being_read(prefix):
    with _PREFIXES_LOCK:
        return _PREFIXES_BEING_READ[_normalize_prefix(prefix)] > 0


def _exists(prefix):
    return tf.io.gfile.exists(prefix + _INDEX_SUFFIX)


def _prefixes_in_directory(directory):
    """Sorted checkpoint prefixes (`*.index` files) directly in `directory`."""
    pattern = os.path.join(directory, "*" + _INDEX_SUFFIX)
    return sorted(path[:-len(_INDEX_SUFFIX)]
                  for path in tf.io.gfile.glob(pattern))


def _prefix_from_state_file(directory):
    """The prefix the directory's `checkpoint` state file points to.

    `tf.train.latest_checkpoint` returns None when the recorded path does not
    exist, which happens when a directory written with absolute paths was
    copied elsewhere; the same file name next to the state file is then used.
    """
    state_file = os.path.join(directory, CHECKPOINT_STATE_FILE)
    try:
        state = tf.train.get_checkpoint_state(directory)
    except (tf.errors.OpError, ValueError) as error:
        raise CheckpointError(
            f"cannot parse the checkpoint state file {state_file}: "
            f"{error}") from error
    if state is None or not state.model_checkpoint_path:
        raise CheckpointError(
            f"the checkpoint state file {state_file} names no checkpoint "
            f"(no model_checkpoint_path)")
    recorded = state.model_checkpoint_path
    for candidate in (recorded,
                      os.path.join(directory, os.path.basename(recorded))):
        if _exists(candidate):
            return candidate
    raise CheckpointNotFoundError(
        f"the checkpoint state file {state_file} points to {recorded}, but "
        f"{recorded}{_INDEX_SUFFIX} does not exist")


def resolve_checkpoint(path):
    """Turns what a user passes as a checkpoint into a checkpoint prefix.

    Args:
      path: one of
        - a directory with a `checkpoint` state file (as written by TF's
          savers and by `save_checkpoint`): its latest checkpoint;
        - a directory without one, as unzipped from Google's releases: its
          only `*.index` prefix, or `bert_model.ckpt` if there are several;
        - a prefix such as `.../bert_model.ckpt` (a checkpoint exists there
          iff `prefix.index` does); `prefix.index`, `prefix.meta` and
          `prefix.data-00000-of-00001` are accepted for the prefix.

    Returns:
      The checkpoint prefix, a string.

    Raises:
      CheckpointNotFoundError: nothing is found; the message names `path`.
      CheckpointError: a directory holds several checkpoints and none is
        `bert_model.ckpt` (the message lists them), or its state file is
        unreadable.
    """
    if path is None or not os.fspath(path):
        raise CheckpointNotFoundError("no checkpoint path given (empty path)")
    path = os.path.expanduser(os.fspath(path))
    if tf.io.gfile.isdir(path):
        if tf.io.gfile.exists(os.path.join(path, CHECKPOINT_STATE_FILE)):
            return _prefix_from_state_file(path)
        candidates = _prefixes_in_directory(path)
        if len(candidates) == 1:
            return candidates[0]
        preferred = os.path.join(path, DEFAULT_PREFIX_NAME)
        if preferred in candidates:
            return preferred
        if not candidates:
            raise CheckpointNotFoundError(
                f"no checkpoint in directory {path}: it has neither a "
                f"'{CHECKPOINT_STATE_FILE}' file nor any *{_INDEX_SUFFIX} file")
        listing = ", ".join(os.path.basename(c) for c in candidates)
        raise CheckpointError(
            f"directory {path} holds {len(candidates)} checkpoints and no "
            f"'{CHECKPOINT_STATE_FILE}' file to say which is current: "
            f"{listing}; pass the prefix of one, e.g. "
            f"{candidates[-1]}")
    if _exists(path):
        return path
    for suffix in _CHECKPOINT_FILE_SUFFIXES:
        if path.endswith(suffix) and _exists(path[:-len(suffix)]):
            return path[:-len(suffix)]
    message = (f"no checkpoint at {path}: it is not a directory and "
               f"{path}{_INDEX_SUFFIX} does not exist")
    parent = os.path.dirname(path) or "."
    if tf.io.gfile.isdir(parent):
        nearby = _prefixes_in_directory(parent)
        if nearby:
            message += ("; checkpoints in " + parent + ": "
                        + ", ".join(os.path.basename(c) for c in nearby))
    raise CheckpointNotFoundError(message)


def _first_line(error):
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0]


def _data_files_text(prefix):
    names = sorted(tf.io.gfile.glob(glob.escape(prefix) + ".data-*"))
    return ", ".join(names) if names else f"{prefix}.data-* (missing)"


def _open_reader(prefix):
    try:
        return tf.train.load_checkpoint(prefix)
    except (tf.errors.OpError, ValueError, IndexError) as error:
        raise DamagedCheckpointError(
            f"cannot read checkpoint {prefix} (damaged or incomplete "
            f"{prefix}{_INDEX_SUFFIX}?): {_first_line(error)}") from error


def checkpoint_shapes(path):
    """Names and shapes of a checkpoint's tensors, without reading the data.

    Args:
      path: anything `resolve_checkpoint` accepts.

    Returns:
      dict: tensor name -> shape tuple.
    """
    reader = _open_reader(resolve_checkpoint(path))
    return {name: tuple(shape)
            for name, shape in reader.get_variable_to_shape_map().items()}


class CheckpointTensors(collections.abc.Mapping):
    """A checkpoint as a read-only mapping name -> np.ndarray, read lazily.

    While open, its prefix is registered as being read, so `save_checkpoint`
    refuses to overwrite it. Use as a context manager, or call `close()`.
    """

    def __init__(self, path):
        """Opens the checkpoint at `path` (what `resolve_checkpoint` takes)."""
        self.prefix = resolve_checkpoint(path)
        self._reader = _open_reader(self.prefix)
        self._shapes = {
            name: tuple(shape) for name, shape
            in self._reader.get_variable_to_shape_map().items()}
        self._dtypes = self._reader.get_variable_to_dtype_map()
        self._closed = False
        _register_reader(self.prefix)

    def shape(self, name):
        """The shape of tensor `name`, without reading it."""
        return self._shapes[name]

    def dtype(self, name):
        """The `tf.DType` of tensor `name`, without reading it."""
        return self._dtypes[name]

    def __getitem__(self, name):
        if self._closed:
            raise CheckpointError(f"checkpoint {self.prefix} is closed")
        if name not in self._shapes:
            raise KeyError(f"{name} (not in checkpoint {self.prefix})")
        try:
            return self._reader.get_tensor(name)
        except (tf.errors.OpError, IndexError, ValueError) as error:
            # A truncated `.data` file ends in "IndexError: Read less bytes
            # than requested", naming neither the file nor the tensor.
            raise DamagedCheckpointError(
                f"checkpoint {self.prefix} is damaged (truncated or "
                f"corrupt): cannot read tensor {name} from "
                f"{_data_files_text(self.prefix)}: "
                f"{_first_line(error)}") from error

    def __contains__(self, name):
        # Mapping's default would read the tensor to answer.
        return name in self._shapes

    def __iter__(self):
        return iter(sorted(self._shapes))

    def __len__(self):
        return len(self._shapes)

    def close(self):
        if not self._closed:
            self._closed = True
            _unregister_reader(self.prefix)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def __del__(self):
        # `_closed` is missing when __init__ failed before registering.
        if not getattr(self, "_closed", True):
            self.close()


def open_checkpoint(path):
    """A lazy `CheckpointTensors` mapping over the checkpoint at `path`."""
    return CheckpointTensors(path)


def read_checkpoint(path):
    """Reads every tensor of a checkpoint.

    Args:
      path: anything `resolve_checkpoint` accepts.

    Returns:
      dict: tensor name -> np.ndarray, names sorted.
    """
    with CheckpointTensors(path) as tensors:
        return {name: tensors[name] for name in tensors}


def variable_name(variable):
    """The checkpoint name of a variable.

    Keras 3 variables are named by `.path` (their layer scopes joined by
    `/`); `tf.Variable`s (tf_keras, TF1 graphs) by `.name` less the `:0`
    output suffix.
    """
    path = getattr(variable, "path", None)
    if isinstance(path, str) and path:
        return path
    name = variable.name
    return name[:-2] if name.endswith(":0") else name


def _collect_variables(variables_or_model):
    """`(checkpoint name, variable)` pairs of a model/layer, of a collection
    of variables (named by `variable_name`), or of a `{name: variable}`
    dict."""
    if isinstance(variables_or_model, dict):
        named = list(variables_or_model.items())
        what = "the given variables"
    elif hasattr(variables_or_model, "weights"):
        what = f"model '{getattr(variables_or_model, 'name', '?')}'"
        if getattr(variables_or_model, "built", True) is False:
            raise CheckpointError(
                f"{what} is not built yet, so its variables do not exist: "
                f"call it once on inputs (e.g. model(input_ids)) or build it "
                f"before loading a checkpoint")
        named = [(variable_name(v), v) for v in variables_or_model.weights]
    else:
        named = [(variable_name(v), v) for v in variables_or_model]
        what = "the given variables"
    if not named:
        raise CheckpointError(
            f"{what} has no variables: build the model (call it once on "
            f"inputs) before loading a checkpoint")
    unique, seen_ids, by_name = [], set(), {}
    for name, variable in named:
        if id(variable) in seen_ids:  # a shared variable listed twice
            continue
        seen_ids.add(id(variable))
        by_name.setdefault(name, []).append(variable)
        unique.append((name, variable))
    clashes = sorted(n for n, vs in by_name.items() if len(vs) > 1)
    if clashes:
        raise CheckpointError(
            "several model variables share a checkpoint name, so a name-based "
            "checkpoint cannot tell them apart: " + ", ".join(clashes))
    return unique


def _shape_text(shape):
    return "[" + ", ".join(str(d) for d in shape) + "]"


@dataclasses.dataclass
class _Misfit:
    """A variable the checkpoint cannot fill: no tensor, or a different
    shape or (non-float) dtype."""
    name: str
    model_shape: tuple
    checkpoint_shape: tuple = None  # None: no tensor of this name
    model_dtype: str = None  # set only for a dtype misfit
    checkpoint_dtype: str = None

    def describe(self):
        if self.checkpoint_shape is None:
            return (f"{self.name}: model {_shape_text(self.model_shape)}, "
                    f"missing from the checkpoint")
        if self.model_dtype is not None:
            return (f"{self.name}: model dtype {self.model_dtype} vs "
                    f"checkpoint dtype {self.checkpoint_dtype}")
        return (f"{self.name}: model {_shape_text(self.model_shape)} vs "
                f"checkpoint {_shape_text(self.checkpoint_shape)}")


def _listed(names, limit=20):
    shown = ", ".join(names[:limit])
    if len(names) > limit:
        shown += f", ... ({len(names) - limit} more)"
    return shown


def _summarize_unused(names):
    """Checkpoint tensors nobody loaded, by kind, in a few words."""
    slots = [n for n in names if n.endswith(_OPTIMIZER_SLOT_SUFFIXES)]
    bookkeeping = [n for n in names if n in _BOOKKEEPING_NAMES]
    rest = [n for n in names if n not in slots and n not in bookkeeping]
    heads = [n for n in rest if n.startswith(_HEAD_PREFIXES)]
    others = [n for n in rest if n not in heads]
    parts = []
    if slots:
        parts.append(f"{len(slots)} optimizer slots (adam_m/adam_v...)")
    parts.extend(bookkeeping)
    if heads:
        parts.append(f"{len(heads)} head tensors: {_listed(heads)}")
    if others:
        parts.append(f"{len(others)} other tensors the model lacks: "
                     f"{_listed(others)}")
    return ", ".join(parts)


def _summary_line(report):
    """The one line that reports a checkpoint load."""
    line = f"Loaded {len(report.loaded)} variables from {report.checkpoint}"
    if report.unused:
        line += f"; not used by the model: {_summarize_unused(report.unused)}"
    if report.missing:
        line += (f"; not in the checkpoint (initialized afresh): "
                 f"{_listed(report.missing)}")
    return line + "."


def _log_summary(report):
    """Logs `_summary_line`; a WARNING when encoder weights went unused.

    Unused encoder weights mean the config describes a smaller model than
    the checkpoint (e.g. fewer layers). Heads, optimizer slots and
    global_step are routinely left out: INFO.
    """
    unused_encoder = [name for name in report.unused
                      if _is_encoder_weight(name)]
    if not unused_encoder:
        logging.info("%s", _summary_line(report))
        return
    logging.warning(
        "%s (including %d encoder weights, e.g. %s: does bert_config.json "
        "describe the checkpoint's model?)", _summary_line(report),
        len(unused_encoder), unused_encoder[0])


# Open `load_summary` blocks (innermost last): prefix -> merged LoadReport.
_LOAD_SUMMARIES = []


@contextlib.contextmanager
def load_summary():
    """Reports the `load_checkpoint` calls inside as one line per checkpoint.

    A task that loads the encoder strictly and then its heads if present
    calls `load_checkpoint` twice; the user sees one line: the variables
    loaded by either call, the tensors neither used, and the variables
    neither found.

    Yields:
      A dict from checkpoint prefix to the merged `LoadReport`.
    """
    merged = {}
    _LOAD_SUMMARIES.append(merged)
    try:
        yield merged
    finally:
        _LOAD_SUMMARIES.remove(merged)
        for report in merged.values():
            _log_summary(report)


def _merge_into_summary(report):
    merged = _LOAD_SUMMARIES[-1]
    previous = merged.get(report.checkpoint)
    if previous is None:
        merged[report.checkpoint] = dataclasses.replace(
            report, loaded=list(report.loaded), unused=list(report.unused),
            missing=list(report.missing), mismatched=list(report.mismatched))
        return
    previous.loaded.extend(report.loaded)
    unused = set(report.unused)
    previous.unused = [n for n in previous.unused if n in unused]
    previous.missing.extend(report.missing)
    previous.mismatched.extend(report.mismatched)


def _vocab_hint(misfits):
    """A hint when the word embeddings do not fit the vocabulary size."""
    for misfit in misfits:
        model_shape, checkpoint_shape = (misfit.model_shape,
                                         misfit.checkpoint_shape)
        if (misfit.name.endswith("embeddings/word_embeddings")
                and checkpoint_shape is not None
                and len(model_shape) == 2 and len(checkpoint_shape) == 2
                and model_shape[0] != checkpoint_shape[0]):
            return (f"vocab_size in bert_config.json ({model_shape[0]}) does "
                    f"not fit the checkpoint, whose vocabulary has "
                    f"{checkpoint_shape[0]} entries: use the bert_config.json "
                    f"that came with the checkpoint")
    return None


def load_checkpoint(variables_or_model, path, *, strict=True, optional=()):
    """Assigns every variable the checkpoint tensor of the same name.

    Works for Keras 3 variables (named by `.path`) and `tf.Variable`s, also
    under a `tf.distribute` strategy and a mixed-precision policy: a tensor
    whose float dtype differs from the variable's (a float32 checkpoint into
    bfloat16 variables) is cast, as is an integer one into an integer
    variable of another width. Checkpoint tensors no variable asks for
    (optimizer slots, `global_step`, heads the model lacks) are reported in
    the one log line of the load (see `load_summary` for several calls), so
    the encoder alone loads from a pretraining checkpoint.

    Args:
      variables_or_model: a built Keras model or layer, an iterable of
        variables, or a dict `{checkpoint name: variable}` (for variables
        whose own name is not their checkpoint name, e.g. the optimizer's
        step counter, `global_step`).
      path: anything `resolve_checkpoint` accepts.
      strict: if True, any variable without a tensor of its name, or whose
        shape or dtype does not fit, is an error and nothing is assigned; if
        False, those variables keep their values and are listed in the
        report (and a warning).
      optional: names of variables that may be absent from the checkpoint
        (a task's head in a pretrained checkpoint): they keep their values
        and are listed in `report.missing`, even when `strict`. A tensor of
        the wrong shape is a misfit all the same.

    Returns:
      A `LoadReport`.

    Raises:
      CheckpointNotFoundError / CheckpointError: no checkpoint at `path`.
      CheckpointError: the model is not built; or (strict) one error listing
        every missing or mis-shaped variable with both shapes, naming the
        checkpoint, with a hint when the vocabulary size does not fit.
    """
    variables = _collect_variables(variables_or_model)
    optional = set(optional)
    prefix = resolve_checkpoint(path)
    with CheckpointTensors(prefix) as tensors:
        misfits, to_assign, absent = [], [], []
        for name, variable in variables:
            model_shape = tuple(variable.shape)
            if name not in tensors:
                if name in optional:
                    absent.append(name)
                else:
                    misfits.append(_Misfit(name, model_shape))
                continue
            checkpoint_shape = tensors.shape(name)
            if checkpoint_shape != model_shape:
                misfits.append(_Misfit(name, model_shape, checkpoint_shape))
                continue
            variable_dtype = tf.as_dtype(variable.dtype)
            checkpoint_dtype = tensors.dtype(name)
            castable = (
                (checkpoint_dtype.is_floating and variable_dtype.is_floating)
                or (checkpoint_dtype.is_integer and variable_dtype.is_integer))
            if checkpoint_dtype != variable_dtype and not castable:
                misfits.append(_Misfit(name, model_shape, checkpoint_shape,
                                       variable_dtype.name,
                                       checkpoint_dtype.name))
                continue
            to_assign.append((name, variable))

        lines = "\n".join("  " + misfit.describe() for misfit in misfits)
        hint = _vocab_hint(misfits)
        if misfits and strict:
            message = (f"checkpoint {prefix} does not fit the model "
                       f"({len(misfits)} of {len(variables)} variables):\n"
                       f"{lines}")
            if hint:
                message += f"\nHint: {hint}"
            raise CheckpointError(message)
        # (Variables merely absent are named in the load's summary line.)
        misfit_lines = "\n".join("  " + misfit.describe()
                                 for misfit in misfits
                                 if misfit.checkpoint_shape is not None)
        if misfit_lines:
            logging.warning(
                "Checkpoint %s: variables that do not fit were not loaded "
                "(kept their values):\n%s%s", prefix, misfit_lines,
                f"\nHint: {hint}" if hint else "")

        report = LoadReport(checkpoint=prefix)
        for name, variable in to_assign:
            value = tensors[name]  # each tensor is read exactly once
            value = tf.cast(value, variable.dtype)
            # A variable of another Keras backend (JAX, PyTorch) takes the
            # tensor as a NumPy array; TensorFlow only reads the file.
            variable.assign(value if isinstance(variable, tf.Variable)
                            or _on_tensorflow_backend() else value.numpy())
            report.loaded.append(name)
        used = {name for name, _ in to_assign} | {m.name for m in misfits}
        report.unused = sorted(n for n in tensors if n not in used)
        report.missing = absent + [m.name for m in misfits
                                   if m.checkpoint_shape is None]
        report.mismatched = [m.name for m in misfits
                             if m.checkpoint_shape is not None]
    if _LOAD_SUMMARIES:
        _merge_into_summary(report)
    else:
        _log_summary(report)
    return report


def _on_tensorflow_backend():
    return backend.name() == backend.TENSORFLOW


def _is_encoder_weight(name):
    """Whether `name` is a weight of Google's encoder (`bert/...`), not an
    optimizer slot."""
    return (name.startswith("bert/")
            and not name.endswith(_OPTIMIZER_SLOT_SUFFIXES))


def _read_value(name, value):
    """Reads a value once: variables (also distributed) become tensors."""
    try:
        return tf.convert_to_tensor(value)
    except (TypeError, ValueError) as error:
        raise CheckpointError(
            f"cannot save tensor {name}: {type(value).__name__} is not an "
            f"array, tensor or variable ({error})") from error


def _quote(text):
    """A protobuf text-format string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_checkpoint_state(directory, latest, all_checkpoints):
    """Atomically writes a directory's `checkpoint` state file.

    The text `CheckpointState` TensorFlow's savers (and Google's Estimator)
    write and `tf.train.latest_checkpoint` reads. Written with
    `file_io.atomic_write`, so a reader never sees half of it.

    Args:
      directory: where the state file goes.
      latest: the newest checkpoint's prefix (relative to `directory`, as
        the savers write it, or absolute).
      all_checkpoints: every prefix to list, oldest first (`latest` last).
    """
    lines = [f"model_checkpoint_path: {_quote(latest)}"]
    lines += [f"all_model_checkpoint_paths: {_quote(p)}"
              for p in all_checkpoints]
    with file_io.atomic_write(
            os.path.join(directory, CHECKPOINT_STATE_FILE)) as writer:
        writer.write("\n".join(lines) + "\n")


def _update_state_file(prefix):
    """Makes `prefix` the latest checkpoint of its directory's state file.

    Paths are written relative to the directory when the checkpoint lies in
    it, so the directory can be moved; earlier entries that still exist are
    kept (as TF's savers do).
    """
    directory = os.path.dirname(prefix) or "."
    name = os.path.basename(prefix)
    previous = []
    if tf.io.gfile.exists(os.path.join(directory, CHECKPOINT_STATE_FILE)):
        try:
            state = tf.train.get_checkpoint_state(directory)
        except (tf.errors.OpError, ValueError):
            state = None  # an unreadable state file is replaced
        if state is not None:
            # get_checkpoint_state has joined relative entries to the
            # directory; entries inside it are written relative again.
            for entry in state.all_model_checkpoint_paths:
                if (_normalize_prefix(os.path.dirname(entry))
                        == _normalize_prefix(directory)):
                    entry_name = os.path.basename(entry)
                else:
                    entry_name = entry
                if entry_name not in (name, prefix) and _exists(entry):
                    previous.append(entry_name)
    write_checkpoint_state(directory, name, previous + [name])


def save_checkpoint(tensors, prefix, *, source=None, overwrite=True,
                    update_state_file=True):
    """Writes a TF1 name-based checkpoint that Google's code can read.

    The result is `prefix.index` + `prefix.data-00000-of-00001`, readable by
    `tf.train.load_checkpoint` and by `tf.compat.v1.train.Saver` in a TF1
    graph. It is first written under a temporary prefix in the same
    directory, then renamed onto `prefix`, data file first and index last:
    since a checkpoint exists iff its index does, a crash never leaves a
    half-written checkpoint under the real name (when overwriting, the old
    index is removed before the new data file is moved in).

    Args:
      tensors: mapping Google name -> np.ndarray, tf.Tensor or variable
        (Keras 3, tf.Variable, distributed); each value is read once.
      prefix: where to write, e.g. `out/bert_model.ckpt`. Its directory is
        created if missing.
      source: optional path of the checkpoint the values came from; writing
        onto it is refused (it would destroy the original).
      overwrite: if False, an existing checkpoint at `prefix` is an error.
      update_state_file: if True, make `prefix` the latest checkpoint in the
        directory's `checkpoint` state file (written atomically).

    Returns:
      `prefix`, a string.

    Raises:
      CheckpointError: `prefix` is being read in this process (by an open
        `CheckpointTensors` or a running `load_checkpoint`), is the prefix
        `tensors` reads from, is `source`, or exists and `overwrite` is False;
        or a value is not an array.
      file_io.WriteError: the disk is full (the checkpoint at `prefix`, if
        any, is kept; nothing of the new one is left).
    """
    prefix = os.path.expanduser(os.fspath(prefix))
    if not os.path.basename(prefix):
        raise CheckpointError(
            f"checkpoint prefix {prefix!r} names a directory; give a file "
            f"prefix such as {os.path.join(prefix, DEFAULT_PREFIX_NAME)}")
    target = _normalize_prefix(prefix)
    reads_target = (isinstance(tensors, CheckpointTensors)
                    and _normalize_prefix(tensors.prefix) == target)
    if source is not None:
        try:
            source_prefix = resolve_checkpoint(source)
        except CheckpointNotFoundError:
            source_prefix = os.fspath(source)
        if _normalize_prefix(source_prefix) == target:
            raise CheckpointError(
                f"refusing to overwrite checkpoint {prefix}: it is the source "
                f"the values were read from; write to another prefix")
    if reads_target or _is_being_read(prefix):
        raise CheckpointError(
            f"refusing to overwrite checkpoint {prefix}: it is being read "
            f"(open in this process); write to another prefix")
    if not overwrite and _exists(prefix):
        raise CheckpointError(
            f"checkpoint {prefix} already exists (pass overwrite=True to "
            f"replace it)")
    if not isinstance(tensors, collections.abc.Mapping):
        raise CheckpointError(
            f"tensors must be a mapping name -> value, got "
            f"{type(tensors).__name__}")
    if not tensors:
        raise CheckpointError(f"no tensors to save to {prefix}")
    names = sorted(tensors)
    bad_names = [n for n in names if not isinstance(n, str) or not n]
    if bad_names:
        raise CheckpointError(
            f"tensor names must be non-empty strings, got {bad_names!r}")
    values = [_read_value(n, tensors[n]) for n in names]

    directory = os.path.dirname(prefix) or "."
    tf.io.gfile.makedirs(directory)
    temporary = os.path.join(
        directory, f".{os.path.basename(prefix)}.tmp-{uuid.uuid4().hex}")
    unpublished = False  # the old checkpoint at `prefix` was removed
    moved = []  # (temporary name, real name) of data files moved so far
    try:
        # A full disk: one line naming the checkpoint (TensorFlow's
        # ResourceExhaustedError names only the temporary file).
        with tf.device("/cpu:0"), file_io.naming_write_errors(
                prefix, "checkpoint"):
            tf.raw_ops.SaveV2(prefix=temporary, tensor_names=names,
                              shape_and_slices=[""] * len(names),
                              tensors=values)
        written_data = sorted(tf.io.gfile.glob(temporary + ".data-*"))
        old_data = tf.io.gfile.glob(prefix + ".data-*")
        if _exists(prefix):
            # Unpublish the old checkpoint first: old index + new data would
            # be a corrupt checkpoint under the real name.
            tf.io.gfile.remove(prefix + _INDEX_SUFFIX)
            unpublished = True
        for data_file in written_data:
            real_name = prefix + data_file[len(temporary):]
            tf.io.gfile.rename(data_file, real_name, overwrite=True)
            moved.append((data_file, real_name))
        # Publishing: from here on, the checkpoint exists.
        tf.io.gfile.rename(temporary + _INDEX_SUFFIX, prefix + _INDEX_SUFFIX,
                           overwrite=True)
    except BaseException as error:
        # Put moved data back beside the temporary index, so the new
        # checkpoint is either whole under the temporary prefix or gone.
        for temporary_name, real_name in moved:
            try:
                tf.io.gfile.rename(real_name, temporary_name, overwrite=True)
            except (tf.errors.OpError, OSError):
                pass
        if not unpublished:
            for leftover in tf.io.gfile.glob(temporary + ".*"):
                tf.io.gfile.remove(leftover)
        elif isinstance(error, Exception):
            raise CheckpointError(
                f"writing checkpoint {prefix} failed after the old one was "
                f"removed; the new checkpoint is left at {temporary}: "
                f"{error}") from error
        raise
    new_data = {real_name for _, real_name in moved}
    for stale in old_data:  # a previous checkpoint's other shards
        if stale not in new_data:
            tf.io.gfile.remove(stale)
    if update_state_file:
        _update_state_file(prefix)
    logging.info("Saved %d tensors to %s.", len(names), prefix)
    return prefix
