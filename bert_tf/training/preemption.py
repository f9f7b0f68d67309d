"""Stopping training cleanly on SIGTERM, as a preemptible machine asks.

A cloud machine that is about to be taken away (a preemptible or spot VM),
`kill <pid>`, a batch scheduler's time limit and `docker stop` all send
SIGTERM and, some seconds later, SIGKILL. On SIGTERM the trainer finishes the
step under way, saves a checkpoint at that step and stops, so that the same
command resumes from there.

Python runs a signal handler only when the main thread executes Python code,
and during training the main thread sits for minutes inside one
`tf.function` call (`iterations_per_loop` steps). So the request travels
differently: the C-level handler writes the signal number to a pipe
(`signal.set_wakeup_fd`), a watcher thread reads it at once and sets a
`tf.Variable` that the training loop reads before every step. The loop then
returns at the next step boundary, however many steps the call had left.

If no step boundary is reached within `grace_seconds` (e.g. the first call is
still compiling), the watcher ends the process with a line saying so: a
checkpoint is then impossible anyway, and the machine would be gone soon.
"""

import os
import signal
import threading

from absl import logging
import tensorflow as tf

# Google Compute Engine gives a preempted VM 30 s; leave time to save.
GRACE_SECONDS = 20.0


class StopRequest:
    """A SIGTERM-set flag that the training loop reads at every step boundary.

    Usage (in the main thread; elsewhere no handler is installed and the
    request is never set)::

        stop = StopRequest()
        with stop:
            ... the loop stops when `stop.variable` becomes True ...
            stop.reached_boundary()   # cancels the grace period
        if stop.requested: save, then report `stop.signal_name`

    Attributes:
      variable: a boolean `tf.Variable`; True once a stop was requested.
      signal_number: the signal received, or None.
    """

    def __init__(self, signals=(signal.SIGTERM,), grace_seconds=GRACE_SECONDS):
        """Creates the variable (outside any distribution strategy scope).

        Args:
          signals: the signals that request a stop.
          grace_seconds: how long to wait for a step boundary before ending
            the process without a checkpoint.
        """
        with tf.init_scope():
            self.variable = tf.Variable(False, trainable=False,
                                        name="stop_requested")
        self.signal_number = None
        self._signals = tuple(signals)
        self._grace_seconds = grace_seconds
        self._previous_handlers = {}
        self._previous_wakeup_fd = None
        self._read_fd = self._write_fd = None
        self._watcher = None
        self._timer = None
        self._boundary_reached = threading.Event()

    @property
    def requested(self):
        return self.signal_number is not None

    @property
    def signal_name(self):
        return (signal.Signals(self.signal_number).name
                if self.signal_number else "")

    def __enter__(self):
        self.signal_number = None
        self.variable.assign(False)
        self._boundary_reached.clear()
        self._timer = None
        if threading.current_thread() is not threading.main_thread():
            return self
        self._read_fd, self._write_fd = os.pipe()
        os.set_blocking(self._write_fd, False)
        try:
            self._previous_wakeup_fd = signal.set_wakeup_fd(
                self._write_fd, warn_on_full_buffer=False)
        except ValueError:  # not the main interpreter
            os.close(self._read_fd)
            os.close(self._write_fd)
            self._read_fd = self._write_fd = None
            return self
        for number in self._signals:
            # The Python-level handler has nothing left to do: the watcher
            # thread acts. It must exist for the wakeup fd to be written.
            self._previous_handlers[number] = signal.signal(
                number, lambda *_: None)
        self._watcher = threading.Thread(target=self._watch, daemon=True,
                                         name="stop-request-watcher")
        self._watcher.start()
        return self

    def __exit__(self, *exc_info):
        self.reached_boundary()
        if self._write_fd is None:
            return False
        for number, handler in self._previous_handlers.items():
            signal.signal(number, handler)
        self._previous_handlers = {}
        signal.set_wakeup_fd(self._previous_wakeup_fd
                             if self._previous_wakeup_fd is not None else -1)
        # Closing the write end ends the watcher's read.
        os.close(self._write_fd)
        self._watcher.join(timeout=5)
        os.close(self._read_fd)
        self._read_fd = self._write_fd = None
        return False

    def reached_boundary(self):
        """The loop stopped at a step boundary: no forced exit any more."""
        self._boundary_reached.set()
        if self._timer is not None:
            self._timer.cancel()

    def _watch(self):
        while True:
            try:
                data = os.read(self._read_fd, 64)
            except OSError:
                return
            if not data:
                return
            for number in data:
                if number in self._signals and not self.requested:
                    self._request(number)

    def _request(self, number):
        self.signal_number = number
        self.variable.assign(True)
        logging.warning(
            "Received %s: stopping at the next step boundary to save a "
            "checkpoint (within %d s).", self.signal_name,
            self._grace_seconds)
        self._timer = threading.Timer(self._grace_seconds,
                                      self._grace_expired)
        self._timer.daemon = True
        self._timer.start()

    def _grace_expired(self):
        if self._boundary_reached.is_set():
            return
        logging.error(
            "Received %s and no step boundary came within %d s (still "
            "tracing or compiling?): exiting without a checkpoint.",
            self.signal_name, self._grace_seconds)
        logging.flush()
        os._exit(128 + self.signal_number)  # pylint: disable=protected-access
