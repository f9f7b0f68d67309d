"""Token-tagging data: CoNLL and People's Daily 1998 readers, label lists.

Two input formats, read into `TaggedSentence`s (words, their labels and the
line each word came from) inside a `TaggingFile` that also keeps every
line, so predictions can be written back line for line.

CoNLL (`conll`)
  One word per line, columns separated by tabs (when the line has one) or
  runs of spaces; the word is the first column and the label the column
  `label_column` (default -1, the last: CoNLL-2003's NER tag is the last
  of four). Blank lines end sentences; `-DOCSTART-` lines are document
  separators and hold no word. A file whose word lines all have a single
  column has no labels (a test file to predict).

People's Daily 1998 (`peoples_daily`, `peoples_daily_ner`)
  One sentence per line, tokens `word/TAG` separated by (two) spaces,
  e.g. `中共中央/nt  总书记/n`; a bracketed compound
  `[中央/n 人民/n 广播/vn 电台/n]nt` is a multi-word name whose words keep
  their own tags and whose outer tag (`nt`) names the whole. A first token
  such as `19980101-01-001-001/m` (the corpus' sentence id: date, page,
  article, sentence) is an id, not a word. `peoples_daily` labels each
  word with its part-of-speech tag (the PKU tag set). `peoples_daily_ner`
  labels words with BIO entity tags: `nr` (person) -> PER, `ns` (place) ->
  LOC, `nt` (organization) -> ORG; a compound whose outer tag is one of
  these is one entity over all its words, and consecutive `nr` words are one
  person (the corpus writes surname and given name apart: `江/nr  泽民/nr`).
  Other words are `O`.

Word/TAG (`word_tag`)
  Any `word/TAG` format with a sentence per line, e.g. the Penn Treebank
  WSJ sample: read as `peoples_daily` (the same parser), labels the tags.

Labels: the label list is every label in the training file, sorted, and is
saved (`label_list.txt`, one per line) so prediction uses the same ids. A
label in an evaluation or prediction file that training never saw is an
error that names the file and line.
"""

import dataclasses
import os
import re
from typing import List, Optional


from bert_tf import file_io

CONLL = "conll"
PEOPLES_DAILY = "peoples_daily"
PEOPLES_DAILY_NER = "peoples_daily_ner"
WORD_TAG = "word_tag"
INPUT_FORMATS = (CONLL, PEOPLES_DAILY, PEOPLES_DAILY_NER, WORD_TAG)

DOCSTART = "-DOCSTART-"
LABEL_LIST_FILE = "label_list.txt"
# People's Daily: PKU proper-noun tags -> entity types.
PEOPLES_DAILY_ENTITY_TYPES = {"nr": "PER", "ns": "LOC", "nt": "ORG"}
_SENTENCE_ID = re.compile(r"^\d{8}-\d{2}-\d{3}-\d{3}$")


class TaggingDataError(ValueError):
    """Bad tagging input; the message names the file and line."""


@dataclasses.dataclass
class TaggedSentence:
    """One sentence.

    Attributes:
      words: the words, in order.
      labels: one label per word, or None when the file has no labels.
      line_numbers: 1-based line of each word in its file (for People's
        Daily, the sentence's line).
      document: an identifier of the document the sentence belongs to
        (CoNLL: the number of `-DOCSTART-` lines before it; People's Daily:
        the date-page-article part of its id, or its line number).
    """
    words: List[str]
    labels: Optional[List[str]]
    line_numbers: List[int]
    document: str = ""


@dataclasses.dataclass
class TaggingFile:
    """A whole input file: its lines and the sentences read from them.

    Attributes:
      path: the file.
      input_format: one of `INPUT_FORMATS`.
      lines: every line of the file, without its line break.
      sentences: the sentences, in order.
      has_labels: whether every word has a label.
    """
    path: str
    input_format: str
    lines: List[str]
    sentences: List[TaggedSentence]
    has_labels: bool


def _read_lines(path):
    import tensorflow as tf
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"tagging file {path} does not exist")
    with tf.io.gfile.GFile(path, "rb") as reader:
        data = reader.read()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[:error.start].count(b"\n") + 1
        raise TaggingDataError(
            f"{path}:{line}: not UTF-8 text ({error.reason})") from None
    return file_io.split_lines(text)


def _conll_columns(line):
    return line.split("\t") if "\t" in line else line.split()


