"""One training run per `output_dir`, and no temporary files left behind.

Two runs writing checkpoints into one directory silently lose each other's
work (each rotates the other's checkpoints away, the `checkpoint` state file
ends up naming whichever wrote last). So a training run holds a lock on its
`output_dir` for its lifetime:

* the lock is the file `<output_dir>/.bert_tf.lock`, created atomically
  (`O_CREAT | O_EXCL`), holding the holder's host name, process id and
  process start (the kernel's boot id and the process's start time, where
  /proc has them);
* a second run is refused with a message naming the holder, and how to
  clear the lock if that process is not a bert_tf run;
* a lock left by a process that no longer runs on this host (killed,
  crashed) is taken over, with a warning; so is one whose process id now
  belongs to another process (started at another time: the id was reused
  after a reboot, or in a new container); one held by another host is
  never taken over (this host cannot tell whether that process lives): the
  message says which file to delete once that run is known to be gone;
* the lock is reentrant within a process (a runner and the `Trainer` it
  builds both ask for it) and is released when the process exits;
* in a multi-worker run only the chief, which alone writes, takes it.

Locks are local-file-system locks; remote directories (`gs://...`) are not
locked (logged once).

`remove_stale_temporary_files` deletes, at the start of a run that holds
the lock, the temporary files that this project's own writers leave when a
process is killed mid-write (a checkpoint's are as large as the model),
and nothing else.
"""

import atexit
import contextlib
import errno
import os
import re
import socket
import threading
import time

from absl import logging

from bert_tf import file_io

LOCK_FILE = ".bert_tf.lock"
# Serializes the takeover of a stale lock between two starting runs.
_TAKEOVER_FILE = LOCK_FILE + ".takeover"
# A takeover marker older than this was left by a killed process.
_TAKEOVER_TIMEOUT_SECONDS = 60

# Temporary names of this project's writers into an output_dir (see
# bert_tf.checkpoints.save_checkpoint, CheckpointManager, write_eval_results,
# data.tfrecord_files.TFRecordFileWriter and this module). Group "pid",
# when present, is the writing process: such a file is removed only when
# that process is gone. The others (a checkpoint's temporary prefix) are
# only written by the training run that holds the lock.
TEMPORARY_NAME_PATTERNS = (
    # save_checkpoint: `.model.ckpt-<step>.tmp-<uuid hex>.index/.data-*`,
    # and TensorFlow's own `.tempstate<digits>` files beside them.
    re.compile(r"\.model\.ckpt-\d+\.tmp-[0-9a-f]{32}"
               r"\.(index|data-\d{5}-of-\d{5})(\.tempstate\d+)?"),
    # The state file as earlier versions wrote it: `checkpoint.tmp-<pid>` /
    # `checkpoint.tmp-<uuid hex>`.
    re.compile(r"checkpoint\.tmp-((?P<pid>\d+)|[0-9a-f]{32})"),
    # Eval and test results as earlier versions wrote them.
    re.compile(r"(eval_results\.txt|test_results\.tsv)\.tmp-(?P<pid>\d+)"),
    # TFRecordFileWriter (the runners' `*.tf_record` feature files) and
    # file_io.atomic_write (the state file, eval results, predictions):
    # `.<name>.tmp-<pid>-<8 random characters>`.
    re.compile(r"\.[\w.-]+\.tmp-(?P<pid>\d+)-[0-9a-z_]{8}"),
    # A lock being taken over (`_take_over_stale`).
    re.compile(re.escape(LOCK_FILE) + r"\.tmp-(?P<pid>\d+)"),
)


class OutputDirLockedError(ValueError):
    """Another run holds the lock on this `output_dir`."""


_HELD = {}  # real path of a locked directory -> its lock file path
_HELD_LOCK = threading.Lock()


def _host():
    return socket.gethostname()


