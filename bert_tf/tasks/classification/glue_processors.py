"""GLUE/XNLI data processors: Google's file and column layouts, validated.

A processor turns the files of one task into `InputExample`s:

* `cola`, `mnli`, `mrpc`, `xnli` read exactly the files and columns that
  Google's `run_classifier.py` reads (same guids, same labels, same
  "contradictory" -> "contradiction" fix for XNLI, same language filter on
  the XNLI dev set).
* `mnli-mm`, `sst-2`, `qqp`, `qnli`, `rte`, `wnli`, `sts-b` read the official
  GLUE release (`gluebenchmark.com`); `sts-b` is a regression task whose
  labels are floats.
* `generic` reads a user's own TSV or CSV with a header, by column name; its
  label list is inferred from the training file (sorted).

Unlike Google's code, every row is checked: a wrong column count, an unknown
label or a score that is not a number raises `DataFormatError` naming the
file and the line, and a missing split file raises `FileNotFoundError`
naming the file. Test sets carry no labels: their examples have
`label=None` (Google put the first label there as a dummy; feature
conversion gives `None` the same label id, 0).
"""

import csv
import dataclasses
import os
from typing import Optional, Union

from bert_tf import file_io


class DataFormatError(ValueError):
    """A data file whose content does not have its task's layout."""


@dataclasses.dataclass(frozen=True)
class InputExample:
    """One example for sequence (pair) classification or regression.

    Attributes:
      guid: unique id, "<split>-<row>" as Google builds it.
      text_a: untokenized text of the first sequence.
      text_b: untokenized text of the second sequence, or None for
        single-sentence tasks.
      label: a label string (classification), a float (regression), or None
        for unlabelled test examples.
    """

    guid: str
    text_a: str
    text_b: Optional[str] = None
    label: Optional[Union[str, float]] = None


@dataclasses.dataclass(frozen=True)
class Row:
    """One record of a delimited file.

    Attributes:
      line_number: 1-based line of the file where the record starts.
      fields: the record's fields, as strings.
    """

    line_number: int
    fields: list


def _decoded_lines(binary_file, path):
    """The lines of a UTF-8 file, each with its line break, naming the line
    of a bad byte.

    Lines end at "\\n" only (`file_io.split_lines`): a form feed or U+2028
    inside a field stays in it.
    """
    data = binary_file.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line_start = data.rfind(b"\n", 0, error.start) + 1
        line_number = data.count(b"\n", 0, error.start) + 1
        raise DataFormatError(
            f"{path}, line {line_number}: not "
            f"UTF-8 text ({error.reason} at byte "
            f"{error.start - line_start} of the line)") from error
    if text.startswith("\ufeff"):
        # A byte-order mark would otherwise become part of the first
        # column's name.
        text = text[1:]
    return file_io.split_lines(text, keepends=True)


