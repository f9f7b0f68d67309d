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

import argparse
import sys

from bert_tf.text import vocab_learning

_TRUE_WORDS = frozenset(("true", "t", "1", "yes", "y"))
_FALSE_WORDS = frozenset(("false", "f", "0", "no", "n"))


def _parse_bool(text):
    """"True"/"false"/"1"/... -> bool, as absl's boolean flags accept."""
    word = text.strip().lower()
    if word in _TRUE_WORDS:
        return True
    if word in _FALSE_WORDS:
        return False
    raise argparse.ArgumentTypeError(
        f"expected true or false, got {text!r}")


def build_parser():
    """The command line's `argparse` parser."""
    parser = argparse.ArgumentParser(
        prog="python -m bert_tf.learn_vocab",
        description="Learn a WordPiece vocab.txt from text files.")
    parser.add_argument(
        "--input_file", required=True,
        help="text file(s): comma-separated paths or glob patterns, as "
             "create_pretraining_data.py's --input_file")
    parser.add_argument(
        "--output_file", required=True,
        help="the vocab.txt to write (written under a temporary name, then "
             "renamed)")
    parser.add_argument(
        "--vocab_size", type=int, default=8000,
        help="entries in all, special tokens and characters included")
    parser.add_argument(
        "--do_lower_case", type=_parse_bool, nargs="?", const=True,
        default=True,
        help="lower-case and strip accents before learning: True for an "
             "uncased model, False for a cased one (default True)")
    parser.add_argument(
        "--nodo_lower_case", dest="do_lower_case", action="store_false",
        help="same as --do_lower_case=False (absl spelling)")
    parser.add_argument(
        "--num_unused_tokens", type=int,
        default=vocab_learning.DEFAULT_NUM_UNUSED_TOKENS,
        help="[unusedK] placeholders between [PAD] and [UNK] (Google: 99, "
             "which puts [UNK], [CLS], [SEP], [MASK] at ids 100-103)")
    parser.add_argument(
        "--max_alphabet_size", type=int,
        default=vocab_learning.DEFAULT_MAX_ALPHABET_SIZE,
        help="keep at most this many distinct characters, the most frequent")
    parser.add_argument(
        "--min_pair_count", type=int,
        default=vocab_learning.DEFAULT_MIN_PAIR_COUNT,
        help="do not merge pairs of pieces that occur fewer times")
    return parser


def main(argv=None):
    """Runs the command line.

    Args:
      argv: the arguments without the program name (default: sys.argv[1:]).

    Returns:
      The `VocabStats` of the written vocabulary. Bad input (a missing or
      empty corpus, invalid UTF-8, a vocab_size too small) exits with
      status 1 and a message naming the file.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        stats = vocab_learning.learn_vocab_from_files(
            args.input_file, args.output_file, args.vocab_size,
            do_lower_case=args.do_lower_case,
            num_unused_tokens=args.num_unused_tokens,
            max_alphabet_size=args.max_alphabet_size,
            min_pair_count=args.min_pair_count)
    except (OSError, ValueError) as error:
        parser.exit(1, f"{parser.prog}: error: {error}\n")
    print(f"wrote {args.output_file}: {stats.vocab_size} entries "
          f"({stats.num_characters} characters) learned from "
          f"{stats.num_words} words ({stats.num_distinct_words} distinct, "
          f"do_lower_case={args.do_lower_case}) in {stats.seconds:.1f} s; "
          f"[UNK] rate on the corpus: {100 * stats.unknown_rate:.3f}%")
    sys.stdout.flush()
    return stats


if __name__ == "__main__":
    from bert_tf import startup
    startup.quiet_start()  # before anything imports TensorFlow
    main()
