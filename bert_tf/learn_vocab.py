"""Learns a WordPiece vocabulary (`vocab.txt`) from a text corpus.

Words are split by bert_tf's `BasicTokenizer` with the given
`--do_lower_case`, so `FullTokenizer(vocab_file, do_lower_case)` splits
text into pieces of this vocabulary. The file has Google's layout:
`[PAD]`, `[unused0]`..., `[UNK]`, `[CLS]`, `[SEP]`, `[MASK]`, the
characters and their "##" forms, then learned pieces. See
`bert_tf.text.vocab_learning`.

Command line:

    python -m bert_tf.learn_vocab --input_file=corpus.txt \\
        --output_file=vocab.txt --vocab_size=8000 --do_lower_case=True
"""

from absl import flags

from bert_tf import cli
from bert_tf import file_io
from bert_tf.text import vocab_learning

PROGRAM = "python -m bert_tf.learn_vocab"


def define_flags(flag_values):
    """Defines the command line's flags on `flag_values`."""
    flags.DEFINE_string(
        "input_file", None,
        "Text file(s): comma-separated paths or glob patterns, as "
        "create_pretraining_data.py's --input_file.", flag_values=flag_values)
    flags.DEFINE_string(
        "output_file", None,
        "The vocab.txt to write (written under a temporary name, then "
        "renamed).", flag_values=flag_values)
    flags.DEFINE_integer(
        "vocab_size", 8000,
        "Entries in all, special tokens and characters included.",
        flag_values=flag_values)
    flags.DEFINE_bool(
        "do_lower_case", True,
        "Lower-case and strip accents before learning: True for an uncased "
        "model, False for a cased one.", flag_values=flag_values)
    flags.DEFINE_integer(
        "num_unused_tokens", vocab_learning.DEFAULT_NUM_UNUSED_TOKENS,
        "[unusedK] placeholders between [PAD] and [UNK] (Google: 99, which "
        "puts [UNK], [CLS], [SEP], [MASK] at ids 100-103).",
        flag_values=flag_values)
    flags.DEFINE_integer(
        "max_alphabet_size", vocab_learning.DEFAULT_MAX_ALPHABET_SIZE,
        "Keep at most this many distinct characters, the most frequent.",
        flag_values=flag_values)
    flags.DEFINE_integer(
        "min_pair_count", vocab_learning.DEFAULT_MIN_PAIR_COUNT,
        "Do not merge pairs of pieces that occur fewer times.",
        flag_values=flag_values)
    for name in ("input_file", "output_file"):
        flags.mark_flag_as_required(name, flag_values=flag_values)


def run(flag_values):
    """Learns and writes the vocabulary; returns its `VocabStats`."""
    file_io.check_outputs_are_not_inputs(
        [("--output_file", flag_values.output_file)],
        [("--input_file", flag_values.input_file)])
    stats = vocab_learning.learn_vocab_from_files(
        flag_values.input_file, flag_values.output_file,
        flag_values.vocab_size, do_lower_case=flag_values.do_lower_case,
        num_unused_tokens=flag_values.num_unused_tokens,
        max_alphabet_size=flag_values.max_alphabet_size,
        min_pair_count=flag_values.min_pair_count)
    print(f"wrote {flag_values.output_file}: {stats.vocab_size} entries "
          f"({stats.num_characters} characters) learned from "
          f"{stats.num_words} words ({stats.num_distinct_words} distinct, "
          f"do_lower_case={flag_values.do_lower_case}) in "
          f"{stats.seconds:.1f} s; [UNK] rate on the corpus: "
          f"{100 * stats.unknown_rate:.3f}%", flush=True)
    return stats


def main(argv=None):
    """Runs the command line.

    Args:
      argv: the arguments without the program name (default: sys.argv[1:]).

    Returns:
      The `VocabStats` of the written vocabulary. A bad flag or input (a
      missing or empty corpus, invalid UTF-8, a vocab_size too small) exits
      with status 1 and a message naming the file (`cli.exit_with_error`).
    """
    return cli.run_or_exit(PROGRAM, run, cli.parse_flags(PROGRAM, define_flags,
                                                         argv))


if __name__ == "__main__":
    from bert_tf import startup
    startup.quiet_start()  # before anything imports TensorFlow
    main()