def read_conll(path, label_column=-1):
    """Reads a CoNLL file (see the module docstring).

    Args:
      path: the file.
      label_column: index of the label column (negative: from the end).

    Returns:
      A `TaggingFile`.

    Raises:
      TaggingDataError: some word lines have a label column and others do
        not, or `label_column` is the word column or beyond the last column
        (the message names the line).
    """
    lines = _read_lines(path)
    sentences = []
    words, labels, numbers = [], [], []
    document = 0
    labelled_line = unlabelled_line = None

    def end_sentence():
        if words:
            sentences.append(TaggedSentence(list(words), list(labels),
                                            list(numbers), str(document)))
        words.clear()
        labels.clear()
        numbers.clear()

    for number, line in enumerate(lines, start=1):
        columns = [column.strip() for column in _conll_columns(line)]
        if not line.strip():
            end_sentence()
            continue
        if columns[0] == DOCSTART:
            end_sentence()
            document += 1
            continue
        if len(columns) == 1:
            unlabelled_line = unlabelled_line or number
            label = None
        else:
            labelled_line = labelled_line or number
            index = label_column if label_column >= 0 else (
                len(columns) + label_column)
            if index <= 0 or index >= len(columns):
                raise TaggingDataError(
                    f"{path}:{number}: no label column {label_column} "
                    f"(--label_column) in {len(columns)} columns "
                    f"{line.strip()!r}; the word is column 0")
            label = columns[index]
            if not label:
                raise TaggingDataError(f"{path}:{number}: empty label")
            if len(label.split()) != 1:
                # A tab-separated line whose label column holds spaces
                # ("NNP B-NP") would train on one label "NNP B-NP".
                raise TaggingDataError(
                    f"{path}:{number}: label {label!r} contains white space; "
                    "a label is one column without spaces")
        if not columns[0]:
            # "\tNNP\tB-NP\tO": the word column is empty.
            raise TaggingDataError(
                f"{path}:{number}: empty word (the first column) in "
                f"{line!r}")
        words.append(columns[0])
        labels.append(label)
        numbers.append(number)
    end_sentence()
    if labelled_line and unlabelled_line:
        raise TaggingDataError(
            f"{path}:{unlabelled_line}: a word without a label column, but "
            f"line {labelled_line} has one")
    has_labels = labelled_line is not None
    if not has_labels:
        for sentence in sentences:
            sentence.labels = None
    return TaggingFile(path, CONLL, lines, sentences, has_labels)


def _peoples_daily_token(path, number, token):
    word, slash, tag = token.rpartition("/")
    if not slash or not word or not tag:
        raise TaggingDataError(
            f"{path}:{number}: token {token!r} is not word/TAG")
    return word, tag


def parse_peoples_daily_line(line, path="<line>", number=0):
    """Splits one People's Daily line into words, tags and compounds.

    Args:
      line: the line, e.g. "[中央/n 人民/n 广播/vn 电台/n]nt  记者/n".
      path, number: name the line in errors.

    Returns:
      `(sentence_id, words, tags, compounds)`: the id token's text or None;
      the words and their own tags; and `(first, last, outer_tag)` for each
      bracketed compound (word indexes, inclusive).

    Raises:
      TaggingDataError: a token is not word/TAG, or brackets do not match.
    """
    tokens = line.split()
    sentence_id = None
    if tokens:
        word, _, _ = tokens[0].rpartition("/")
        if _SENTENCE_ID.match(word):
            sentence_id = word
            tokens = tokens[1:]
    words, tags, compounds = [], [], []
    compound_start = None
    for token in tokens:
        # "[/w" is the word "[", not an opening bracket.
        opens = re.match(r"^\[[^/]+/", token) is not None
        if opens:
            if compound_start is not None:
                raise TaggingDataError(
                    f"{path}:{number}: '[' inside an open compound at "
                    f"{token!r}")
            compound_start = len(words)
            token = token[1:]
        outer_tag = None
        closing = re.match(r"^(.+/[^/\]]+)\]([A-Za-z]+)$", token)
        if closing:
            if compound_start is None:
                raise TaggingDataError(
                    f"{path}:{number}: ']' closes no compound at {token!r}")
            token, outer_tag = closing.group(1), closing.group(2)
        word, tag = _peoples_daily_token(path, number, token)
        words.append(word)
        tags.append(tag)
        if outer_tag is not None:
            compounds.append((compound_start, len(words) - 1, outer_tag))
            compound_start = None
    if compound_start is not None:
        raise TaggingDataError(
            f"{path}:{number}: compound opened by '[' is never closed")
    return sentence_id, words, tags, compounds


def peoples_daily_entity_tags(tags, compounds):
    """BIO entity tags (PER/LOC/ORG) of one People's Daily sentence.

    Args:
      tags: each word's own PKU tag.
      compounds: `(first, last, outer_tag)` of each bracketed compound.

    Returns:
      A list of BIO tags, one per word.
    """
    labels = ["O"] * len(tags)
    covered = [False] * len(tags)
    for first, last, outer_tag in compounds:
        entity_type = PEOPLES_DAILY_ENTITY_TYPES.get(outer_tag)
        if entity_type is None:
            continue
        for index in range(first, last + 1):
            labels[index] = ("B-" if index == first else "I-") + entity_type
            covered[index] = True
    for index, tag in enumerate(tags):
        entity_type = PEOPLES_DAILY_ENTITY_TYPES.get(tag)
        if covered[index] or entity_type is None:
            continue
        # Surname and given name are separate nr words: one person.
        continues_person = (tag == "nr" and index > 0 and tags[index - 1]
                            == "nr" and not covered[index - 1])
        labels[index] = ("I-" if continues_person else "B-") + entity_type
    return labels


