"""Benchmark: bert_tf's create_pretraining_data.py against Google's own.

Runs, each in its own subprocess, on the same real-text corpus with the
same flags: Google's original `create_pretraining_data.py` (unmodified,
under `tf.compat.v1` through `run_google_original.py`; give a checkout of
github.com/google-research/bert with --google_bert_dir or the
GOOGLE_BERT_DIR environment variable, or --skip_google), bert_tf at its
default `--num_workers` (chosen from the input size and the free
cores; the worker counts it chose are printed), with
`--num_workers=1` and with one worker per core, and Model Garden's port
(`official/nlp/data/create_pretraining_data.py`, whose masking draws differ
from Google's; --skip_peer leaves it out). It prints wall time, CPU time
(user + system, worker processes included), peak resident memory (the
largest single process) and records written of each, and each one's
speed-up over Google's script. Google's script and bert_tf write the same
records (tests/test_create_pretraining_data.py checks it against Google's
output); here the record counts are printed side by side.

The corpus (built in a temporary directory, never committed): the English
Wikipedia articles gensim ships as test data, as plain sentences, then the
docstrings of the Python standard library, the Lee news corpus (gensim) and
Python's help topics, one sentence per line and an empty line between
documents, until it reaches --corpus_mb megabytes. It needs gensim's files
only, not its dependencies:

  pip install --no-deps gensim==4.4.0

Usage:
  git clone https://github.com/google-research/bert /tmp/google-bert
  python benchmarks/create_pretraining_data.py --corpus_mb=1.07 \
      --google_bert_dir=/tmp/google-bert --skip_peer
  # Memory at scale: the corpus repeated to 50 MB, bert_tf only.
  python benchmarks/create_pretraining_data.py --corpus_mb=1.07 \
      --repeat_to_mb=50 --skip_google --skip_peer
  # Throughput against cores: 10 MB, 1 worker against one per core.
  python benchmarks/create_pretraining_data.py --corpus_mb=1.07 \
      --repeat_to_mb=10 --skip_google --skip_peer

Each bert_tf command runs --repeats times (default 3; the median wall time
is reported), Google's and Model Garden's once. Each run's throughput
(input MB a second) and each bert_tf run's speed-up
over `--num_workers=1` are printed last. The load average at the start is
printed first: on a shared machine the wall times depend on it, the CPU
times much less.
"""

import argparse
import ast
import bz2
import itertools
import os
import re
import subprocess
import sys
import sysconfig
import tempfile
import time
import xml.etree.ElementTree as ElementTree

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDEN_VOCAB = os.path.join(REPO_ROOT, "tests", "golden",
                            "models", "uncased_vocab.txt")
WIKI_DUMP = ("enwiki-latest-pages-articles1.xml-p000000010p000030302-"
             "shortened.bz2")

# A sentence ends at . ! or ? followed by space and a capital or a quote.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"(])")
_WIKI_MARKUP = [
    (re.compile(r"<!--.*?-->", re.S), ""),
    (re.compile(r"<ref[^>/]*/>|<ref[^>]*>.*?</ref>", re.S), ""),
    (re.compile(r"\{\|.*?\|\}", re.S), ""),                 # tables
    (re.compile(r"\[\[(?:File|Image|Category):[^\[\]]*"
                r"(?:\[\[[^\]]*\]\][^\[\]]*)*\]\]", re.I), ""),
    (re.compile(r"\[\[(?:[^\]|]*\|)?([^\]]*)\]\]"), r"\1"),  # [[a|b]] -> b
    (re.compile(r"\[https?://\S+ ?([^\]]*)\]"), r"\1"),
    (re.compile(r"<[^>]+>"), ""),
    (re.compile(r"'{2,}"), ""),                              # bold, italics
]
_TEMPLATE = re.compile(r"\{\{[^{}]*\}\}")


def _gensim_test_data():
    from bert_tf.corpora import package_files
    try:
        return package_files.package_file(
            "gensim", os.path.join("test", "test_data"), "gensim==4.4.0",
            "The benchmark corpus (gensim's test data)")
    except FileNotFoundError as error:
        sys.exit(str(error))


def _sentences(paragraphs):
    lines = []
    for paragraph in paragraphs:
        paragraph = " ".join(paragraph.split())
        if paragraph:
            lines.extend(s for s in _SENTENCE_END.split(paragraph) if s)
    return lines


def _wikipedia_documents(test_data):
    """Plain-text sentences of each article of gensim's Wikipedia dump."""
    with bz2.open(os.path.join(test_data, WIKI_DUMP)) as dump:
        for _, element in ElementTree.iterparse(dump):
            if not element.tag.endswith("}page"):
                continue
            text = element.findtext(".//{*}text") or ""
            namespace = element.findtext("{*}ns")
            element.clear()
            if namespace != "0" or text.lstrip().lower().startswith(
                    "#redirect"):
                continue
            for _ in range(5):  # Nested templates, innermost first.
                text, count = _TEMPLATE.subn("", text)
                if not count:
                    break
            for pattern, replacement in _WIKI_MARKUP:
                text = pattern.sub(replacement, text)
            paragraphs = [
                line.strip().lstrip("*#:; ") for line in text.split("\n")
                if line.strip() and not line.strip().startswith(
                    ("=", "|", "{", "}", "!"))]
            yield _sentences(paragraphs)


