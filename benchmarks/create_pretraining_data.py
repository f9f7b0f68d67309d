"""Benchmark: bert_tf's create_pretraining_data.py against Model Garden's.

Runs both scripts, each in its own subprocess, on the same real-text corpus
with the same flags, and prints wall time, CPU time (user + system, worker
processes included) and peak resident memory of each, and the ratios.
Model Garden's `official/nlp/data/create_pretraining_data.py` is a port of
Google's script whose masking draws differ, so only speed and memory are
compared, not the records.

The corpus (built in a temporary directory, never committed): the English
Wikipedia articles gensim ships as test data, as plain sentences, then the
docstrings of the Python standard library, the Lee news corpus (gensim) and
Python's help topics, one sentence per line and an empty line between
documents, until it reaches --corpus_mb megabytes. It needs gensim's files
only, not its dependencies:

  pip install --no-deps gensim==4.4.0

Usage:
  python benchmarks/create_pretraining_data.py [--corpus_mb=5]
      [--dupe_factor=10] [--max_seq_length=128] [--skip_peer]
"""

import argparse
import ast
import bz2
import importlib.util
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
    spec = importlib.util.find_spec("gensim")
    if spec is None or spec.origin is None:
        sys.exit("The benchmark corpus comes from gensim's test data: "
                 "pip install --no-deps gensim==4.4.0")
    return os.path.join(os.path.dirname(spec.origin), "test", "test_data")


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
    """Runs `command`; returns (wall s, cpu s, peak RSS MB, records)."""
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
    return (wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024,
            records)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus_mb", type=float, default=5.0)
    parser.add_argument("--dupe_factor", type=int, default=10)
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--max_predictions_per_seq", type=int, default=20)
    parser.add_argument("--vocab_file", default=GOLDEN_VOCAB)
    parser.add_argument("--skip_peer", action="store_true",
                        help="run bert_tf only (Model Garden takes minutes)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as workdir:
        corpus = os.path.join(workdir, "corpus.txt")
        size, documents = build_corpus(corpus, args.corpus_mb)
        print(f"corpus: {size / 1e6:.2f} MB, {documents} documents; "
              f"max_seq_length={args.max_seq_length} "
              f"dupe_factor={args.dupe_factor}")
        flags = [f"--input_file={corpus}", f"--vocab_file={args.vocab_file}",
                 "--do_lower_case=True",
                 f"--max_seq_length={args.max_seq_length}",
                 f"--max_predictions_per_seq={args.max_predictions_per_seq}",
                 f"--dupe_factor={args.dupe_factor}"]
        ours = [sys.executable,
                os.path.join(REPO_ROOT, "create_pretraining_data.py")]
        runs = [
            ("bert_tf (all cores)", ours + flags + [
                f"--output_file={workdir}/ours.tfrecord"]),
            ("bert_tf --num_workers=1", ours + flags + [
                f"--output_file={workdir}/ours1.tfrecord",
                "--num_workers=1"]),
        ]
        if not args.skip_peer:
            runs.append(("Model Garden", [
                sys.executable, "-m",
                "official.nlp.data.create_pretraining_data", *flags,
                f"--output_file={workdir}/peer.tfrecord"]))
        results = {}
        print(f"{'':26s}{'wall s':>9s}{'cpu s':>9s}{'peak MB':>9s}"
              f"{'records':>9s}")
        for name, command in runs:
            results[name] = run_measured(
                command, os.path.join(workdir, "log.txt"))
            wall, cpu, peak, records = results[name]
            print(f"{name:26s}{wall:9.1f}{cpu:9.1f}{peak:9.0f}{records:9d}",
                  flush=True)
        if "Model Garden" in results:
            peer = results["Model Garden"]
            for name in ("bert_tf (all cores)", "bert_tf --num_workers=1"):
                wall, cpu, peak, _ = results[name]
                print(f"Model Garden / {name}: {peer[0] / wall:.1f}x wall, "
                      f"{peer[1] / cpu:.1f}x cpu, {peer[2] / peak:.1f}x "
                      f"peak memory")


if __name__ == "__main__":
    main()
