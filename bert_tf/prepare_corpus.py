"""Builds a pretraining corpus in Google's format from a Wikipedia dump.

One sentence per line, an empty line between documents (articles), ready
for `create_pretraining_data.py --input_file=...`. By default the dump is
the English Wikipedia sample that the gensim package ships, which needs
only `pip install --no-deps gensim==4.4.0` (gensim itself is never
imported). See `bert_tf.corpora.wikipedia` for what is kept.

Command line:

    python -m bert_tf.prepare_corpus --output_file=corpus.txt \\
        [--wiki_dump=enwiki-...-pages-articles.xml.bz2] [--max_documents=N]
"""

import time

from absl import flags

from bert_tf import cli
from bert_tf import file_io
from bert_tf.corpora import wikipedia as wikipedia_corpus

PROGRAM = "python -m bert_tf.prepare_corpus"


def define_flags(flag_values):
    """Defines the command line's flags on `flag_values`."""
    flags.DEFINE_string(
        "output_file", None,
        "The text file to write (written under a temporary name, then "
        "renamed).", flag_values=flag_values)
    flags.DEFINE_string(
        "wiki_dump", None,
        "A MediaWiki pages-articles XML dump, .bz2 or plain XML (default: "
        "the English Wikipedia sample shipped by gensim==4.4.0).",
        flag_values=flag_values)
    flags.DEFINE_integer(
        "max_documents", None,
        "Stop after this many documents (default: all).",
        flag_values=flag_values)
    flags.DEFINE_integer(
        "min_sentence_words", wikipedia_corpus.DEFAULT_MIN_SENTENCE_WORDS,
        "Drop sentences with fewer whitespace-separated words.",
        flag_values=flag_values)
    flags.DEFINE_integer(
        "min_document_sentences",
        wikipedia_corpus.DEFAULT_MIN_DOCUMENT_SENTENCES,
        "Drop articles with fewer sentences.", flag_values=flag_values)
    flags.mark_flag_as_required("output_file", flag_values=flag_values)


def run(flag_values):
    """Writes the corpus; returns its `CorpusStats`."""
    started = time.perf_counter()
    try:
        dump_file = (flag_values.wiki_dump
                     or wikipedia_corpus.find_gensim_wiki_dump())
    except FileNotFoundError as error:
        raise FileNotFoundError(f"{error} (or pass --wiki_dump)") from None
    file_io.check_outputs_are_not_inputs(
        [("--output_file", flag_values.output_file)],
        [("--wiki_dump", dump_file)])
    stats = wikipedia_corpus.write_corpus(
        dump_file, flag_values.output_file,
        max_documents=flag_values.max_documents,
        min_sentence_words=flag_values.min_sentence_words,
        min_document_sentences=flag_values.min_document_sentences)
    seconds = time.perf_counter() - started
    print(f"wrote {flag_values.output_file}: {stats.documents} documents, "
          f"{stats.sentences} sentences, {stats.bytes / 1e6:.2f} MB "
          f"(from {stats.articles_read} articles of {dump_file}) in "
          f"{seconds:.1f} s", flush=True)
    return stats


def main(argv=None):
    """Runs the command line.

    Args:
      argv: the arguments without the program name (default: sys.argv[1:]).

    Returns:
      The `CorpusStats` of the written corpus. A bad flag or input (a
      missing or malformed dump, an empty result) exits with status 1 and a
      message naming the file (`cli.exit_with_error`).
    """
    return cli.run_or_exit(PROGRAM, run, cli.parse_flags(PROGRAM, define_flags,
                                                         argv))


if __name__ == "__main__":
    from bert_tf import startup
    startup.quiet_start()  # before anything imports TensorFlow
    main()
