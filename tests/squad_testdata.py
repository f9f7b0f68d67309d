"""Generated SQuAD data for the SQuAD tests: Google's golden corpus as words.

The generator is `testing.squad_synthetic` (benchmarks/squad.py uses it
too); the references are Model Garden's functions and hand-computed
expectations.
"""

import pathlib
import random

from testing import squad_synthetic

GOLDEN_CORPUS = (pathlib.Path(__file__).resolve().parent / "golden"
                 / "create_pretraining_data" / "corpus.txt")


def corpus_words():
    """The words of the golden corpus, in order."""
    return squad_synthetic.read_words(GOLDEN_CORPUS)


def generated_squad_file(tmp_path, seed=0, name="squad.json", **kwargs):
    """`squad_synthetic.make_squad(random.Random(seed), corpus_words(),
    ...)` written to `tmp_path/name`; returns its path."""
    document = squad_synthetic.make_squad(random.Random(seed),
                                          corpus_words(), **kwargs)
    return squad_synthetic.write_json(pathlib.Path(tmp_path) / name,
                                      document)
