"""Builds a pretraining corpus in Google's format from a Wikipedia dump.

One sentence per line, an empty line between documents (articles), ready
for `create_pretraining_data.py --input_file=...`. By default the dump is
the English Wikipedia sample that the gensim package ships, which needs
only `pip install --no-deps gensim==4.4.0` (gensim itself is never
imported). See `bert_tf.data.wikipedia_corpus` for what is kept.

Command line:

    python -m bert_tf.prepare_corpus --output_file=corpus.txt \\
        [--wiki_dump=enwiki-...-pages-articles.xml.bz2] [--max_documents=N]
"""

import argparse
import sys
import time

from bert_tf.data import wikipedia_corpus


def build_parser():
    """The command line's `argparse` parser."""
    parser = argparse.ArgumentParser(
        prog="python -m bert_tf.prepare_corpus",
        description="Write a Wikipedia dump's articles as a pretraining "
                    "corpus: one sentence per line, an empty line between "
                    "documents.")
    parser.add_argument(
        "--output_file", required=True,
        help="the text file to write (written under a temporary name, then "
             "renamed)")
    parser.add_argument(
        "--wiki_dump", default=None,
        help="a MediaWiki pages-articles XML dump, .bz2 or plain XML "
             "(default: the English Wikipedia sample shipped by "
             "gensim==4.4.0)")
    parser.add_argument(
        "--max_documents", type=int, default=None,
        help="stop after this many documents (default: all)")
    parser.add_argument(
        "--min_sentence_words", type=int,
        default=wikipedia_corpus.DEFAULT_MIN_SENTENCE_WORDS,
        help="drop sentences with fewer whitespace-separated words")
    parser.add_argument(
        "--min_document_sentences", type=int,
        default=wikipedia_corpus.DEFAULT_MIN_DOCUMENT_SENTENCES,
        help="drop articles with fewer sentences")
    return parser


def main(argv=None):
    """Runs the command line.

    Args:
      argv: the arguments without the program name (default: sys.argv[1:]).

    Returns:
      The `CorpusStats` of the written corpus. Bad input (a missing or
      malformed dump, an empty result) exits with status 1 and a message
      naming the file.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    started = time.perf_counter()
    try:
        dump_file = args.wiki_dump or wikipedia_corpus.find_gensim_wiki_dump()
        stats = wikipedia_corpus.write_corpus(
            dump_file, args.output_file, max_documents=args.max_documents,
            min_sentence_words=args.min_sentence_words,
            min_document_sentences=args.min_document_sentences)
    except (OSError, ValueError) as error:
        parser.exit(1, f"{parser.prog}: error: {error}\n")
    seconds = time.perf_counter() - started
    print(f"wrote {args.output_file}: {stats.documents} documents, "
          f"{stats.sentences} sentences, {stats.bytes / 1e6:.2f} MB "
          f"(from {stats.articles_read} articles of {dump_file}) in "
          f"{seconds:.1f} s")
    sys.stdout.flush()
    return stats


if __name__ == "__main__":
    from bert_tf import startup
    startup.quiet_start()  # before anything imports TensorFlow
    main()