def _process_start(pid):
    """What tells process `pid` from a later one given the same id: the
    boot id and its start time in clock ticks since boot (Linux /proc);
    None where the system does not say."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            boot_id = f.read().strip()
        with open(f"/proc/{pid}/stat", encoding="utf-8",
                  errors="replace") as reader:
            stat = reader.read()
        # Fields after the command name (in parentheses, which may hold
        # spaces): state is field 3, the start time field 22.
        start_ticks = stat[stat.rindex(")") + 2:].split()[19]
    except (OSError, ValueError, IndexError):
        return None
    return f"{boot_id}/{start_ticks}"


def _read_holder(path):
    """`(host, pid, process start or None)` from a lock file;
    `(None, None, None)` if unreadable."""
    try:
        with open(path, encoding="utf-8") as reader:
            fields = dict(line.split("=", 1) for line in
                          reader.read().splitlines() if "=" in line)
        return (fields.get("host"), int(fields.get("pid", "")),
                fields.get("process_start") or None)
    except (OSError, ValueError):
        return None, None, None


def _is_ours(holder):
    return holder[:2] == (_host(), os.getpid())


def _holder_is_gone(holder):
    """Whether the process of a lock of this host no longer runs: dead, or
    its id now names a process started at another time."""
    _, pid, start = holder
    if not file_io.process_is_running(pid):
        return True
    current = _process_start(pid)
    return start is not None and current is not None and current != start


def _lock_text():
    start = _process_start(os.getpid())
    return (f"host={_host()}\npid={os.getpid()}\n"
            + (f"process_start={start}\n" if start else "")
            + f"started={time.strftime('%Y-%m-%d %H:%M:%S')}\n")


def _create_exclusively(path, text):
    """Creates `path` holding `text`; False if it exists."""
    try:
        # open()'s mode: the user's umask decides, as for every output.
        descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY,
                             0o666)
    except FileExistsError:
        return False
    with os.fdopen(descriptor, "w", encoding="utf-8") as writer:
        writer.write(text)
    return True


def _release(path):
    with contextlib.suppress(OSError):
        if _is_ours(_read_holder(path)):
            os.remove(path)


def _take_over_stale(path, stale_holder):
    """Replaces the stale lock at `path` by ours; False if another run won.

    The marker file makes the check-and-replace one step among starting
    runs: without it, two runs could both see the same stale lock, and the
    second would replace the first's fresh lock.
    """
    marker = os.path.join(os.path.dirname(path), _TAKEOVER_FILE)
    if not _create_exclusively(marker, _lock_text()):
        with contextlib.suppress(OSError):
            if time.time() - os.path.getmtime(marker) > (
                    _TAKEOVER_TIMEOUT_SECONDS):
                os.remove(marker)  # Left by a run killed mid-takeover.
        return False
    try:
        if _read_holder(path) != stale_holder:
            return False  # Released or taken over meanwhile.
        temporary = f"{path}.tmp-{os.getpid()}"
        with open(temporary, "w", encoding="utf-8") as writer:
            writer.write(_lock_text())
        os.replace(temporary, path)
        return True
    finally:
        with contextlib.suppress(OSError):
            os.remove(marker)


def lock_output_dir(directory, is_chief=True):
    """Takes this process's lock on `directory` (created if missing).

    Args:
      directory: the run's `--output_dir`.
      is_chief: False on the non-chief workers of a multi-worker run, which
        take no lock (the chief's covers the run).

    Returns:
      The lock file's path, or None when no lock was taken (non-chief, or a
      remote directory).

    Raises:
      OutputDirLockedError: another live process holds the lock; the message
        names its host, pid and the lock file.
    """
    directory = os.fspath(directory)
    if not is_chief:
        return None
    if file_io.is_remote(directory):
        logging.info("%s is remote: it is not locked against a second "
                     "run.", directory)
        return None
    os.makedirs(directory, exist_ok=True)
    key = os.path.realpath(directory)
    with _HELD_LOCK:
        if key in _HELD:
            return _HELD[key]
        path = os.path.join(directory, LOCK_FILE)
        for _ in range(10):
            if _create_exclusively(path, _lock_text()):
                break
            holder = _read_holder(path)
            host, pid, _ = holder
            if _is_ours(holder):
                break  # Ours (taken by another module of this process).
            if host is None:
                # Being written right now, or garbage: look again.
                time.sleep(0.1)
                if _read_holder(path)[0] is None:
                    raise OutputDirLockedError(
                        f"--output_dir={directory} is locked by {path}, "
                        f"which cannot be read; if no other run uses this "
                        f"directory, delete {path}")
                continue
            if host == _host() and _holder_is_gone(holder):
                if _take_over_stale(path, holder):
                    if file_io.process_is_running(pid):
                        logging.warning(
                            "Took over the lock %s of process %d on %s: "
                            "that id now names a process started later (the "
                            "run that took the lock is gone).", path, pid,
                            host)
                    else:
                        logging.warning(
                            "Took over the lock %s of process %d on %s, "
                            "which no longer runs (killed or crashed).",
                            path, pid, host)
                    break
                time.sleep(0.1)
                continue
            if host == _host():
                raise OutputDirLockedError(
                    f"--output_dir={directory} is in use by another run "
                    f"(process {pid} on this host, lock file {path}); wait "
                    f"for it to finish or use another --output_dir (if "
                    f"process {pid} is not a bert_tf run, e.g. its id was "
                    f"reused after a restart, delete {path})")
            raise OutputDirLockedError(
                f"--output_dir={directory} is in use by another run (process "
                f"{pid} on host {host}, lock file {path}); wait for it to "
                f"finish or use another --output_dir (delete {path} only if "
                f"that run is gone)")
        else:
            raise OutputDirLockedError(
                f"--output_dir={directory}: could not take the lock {path}")
        _HELD[key] = path
        atexit.register(_release, path)
        return path


def holds_output_dir(directory):
    """Whether this process holds the lock on `directory`."""
    key = os.path.realpath(os.fspath(directory))
    with _HELD_LOCK:
        return key in _HELD


def release_output_dir(directory):
    """Releases this process's lock on `directory`, if it holds one."""
    key = os.path.realpath(os.fspath(directory))
    with _HELD_LOCK:
        path = _HELD.pop(key, None)
    if path:
        _release(path)


def remove_stale_temporary_files(directory):
    """Deletes this project's temporary files left in `directory`.

    Only names matching `TEMPORARY_NAME_PATTERNS` directly in `directory`
    are candidates; one naming its writer's process id is deleted only when
    that process no longer runs. Call it while holding the directory's lock
    (no other training run then writes checkpoints there).

    Args:
      directory: the run's `--output_dir`.

    Returns:
      The removed paths, sorted.
    """
    directory = os.fspath(directory)
    if file_io.is_remote(directory) or not os.path.isdir(directory):
        return []
    removed = []
    for name in sorted(os.listdir(directory)):
        for pattern in TEMPORARY_NAME_PATTERNS:
            match = pattern.fullmatch(name)
            if match:
                break
        else:
            continue
        pid = match.groupdict().get("pid")
        if pid is not None and (int(pid) == os.getpid()
                                or file_io.process_is_running(int(pid))):
            continue
        path = os.path.join(directory, name)
        if not os.path.isfile(path):
            continue
        try:
            os.remove(path)
        except OSError as error:
            if error.errno != errno.ENOENT:
                logging.warning("Could not remove the stale temporary file "
                                "%s: %s", path, error)
            continue
        removed.append(path)
    if removed:
        logging.warning("Removed %d temporary files left by an interrupted "
                        "run in %s: %s", len(removed), directory,
                        ", ".join(os.path.basename(p) for p in removed))
    return removed