def read_peoples_daily(path, entities=False):
    """Reads a People's Daily 1998 file (see the module docstring).

    Args:
      path: the file.
      entities: label words with PER/LOC/ORG BIO tags instead of their
        part-of-speech tags.

    Returns:
      A `TaggingFile`; blank lines hold no sentence.
    """
    lines = _read_lines(path)
    sentences = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        sentence_id, words, tags, compounds = parse_peoples_daily_line(
            line, path, number)
        if not words:
            continue
        labels = (peoples_daily_entity_tags(tags, compounds) if entities
                  else tags)
        document = (sentence_id.rsplit("-", 1)[0] if sentence_id
                    else str(number))
        sentences.append(TaggedSentence(words, labels,
                                        [number] * len(words), document))
    return TaggingFile(path,
                       PEOPLES_DAILY_NER if entities else PEOPLES_DAILY,
                       lines, sentences, has_labels=True)


def read_tagging_file(path, input_format, label_column=-1):
    """Reads a file in one of `INPUT_FORMATS`."""
    if input_format == CONLL:
        return read_conll(path, label_column)
    if input_format in (PEOPLES_DAILY, PEOPLES_DAILY_NER, WORD_TAG):
        tagging_file = read_peoples_daily(
            path, entities=input_format == PEOPLES_DAILY_NER)
        tagging_file.input_format = input_format
        return tagging_file
    raise ValueError(f"--input_format={input_format!r} must be one of "
                     f"{', '.join(INPUT_FORMATS)}")


# -- labels -------------------------------------------------------------------

def labels_of(tagging_file):
    """Every label of a labelled file, sorted.

    Raises:
      TaggingDataError: the file has no labels or no sentence.
    """
    if not tagging_file.sentences:
        raise TaggingDataError(f"{tagging_file.path}: no sentence")
    if not tagging_file.has_labels:
        raise TaggingDataError(
            f"{tagging_file.path}: no label column (a training file needs "
            "one)")
    return sorted({label for sentence in tagging_file.sentences
                   for label in sentence.labels})


def check_labels(tagging_file, label_list, known_from="the training data"):
    """Every label in the file is in `label_list`.

    Args:
      tagging_file: a `TaggingFile`.
      label_list: the known labels.
      known_from: where `label_list` comes from, for the error message.

    Raises:
      TaggingDataError: naming the file and line of the first unseen label.
    """
    if not tagging_file.has_labels:
        return
    known = set(label_list)
    for sentence in tagging_file.sentences:
        for label, number in zip(sentence.labels, sentence.line_numbers):
            if label not in known:
                raise TaggingDataError(
                    f"{tagging_file.path}:{number}: label {label!r} does not "
                    f"occur in {known_from} (labels: "
                    f"{' '.join(label_list)})")


def write_label_list(path, label_list):
    """Writes the labels, one per line, atomically."""
    with file_io.atomic_write(path) as writer:
        writer.write("".join(f"{label}\n" for label in label_list))


def read_label_list(path):
    """The labels saved by `write_label_list`.

    Raises:
      FileNotFoundError: no such file (the message says how to make it).
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"{path} not found: it is written when training "
            "(--do_train); to predict without training, use the training "
            "run's --output_dir or an --init_checkpoint in it")
    with open(path, encoding="utf-8") as reader:
        labels = [line.rstrip("\n") for line in reader if line.strip()]
    if not labels:
        raise TaggingDataError(f"{path}: no label")
    return labels


# -- writing predictions back -------------------------------------------------

def predicted_file_lines(tagging_file, predicted_labels):
    """The input file's lines with each word's predicted label.

    CoNLL: every line as read, with the predicted label appended as a last
    column to each word line (separated by a tab when the line uses tabs,
    else a space); blank and `-DOCSTART-` lines unchanged. People's Daily:
    each sentence line rewritten as `word/PREDICTED` tokens (two spaces
    apart, the sentence id kept), so the output reads back in the same
    format; blank lines unchanged.

    Args:
      tagging_file: a `TaggingFile`.
      predicted_labels: one list of labels per sentence.

    Returns:
      A list of lines (without line breaks), as many as the file has.
    """
    lines = list(tagging_file.lines)
    if tagging_file.input_format == CONLL:
        for sentence, labels in zip(tagging_file.sentences, predicted_labels):
            for number, label in zip(sentence.line_numbers, labels):
                line = lines[number - 1].rstrip()
                separator = "\t" if "\t" in line else " "
                lines[number - 1] = f"{line}{separator}{label}"
        return lines
    for sentence, labels in zip(tagging_file.sentences, predicted_labels):
        number = sentence.line_numbers[0]
        sentence_id, _, _, _ = parse_peoples_daily_line(lines[number - 1])
        tokens = [f"{word}/{label}"
                  for word, label in zip(sentence.words, labels)]
        if sentence_id:
            tokens.insert(0, f"{sentence_id}/m")
        lines[number - 1] = "  ".join(tokens)
    return lines
