"""A live progress line for long loops: count/total, speed, ETA.

Every long loop of the project (training, evaluation, feature extraction,
`create_pretraining_data.py`, checkpoint conversion) reports through one
`Progress`:

- its first line comes as soon as the loop starts (`start`), saying what the
  first seconds are spent on (e.g. "tracing and compiling the training
  step"), so a run is never silent for minutes;
- then a line every `every_seconds` (and at the end): `train: 120/1000 steps
  (12%), 3.1 steps/s, ETA 0:04:43, loss 5.2717`. The speed leaves out the
  first interval (which holds the tracing) once there is a second one, and is
  reported from the first interval on, never as nan; an ETA comes only once
  the speed leaves that interval out (a first evaluation batch that took
  seconds of tracing says nothing about the next hundred);
- on a terminal the line is redrawn in place (as tqdm's), count, speed and
  ETA first, then a bar, then the notes that fit the terminal's width whole
  (`terminal_line`); a log line printed meanwhile clears it first; into a
  file or a pipe, each report is an ordinary log line.

Usage::

    progress = Progress("evaluation", total=100, unit="batch")
    progress.start("tracing the evaluation step")
    for batch in ...:
        ...
        progress.update(progress.count + 1)
    progress.close()
"""

import datetime
import io
import logging as python_logging
import math
import os
import re
import shutil
import sys
import time

from absl import logging

# A bar on a terminal is redrawn at most this often, and a loop that sizes
# its work by `seconds_until_due` comes back to redraw it at least this
# often.
TERMINAL_REFRESH_SECONDS = 0.5
TERMINAL_BAR_SECONDS = 2.0
BAR_WIDTH = 24
# A bar narrower than this (brackets included) is left out.
MIN_BAR_WIDTH = 8
# An item of a terminal line that does not fit is left out, unless it is
# prose (more words than this): then its first words are shown.
MAX_WORDS_OF_AN_ITEM_KEPT_WHOLE = 3


def format_duration(seconds):
    """`H:MM:SS` for a finite number of seconds, `?` otherwise."""
    if seconds is None or not math.isfinite(seconds):
        return "?"
    return str(datetime.timedelta(seconds=int(round(max(seconds, 0.0)))))


def bar(fraction, width=BAR_WIDTH):
    """`[#####.......]`: a text bar `fraction` (0 to 1) full."""
    fraction = min(max(fraction, 0.0), 1.0)
    filled = int(round(fraction * width))
    return f"[{'#' * filled}{'.' * (width - filled)}]"


def terminal_columns(stream):
    """The width of the terminal `stream` shows on, in columns.

    `COLUMNS` when set (as `shutil.get_terminal_size`), else the size of
    `stream`'s own terminal (stderr's may be one while stdout is a pipe),
    else `shutil`'s answer (80 when nothing says).
    """
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError, io.UnsupportedOperation):
        return shutil.get_terminal_size().columns


def _cut_at_a_word(text, width):
    """The words of `text` that fit in `width` columns, then "...", or ""."""
    if len(text) <= width:
        return text
    limit = width - len("...")
    # One character more: a word that ends right at the limit is kept.
    head = text[:max(limit, 0) + 1]
    if " " not in head:
        return ""
    return head[:head.rindex(" ")].rstrip(" ,;:(") + "..."


def terminal_line(lead, fraction, rest, width):
    """A progress report as one terminal line of at most `width` columns.

    `lead` (count/total, speed, ETA) comes first, then a bar `fraction`
    full, then the items of `rest` (loss, metrics, a note) that fit. An
    item is never cut inside a word: one that does not fit is left out
    with those after it, or, when it is prose, ends with "..." after the
    words that fit.

    Args:
      lead: the items said first, e.g. ["train: 120/1000 steps (12%)",
        "3.1 steps/s", "ETA 0:04:43"]; the first is cut at a word when
        even it is too long.
      fraction: how full the bar is (0 to 1); None for no bar.
      rest: the other items, in order.
      width: the columns available.

    Returns:
      The line: lead items joined by ", ", the bar, rest items joined by
      ", ".
    """
    line = _cut_at_a_word(lead[0], width) if lead else ""
    for item in lead[1:]:
        if len(line) + 2 + len(item) > width:
            break
        line += ", " + item
    # The bar gets what the items leave, from MIN_BAR_WIDTH to BAR_WIDTH
    # (+2: its brackets): a loss is worth more than a longer bar.
    with_bar = (fraction is not None
                and width - len(line) - 1 >= MIN_BAR_WIDTH)
    room = width - len(line) - 1 - (MIN_BAR_WIDTH + 1 if with_bar else 0)
    shown = []
    for item in rest:
        item_room = room - sum(len(kept) + 2 for kept in shown)
        if len(item) > item_room:
            if len(item.split()) > MAX_WORDS_OF_AN_ITEM_KEPT_WHOLE:
                item = _cut_at_a_word(item, item_room)
            if not item or len(item) > item_room:
                break
        shown.append(item)
    rest_text = ", ".join(shown)
    if with_bar:
        bar_width = min(BAR_WIDTH + 2, width - len(line) - 1
                        - (len(rest_text) + 1 if rest_text else 0))
        line += " " + bar(fraction, bar_width - 2)
    if rest_text:
        line += (" " if with_bar else ", ") + rest_text
    return line


