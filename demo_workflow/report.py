"""`report.html`: a job's training curves and results, to look at.

demo.py and experiments/ end with a summary table to read; this page shows
the same run as pictures: the loss and accuracy curves of each training run
(from the TensorBoard summaries the trainer writes with `tf.summary.scalar`:
the training curves every `--log_steps`, the evaluation results as points)
and bar charts of the final results beside their baselines, then the
summary table itself.

The page is one self-contained HTML file with inline SVG: no script, no
network, no plotting package (the main job's install has none). The event
files are read without TensorFlow: a TFRecord-framed stream of `Event`
protocol buffers, of which the few fields a scalar needs are decoded here
from the protocol-buffer wire format.
"""

import base64
import dataclasses
import datetime
import glob
import html
import math
import os
import struct

from bert_tf import file_io

REPORT_FILE = "report.html"
# TensorBoard scalars that describe the machine, not the model.
_SPEED_TAGS = ("examples_per_second", "global_step/sec")
EVAL_SUBDIRECTORY = "eval"
# What `training_charts(..., metrics_only=True)` keeps besides the loss.
_METRIC_WORDS = ("accuracy", "f1", "exact_match")

# -- TensorBoard event files, without TensorFlow ------------------------------

# Field numbers of the protocol buffers read (tensorflow/core/util/
# event.proto, framework/summary.proto, framework/tensor.proto).
_EVENT_STEP = 2
_EVENT_SUMMARY = 5
_SUMMARY_VALUE = 1
_VALUE_TAG = 1
_VALUE_SIMPLE_VALUE = 2
_VALUE_TENSOR = 8
_TENSOR_DTYPE = 1
_TENSOR_CONTENT = 4
_TENSOR_FLOAT_VAL = 5
_TENSOR_DOUBLE_VAL = 6
_DT_FLOAT = 1
_DT_DOUBLE = 2


class EventFileError(ValueError):
    """An event file that cannot be decoded; the message names it."""


def iter_tfrecords(path, read_payloads=True):
    """The records of a TFRecord file, read by its framing (no TensorFlow,
    no CRC check).

    Args:
      path: a local TFRecord file.
      read_payloads: False to skip the data (yields None per record).

    Yields:
      Each record's bytes (or None).

    Raises:
      ValueError: a truncated record, naming the file.
    """
    with open(path, "rb") as reader:
        while True:
            header = reader.read(12)  # uint64 length, uint32 crc
            if not header:
                return
            if len(header) < 12:
                raise ValueError(f"{path}: truncated record header")
            length = int.from_bytes(header[:8], "little")
            if read_payloads:
                payload = reader.read(length)
                if len(payload) < length:
                    raise ValueError(f"{path}: truncated record")
                reader.seek(4, os.SEEK_CUR)  # uint32 crc of the data
                yield payload
            else:
                reader.seek(length + 4, os.SEEK_CUR)
                yield None


