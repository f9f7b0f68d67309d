"""bert_tf.progress: when it reports and what a line says (a fake clock)."""

import io

from absl import logging
import pytest

from bert_tf import progress as progress_lib


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture
def log_lines(monkeypatch):
    lines = []
    monkeypatch.setattr(logging, "info",
                        lambda fmt, *args: lines.append(fmt % args))
    return lines


def test_reports_at_start_then_every_interval_then_at_close(log_lines):
    clock = FakeClock()
    progress = progress_lib.Progress("train", total=100, every_seconds=30,
                                     clock=clock)
    progress.start("tracing")
    assert log_lines == ["train: 0/100 steps (0%), tracing"]
    clock.now += 12  # the first step took 12 s (tracing)
    assert not progress.update(1)
    clock.now += 18  # 30 s since the start: due
    assert progress.update(10, note="loss 5.2")
    # From the first interval on only once there is a second one: 9 steps in
    # 18 s after the first update = 0.5 steps/s; 90 left = 3 minutes.
    assert log_lines[-1] == ("train: 10/100 steps (10%), 0.5 steps/s, "
                             "ETA 0:03:00, loss 5.2")
    clock.now += 29
    assert not progress.update(20)
    assert progress.seconds_until_due() == pytest.approx(1.0)
    clock.now += 1
    assert progress.update(25)
    progress.close()
    # The last line has no ETA once everything is done.
    assert log_lines[-1].startswith("train: 25/100 steps (25%), ")
    assert len(log_lines) == 4


def test_the_first_interval_gives_a_speed_at_once(log_lines):
    clock = FakeClock()
    progress = progress_lib.Progress("train", total=10, every_seconds=1,
                                     first_interval_note="tracing included",
                                     clock=clock)
    progress.start()
    clock.now += 4
    assert progress.update(2)
    assert log_lines[-1] == ("train: 2/10 steps (20%), 0.5 steps/s (tracing "
                             "included), ETA 0:00:16")


def test_unknown_total_and_plural_units(log_lines):
    clock = FakeClock()
    progress = progress_lib.Progress("tokenize", unit="line", every_seconds=0,
                                     clock=clock)
    progress.start()
    clock.now += 2
    assert not progress.update(500)  # every_seconds=0: no periodic report
    assert progress.update(1000, force=True)
    progress.close()
    assert log_lines[1] == "tokenize: 1000 lines, 500 lines/s"
    assert progress_lib.format_duration(float("nan")) == "?"
    assert progress_lib.format_duration(3725) == "1:02:05"


def test_terminal_bar_is_redrawn_in_place_and_ends_with_a_newline(log_lines):
    clock = FakeClock()
    stream = Terminal()
    progress = progress_lib.Progress("evaluate", total=4, unit="batch",
                                     every_seconds=30, stream=stream,
                                     clock=clock)
    progress.start()
    # A loop comes back to redraw the bar every 2 s, not every 30.
    assert progress.seconds_until_due() == pytest.approx(
        progress_lib.TERMINAL_BAR_SECONDS)
    clock.now += 1
    progress.update(2)
    progress.close()
    assert log_lines == []  # a bar, not log lines
    text = stream.getvalue()
    assert text.startswith("\r\x1b[Kevaluate: [" + "." * 24 + "] 0/4 batches")
    assert "\r\x1b[Kevaluate: [" + "#" * 12 + "." * 12 + "] 2/4 batches" in text
    assert text.endswith("\n")
