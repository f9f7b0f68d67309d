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


def test_the_first_interval_gives_a_speed_at_once_but_no_eta(log_lines):
    """The first interval holds the tracing: its speed is said as such,
    and no ETA is made of it (a first evaluation batch that took 10 s of
    tracing used to promise 0:16:40 for 100 more batches)."""
    clock = FakeClock()
    progress = progress_lib.Progress("evaluate", total=101, unit="batch",
                                     every_seconds=1,
                                     first_interval_note="tracing included",
                                     clock=clock)
    progress.start()
    clock.now += 10
    assert progress.update(1)
    assert log_lines[-1] == ("evaluate: 1/101 batches (1%), 0.1 batches/s "
                             "(tracing included)")
    clock.now += 1  # the second batch: a speed without the tracing
    assert progress.update(2)
    assert log_lines[-1] == ("evaluate: 2/101 batches (2%), 1 batches/s, "
                             "ETA 0:01:39")


def test_without_a_first_interval_note_the_first_interval_gives_an_eta(
        log_lines):
    clock = FakeClock()
    progress = progress_lib.Progress("tokenize", total=10, unit="file",
                                     every_seconds=1, clock=clock)
    progress.start()
    clock.now += 4
    assert progress.update(2)
    assert log_lines[-1] == "tokenize: 2/10 files (20%), 0.5 files/s, ETA 0:00:16"


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


def test_terminal_bar_is_redrawn_in_place_and_ends_with_a_newline(
        log_lines, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
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
    assert text.startswith("\r\x1b[Kevaluate: 0/4 batches (0%) ["
                           + "." * 24 + "]")
    # The bar takes the rest of the 79 columns.
    assert ("\r\x1b[Kevaluate: 2/4 batches (50%), 2 batches/s, ETA 0:00:01 ["
            + "#" * 12 + "." * 11 + "]") in text
    assert text.endswith("\n")


def _drawn_lines(stream):
    return [line.rstrip("\n") for line in stream.getvalue().split("\r\x1b[K")
            if line.strip()]


def _run_a_short_training(columns, monkeypatch):
    """What a terminal `columns` wide shows of a training loop: the first
    and the last lines drawn."""
    monkeypatch.setenv("COLUMNS", str(columns))
    clock = FakeClock()
    stream = Terminal()
    progress = progress_lib.Progress("train classification", total=1000,
                                     every_seconds=30, stream=stream,
                                     first_interval_note="tracing included",
                                     clock=clock)
    progress.start("tracing and compiling the training step (the first "
                   "step includes it)")
    clock.now += 20
    progress.update(1)
    clock.now += 40  # 100 steps in 40 s after the first: 2.5 steps/s
    progress.update(101, note="loss 0.6931")
    lines = [line.rstrip("\n")
             for line in stream.getvalue().split("\r\x1b[K") if line]
    return lines[0], lines[-1], lines


@pytest.mark.parametrize("columns", [50, 80, 100, 200])
def test_terminal_lines_fit_the_width(columns, log_lines, monkeypatch):
    _, last, lines = _run_a_short_training(columns, monkeypatch)
    assert all(len(line) < columns for line in lines), lines
    assert last.startswith("train classification: 101/1000 steps (10%)")


def test_terminal_line_says_count_speed_and_eta_first(log_lines,
                                                      monkeypatch):
    """At 80 columns the line used to be cut at the width before the ETA
    ("train classification: [#...] 101/1000 steps (10%), 2.5 steps/s, ET"),
    and the start note inside a word."""
    first, last, _ = _run_a_short_training(80, monkeypatch)
    assert first == ("train classification: 0/1000 steps (0%) [........] "
                     "tracing and compiling the...")
    assert last == ("train classification: 101/1000 steps (10%), "
                    "2.5 steps/s, ETA 0:06:00 [#.......]")
    _, last, _ = _run_a_short_training(100, monkeypatch)
    # The loss before a wider bar.
    assert last == ("train classification: 101/1000 steps (10%), "
                    "2.5 steps/s, ETA 0:06:00 [##..............] loss 0.6931")
    _, last, _ = _run_a_short_training(200, monkeypatch)
    assert last == ("train classification: 101/1000 steps (10%), "
                    "2.5 steps/s, ETA 0:06:00 [##......................] "
                    "loss 0.6931")


def test_a_logged_report_splits_into_count_speed_eta_and_the_rest():
    assert progress_lib.split_report(
        "step 10/40: loss = 9.1, masked_lm_accuracy = 0.05, "
        "learning_rate = 1e-05, examples/s = 25.3, ETA 0:01:10") == (
            ["step 10/40", "examples/s = 25.3", "ETA 0:01:10"],
            ["loss = 9.1", "masked_lm_accuracy = 0.05",
             "learning_rate = 1e-05"])
    assert progress_lib.split_report(
        "train: 4/40 steps (10%), 0.5 steps/s (tracing included), "
        "loss 5.2") == (
            ["train: 4/40 steps (10%)", "0.5 steps/s (tracing included)"],
            ["loss 5.2"])


def test_terminal_line_leaves_out_an_item_that_does_not_fit_whole():
    lead = ["step 10/40", "examples/s = 25.3", "ETA 0:01:10"]
    rest = ["loss = 9.1", "next_sentence_accuracy = 0.5"]
    # 42 columns of lead, a bar of at least 8, then whole items only.
    assert progress_lib.terminal_line(lead, 0.25, rest, 70) == (
        "step 10/40, examples/s = 25.3, ETA 0:01:10 [####..........] "
        "loss = 9.1")
    assert progress_lib.terminal_line(lead, None, rest, 70) == (
        "step 10/40, examples/s = 25.3, ETA 0:01:10, loss = 9.1")
    # Narrower than the lead: its items that fit, no bar.
    assert progress_lib.terminal_line(lead, 0.25, rest, 35) == (
        "step 10/40, examples/s = 25.3")