def _varint(buffer, position):
    value = shift = 0
    while True:
        if position >= len(buffer):
            raise ValueError("truncated varint")
        byte = buffer[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, position
        shift += 7


def _fields(buffer):
    """(field number, wire type, value) of each field of a message: an int
    for varints, bytes for the other wire types."""
    position = 0
    while position < len(buffer):
        key, position = _varint(buffer, position)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, position = _varint(buffer, position)
        elif wire_type == 1:
            value, position = buffer[position:position + 8], position + 8
        elif wire_type == 2:
            length, position = _varint(buffer, position)
            value, position = (buffer[position:position + length],
                               position + length)
        elif wire_type == 5:
            value, position = buffer[position:position + 4], position + 4
        else:
            raise ValueError(f"unsupported wire type {wire_type}")
        if position > len(buffer):
            raise ValueError("truncated field")
        yield number, wire_type, value


def _tensor_scalar(buffer):
    """The value of a float32/float64 scalar `TensorProto`, or None."""
    dtype, content, values = _DT_FLOAT, None, []
    for number, wire_type, value in _fields(buffer):
        if number == _TENSOR_DTYPE:
            dtype = value
        elif number == _TENSOR_CONTENT:
            content = value
        elif number == _TENSOR_FLOAT_VAL:
            values.extend(struct.unpack(f"<{len(value) // 4}f", value))
        elif number == _TENSOR_DOUBLE_VAL:
            values.extend(struct.unpack(f"<{len(value) // 8}d", value))
    if content is not None:
        if dtype == _DT_FLOAT and len(content) == 4:
            return struct.unpack("<f", content)[0]
        if dtype == _DT_DOUBLE and len(content) == 8:
            return struct.unpack("<d", content)[0]
        return None
    if dtype in (_DT_FLOAT, _DT_DOUBLE) and len(values) == 1:
        return values[0]
    return None


def read_scalars(directory):
    """The scalar summaries of the event files directly in `directory`.

    Args:
      directory: a training run's output directory (or its `eval/`).

    Returns:
      dict tag -> list of (step, value), sorted by step; for a step logged
      twice (a resumed run) the last value. Empty when there are no event
      files.

    Raises:
      EventFileError: a file that is not an event file, naming it.
    """
    by_tag = {}
    for path in sorted(glob.glob(os.path.join(
            glob.escape(os.fspath(directory)), "events.out.tfevents.*"))):
        try:
            for record in iter_tfrecords(path):
                step, summary = 0, None
                for number, _, value in _fields(record):
                    if number == _EVENT_STEP:
                        step = value
                    elif number == _EVENT_SUMMARY:
                        summary = value
                if summary is None:
                    continue
                for number, _, entry in _fields(summary):
                    if number != _SUMMARY_VALUE:
                        continue
                    tag, scalar = None, None
                    for field, wire_type, value in _fields(entry):
                        if field == _VALUE_TAG:
                            tag = value.decode("utf-8", "replace")
                        elif field == _VALUE_SIMPLE_VALUE and wire_type == 5:
                            scalar = struct.unpack("<f", value)[0]
                        elif field == _VALUE_TENSOR:
                            scalar = _tensor_scalar(value)
                    if tag is not None and scalar is not None:
                        by_tag.setdefault(tag, {})[step] = scalar
        except ValueError as error:
            raise EventFileError(
                f"{path}: not a readable TensorBoard event file "
                f"({error})") from error
    return {tag: sorted(points.items()) for tag, points in by_tag.items()}


# -- SVG charts ---------------------------------------------------------------

@dataclasses.dataclass
class Series:
    """One line (or set of points) of a chart."""
    label: str
    points: list  # [(x, y)]
    color: str
    line: bool = True  # False: markers only (evaluation results)


_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e")
_WIDTH, _HEIGHT = 440, 250
_LEFT, _RIGHT, _TOP, _BOTTOM = 58, 14, 30, 40


def _svg_start(title, height):
    """The opening of a chart: a white background and the title (styled
    in the SVG itself, so that a chart saved on its own looks the same)."""
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" '
            f'height="{height}" viewBox="0 0 {_WIDTH} {height}" role="img" '
            f'aria-label="{html.escape(title)}" font-family="sans-serif" '
            f'font-size="11"><rect width="{_WIDTH}" height="{height}" '
            f'fill="#fff"/><text x="{_WIDTH / 2}" y="18" '
            f'text-anchor="middle" font-size="13" font-weight="600">'
            f'{html.escape(title)}</text>')


def _nice_ticks(low, high, count=5):
    """Round tick values covering [low, high]."""
    if not high > low:
        high = low + (abs(low) or 1.0)
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = min((m * magnitude for m in (1, 2, 2.5, 5, 10)
                if m * magnitude >= raw), default=10 * magnitude)
    first = math.floor(low / step) * step
    ticks = []
    value = first
    while value <= high + step * 1e-9:
        ticks.append(round(value, 12))
        value += step
    if ticks[-1] < high:
        ticks.append(round(value, 12))
    return ticks


def _tick_label(value):
    return f"{value:.3g}"


