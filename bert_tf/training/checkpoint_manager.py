"""Training checkpoints in Google's layout: `<output_dir>/model.ckpt-<step>`.

Each checkpoint is a TF1 name-based checkpoint holding the model variables,
the optimizer slots and `global_step` under Google's names (written by
`bert_tf.checkpoints.save_checkpoint`, which writes atomically), plus the
`checkpoint` state file TensorFlow's and Google's tools read to find the
latest one. Rotation keeps the newest `max_to_keep`.

Safety rules:
- only a checkpoint's own files (index, data shards, `.meta`) inside the
  directory are ever deleted: a state-file entry that points elsewhere
  (TF1's absolute paths in a copied run directory) stands for the
  checkpoint of the same name inside it, or is ignored;
- a damaged checkpoint is never deleted: `set_aside` renames it
  `damaged-model.ckpt-<step>`, out of rotation and resume;
- the state file is rewritten (atomically) before an old checkpoint is
  deleted, so it never points at missing files;
- a checkpoint that already exists is never rewritten (the run may have been
  restored from it and another process may be reading it);
- only the chief writes; other workers of a multi-worker run skip saving,
  which involves no collective op, so the workers stay in step.
"""

import glob
import os
import re

from absl import logging
import numpy as np
import tensorflow as tf

from bert_tf import checkpoints as checkpoint_io

CHECKPOINT_BASENAME = "model.ckpt"
# The file `tf.train.latest_checkpoint` (and Google's Estimator) reads.
STATE_FILE = "checkpoint"


def _step_of(prefix, basename):
    match = re.fullmatch(re.escape(basename) + r"-(\d+)",
                         os.path.basename(prefix))
    return int(match.group(1)) if match else None


def _same_directory(first, second):
    if "://" in first or "://" in second:
        return first.rstrip("/") == second.rstrip("/")
    return os.path.realpath(first) == os.path.realpath(second)


def _checkpoint_files(prefix):
    """The files of checkpoint `prefix`, index first (the checkpoint exists
    iff it does): the index, the data shards and a TF1 run's graph
    (`.meta`). Other files that merely start with the prefix's name (e.g.
    a user's `model.ckpt-5.notes`) are not the checkpoint's."""
    escaped = glob.escape(prefix)
    files = []
    for pattern in (".index", ".data-?????-of-?????", ".meta"):
        files.extend(sorted(tf.io.gfile.glob(escaped + pattern)))
    return files


def _exists(prefix):
    return tf.io.gfile.exists(prefix + ".index")


def _to_numpy(value):
    """A host copy of a variable or tensor (a replica's, if mirrored)."""
    if hasattr(value, "numpy"):
        return np.asarray(value.numpy())
    return np.asarray(value)