def _stdlib_docstring_documents():
    """The docstrings of each standard-library module, as sentences."""
    stdlib = sysconfig.get_paths()["stdlib"]
    for root, directories, files in os.walk(stdlib):
        directories[:] = sorted(
            d for d in directories
            if d not in ("test", "tests", "idlelib", "site-packages",
                         "lib2to3", "__pycache__"))
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            try:
                with open(os.path.join(root, name), encoding="utf-8") as f:
                    tree = ast.parse(f.read())
            except (SyntaxError, UnicodeDecodeError, ValueError):
                continue
            paragraphs = []
            for node in ast.walk(tree):
                if isinstance(node, (ast.Module, ast.ClassDef,
                                     ast.FunctionDef, ast.AsyncFunctionDef)):
                    docstring = ast.get_docstring(node)
                    if docstring:
                        paragraphs.extend(re.split(r"\n\s*\n", docstring))
            yield _sentences(paragraphs)


def _lee_and_help_documents(test_data):
    with open(os.path.join(test_data, "lee_background.cor"),
              encoding="utf-8") as reader:
        for line in reader:
            yield _sentences([line])
    import pydoc_data.topics
    for topic in sorted(pydoc_data.topics.topics):
        yield _sentences(re.split(r"\n\s*\n", pydoc_data.topics.topics[topic]))


def build_corpus(path, megabytes):
    """Writes at least `megabytes` MB of real text to `path`.

    Returns:
      (bytes written, number of documents).
    """
    test_data = _gensim_test_data()
    target = int(megabytes * 1e6)
    size = documents = 0
    sources = (_wikipedia_documents(test_data), _stdlib_docstring_documents(),
               _lee_and_help_documents(test_data))
    with open(path, "w", encoding="utf-8") as writer:
        for source in sources:
            for sentences in source:
                if not sentences:
                    continue
                text = "\n".join(sentences) + "\n\n"
                writer.write(text)
                size += len(text.encode("utf-8"))
                documents += 1
                if size >= target:
                    return size, documents
    if size < target:
        sys.exit(f"only {size / 1e6:.1f} MB of text available; use "
                 f"--corpus_mb={size / 1e6:.1f} or less")
    return size, documents


def run_measured(command, log_path):
    """Runs `command`; returns (wall s, cpu s, peak RSS MB, records, worker
    processes bert_tf used or None)."""
    start = time.perf_counter()
    with open(log_path, "w") as log:
        process = subprocess.Popen(command, stdout=log,
                                   stderr=subprocess.STDOUT, cwd=REPO_ROOT)
        # wait4 gives this child's own resource usage (with its waited-for
        # children: the tokenizer workers).
        _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    with open(log_path) as log:
        output = log.read()
    if process.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{output[-3000:]}")
    match = re.findall(r"Wrote (\d+) total instances", output)
    records = int(match[-1]) if match else -1
    workers = re.findall(r"Using (\d+) worker process", output)
    return (wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024,
            records, int(workers[-1]) if workers else None)


def repeat_corpus(path, megabytes):
    """Appends copies of the corpus at `path` until it holds `megabytes` MB.

    Returns:
      The bytes in the file.
    """
    with open(path, "rb") as reader:
        text = reader.read()
    size = len(text)
    with open(path, "ab") as writer:
        while size < megabytes * 1e6:
            writer.write(text)
            size += len(text)
    return size


def google_script(google_bert_dir):
    """Google's create_pretraining_data.py in `google_bert_dir`, or exit."""
    if not google_bert_dir:
        sys.exit("Google's script: pass --google_bert_dir (a checkout of "
                 "github.com/google-research/bert) or set GOOGLE_BERT_DIR, "
                 "or --skip_google")
    script = os.path.join(google_bert_dir, "create_pretraining_data.py")
    if not os.path.isfile(script) or not os.path.isfile(
            os.path.join(google_bert_dir, "tokenization.py")):
        sys.exit(f"--google_bert_dir={google_bert_dir} lacks "
                 f"create_pretraining_data.py or tokenization.py")
    return script