def line_chart(title, series, x_label, y_label=""):
    """An SVG line chart (a string) of `series` (`Series`), or "" when no
    series has a finite point."""
    finite = [Series(s.label, [(x, y) for x, y in s.points
                               if math.isfinite(x) and math.isfinite(y)],
                     s.color, s.line) for s in series]
    finite = [s for s in finite if s.points]
    if not finite:
        return ""
    xs = [x for s in finite for x, _ in s.points]
    ys = [y for s in finite for _, y in s.points]
    x_ticks = _nice_ticks(min(min(xs), 0), max(xs))
    y_ticks = _nice_ticks(min(ys), max(ys))
    x0, x1, y0, y1 = x_ticks[0], x_ticks[-1], y_ticks[0], y_ticks[-1]
    plot_w = _WIDTH - _LEFT - _RIGHT
    plot_h = _HEIGHT - _TOP - _BOTTOM

    def sx(x):
        return _LEFT + (x - x0) / (x1 - x0) * plot_w

    def sy(y):
        return _TOP + plot_h - (y - y0) / (y1 - y0) * plot_h

    parts = [_svg_start(title, _HEIGHT)]
    for tick in y_ticks:
        y = sy(tick)
        parts.append(f'<line x1="{_LEFT}" x2="{_WIDTH - _RIGHT}" y1="{y:.1f}" '
                     f'y2="{y:.1f}" stroke="#eee"/>'
                     f'<text x="{_LEFT - 6}" y="{y + 4:.1f}" '
                     f'text-anchor="end">{_tick_label(tick)}</text>')
    for tick in x_ticks:
        x = sx(tick)
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{_TOP}" '
                     f'y2="{_TOP + plot_h}" stroke="#eee"/>'
                     f'<text x="{x:.1f}" y="{_TOP + plot_h + 16}" '
                     f'text-anchor="middle">{_tick_label(tick)}</text>')
    parts.append(f'<rect x="{_LEFT}" y="{_TOP}" width="{plot_w}" '
                 f'height="{plot_h}" fill="none" stroke="#999"/>')
    parts.append(f'<text x="{_LEFT + plot_w / 2}" y="{_HEIGHT - 6}" '
                 f'text-anchor="middle">{html.escape(x_label)}</text>')
    if y_label:
        parts.append(f'<text x="12" y="{_TOP + plot_h / 2}" '
                     f'text-anchor="middle" transform="rotate(-90 12 '
                     f'{_TOP + plot_h / 2})">{html.escape(y_label)}</text>')
    for s in finite:
        coordinates = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in s.points)
        if s.line and len(s.points) > 1:
            parts.append(f'<polyline points="{coordinates}" fill="none" '
                         f'stroke="{s.color}" stroke-width="1.8"/>')
        if not s.line or len(s.points) <= 12:
            radius = 4 if not s.line else 2.5
            parts.extend(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" '
                         f'r="{radius}" fill="{s.color}">'
                         f'<title>{html.escape(s.label)}: step {x:g}, '
                         f'{y:.4g}</title></circle>' for x, y in s.points)
    legend_y = _TOP + 12
    for s in finite:
        parts.append(f'<rect x="{_LEFT + 8}" y="{legend_y - 8}" width="10" '
                     f'height="10" fill="{s.color}"/><text '
                     f'x="{_LEFT + 22}" y="{legend_y + 1}">'
                     f'{html.escape(s.label)}</text>')
        legend_y += 14
    parts.append("</svg>")
    return "".join(parts)


def bar_chart(title, bars, maximum=1.0):
    """A horizontal SVG bar chart of (label, value) pairs in [0, maximum]."""
    bars = [(label, value) for label, value in bars
            if value is not None and math.isfinite(value)]
    if not bars:
        return ""
    row, label_width = 26, 190
    height = _TOP + row * len(bars) + 10
    plot_w = _WIDTH - label_width - 60
    parts = [_svg_start(title, height)]
    for index, (label, value) in enumerate(bars):
        y = _TOP + index * row
        width = max(0.0, min(value / maximum, 1.0)) * plot_w
        color = _COLORS[index % len(_COLORS)]
        parts.append(f'<text x="{label_width - 6}" y="{y + 15}" '
                     f'text-anchor="end">{html.escape(label)}</text>'
                     f'<rect x="{label_width}" y="{y + 3}" '
                     f'width="{width:.1f}" height="16" fill="{color}"/>'
                     f'<text x="{label_width + width + 4:.1f}" y="{y + 15}">'
                     f'{value:.3f}</text>')
    parts.append("</svg>")
    return "".join(parts)


# -- the page -----------------------------------------------------------------

def _tag_order(tag):
    """Loss first, then accuracies, then the rest (learning rate last)."""
    if tag == "loss":
        return (0, tag)
    if tag.endswith("loss"):
        return (1, tag)
    if "accuracy" in tag:
        return (2, tag)
    if tag == "learning_rate":
        return (4, tag)
    return (3, tag)