def read_delimited_file(path, delimiter="\t", quotechar=None):
    """Reads a delimited text file into `Row`s, skipping blank lines.

    With the defaults this reads a file as Google's `_read_tsv` does: tab
    separated, no quoting (a '"' is an ordinary character).

    Args:
      path: the file.
      delimiter: field separator.
      quotechar: quoting character, or None for no quoting.

    Returns:
      A list of `Row`s, in file order.

    Raises:
      FileNotFoundError: the file does not exist.
      DataFormatError: the file is not UTF-8 or not parseable; the message
        names the file and line.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"data file not found: {path}")
    if quotechar is None:
        dialect = {"delimiter": delimiter, "quoting": csv.QUOTE_NONE}
    else:
        dialect = {"delimiter": delimiter, "quotechar": quotechar}
    rows = []
    with open(path, "rb") as binary_file:
        reader = csv.reader(_decoded_lines(binary_file, path), **dialect)
        start_line = 1
        while True:
            try:
                fields = next(reader)
            except StopIteration:
                break
            except csv.Error as error:
                raise DataFormatError(
                    f"{path}, line {reader.line_num}: {error}") from error
            if fields:
                rows.append(Row(start_line, fields))
            # The next record starts after the last line this one consumed
            # (more than one when a quoted CSV field holds a newline).
            start_line = reader.line_num + 1
    return rows


@dataclasses.dataclass(frozen=True)
class SplitLayout:
    """Where one split's examples are in its file.

    Attributes:
      file_name: path of the split's file, relative to the data directory.
      has_header: whether the first record is a header (skipped).
      text_a: column of the first text.
      text_b: column of the second text, or None (single sentence).
      label: column of the label (negative counts from the end, as Google's
        `line[-1]`), or None for an unlabelled split.
      num_columns: the exact column count of every record; None means "as
        many as the header".
      guid_column: column whose value names the example (Google's MNLI);
        None names it by its row index.
      language_column: column holding a language code; with
        `language` set, only rows of that language are kept (Google's XNLI).
      language: the language to keep.
    """

    file_name: str
    has_header: bool
    text_a: int
    text_b: Optional[int] = None
    label: Optional[int] = None
    num_columns: Optional[int] = None
    guid_column: Optional[int] = None
    language_column: Optional[int] = None
    language: Optional[str] = None

    def used_columns(self):
        """Column indices this layout reads (non-negative ones)."""
        columns = [self.text_a, self.text_b, self.label, self.guid_column,
                   self.language_column]
        return [c for c in columns if c is not None and c >= 0]


class DataProcessor:
    """Base class: reads a task's train/dev/test splits into examples.

    Subclasses describe each split with a `SplitLayout` (`_layout`) and the
    task's labels (`get_labels`). Regression tasks set `is_regression` and
    return None from `get_labels`.
    """

    task_name = None
    is_regression = False

    def get_train_examples(self, data_dir):
        """The training set, a list of `InputExample`s."""
        return self._create_examples(data_dir, "train")

    def get_dev_examples(self, data_dir):
        """The evaluation (dev) set, a list of `InputExample`s."""
        return self._create_examples(data_dir, "dev")

    def get_test_examples(self, data_dir):
        """The prediction (test) set; examples have `label=None`."""
        return self._create_examples(data_dir, "test")

    def get_labels(self, data_dir=None):
        """The label strings, in label-id order (None for regression).

        Args:
          data_dir: only used by processors that infer their labels from the
            data (`generic`); Google's processors ignore it.
        """
        raise NotImplementedError

    def _layout(self, split):
        """The `SplitLayout` of "train", "dev" or "test"."""
        raise NotImplementedError

    @property
    def has_text_b(self):
        """Whether the task classifies text pairs (its examples have a
        `text_b`)."""
        return self._layout("train").text_b is not None

    def _guid_prefix(self, split):
        """The guid prefix Google uses for a split (e.g. MNLI's dev_matched)."""
        return split

    def _convert_label(self, raw_label, path, line_number):
        """Turns a label field into the example's label, checking it."""
        labels = self.get_labels()
        if raw_label not in labels:
            expected = ", ".join(repr(label) for label in labels)
            raise DataFormatError(
                f"{path}, line {line_number}: unknown label {raw_label!r} "
                f"(task {self.task_name} has labels {expected})")
        return raw_label

    def _create_examples(self, data_dir, split):
        layout = self._layout(split)
        path = os.path.join(os.fspath(data_dir), layout.file_name)
        if not os.path.isfile(path):
            raise FileNotFoundError(
                f"task {self.task_name}: {split} file not found: {path}")
        rows = read_delimited_file(path)
        if layout.has_header:
            if not rows:
                raise DataFormatError(f"{path}: empty file, expected a header")
            header, rows = rows[0], rows[1:]
            num_columns = layout.num_columns or len(header.fields)
        else:
            num_columns = layout.num_columns
        needed = max(layout.used_columns()) + 1
        if num_columns < needed:
            raise DataFormatError(
                f"{path}, line 1: the header has {num_columns} columns; task "
                f"{self.task_name} reads column {needed} (1-based) of its "
                f"{split} file")
        examples = []
        for row in rows:
            fields = row.fields
            if len(fields) != num_columns:
                raise DataFormatError(
                    f"{path}, line {row.line_number}: {len(fields)} columns, "
                    f"expected {num_columns} (task {self.task_name}, {split} "
                    f"file)")
            if (layout.language is not None
                    and fields[layout.language_column] != layout.language):
                continue
            if layout.guid_column is not None:
                guid_suffix = fields[layout.guid_column]
            else:
                # Google's row index: the header, when there is one, is 0.
                guid_suffix = str(row.line_number - 1)
            label = None
            if layout.label is not None:
                label = self._convert_label(
                    fields[layout.label], path, row.line_number)
            text_b = None if layout.text_b is None else fields[layout.text_b]
            examples.append(InputExample(
                guid=f"{self._guid_prefix(split)}-{guid_suffix}",
                text_a=fields[layout.text_a],
                text_b=text_b,
                label=label))
        return examples


class ColaProcessor(DataProcessor):
    """CoLA (GLUE): train/dev have no header, the test set has one.

    train/dev.tsv: source, label, original label, sentence.
    test.tsv: index, sentence (with a header).
    """

    task_name = "cola"

    def get_labels(self, data_dir=None):
        return ["0", "1"]

    def _layout(self, split):
        if split == "test":
            return SplitLayout("test.tsv", has_header=True, text_a=1)
        return SplitLayout(f"{split}.tsv", has_header=False, text_a=3,
                           label=1, num_columns=4)


class MnliProcessor(DataProcessor):
    """MultiNLI (GLUE), matched dev and test sets, as Google reads it.

    Texts are columns 8 and 9 (sentence1, sentence2), the label is the last
    column (gold_label), and the guid is the row's own index column.
    """

    task_name = "mnli"
    dev_file = "dev_matched.tsv"
    test_file = "test_matched.tsv"
    dev_guid_prefix = "dev_matched"

    def get_labels(self, data_dir=None):
        return ["contradiction", "entailment", "neutral"]

    def _layout(self, split):
        file_name = {"train": "train.tsv", "dev": self.dev_file,
                     "test": self.test_file}[split]
        return SplitLayout(file_name, has_header=True, text_a=8, text_b=9,
                           label=None if split == "test" else -1,
                           guid_column=0)

    def _guid_prefix(self, split):
        return self.dev_guid_prefix if split == "dev" else split


class MnliMismatchedProcessor(MnliProcessor):
    """MultiNLI with the mismatched dev and test sets (`mnli-mm`)."""

    task_name = "mnli-mm"
    dev_file = "dev_mismatched.tsv"
    test_file = "test_mismatched.tsv"
    dev_guid_prefix = "dev_mismatched"


class MrpcProcessor(DataProcessor):
    """MRPC (GLUE): Quality, #1 ID, #2 ID, #1 String, #2 String."""

    task_name = "mrpc"

    def get_labels(self, data_dir=None):
        return ["0", "1"]

    def _layout(self, split):
        return SplitLayout(f"{split}.tsv", has_header=True, text_a=3, text_b=4,
                           label=None if split == "test" else 0)


class XnliProcessor(DataProcessor):
    """XNLI, one language, with Google's files.

    Train: `<data_dir>/multinli/multinli.train.<language>.tsv` (premise,
    hypo, label; "contradictory" is read as "contradiction"). Dev:
    `<data_dir>/xnli.dev.tsv`, rows of other languages skipped (language in
    column 0, label in 1, texts in 6 and 7). Google has no test split; this
    one reads `<data_dir>/xnli.test.tsv` with the dev layout.
    """

    task_name = "xnli"

    def __init__(self, language="zh"):
        """Args: language: the XNLI language code to train and evaluate on."""
        if not language:
            raise ValueError("XNLI needs a language code, e.g. 'zh'")
        self.language = language

    def get_labels(self, data_dir=None):
        return ["contradiction", "entailment", "neutral"]

    def _layout(self, split):
        if split == "train":
            return SplitLayout(
                os.path.join("multinli",
                             f"multinli.train.{self.language}.tsv"),
                has_header=True, text_a=0, text_b=1, label=2)
        return SplitLayout(
            f"xnli.{split}.tsv", has_header=True, text_a=6, text_b=7,
            label=None if split == "test" else 1, language_column=0,
            language=self.language)

    def _convert_label(self, raw_label, path, line_number):
        # Google's fix for the machine-translated training files.
        if raw_label == "contradictory":
            raw_label = "contradiction"
        return super()._convert_label(raw_label, path, line_number)


class Sst2Processor(DataProcessor):
    """SST-2 (GLUE): `sentence\\tlabel`; test: `index\\tsentence`."""

    task_name = "sst-2"

    def get_labels(self, data_dir=None):
        return ["0", "1"]

    def _layout(self, split):
        if split == "test":
            return SplitLayout("test.tsv", has_header=True, text_a=1)
        return SplitLayout(f"{split}.tsv", has_header=True, text_a=0, label=1)


class QqpProcessor(DataProcessor):
    """QQP (GLUE): id, qid1, qid2, question1, question2, is_duplicate.

    Test: id, question1, question2.
    """

    task_name = "qqp"

    def get_labels(self, data_dir=None):
        return ["0", "1"]

    def _layout(self, split):
        if split == "test":
            return SplitLayout("test.tsv", has_header=True, text_a=1, text_b=2)
        return SplitLayout(f"{split}.tsv", has_header=True, text_a=3, text_b=4,
                           label=5)


class _IndexedPairProcessor(DataProcessor):
    """GLUE's `index, text1, text2, label` layout (QNLI, RTE, WNLI)."""

    def _layout(self, split):
        return SplitLayout(f"{split}.tsv", has_header=True, text_a=1, text_b=2,
                           label=None if split == "test" else 3)


class QnliProcessor(_IndexedPairProcessor):
    """QNLI (GLUE): index, question, sentence, label."""

    task_name = "qnli"

    def get_labels(self, data_dir=None):
        return ["entailment", "not_entailment"]


class RteProcessor(_IndexedPairProcessor):
    """RTE (GLUE): index, sentence1, sentence2, label."""

    task_name = "rte"

    def get_labels(self, data_dir=None):
        return ["entailment", "not_entailment"]


class WnliProcessor(_IndexedPairProcessor):
    """WNLI (GLUE): index, sentence1, sentence2, label."""

    task_name = "wnli"

    def get_labels(self, data_dir=None):
        return ["0", "1"]


class StsbProcessor(DataProcessor):
    """STS-B (GLUE), regression: a similarity score in [0, 5].

    Columns: index, genre, filename, year, old_index, source1, source2,
    sentence1, sentence2, score (test: no score).
    """

    task_name = "sts-b"
    is_regression = True

    def get_labels(self, data_dir=None):
        return None

    def _layout(self, split):
        return SplitLayout(f"{split}.tsv", has_header=True, text_a=7, text_b=8,
                           label=None if split == "test" else 9)

    def _convert_label(self, raw_label, path, line_number):
        try:
            return float(raw_label)
        except ValueError:
            raise DataFormatError(
                f"{path}, line {line_number}: score {raw_label!r} is not a "
                f"number (task {self.task_name})") from None


class GenericProcessor(DataProcessor):
    """A user's own classification data: `train`, `dev`, `test` files with a
    header row, columns picked by name.

    Files are `<data_dir>/{train,dev,test}.tsv` (tab separated, no quoting,
    as GLUE) or `.csv` (comma separated, standard "double quote" quoting).
    The label list is every distinct value of the training file's label
    column, sorted as strings; dev labels must be among them. The test file
    needs no label column.
    """

    task_name = "generic"
    FILE_FORMATS = {"tsv": ("\t", None), "csv": (",", '"')}

    def __init__(self, text_a_column="sentence", text_b_column=None,
                 label_column="label", file_format="tsv"):
        """Args:
          text_a_column: header name of the first text column.
          text_b_column: header name of the second text column, or None for
            single-sentence classification.
          label_column: header name of the label column.
          file_format: "tsv" or "csv".
        """
        if file_format not in self.FILE_FORMATS:
            raise ValueError(
                f"file format must be one of {sorted(self.FILE_FORMATS)}, "
                f"got {file_format!r}")
        if not text_a_column or not label_column:
            raise ValueError("the generic task needs a text_a column name "
                             "and a label column name")
        self.text_a_column = text_a_column
        self.text_b_column = text_b_column or None
        self.label_column = label_column
        self.file_format = file_format
        self._labels_by_dir = {}

    @property
    def has_text_b(self):
        return self.text_b_column is not None

    def _path(self, data_dir, split):
        path = os.path.join(os.fspath(data_dir), f"{split}.{self.file_format}")
        if not os.path.isfile(path):
            raise FileNotFoundError(
                f"task {self.task_name}: {split} file not found: {path}")
        return path

    def _read(self, data_dir, split):
        """Reads a split: (path, rows without header, column index by name)."""
        path = self._path(data_dir, split)
        delimiter, quotechar = self.FILE_FORMATS[self.file_format]
        rows = read_delimited_file(path, delimiter, quotechar)
        if not rows:
            raise DataFormatError(f"{path}: empty file, expected a header")
        header = rows[0].fields
        columns = {}
        for index, name in enumerate(header):
            if name in columns:
                raise DataFormatError(
                    f"{path}, line {rows[0].line_number}: column {name!r} "
                    f"appears twice in the header")
            columns[name] = index
        needed = [self.text_a_column, self.text_b_column]
        if split != "test":
            needed.append(self.label_column)
        for name in needed:
            if name is not None and name not in columns:
                raise DataFormatError(
                    f"{path}, line {rows[0].line_number}: no column {name!r} "
                    f"in the header (columns: {', '.join(header)})")
        for row in rows[1:]:
            if len(row.fields) != len(header):
                raise DataFormatError(
                    f"{path}, line {row.line_number}: {len(row.fields)} "
                    f"columns, expected {len(header)} as in the header")
        return path, rows[1:], columns

    def get_labels(self, data_dir=None):
        """Sorted distinct labels of `<data_dir>/train.<format>`.

        Raises:
          ValueError: no data_dir was given.
          FileNotFoundError: there is no training file to infer them from.
          DataFormatError: a training label is empty.
        """
        if data_dir is None:
            raise ValueError(
                "the generic task infers its labels from the training file; "
                "pass the data directory")
        key = os.path.abspath(os.fspath(data_dir))
        if key not in self._labels_by_dir:
            path, rows, columns = self._read(data_dir, "train")
            label_index = columns[self.label_column]
            labels = set()
            for row in rows:
                label = row.fields[label_index]
                if not label.strip():
                    raise DataFormatError(
                        f"{path}, line {row.line_number}: empty label in "
                        f"column {self.label_column!r}")
                labels.add(label)
            if not labels:
                raise DataFormatError(f"{path}: no examples to infer labels")
            self._labels_by_dir[key] = sorted(labels)
        return list(self._labels_by_dir[key])

    def _create_examples(self, data_dir, split):
        labels = None if split == "test" else set(self.get_labels(data_dir))
        path, rows, columns = self._read(data_dir, split)
        text_a_index = columns[self.text_a_column]
        text_b_index = (None if self.text_b_column is None
                        else columns[self.text_b_column])
        examples = []
        for row in rows:
            label = None
            if labels is not None:
                label = row.fields[columns[self.label_column]]
                if label not in labels:
                    raise DataFormatError(
                        f"{path}, line {row.line_number}: unknown label "
                        f"{label!r}; the training file has labels "
                        f"{', '.join(repr(x) for x in sorted(labels))}")
            examples.append(InputExample(
                guid=f"{split}-{row.line_number - 1}",
                text_a=row.fields[text_a_index],
                text_b=(None if text_b_index is None
                        else row.fields[text_b_index]),
                label=label))
        return examples


# Task name (lower case, as in `--task_name`) -> processor class.
PROCESSORS = {
    processor.task_name: processor
    for processor in (
        ColaProcessor, MnliProcessor, MnliMismatchedProcessor, MrpcProcessor,
        XnliProcessor, Sst2Processor, QqpProcessor, QnliProcessor,
        RteProcessor, WnliProcessor, StsbProcessor, GenericProcessor)
}


def create_processor(task_name, xnli_language="zh", text_a_column="sentence",
                     text_b_column=None, label_column="label",
                     file_format="tsv"):
    """The processor of a task, by its `--task_name` (case-insensitive).

    Args:
      task_name: one of `PROCESSORS`.
      xnli_language: language of the `xnli` task.
      text_a_column, text_b_column, label_column, file_format: options of the
        `generic` task (see `GenericProcessor`).

    Returns:
      A `DataProcessor`.

    Raises:
      ValueError: unknown task name (the message lists the known ones).
    """
    name = (task_name or "").lower()
    if name not in PROCESSORS:
        raise ValueError(
            f"Task not found: {task_name} (known tasks: "
            f"{', '.join(sorted(PROCESSORS))})")
    if name == XnliProcessor.task_name:
        return XnliProcessor(language=xnli_language)
    if name == GenericProcessor.task_name:
        return GenericProcessor(text_a_column=text_a_column,
                                text_b_column=text_b_column,
                                label_column=label_column,
                                file_format=file_format)
    return PROCESSORS[name]()
