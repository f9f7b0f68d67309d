"""Tokenizer speed: bert_tf's FullTokenizer against Model Garden's.

Model Garden's `official.nlp.tools.tokenization.FullTokenizer` is a port of
Google's original, character loops included, so its time is the time of the
original. Both tokenize the same lines; the script checks that they agree,
then prints the median time of each and the speed ratio. It asserts
nothing about time.

    python benchmarks/tokenizer.py [--repeat_corpus 10] [--rounds 3]
        [--max_load 1.5] [--wait_for_load SECONDS]

Texts:
  english      Google's golden corpus (Hamlet), repeated --repeat_corpus times.
  multilingual a mixed sample (accented Latin, CJK, Hangul, Arabic, Cyrillic,
               emoji, fullwidth punctuation), repeated likewise.
Each pass uses a fresh tokenizer (cold caches: the pass includes filling
bert_tf's word cache), so the ratio is not flattered by earlier passes. The
one-off per-process cost of bert_tf's Unicode tables (about 0.2 s, paid on
the first non-ASCII text) falls outside the timed passes. Times are CPU
times of this process (both tokenizers are single-threaded Python), so other
work on the machine disturbs them less than wall-clock times. The two
tokenizers alternate pass by pass for `--rounds` rounds; the median and
spread of each go into the run's record (`benchmarks/records.py`).
"""

import argparse
import os
import pathlib
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

import records  # noqa: E402  (benchmarks/records.py: the run's record)
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


def _cpu_seconds(function, rounds):
    """CPU seconds of each of `rounds` calls of `function`."""
    seconds = []
    for _ in range(rounds):
        start = time.process_time()
        function()
        seconds.append(time.process_time() - start)
    return seconds


def _run(record, name, lines, vocab_file, do_lower_case, rounds):
    """Times both tokenizers on `lines`; adds the measurement to `record`."""
    from official.nlp.tools import tokenization as model_garden

    def ours_pass():
        tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case)
        return [tokenizer.tokenize(line) for line in lines]

    def theirs_pass():
        tokenizer = model_garden.FullTokenizer(vocab_file, do_lower_case)
        # Google's original limit; Model Garden's default is 400.
        tokenizer.wordpiece_tokenizer.max_input_chars_per_word = 200
        return [tokenizer.tokenize(line) for line in lines]

    agree = ours_pass() == theirs_pass()
    if not agree:
        print(f"{name}: the two tokenizers DISAGREE; timings not meaningful")
    # Loading the vocabulary is part of each pass for both; time it apart so
    # the ratio reflects tokenization.
    load_ours = records.summarize(_cpu_seconds(
        lambda: tokenization.FullTokenizer(vocab_file, do_lower_case),
        rounds))["median"]
    load_theirs = records.summarize(_cpu_seconds(
        lambda: model_garden.FullTokenizer(vocab_file, do_lower_case),
        rounds))["median"]
    ours, theirs = [], []
    for _ in range(rounds):  # alternating, pass by pass
        ours += [seconds - load_ours for seconds in _cpu_seconds(ours_pass, 1)]
        theirs += [seconds - load_theirs
                   for seconds in _cpu_seconds(theirs_pass, 1)]
    words = sum(len(line.split()) for line in lines)
    measurement = record.add(
        name, {"bert_tf": ours, "model garden": theirs}, unit="CPU s",
        ratio=("bert_tf", "model garden"),
        details={"lines": len(lines), "words": words,
                 "tokenizers_agree": agree})
    ours, theirs = (measurement["contenders"][contender]
                    for contender in ("bert_tf", "model garden"))
    print(f"{name:>24}: {len(lines):7d} lines {words:8d} words | "
          f"bert_tf {ours['median']:7.3f} s (spread {ours['spread']:.0%}) | "
          f"model garden {theirs['median']:7.3f} s "
          f"(spread {theirs['spread']:.0%}) | "
          f"ratio {measurement['ratio']['value']:5.1f}x", flush=True)


def build_parser():
    """The script's flags (tests parse the docs' commands with it)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat_corpus", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    records.add_arguments(parser)
    return parser


def main():
    parser = build_parser()
    args = parser.parse_args()
    if args.rounds <= 0 or args.repeat_corpus <= 0:
        parser.error("--rounds and --repeat_corpus must be positive")
    record = records.Record("tokenizer", args)

    corpus = (GOLDEN / "create_pretraining_data" / "corpus.txt").read_text(
        encoding="utf-8").splitlines()
    cased_vocab = GOLDEN / "models" / "cased_tiny" / "vocab.txt"
    uncased_vocab = GOLDEN / "models" / "uncased_vocab.txt"
    english = corpus * args.repeat_corpus
    multilingual = MULTILINGUAL_LINES * (len(english) // len(MULTILINGUAL_LINES))

    for name, lines, vocab_file, do_lower_case in (
            ("english, uncased", english, uncased_vocab, True),
            ("english, cased", english, cased_vocab, False),
            ("multilingual, uncased", multilingual, uncased_vocab, True),
            ("multilingual, cased", multilingual, cased_vocab, False)):
        _run(record, name, lines, vocab_file, do_lower_case, args.rounds)
    record.write()


if __name__ == "__main__":
    main()
