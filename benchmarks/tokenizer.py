"""Tokenizer speed: bert_tf's FullTokenizer against Model Garden's.

Model Garden's `official.nlp.tools.tokenization.FullTokenizer` is a port of
Google's original, character loops included, so its time is the time of the
original. Both tokenize the same lines; the script checks that they agree,
then prints the best-of-N time of each and the speed ratio. It asserts
nothing about time.

    python benchmarks/tokenizer.py [--repeat_corpus 10] [--rounds 3]

Texts:
  english      Google's golden corpus (Hamlet), repeated --repeat_corpus times.
  multilingual a mixed sample (accented Latin, CJK, Hangul, Arabic, Cyrillic,
               emoji, fullwidth punctuation), repeated likewise.
Each pass uses a fresh tokenizer (cold caches: the pass includes filling
bert_tf's word cache), so the ratio is not flattered by earlier passes. The
one-off per-process cost of bert_tf's Unicode tables (about 0.2 s, paid on
the first non-ASCII text) falls outside the timed passes. Times are CPU
times of this process (both tokenizers are single-threaded Python), so other
work on the machine disturbs them less than wall-clock times.
"""

import argparse
import os
import pathlib
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from bert_tf.text import tokenization  # noqa: E402

GOLDEN = REPO_ROOT / "tests" / "golden"

MULTILINGUAL_LINES = [
    "Ophélie, Æneas and naïve café — ÉLAN “quoted” text…",
    "Der Straßenverkehr in München ist über­füllt; Grüße aus Köln!",
    "El niño comió jalapeños en Año Nuevo, ¿verdad? ¡Sí!",
    "中华人民共和国成立于1949年，首都是北京。",
    "日本語のテキスト：東京タワーは３３３メートルです。",
    "한국어 문장입니다. 서울은 대한민국의 수도입니다!",
    "اللغة العربية جميلة، أليس كذلك؟",
    "Москва — столица России; население: 13 млн.",
    "Emoji 😀👍🏽 and flags 🇫🇷 next to ＦＵＬＬＷＩＤＴＨ！？",
    "Zero\u200bwidth\u200cjoiners\u200d and soft\u00adhyphens",
    "Ελληνικά: Καλημέρα κόσμε, τι κάνεις;",
    "हिन्दी भाषा में एक वाक्य।",
]


def _best_time(function, rounds):
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        function()
        best = min(best, time.process_time() - start)
    return best


def _run(name, lines, vocab_file, do_lower_case, rounds):
    from official.nlp.tools import tokenization as model_garden

    def ours_pass():
        tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case)
        return [tokenizer.tokenize(line) for line in lines]

    def theirs_pass():
        tokenizer = model_garden.FullTokenizer(vocab_file, do_lower_case)
        # Google's original limit; Model Garden's default is 400.
        tokenizer.wordpiece_tokenizer.max_input_chars_per_word = 200
        return [tokenizer.tokenize(line) for line in lines]

    if ours_pass() != theirs_pass():
        print(f"{name}: the two tokenizers DISAGREE; timings not meaningful")
    # Loading the vocabulary is part of each pass for both; time it apart so
    # the ratio reflects tokenization.
    load_ours = _best_time(
        lambda: tokenization.FullTokenizer(vocab_file, do_lower_case), rounds)
    load_theirs = _best_time(
        lambda: model_garden.FullTokenizer(vocab_file, do_lower_case), rounds)
    ours = _best_time(ours_pass, rounds) - load_ours
    theirs = _best_time(theirs_pass, rounds) - load_theirs
    words = sum(len(line.split()) for line in lines)
    print(f"{name:>24}: {len(lines):7d} lines {words:8d} words | "
          f"bert_tf {ours:7.3f} s | model garden {theirs:7.3f} s | "
          f"ratio {theirs / ours:5.1f}x")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat_corpus", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    corpus = (GOLDEN / "create_pretraining_data" / "corpus.txt").read_text(
        encoding="utf-8").splitlines()
    cased_vocab = GOLDEN / "models" / "cased_tiny" / "vocab.txt"
    uncased_vocab = GOLDEN / "models" / "uncased_vocab.txt"
    english = corpus * args.repeat_corpus
    multilingual = MULTILINGUAL_LINES * (len(english) // len(MULTILINGUAL_LINES))

    _run("english, uncased", english, uncased_vocab, True, args.rounds)
    _run("english, cased", english, cased_vocab, False, args.rounds)
    _run("multilingual, uncased", multilingual, uncased_vocab, True,
         args.rounds)
    _run("multilingual, cased", multilingual, cased_vocab, False, args.rounds)


if __name__ == "__main__":
    main()