def _eval_tag(tag):
    """The evaluation summary a training curve is compared with: the
    trainer names a training metric `train_x` for Google's `eval_x`."""
    if tag.startswith("train_"):
        return "eval_" + tag[len("train_"):]
    return tag


def training_charts(run_dir, metrics_only=False):
    """SVG charts of one training run: each training curve (with the
    evaluation results of the same quantity as points), then the
    evaluation-only quantities.

    Args:
      run_dir: a runner's --output_dir (events there, evaluation's in
        `eval/`).
      metrics_only: only the loss and the metrics (accuracy, F1, exact
        match), not the learning rate or the heads' separate losses.

    Returns:
      A list of SVG strings (empty when the run wrote no summaries).
    """
    train = read_scalars(run_dir)
    evaluation = read_scalars(os.path.join(run_dir, EVAL_SUBDIRECTORY))
    charts, shown, drawn = [], set(), []
    def wanted(tag):
        if tag in _SPEED_TAGS:
            return False
        return not metrics_only or tag == "loss" or any(
            word in tag for word in _METRIC_WORDS)

    for tag in sorted(train, key=_tag_order):
        if not wanted(tag):
            continue
        if train[tag] in drawn:
            # The classifier logs its loss twice (`loss`, `train_loss`);
            # the chart drawn shows the evaluation's loss too.
            shown.add(_eval_tag(tag))
            continue
        drawn.append(train[tag])
        series = [Series("training", train[tag], _COLORS[0])]
        eval_tag = _eval_tag(tag)
        if eval_tag in evaluation:
            series.append(Series("evaluation", evaluation[eval_tag],
                                 _COLORS[1], line=False))
            shown.add(eval_tag)
        charts.append(line_chart(tag.replace("_", " "), series, "step"))
    for tag in sorted(set(evaluation) - shown, key=_tag_order):
        if not wanted(tag):
            continue
        if any(evaluation[tag] == evaluation[other] for other in shown):
            continue  # the same values under another name, already drawn
        shown.add(tag)
        charts.append(line_chart(
            f"{tag.replace('_', ' ')} (evaluation)",
            [Series("evaluation", evaluation[tag], _COLORS[1], line=False)],
            "step"))
    return [chart for chart in charts if chart]


def png_image(path, alt):
    """An <img> of a PNG file, inlined (the page stays one file), or ""
    when the file does not exist."""
    if not os.path.isfile(path):
        return ""
    with open(path, "rb") as reader:
        data = base64.b64encode(reader.read()).decode("ascii")
    return (f'<img src="data:image/png;base64,{data}" '
            f'alt="{html.escape(alt)}" style="max-width: 100%">')


@dataclasses.dataclass
class Section:
    """A part of the page: a heading, a sentence, and its pictures."""
    title: str
    text: str = ""
    charts: list = dataclasses.field(default_factory=list)


_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.6em; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; }
svg { border: 1px solid #ddd; }
pre { background: #f6f6f6; padding: 1em; overflow-x: auto; }
.note { color: #666; }
"""


def write_report(path, title, sections, summary=""):
    """Writes the page atomically.

    Args:
      path: the HTML file to write (e.g. `<work_dir>/report.html`).
      title: the page's heading.
      sections: `Section`s, in order.
      summary: the summary table's text, shown at the end.

    Returns:
      `path`.
    """
    written = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    body = [f"<h1>{html.escape(title)}</h1>",
            f'<p class="note">Written {written}. Hover over a point for its '
            f'value.</p>']
    for section in sections:
        body.append(f"<h2>{html.escape(section.title)}</h2>")
        if section.text:
            body.append(f"<p>{html.escape(section.text)}</p>")
        if section.charts:
            body.append('<div class="charts">' + "".join(section.charts)
                        + "</div>")
        else:
            body.append('<p class="note">(no summaries: the step did not '
                        'run in this work directory)</p>')
    if summary:
        body.append(f"<h2>Summary</h2><pre>{html.escape(summary)}</pre>")
    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{_STYLE}</style>"
            "</head><body>\n" + "\n".join(body) + "\n</body></html>\n")
    with file_io.atomic_write(path) as writer:
        writer.write(page)
    return path