# How a report logged as text (`Progress`'s own lines, the trainer's "step
# 120/1000: loss = ..., examples/s = 25.3, ETA 0:01:10") says how far it
# is and how fast it goes.
_TRAINING_STEP_LINE = re.compile(r"^(step \d+/\d+): (.*)$")
_SPEED_ITEM = re.compile(r"/s(?: |$)|/s = ")


def split_report(text):
    """A logged progress report as `terminal_line`'s `lead` and `rest`.

    Args:
      text: e.g. "train: 40/40 steps (100%), 3.6 steps/s, ETA 0:00:10,
        loss 5.2" or "step 10/40: loss = 9.1, examples/s = 25.3, ETA
        0:01:10".

    Returns:
      (lead, rest): the count, then the speed and ETA items; the others.
    """
    match = _TRAINING_STEP_LINE.match(text)
    if match:
        count, items = match.group(1), match.group(2).split(", ")
    else:
        count, *items = text.split(", ")
    lead = [count] + [item for item in items if _SPEED_ITEM.search(item)
                      or item.startswith("ETA ")]
    rest = [item for item in items if item not in lead]
    return lead, rest


def _plural(unit, count):
    if count == 1:
        return unit
    return unit + ("es" if unit.endswith(("s", "sh", "ch", "x")) else "s")