def same_records(path_a, path_b):
    """Whether two TFRecord files hold the same parsed tf.train.Examples.

    Parsed, not bytes: Google's records serialize the feature map in
    protobuf's order, which is not fixed.
    """
    import tensorflow as tf
    from google.protobuf import json_format

    def parsed(path):
        for record in tf.data.TFRecordDataset(path).as_numpy_iterator():
            yield json_format.MessageToDict(tf.train.Example.FromString(record))

    sentinel = object()
    return all(a == b for a, b in itertools.zip_longest(
        parsed(path_a), parsed(path_b), fillvalue=sentinel))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus_mb", type=float, default=5.0)
    parser.add_argument("--repeat_to_mb", type=float, default=0.0,
                        help="repeat the corpus until it is this large "
                             "(for memory at scale)")
    parser.add_argument("--dupe_factor", type=int, default=10)
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--max_predictions_per_seq", type=int, default=20)
    parser.add_argument("--vocab_file", default=GOLDEN_VOCAB)
    parser.add_argument("--google_bert_dir",
                        default=os.environ.get("GOOGLE_BERT_DIR"),
                        help="a checkout of google-research/bert (default: "
                             "$GOOGLE_BERT_DIR)")
    parser.add_argument("--skip_google", action="store_true",
                        help="leave out Google's script (minutes a MB)")
    parser.add_argument("--skip_peer", action="store_true",
                        help="leave out Model Garden's port")
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs of each bert_tf command; the one with "
                             "the median wall time is reported (a second "
                             "or so each: one run is at the mercy of the "
                             "machine's other work)")
    args = parser.parse_args()
    google = None if args.skip_google else google_script(args.google_bert_dir)

    with tempfile.TemporaryDirectory() as workdir:
        corpus = os.path.join(workdir, "corpus.txt")
        size, documents = build_corpus(corpus, args.corpus_mb)
        if args.repeat_to_mb:
            size = repeat_corpus(corpus, args.repeat_to_mb)
            documents = -1
        cores = len(os.sched_getaffinity(0))
        print(f"corpus: {size / 1e6:.2f} MB"
              + (f", {documents} documents" if documents >= 0 else
                 f" ({args.corpus_mb} MB repeated)")
              + f"; max_seq_length={args.max_seq_length} "
              f"dupe_factor={args.dupe_factor}; {cores} cores; load average "
              f"{os.getloadavg()[0]:.1f} at the start")
        flags = [f"--input_file={corpus}", f"--vocab_file={args.vocab_file}",
                 "--do_lower_case=True",
                 f"--max_seq_length={args.max_seq_length}",
                 f"--max_predictions_per_seq={args.max_predictions_per_seq}",
                 f"--dupe_factor={args.dupe_factor}"]
        ours = [sys.executable,
                os.path.join(REPO_ROOT, "create_pretraining_data.py")]
        runs = []
        if google is not None:
            runs.append(("Google's original", [
                sys.executable,
                os.path.join(REPO_ROOT, "benchmarks", "run_google_original.py"),
                google, *flags, f"--output_file={workdir}/google.tfrecord"]))
        runs += [
            ("bert_tf (default workers)", ours + flags + [
                f"--output_file={workdir}/ours.tfrecord"]),
            ("bert_tf --num_workers=1", ours + flags + [
                f"--output_file={workdir}/ours1.tfrecord",
                "--num_workers=1"]),
        ]
        if cores > 1:
            runs.append((f"bert_tf --num_workers={cores}", ours + flags + [
                f"--output_file={workdir}/ours_all.tfrecord",
                f"--num_workers={cores}"]))
        if not args.skip_peer:
            runs.append(("Model Garden", [
                sys.executable, "-m",
                "official.nlp.data.create_pretraining_data", *flags,
                f"--output_file={workdir}/peer.tfrecord"]))
        results = {}
        print(f"{'':28s}{'wall s':>9s}{'cpu s':>9s}{'peak MB':>9s}"
              f"{'records':>9s}")
        for name, command in runs:
            repeats = args.repeats if name.startswith("bert_tf") else 1
            measured = sorted(
                run_measured(command, os.path.join(workdir, "log.txt"))
                for _ in range(max(1, repeats)))
            results[name] = measured[len(measured) // 2]
            wall, cpu, peak, records, workers = results[name]
            print(f"{name:28s}{wall:9.2f}{cpu:9.2f}{peak:9.0f}{records:9d}"
                  + (f"   (median of {len(measured)}: "
                     + ", ".join(f"{m[0]:.2f}" for m in measured) + " s)"
                     if len(measured) > 1 else "")
                  + (f" workers: {sorted({m[4] for m in measured})}"
                     if "default" in name else ""), flush=True)
        if "Google's original" in results:
            print("records identical to Google's (parsed): "
                  + ("yes" if same_records(f"{workdir}/google.tfrecord",
                                           f"{workdir}/ours.tfrecord")
                     else "NO"), flush=True)
        one_worker = results.get("bert_tf --num_workers=1")
        if one_worker is not None:
            # Scaling with cores: input megabytes a second of each run, and
            # each bert_tf run's speed-up over one worker.
            for name, (wall, _, _, _, _) in results.items():
                line = f"{name}: {size / 1e6 / wall:.2f} MB/s"
                if name.startswith("bert_tf") and name != (
                        "bert_tf --num_workers=1"):
                    line += (f", {one_worker[0] / wall:.2f}x "
                             f"--num_workers=1")
                print(line)
        for reference in ("Google's original", "Model Garden"):
            if reference not in results:
                continue
            peer = results[reference]
            for name, (wall, cpu, peak, _, _) in results.items():
                if name.startswith("bert_tf"):
                    print(f"{reference} / {name}: {peer[0] / wall:.1f}x "
                          f"wall, {peer[1] / cpu:.1f}x cpu, "
                          f"{peer[2] / peak:.1f}x peak memory")


if __name__ == "__main__":
    main()