class CheckpointManager:
    """Saves, finds and rotates `model.ckpt-<step>` checkpoints of one run."""

    def __init__(self, directory, max_to_keep=5, is_chief=True,
                 basename=CHECKPOINT_BASENAME):
        """Opens (and, for the chief, creates) the checkpoint directory.

        Args:
          directory: the run's `--output_dir`.
          max_to_keep: newest checkpoints to keep (`--keep_checkpoint_max`);
            None or 0 keeps all.
          is_chief: False on the non-chief workers of a multi-worker run:
            they find and read checkpoints but never write.
          basename: checkpoint file name before `-<step>`.
        """
        if max_to_keep is not None and max_to_keep < 0:
            raise ValueError(
                f"--keep_checkpoint_max={max_to_keep} must be >= 0")
        self.directory = str(directory)
        self.max_to_keep = max_to_keep or None
        self.is_chief = is_chief
        self.basename = basename
        if is_chief:
            tf.io.gfile.makedirs(self.directory)
        self._warned_entries = set()  # state-file entries warned about
        # The checkpoints this directory already lists are rotated with the
        # new ones, as tf.train.CheckpointManager does.
        self._kept = self._existing_checkpoints()

    def _prefix(self, step):
        return os.path.join(self.directory, f"{self.basename}-{int(step)}")

    def _existing_checkpoints(self):
        """Existing `basename-<step>` prefixes, oldest first."""
        prefixes = set()
        state = None
        try:
            state = tf.train.get_checkpoint_state(self.directory)
        except (tf.errors.OpError, ValueError) as error:
            logging.warning(
                "ignoring unreadable checkpoint state file in %s: %s",
                self.directory, error)
        if state is not None:
            for path in list(state.all_model_checkpoint_paths) + [
                    state.model_checkpoint_path]:
                if not path:
                    continue
                path = self._inside_directory(path)
                if (path and _step_of(path, self.basename) is not None
                        and _exists(path)):
                    prefixes.add(path)
        # Checkpoints whose state file was lost still count.
        for index in glob.glob(os.path.join(
                glob.escape(self.directory), self.basename + "-*.index")):
            prefix = index[:-len(".index")]
            if _step_of(prefix, self.basename) is not None:
                prefixes.add(prefix)
        return sorted(prefixes, key=lambda p: _step_of(p, self.basename))

    def _inside_directory(self, path):
        """A state-file entry as a prefix inside this directory, or None.

        TF1's `Saver` writes absolute paths, so the state file of a copied
        run directory names the ORIGINAL directory's checkpoints. Rotating
        those would delete another run's files: an entry outside this
        directory stands for the checkpoint of the same name here, if there
        is one, and is ignored otherwise (with a warning, either way).
        """
        # A relative entry comes joined to the directory already
        # (`tf.train.get_checkpoint_state` joins it): relative to the
        # working directory, as a relative `directory` is.
        if _same_directory(os.path.dirname(path), self.directory):
            return os.path.join(self.directory, os.path.basename(path))
        local = os.path.join(self.directory, os.path.basename(path))
        warn = path not in self._warned_entries
        self._warned_entries.add(path)
        if _exists(local):
            if warn:
                logging.warning(
                    "The checkpoint state file of %s names %s, outside that "
                    "directory (a copied run?); using %s instead.",
                    self.directory, path, local)
            return local
        if warn:
            logging.warning(
                "The checkpoint state file of %s names %s, outside that "
                "directory and with no checkpoint of that name in it; "
                "ignoring that entry (it is never deleted).",
                self.directory, path)
        return None

    def _write_state_file(self, latest):
        """Atomically rewrites the `checkpoint` file (text CheckpointState)."""
        checkpoint_io.write_checkpoint_state(
            self.directory, os.path.basename(latest),
            [os.path.basename(p) for p in self._kept])

    @property
    def latest_checkpoint(self):
        """Prefix of the newest complete checkpoint there, or None."""
        existing = self._existing_checkpoints()
        return existing[-1] if existing else None

    def newest_step(self):
        """The step of `latest_checkpoint`; 0 when there is none."""
        latest = self.latest_checkpoint
        return _step_of(latest, self.basename) if latest else 0

    def existing_checkpoints(self):
        """Prefixes of the directory's `basename-<step>` checkpoints, oldest
        first."""
        return self._existing_checkpoints()

    def set_aside(self, prefix):
        """Renames a damaged checkpoint out of the way; never deletes it.

        `model.ckpt-<step>.*` becomes `damaged-model.ckpt-<step>.*` (a
        number is appended if that exists), which no rotation, resume or
        `tf.train.latest_checkpoint` considers, so the run can write a good
        checkpoint of that step and the damaged files stay for inspection.

        Args:
          prefix: a checkpoint prefix in this directory.

        Returns:
          The new prefix (`prefix` itself on non-chief workers, which do
          not write).
        """
        if not self.is_chief:
            return prefix
        name = os.path.basename(prefix)
        new_prefix = os.path.join(self.directory, "damaged-" + name)
        suffix = 1
        while tf.io.gfile.glob(glob.escape(new_prefix) + ".*"):
            suffix += 1
            new_prefix = os.path.join(self.directory,
                                      f"damaged-{suffix}-{name}")
        for path in _checkpoint_files(prefix):
            tf.io.gfile.rename(path, new_prefix + path[len(prefix):])
        self._kept = [p for p in self._kept if p != prefix]
        return new_prefix

    def save(self, tensors, step):
        """Writes `model.ckpt-<step>` and rotates old checkpoints.

        Args:
          tensors: `{Google name: variable or array}` to save; read on every
            worker (no collective involved), written only by the chief.
          step: the global step, used in the file name.

        Returns:
          The prefix written, the existing prefix when a checkpoint of this
          step already exists (it is left untouched), or None on non-chief
          workers.
        """
        prefix = self._prefix(step)
        if not self.is_chief:
            return None
        if _exists(prefix):
            logging.info("checkpoint %s already exists; not rewriting it",
                         prefix)
            return prefix
        values = {name: _to_numpy(value) for name, value in tensors.items()}
        # The state file is written below, with the rotation.
        checkpoint_io.save_checkpoint(values, prefix, update_state_file=False)
        self._kept = [p for p in self._kept if p != prefix] + [prefix]
        self._kept.sort(key=lambda p: _step_of(p, self.basename))
        removed = []
        if self.max_to_keep is not None:
            while len(self._kept) > self.max_to_keep:
                removed.append(self._kept.pop(0))
        # State first, deletions second: the state file never names a
        # checkpoint that is gone.
        # Relative names, as Google's (Estimator) runs write them, so the
        # directory can be moved or copied.
        self._write_state_file(prefix)
        for old in removed:
            # Only this directory's files: `_kept` holds nothing else, and
            # this check keeps it so.
            if not _same_directory(os.path.dirname(old), self.directory):
                continue
            for path in _checkpoint_files(old):
                tf.io.gfile.remove(path)
        return prefix