class Progress:
    """Reports how far a loop is, at most every `every_seconds`.

    Attributes:
      count: the units done so far (what `update` last received).
    """

    def __init__(self, description, total=None, *, unit="step", initial=0,
                 every_seconds=30.0, first_interval_note="", speed=True,
                 stream=None, clock=time.monotonic):
        """Prepares the reports; nothing is printed before `start`.

        Args:
          description: what the loop does, the start of every line (e.g.
            "train", "evaluation").
          total: the units the loop will reach; None when unknown (no
            percentage, bar or ETA then).
          unit: the singular name of a unit ("step", "batch", "document").
          initial: the count the loop starts from (a resumed run's step).
          every_seconds: seconds between reports; 0 reports only at
            `start` and `close` (and when `update(..., force=True)`).
          first_interval_note: said after the speed while it is measured on
            the first interval only (e.g. "tracing included").
          speed: whether lines give the speed and ETA (not for a few
            unequal stages).
          stream: where a terminal bar is drawn; `sys.stderr` if None. When
            it is not a terminal, reports are absl log lines.
          clock: a monotonic clock (seconds); tests pass a fake one.
        """
        self.description = description
        self.total = total
        self.unit = unit
        self.count = initial
        self.every_seconds = every_seconds
        self._first_interval_note = first_interval_note
        self._speed = speed
        self._stream = stream if stream is not None else sys.stderr
        self._clock = clock
        try:
            self._terminal = bool(self._stream.isatty())
        except (AttributeError, ValueError):
            self._terminal = False
        self._start_time = None
        self._start_count = initial
        # (time, count) of the first update after `start`: the speed is
        # measured from there on once there is more, since the first
        # interval includes tracing and compilation.
        self._first_update = None
        self._last_report_time = None
        self._last_draw_time = None
        self._bar_shown = False
        self._filter = None

    # -- what the caller calls ----------------------------------------------

    def start(self, note=""):
        """Reports the start at once (with `note`: what happens first)."""
        self._start_time = self._clock()
        self._first_update = None
        self._last_report_time = self._start_time
        if self._terminal:
            self._install_log_filter()
        self._report(note, final=False)

    def update(self, count, note="", force=False):
        """Sets the count; reports when a report is due (or `force`).

        Returns:
          True when a line was logged (a terminal bar redraw does not
          count), so that a caller can reset its own timers.
        """
        if self._start_time is None:
            self.start()
        self.count = count
        now = self._clock()
        if self._first_update is None and count > self._start_count:
            self._first_update = (now, count)
        if force or self.due(now):
            self._report(note, final=False)
            return not self._terminal
        if (self._terminal and (self._last_draw_time is None or now
                                - self._last_draw_time
                                >= TERMINAL_REFRESH_SECONDS)):
            self._draw(self._terminal_line(note))
        return False

    def close(self, note=""):
        """Reports the end (a final line, also on a terminal)."""
        if self._start_time is None:
            return
        self._report(note, final=True)
        self._remove_log_filter()
        self._start_time = None

    def due(self, now=None):
        """Whether `every_seconds` have passed since the last report."""
        if self.every_seconds <= 0 or self._last_report_time is None:
            return False
        now = self._clock() if now is None else now
        return now - self._last_report_time >= self.every_seconds

    def seconds_until_due(self):
        """Seconds until the next report (or bar redraw) is due.

        inf when reports are off (`every_seconds` 0).
        """
        if self.every_seconds <= 0 or self._last_report_time is None:
            return math.inf
        due = self._last_report_time + self.every_seconds
        if self._terminal:
            due = min(due, (self._last_draw_time or self._last_report_time)
                      + TERMINAL_BAR_SECONDS)
        return max(0.0, due - self._clock())

    def reported_elsewhere(self):
        """The caller logged a line with the same news: restart the timer."""
        self._last_report_time = self._clock()

    def _measures_first_interval(self):
        return (self._first_update is not None
                and self.count <= self._first_update[1])

    def rate(self):
        """Units per second (first interval on), or None before any."""
        if self._first_update is None or self._start_time is None:
            return None
        now = self._clock()
        base_time, base_count = self._first_update
        if self.count <= base_count or now <= base_time:
            base_time, base_count = self._start_time, self._start_count
        seconds, units = now - base_time, self.count - base_count
        if seconds <= 0 or units <= 0:
            return None
        return units / seconds

    # -- formatting -----------------------------------------------------------

    def _items(self, note):
        """(lead, rest) of a report: count, speed, ETA; the note."""
        if self.total:
            fraction = min(max(self.count / self.total, 0.0), 1.0)
            lead = [f"{self.description}: {self.count}/{self.total} "
                    f"{_plural(self.unit, self.total)} "
                    f"({100 * fraction:.0f}%)"]
        else:
            lead = [f"{self.description}: {self.count} "
                    f"{_plural(self.unit, self.count)}"]
        rate = self.rate()
        if not self._speed:
            pass
        elif rate is not None:
            speed = f"{rate:.3g} {_plural(self.unit, 2)}/s"
            tracing_included = (self._first_interval_note
                                and self._measures_first_interval())
            if tracing_included:
                speed += f" ({self._first_interval_note})"
            lead.append(speed)
            if (self.total and self.count < self.total
                    and not tracing_included):
                lead.append(
                    f"ETA {format_duration((self.total - self.count) / rate)}")
        else:
            elapsed = self._clock() - (self._start_time or self._clock())
            if elapsed >= 1:
                lead.append(f"{format_duration(elapsed)} elapsed")
        return lead, [note] if note else []

    def _line(self, note):
        """The report as a log line."""
        lead, rest = self._items(note)
        return ", ".join(lead + rest)

    def _terminal_line(self, note):
        """The report as the bar: what fits the terminal's width."""
        lead, rest = self._items(note)
        fraction = (min(max(self.count / self.total, 0.0), 1.0)
                    if self.total else None)
        # One column short: a line reaching the last column wraps on some
        # terminals, and "\r" would then redraw below it.
        return terminal_line(lead, fraction, rest,
                             terminal_columns(self._stream) - 1)

    def _report(self, note, final):
        now = self._clock()
        self._last_report_time = now
        if self._terminal:
            self._draw(self._terminal_line(note))
            if final:
                self._stream.write("\n")
                self._stream.flush()
                self._bar_shown = False
        else:
            logging.info("%s", self._line(note))

    # -- the terminal bar -----------------------------------------------------

    def _draw(self, line):
        self._last_draw_time = self._clock()
        self._stream.write("\r\x1b[K" + line)
        self._stream.flush()
        self._bar_shown = True

    def _clear(self):
        if self._bar_shown:
            self._stream.write("\r\x1b[K")
            self._stream.flush()
            self._bar_shown = False

    def _install_log_filter(self):
        """Log lines printed while the bar shows clear it first."""
        progress = self

        class _ClearBar(python_logging.Filter):
            def filter(self, record):
                progress._clear()  # pylint: disable=protected-access
                return True

        self._filter = _ClearBar()
        for handler in self._log_handlers():
            handler.addFilter(self._filter)

    def _remove_log_filter(self):
        if self._filter is None:
            return
        for handler in self._log_handlers():
            handler.removeFilter(self._filter)
        self._filter = None

    @staticmethod
    def _log_handlers():
        handlers = list(python_logging.getLogger().handlers)
        absl_handler = logging.get_absl_handler()
        if absl_handler not in handlers:
            handlers.append(absl_handler)
        return handlers
