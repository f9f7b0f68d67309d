"""create_pretraining_data: Google-exact instances, records, bad input.

References: Google's own output on Hamlet (golden records), hand-worked
examples with a scripted RNG (every call Google's algorithm makes, in order),
protobuf/TensorFlow's own serialization and TFRecord reader, RFC 3720's
CRC-32C test vectors, and `FullTokenizer` / Model Garden's tokenizer.
"""

import gzip
import json
import logging
import os
import random

import numpy as np
import pytest

from bert_tf import file_io
from bert_tf.data import tfrecord_files
from bert_tf.pretraining import corpus as pretraining_corpus
from bert_tf.pretraining import exact_random
from bert_tf.pretraining import instances as pretraining_instances
from bert_tf.pretraining import records as pretraining_records
from bert_tf.pretraining.errors import PretrainingDataError
from bert_tf.text import tokenization

from runner_harness import run_runner

# Google's flags for the golden run (see tests/golden/README.md).
GOLDEN_FLAGS = dict(max_seq_length=64, max_predictions_per_seq=10,
                    random_seed=4242, dupe_factor=2, masked_lm_prob=0.15,
                    short_seq_prob=0.1)

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ["a", "b", "c", "d", "e", "f", "g", "h", "x", "y", "z", "is",
         "great", "un", "##aff", "##able"]


@pytest.fixture(scope="module")
def tf():
    import tensorflow
    return tensorflow


@pytest.fixture
def tiny_vocab_file(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(SPECIAL + WORDS) + "\n", encoding="utf-8")
    return str(path)


def _tokenizer(vocab_file, do_lower_case=True):
    return pretraining_corpus.load_tokenizer(vocab_file, do_lower_case)


def _corpus(tmp_path, text, tokenizer, name="corpus.txt"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return pretraining_corpus.tokenize_corpus([str(path)], tokenizer)


def _parse_records(tf, paths, max_seq_length, max_predictions_per_seq):
    """Every record of `paths` (in file order), parsed by TensorFlow."""
    spec = pretraining_records.pretraining_feature_spec(
        max_seq_length, max_predictions_per_seq)
    records = []
    for path in paths:
        for batch in tf.data.TFRecordDataset(str(path)).batch(4096):
            features = {name: value.numpy().tolist() for name, value in
                        tf.io.parse_example(batch, spec).items()}
            for i in range(len(features["input_ids"])):
                records.append({name: values[i]
                                for name, values in features.items()})
    return records


class ScriptedRandom(random.Random):
    """An RNG that returns scripted values and checks every call.

    `script` lists the calls Google's algorithm must make, in order:
    ("random", value), ("randbelow", n, value), ("shuffle", length, perm)
    where perm lists the old indices in their new order (None: unchanged).
    """

    def __init__(self, script):
        super().__init__(0)
        self.script = list(script)

    def _next(self, kind):
        assert self.script, f"unexpected extra call: {kind}"
        call = self.script.pop(0)
        assert call[0] == kind, f"expected {call}, got a {kind} call"
        return call

    def random(self):
        return self._next("random")[1]

    def _randbelow(self, n):
        _, bound, value = self._next("randbelow")
        assert n == bound, f"randbelow({n}) where the script has {bound}"
        return value

    def shuffle(self, items):
        _, length, permutation = self._next("shuffle")
        assert len(items) == length, (
            f"shuffle of {len(items)} items where the script has {length}")
        if permutation is not None:
            reordered = [items[i] for i in permutation]
            for index, item in enumerate(reordered):
                items[index] = item


def _instances(store, corpus, vocab, order=None):
    """(tokens, segment_ids, positions, labels, next_sentence_label)."""
    result = []
    for index in (order if order is not None else range(len(store))):
        ids, segments, positions, labels, label = (
            pretraining_instances.instance_features(store, index, corpus,
                                                    vocab))
        result.append((
            [vocab.id_to_token[i] for i in ids], segments, positions,
            [vocab.id_to_token[i] for i in labels], label))
    return result


# --------------------------------------------------------------------------
# Google's golden output.
# --------------------------------------------------------------------------

@pytest.mark.parametrize("draws", ["c_extension", "python"])
def test_reproduces_googles_records(tmp_path, golden_dir, uncased_vocab_file,
                                    tf, draws, monkeypatch, request):
    # Both ways of making Google's RNG draws (exact_random).
    if draws == "python":
        monkeypatch.setattr(exact_random, "_native", None)
    else:
        request.getfixturevalue("c_extension")
    output = tmp_path / "out.tfrecord"
    written = pretraining_instances.create_pretraining_data(
        input_files=[str(golden_dir / "create_pretraining_data" /
                         "corpus.txt")],
        output_files=[str(output)],
        tokenizer=_tokenizer(uncased_vocab_file, True),
        num_workers=1, **GOLDEN_FLAGS)
    expected_path = (golden_dir / "create_pretraining_data" /
                     "expected.decoded.jsonl.gz")
    with gzip.open(expected_path, "rt") as reader:
        expected = [json.loads(line) for line in reader]
    actual = _parse_records(tf, [output], 64, 10)
    assert written == len(expected) == 2094
    assert len(actual) == len(expected)
    for index, (want, got) in enumerate(zip(expected, actual)):
        assert got == want, f"record {index} differs"


def test_output_identical_for_every_num_workers(tmp_path, golden_dir,
                                                uncased_vocab_file,
                                                monkeypatch):
    # Small spans of records, so that several worker processes build them.
    monkeypatch.setattr(pretraining_instances, "_RECORDS_PER_BATCH", 97)
    corpus = str(golden_dir / "create_pretraining_data" / "corpus.txt")
    tokenizer = _tokenizer(uncased_vocab_file, True)
    outputs = {}
    for workers in (1, 2, 3):
        paths = [str(tmp_path / f"w{workers}_{i}.tfrecord") for i in range(2)]
        pretraining_instances.create_pretraining_data(
            [corpus], paths, tokenizer, num_workers=workers,
            max_seq_length=48, max_predictions_per_seq=7, random_seed=7,
            dupe_factor=1, do_whole_word_mask=True)
        outputs[workers] = [open(p, "rb").read() for p in paths]
    assert outputs[1] == outputs[2] == outputs[3]
    assert outputs[1][0] and outputs[1][1]


def _store_arrays(corpus, vocab, use_c_loop, monkeypatch, seed,
                  documents_per_call=None, **flags):
    with monkeypatch.context() as patch:
        if not use_c_loop:
            patch.setattr(exact_random, "_native", None)
        if documents_per_call:
            patch.setattr(pretraining_instances, "_DOCUMENTS_PER_NATIVE_CALL",
                          documents_per_call)
        store, order = pretraining_instances.create_training_instances(
            corpus, vocab, random.Random(seed), **flags)
    return (store.fields.tolist(), store.positions.tolist(),
            store.replacements.tolist(), store.mask_offsets.tolist(),
            order.tolist())


@pytest.mark.parametrize("flags", [
    dict(max_seq_length=128, dupe_factor=2, short_seq_prob=0.1,
         masked_lm_prob=0.15, max_predictions_per_seq=20),
    dict(max_seq_length=24, dupe_factor=3, short_seq_prob=0.6,
         masked_lm_prob=0.4, max_predictions_per_seq=5,
         do_whole_word_mask=True),
    dict(max_seq_length=7, dupe_factor=2, short_seq_prob=1.0,
         masked_lm_prob=0.9, max_predictions_per_seq=9,
         do_whole_word_mask=True),
    dict(max_seq_length=300, dupe_factor=1, short_seq_prob=0.0,
         masked_lm_prob=0.15, max_predictions_per_seq=80,
         do_whole_word_mask=True),
])
def test_c_instance_loop_equals_the_python_loop(golden_dir,
                                                uncased_vocab_file, flags,
                                                monkeypatch, c_extension):
    # The Python loop is the one the hand-worked tests below check draw by
    # draw; the C loop (bert_tf/pretraining/_native.c) must make the
    # same instances. The golden test above checks both against Google's.
    tokenizer = _tokenizer(uncased_vocab_file, True)
    corpus = pretraining_corpus.tokenize_corpus(
        [str(golden_dir / "create_pretraining_data" / "corpus.txt")],
        tokenizer)
    vocab = pretraining_instances.PretrainingVocab(tokenizer.vocab)
    assert corpus.num_documents > 3
    for seed in (1, 99):
        in_c = _store_arrays(corpus, vocab, True, monkeypatch, seed, **flags)
        # The C loop called on ranges of 3 documents at a time.
        in_c_ranges = _store_arrays(corpus, vocab, True, monkeypatch, seed,
                                    documents_per_call=3, **flags)
        in_python = _store_arrays(corpus, vocab, False, monkeypatch, seed,
                                  **flags)
        assert len(in_c[0]) > 0
        assert in_c == in_python
        assert in_c_ranges == in_python


def test_c_instance_loop_equals_the_python_loop_on_chinese_words(
        tmp_path, monkeypatch, c_extension):
    # Words of one to four characters, pre-segmented with spaces, and some
    # English words with "##" pieces between them.
    rng = random.Random(4)
    characters = [chr(0x4E00 + k) for k in range(40)]
    lines = []
    for _ in range(12):
        for _ in range(rng.randint(1, 9)):
            lines.append(" ".join(
                "".join(rng.choice(characters)
                        for _ in range(rng.randint(1, 4)))
                if rng.random() < 0.8 else rng.choice(["playing", "unhappy"])
                for _ in range(rng.randint(2, 14))))
        lines.append("")
    (tmp_path / "corpus.txt").write_text("\n".join(lines), encoding="utf-8")
    (tmp_path / "vocab.txt").write_text("\n".join(
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "play", "##ing",
         "un", "##happy"] + characters) + "\n", encoding="utf-8")
    tokenizer = _tokenizer(tmp_path / "vocab.txt", True)
    corpus = pretraining_corpus.tokenize_corpus(
        [str(tmp_path / "corpus.txt")], tokenizer, word_segmentation="spaces")
    assert any(corpus.joins_previous)
    vocab = pretraining_instances.PretrainingVocab(tokenizer.vocab)
    flags = dict(max_seq_length=20, dupe_factor=4, short_seq_prob=0.3,
                 masked_lm_prob=0.3, max_predictions_per_seq=6,
                 do_whole_word_mask=True)
    in_c = _store_arrays(corpus, vocab, True, monkeypatch, 3, **flags)
    in_python = _store_arrays(corpus, vocab, False, monkeypatch, 3, **flags)
    assert in_c == in_python


# --------------------------------------------------------------------------
# Hand-worked instances: every RNG call and its effect.
# --------------------------------------------------------------------------

def test_truncation_cuts_b_on_ties_and_a_only_when_longer(tmp_path,
                                                          tiny_vocab_file):
    tokenizer = _tokenizer(tiny_vocab_file)
    corpus = _corpus(tmp_path, "a b c d\ne f g h\n\nx y\n", tokenizer)
    vocab = pretraining_instances.PretrainingVocab(tokenizer.vocab)
    rng = ScriptedRandom([
        ("shuffle", 2, None),          # documents
        # Document 0: target 6 = max_seq_length 9 - 3.
        ("random", 0.9),               # >= short_seq_prob: full target
        ("randbelow", 1, 0),           # a_end = 1 (chunk of 2 sentences)
        ("random", 0.7),               # >= 0.5: actual next
        ("random", 0.2),               # 4 vs 4, a tie: B loses its front
        ("random", 0.8),               # 4 vs 3: A loses its back
        ("shuffle", 6, [5, 4, 3, 2, 1, 0]),  # candidates 1,2,3,5,6,7
        ("random", 0.5),               # < 0.8: [MASK]
        # Document 1: one sentence, so a random next without a draw.
        ("random", 0.9),
        ("randbelow", 2, 1),           # itself: try again
        ("randbelow", 2, 0),           # document 0
        ("randbelow", 2, 1),           # from its second sentence
        ("shuffle", 6, None),
        ("random", 0.85),              # >= 0.8 ...
        ("random", 0.3),               # ... < 0.5: keep the token
        ("shuffle", 2, [1, 0]),        # instances
    ])
    store, order = pretraining_instances.create_training_instances(
        corpus, vocab, rng, max_seq_length=9, dupe_factor=1,
        short_seq_prob=0.1, masked_lm_prob=0.15, max_predictions_per_seq=5)
    assert rng.script == []
    assert list(order) == [1, 0]
    first, second = _instances(store, corpus, vocab)
    assert first == (
        ["[CLS]", "a", "b", "c", "[SEP]", "f", "g", "[MASK]", "[SEP]"],
        [0, 0, 0, 0, 0, 1, 1, 1, 1], [7], ["h"], 0)
    assert second == (
        ["[CLS]", "x", "y", "[SEP]", "e", "f", "g", "h", "[SEP]"],
        [0, 0, 0, 0, 1, 1, 1, 1, 1], [1], ["x"], 1)


def test_sentence_order_pairs_are_swapped_or_in_order(tmp_path,
                                                      tiny_vocab_file):
    """ALBERT's SOP: B is always A's continuation (a one-sentence chunk is
    split at a token), one draw swaps them (label 1); a one-token chunk
    makes no instance. Hand-worked, every draw scripted."""
    tokenizer = _tokenizer(tiny_vocab_file)
    corpus = _corpus(tmp_path, "a b c d\ne f g h\n\nx y\n\nz\n", tokenizer)
    vocab = pretraining_instances.PretrainingVocab(tokenizer.vocab)
    rng = ScriptedRandom([
        ("shuffle", 3, None),          # documents
        # Document 0, target 6 = max_seq_length 9 - 3.
        ("random", 0.9),
        ("randbelow", 1, 0),           # a_end = 1: "a b c d" | "e f g h"
        ("random", 0.3),               # < 0.5: swapped, label 1
        ("random", 0.2),               # 4 vs 4, a tie: B loses its front
        ("random", 0.8),               # 4 vs 3: A loses its back
        ("shuffle", 6, [5, 4, 3, 2, 1, 0]),  # candidates 1,2,3,5,6,7
        ("random", 0.5),               # [MASK]
        # Document 1: one sentence of 2 tokens, split after 1 + 0.
        ("random", 0.9),
        ("randbelow", 1, 0),
        ("random", 0.7),               # in order, label 0
        ("shuffle", 2, [1, 0]),        # candidates 1, 3
        ("random", 0.85),              # >= 0.8 ...
        ("random", 0.3),               # ... < 0.5: keep the token
        # Document 2: one token, no pair: only its target is drawn.
        ("random", 0.9),
        ("shuffle", 2, None),          # instances
    ])
    store, _ = pretraining_instances.create_training_instances(
        corpus, vocab, rng, max_seq_length=9, dupe_factor=1,
        short_seq_prob=0.1, masked_lm_prob=0.15, max_predictions_per_seq=5,
        sentence_order=True)
    assert rng.script == []
    first, second = _instances(store, corpus, vocab)
    assert first == (
        ["[CLS]", "e", "f", "g", "[SEP]", "b", "c", "[MASK]", "[SEP]"],
        [0, 0, 0, 0, 0, 1, 1, 1, 1], [7], ["d"], 1)
    assert second == (["[CLS]", "x", "[SEP]", "y", "[SEP]"],
                      [0, 0, 0, 1, 1], [3], ["y"], 0)


def test_sentence_order_pairs_stay_in_one_document(tmp_path,
                                                   uncased_vocab_file):
    """On a real corpus: about half the pairs swapped, and both halves of
    every pair from one document, the first half before the second (no
    random B)."""
    documents = [[f"the {word} sat on the mat number {d} line {k} ."
                  for k in range(6)]
                 for d, word in enumerate(["cat", "dog"] * 20)]
    (tmp_path / "corpus.txt").write_text(
        "\n\n".join("\n".join(doc) for doc in documents) + "\n")
    tokenizer = _tokenizer(uncased_vocab_file)
    corpus = pretraining_corpus.tokenize_corpus(
        [str(tmp_path / "corpus.txt")], tokenizer)
    vocab = pretraining_instances.PretrainingVocab(tokenizer.vocab)
    store, _ = pretraining_instances.create_training_instances(
        corpus, vocab, random.Random(3), max_seq_length=48, dupe_factor=3,
        short_seq_prob=0.1, masked_lm_prob=0.15, max_predictions_per_seq=7,
        sentence_order=True)
    fields = np.frombuffer(store.fields, dtype=f"i{store.fields.itemsize}"
                           ).reshape(-1, 6)
    labels = fields[:, 4]
    assert 0.35 < labels.mean() < 0.65, labels.mean()
    starts = np.asarray(corpus.document_starts)
    sentence_starts = np.asarray(corpus.sentence_starts)
    for a_start, a_length, b_start, b_length, label, _ in fields:
        first, second = (a_start, b_start) if label == 0 else (b_start,
                                                                 a_start)
        # Both halves in one document, the first before the second.
        document = np.searchsorted(sentence_starts[starts], first,
                                   side="right")
        assert np.searchsorted(sentence_starts[starts], second,
                               side="right") == document
        assert first < second


def test_random_next_puts_unused_sentences_back(tmp_path, tiny_vocab_file):
    tokenizer = _tokenizer(tiny_vocab_file)
    corpus = _corpus(tmp_path, "a b\nc d\ne f\n\nx y z\n", tokenizer)
    vocab = pretraining_instances.PretrainingVocab(tokenizer.vocab)
    rng = ScriptedRandom([
        ("shuffle", 2, None),
        # Document 0, target 5: the chunk "a b | c d | e f" reaches 6.
        ("random", 0.9),
        ("randbelow", 2, 0),           # a_end = 1: A = "a b"
        ("random", 0.1),               # random next
        ("randbelow", 2, 1),           # document 1
        ("randbelow", 1, 0),           # its sentence 0: B = "x y z"
        ("shuffle", 5, None),
        ("random", 0.1),
        # "c d | e f" went back: the next chunk starts at "c d".
        ("randbelow", 1, 0),           # a_end = 1
        ("random", 0.6),               # actual next: B = "e f"
        ("shuffle", 4, None),
        ("random", 0.1),
        # Document 1.
        ("random", 0.9),
        ("randbelow", 2, 0),           # document 0 at the first try
        ("randbelow", 3, 2),           # from "e f": 2 tokens reach 5 - 3
        ("shuffle", 5, None),
        ("random", 0.1),
        ("shuffle", 3, None),
    ])
    store, _ = pretraining_instances.create_training_instances(
        corpus, vocab, rng, max_seq_length=8, dupe_factor=1,
        short_seq_prob=0.1, masked_lm_prob=0.15, max_predictions_per_seq=5)
    assert rng.script == []
    tokens = [instance[0] for instance in _instances(store, corpus, vocab)]
    assert tokens == [
        ["[CLS]", "[MASK]", "b", "[SEP]", "x", "y", "z", "[SEP]"],
        ["[CLS]", "[MASK]", "d", "[SEP]", "e", "f", "[SEP]"],
        ["[CLS]", "[MASK]", "y", "z", "[SEP]", "e", "f", "[SEP]"],
    ]
    labels = [instance[4] for instance in _instances(store, corpus, vocab)]
    assert labels == [1, 0, 1]


def test_short_target_and_ten_tries_for_another_document(tmp_path,
                                                         tiny_vocab_file):
    tokenizer = _tokenizer(tiny_vocab_file)
    corpus = _corpus(tmp_path, "a b c\n\nx\n", tokenizer)
    vocab = pretraining_instances.PretrainingVocab(tokenizer.vocab)
    # Document 0 ("a b c") draws itself 10 times: the 10th draw is used.
    script = [("shuffle", 2, None),
              ("random", 0.05),            # < short_seq_prob ...
              ("randbelow", 3, 1)]         # ... target = randint(2, 4) = 3
    script += [("randbelow", 2, 0)] * 10
    script += [("randbelow", 1, 0),        # B = "a b c" from document 0
               ("random", 0.9),            # 3 vs 3: B loses its back
               ("random", 0.9),            # 3 vs 2: A loses its back
               ("shuffle", 4, None), ("random", 0.1),
               # Document 1 ("x"): target 4, B needs 3 tokens.
               ("random", 0.9), ("randbelow", 2, 0), ("randbelow", 1, 0),
               ("shuffle", 4, None), ("random", 0.1),
               ("shuffle", 2, None)]
    rng = ScriptedRandom(script)
    store, _ = pretraining_instances.create_training_instances(
        corpus, vocab, rng, max_seq_length=7, dupe_factor=1,
        short_seq_prob=0.1, masked_lm_prob=0.15, max_predictions_per_seq=5)
    assert rng.script == []
    tokens = [instance[0] for instance in _instances(store, corpus, vocab)]
    assert tokens == [["[CLS]", "[MASK]", "b", "[SEP]", "a", "b", "[SEP]"],
                      ["[CLS]", "[MASK]", "[SEP]", "a", "b", "c", "[SEP]"]]


def _whole_word_case(tmp_path, tiny_vocab_file, group_order, draws,
                     do_whole_word_mask=True):
    tokenizer = _tokenizer(tiny_vocab_file)
    # "unaffable" is un ##aff ##able.
    corpus = _corpus(tmp_path, "is unaffable\nunaffable great\n", tokenizer)
    vocab = pretraining_instances.PretrainingVocab(tokenizer.vocab)
    script = [("shuffle", 1, None), ("random", 0.9), ("randbelow", 1, 0),
              ("random", 0.7),
              ("random", 0.1),    # 4 vs 4: B loses its front ("un")
              ("random", 0.9)]    # 4 vs 3: A loses its back ("##able")
    script += [("shuffle", len(group_order), group_order)]
    script += draws + [("shuffle", 1, None)]
    rng = ScriptedRandom(script)
    store, _ = pretraining_instances.create_training_instances(
        corpus, vocab, rng, max_seq_length=9, dupe_factor=1,
        short_seq_prob=0.1, masked_lm_prob=0.5, max_predictions_per_seq=20,
        do_whole_word_mask=do_whole_word_mask)
    assert rng.script == []
    [instance] = _instances(store, corpus, vocab)
    return instance


def test_whole_word_groups_span_the_separator_and_skip_overflows(
        tmp_path, tiny_vocab_file):
    # [CLS] is un ##aff [SEP] ##aff ##able great [SEP]: groups [1],
    # [2, 3, 5, 6] ("##aff" after [SEP] continues "un ##aff"), [7].
    # num_to_predict = round(9 * 0.5) = 4 (round half to even).
    # Groups in the order [7], [2, 3, 5, 6], [1]: the big one would make 5.
    tokens, _, positions, labels, _ = _whole_word_case(
        tmp_path, tiny_vocab_file, [2, 1, 0],
        [("random", 0.5),                              # 7: [MASK]
         ("random", 0.9), ("random", 0.9),             # 1: a random word,
         ("randbelow", len(SPECIAL) + len(WORDS), 5)])  # the 6th: "a"
    assert tokens == ["[CLS]", "a", "un", "##aff", "[SEP]", "##aff",
                      "##able", "[MASK]", "[SEP]"]
    assert positions == [1, 7]
    assert labels == ["is", "great"]


def test_whole_word_group_taken_whole(tmp_path, tiny_vocab_file):
    tokens, _, positions, labels, _ = _whole_word_case(
        tmp_path, tiny_vocab_file, [1, 0, 2],
        [("random", 0.1)] * 4)           # 4 masked: the limit, then stop
    assert positions == [2, 3, 5, 6]
    assert labels == ["un", "##aff", "##aff", "##able"]
    assert tokens[1] == "is" and tokens[7] == "great"


def test_without_whole_word_mask_pieces_are_separate(tmp_path,
                                                     tiny_vocab_file):
    # Six single-position candidates 1, 2, 3, 5, 6, 7; the first 4 count.
    tokens, _, positions, labels, _ = _whole_word_case(
        tmp_path, tiny_vocab_file, [2, 5, 0, 4, 1, 3],
        [("random", 0.1)] * 4, do_whole_word_mask=False)
    assert positions == [1, 3, 6, 7]
    assert labels == ["is", "##aff", "##able", "great"]


def test_single_document_warns_and_draws_from_itself(tmp_path,
                                                     tiny_vocab_file, caplog):
    tokenizer = _tokenizer(tiny_vocab_file)
    corpus = _corpus(tmp_path, "a b\nc d\ne f\n", tokenizer, name="one.txt")
    vocab = pretraining_instances.PretrainingVocab(tokenizer.vocab)
    with caplog.at_level(logging.WARNING):
        store, _ = pretraining_instances.create_training_instances(
            corpus, vocab, random.Random(3), max_seq_length=7,
            dupe_factor=2, short_seq_prob=0.1, masked_lm_prob=0.15,
            max_predictions_per_seq=3)
    assert "single document" in caplog.text
    assert "one.txt" in caplog.text
    assert len(store) > 0


# --------------------------------------------------------------------------
# Statistics over many instances (real RNG).
# --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def random_text_instances(tmp_path_factory, uncased_vocab_file):
    """Instances of a generated corpus of common words, max_seq_length 128."""
    words = ["the", "king", "queen", "castle", "walks", "slowly", "into",
             "a", "dark", "hall", "and", "speaks", "unbelievably", "."]
    rng = random.Random(11)
    lines = []
    for _ in range(60):
        for _ in range(25):
            lines.append(" ".join(rng.choice(words)
                                  for _ in range(rng.randint(5, 20))))
        lines.append("")
    path = tmp_path_factory.mktemp("stats") / "text.txt"
    path.write_text("\n".join(lines), encoding="utf-8")
    tokenizer = _tokenizer(uncased_vocab_file)
    corpus = pretraining_corpus.tokenize_corpus([str(path)], tokenizer)
    vocab = pretraining_instances.PretrainingVocab(tokenizer.vocab)
    store, order = pretraining_instances.create_training_instances(
        corpus, vocab, random.Random(5), max_seq_length=128, dupe_factor=5,
        short_seq_prob=0.1, masked_lm_prob=0.15, max_predictions_per_seq=20)
    features = [pretraining_instances.instance_features(store, k, corpus,
                                                        vocab)
                for k in order]
    return vocab, features


def test_about_15_percent_of_tokens_are_masked(random_text_instances):
    vocab, features = random_text_instances
    masked = sum(len(positions) for _, _, positions, _, _ in features)
    ordinary = sum(len(ids) - 3 for ids, _, _, _, _ in features)
    assert len(features) > 500
    assert 0.14 < masked / ordinary < 0.165
    for ids, segments, positions, labels, _ in features:
        sep = segments.index(1) - 1
        assert positions == sorted(positions)
        assert 0 not in positions and sep not in positions
        assert len(ids) - 1 not in positions
        assert all(label not in (vocab.cls_id, vocab.sep_id)
                   for label in labels)


def test_masked_positions_split_80_10_10(random_text_instances):
    vocab, features = random_text_instances
    counts = {"mask": 0, "keep": 0, "random": 0}
    for ids, _, positions, labels, _ in features:
        for position, label in zip(positions, labels):
            if ids[position] == vocab.mask_id:
                counts["mask"] += 1
            elif ids[position] == label:
                counts["keep"] += 1
            else:
                counts["random"] += 1
    total = sum(counts.values())
    assert total > 10000
    for kind, share in (("mask", 0.8), ("keep", 0.1), ("random", 0.1)):
        sigma = (share * (1 - share) / total) ** 0.5
        assert abs(counts[kind] / total - share) < 5 * sigma, counts


def test_next_sentence_is_random_about_half_the_time(random_text_instances):
    _, features = random_text_instances
    share = sum(label for *_, label in features) / len(features)
    assert 0.4 < share < 0.6


# --------------------------------------------------------------------------
# Records: layout, encoding, framing, atomic files.
# --------------------------------------------------------------------------

def test_record_layout_and_padding(tmp_path, tiny_vocab_file, tf):
    tokenizer = _tokenizer(tiny_vocab_file)
    text = "a b c\nd e\nf g h\n\nx y z\ngreat\n\nis un\n"
    input_path = tmp_path / "in.txt"
    input_path.write_text(text, encoding="utf-8")
    outputs = [tmp_path / "r0.tfrecord", tmp_path / "r1.tfrecord"]
    written = pretraining_instances.create_pretraining_data(
        [str(input_path)], [str(p) for p in outputs], tokenizer,
        max_seq_length=12, max_predictions_per_seq=4, random_seed=1,
        dupe_factor=5)
    records = _parse_records(tf, outputs, 12, 4)
    assert len(records) == written > 4
    vocab = tokenizer.vocab
    for record in records:
        ids = record["input_ids"]
        length = sum(record["input_mask"])
        assert record["input_mask"] == [1] * length + [0] * (12 - length)
        assert ids[0] == vocab["[CLS]"] and ids[length - 1] == vocab["[SEP]"]
        assert ids[length:] == [0] * (12 - length)
        first_sep = ids.index(vocab["[SEP]"])
        assert record["segment_ids"] == (
            [0] * (first_sep + 1) + [1] * (length - first_sep - 1)
            + [0] * (12 - length))
        count = sum(1 for w in record["masked_lm_weights"] if w == 1.0)
        assert record["masked_lm_weights"] == (
            [1.0] * count + [0.0] * (4 - count))
        positions = record["masked_lm_positions"]
        assert positions[count:] == [0] * (4 - count)
        assert record["masked_lm_ids"][count:] == [0] * (4 - count)
        assert positions[:count] == sorted(positions[:count])
        assert all(0 < p < length - 1 and p != first_sep
                   for p in positions[:count])
        assert record["next_sentence_labels"] in ([0], [1])


def test_encoder_matches_protobuf_serialization(tf):
    rng = random.Random(2)
    encoder = pretraining_records.PretrainingExampleEncoder(300, 25)
    for _ in range(50):
        length = rng.randint(1, 300)
        count = rng.randint(0, 25)
        ids = [rng.choice([0, 5, 127, 128, 16383, 16384, 2 ** 17 + 3,
                           2 ** 40]) for _ in range(length)]
        segments = [rng.randint(0, 1) for _ in range(length)]
        positions = sorted(rng.sample(range(300), count))
        masked = [rng.randint(0, 120000) for _ in range(count)]
        label = rng.randint(0, 1)
        ours = tf.train.Example.FromString(
            encoder.encode(ids, segments, positions, masked, label))

        def int64(values):
            return tf.train.Feature(
                int64_list=tf.train.Int64List(value=values))
        expected = tf.train.Example(features=tf.train.Features(feature={
            "input_ids": int64(ids + [0] * (300 - length)),
            "input_mask": int64([1] * length + [0] * (300 - length)),
            "segment_ids": int64(segments + [0] * (300 - length)),
            "masked_lm_positions": int64(positions + [0] * (25 - count)),
            "masked_lm_ids": int64(masked + [0] * (25 - count)),
            "masked_lm_weights": tf.train.Feature(
                float_list=tf.train.FloatList(
                    value=[1.0] * count + [0.0] * (25 - count))),
            "next_sentence_labels": int64([label]),
        }))
        assert ours == expected


@pytest.mark.parametrize("framing", ["native", "numpy"])
def test_batch_records_equal_one_by_one_encoding(tmp_path, framing,
                                                uncased_vocab_file, tf,
                                                monkeypatch):
    if framing == "numpy":  # What runs where the C extension is not built.
        monkeypatch.setattr(tfrecord_files, "_tfrecord_native", None)
    elif tfrecord_files._tfrecord_native is None:
        pytest.skip("bert_tf/data/_tfrecord_native.c is not built")
    # Sequences past 128 tokens: positions need two-byte varints too.
    rng = random.Random(8)
    words = ["castle", "unbelievably", "ghost", "denmark", ",", "the", "of"]
    text = "\n\n".join(
        "\n".join(" ".join(rng.choice(words) for _ in range(30))
                  for _ in range(12))
        for _ in range(4))
    tokenizer = _tokenizer(uncased_vocab_file)
    corpus = _corpus(tmp_path, text, tokenizer)
    vocab = pretraining_instances.PretrainingVocab(tokenizer.vocab)
    store, order = pretraining_instances.create_training_instances(
        corpus, vocab, random.Random(2), max_seq_length=160, dupe_factor=3,
        short_seq_prob=0.3, masked_lm_prob=0.2, max_predictions_per_seq=30,
        do_whole_word_mask=True)
    encoder = pretraining_records.PretrainingExampleEncoder(160, 30)
    batch_encoder = pretraining_instances._BatchRecordEncoder(
        store, corpus, vocab, encoder)
    batch = batch_encoder.records(order)
    one_by_one = [encoder.encode(*pretraining_instances.instance_features(
        store, index, corpus, vocab)) for index in order]
    assert len(batch) == len(order) > 20
    assert batch == one_by_one
    # Framed for two files: what TensorFlow's own writer writes, byte for
    # byte.
    framed = batch_encoder.frame(order, 2)
    for k in range(2):
        path = str(tmp_path / f"tf{k}.tfrecord")
        with tf.io.TFRecordWriter(path) as writer:
            for record in one_by_one[k::2]:
                writer.write(record)
        assert framed[k] == open(path, "rb").read()


def test_varint_rows_match_protobuf(tf):
    for values in (np.array([[0, 1, 127, 128, 300, 16383],
                             [16384, 2 ** 21, 2 ** 28 - 1, 2 ** 35,
                              2 ** 62, 7]]),
                   np.array([[0, 5], [127, 3]], dtype=np.int32),
                   np.array([[2 ** 32 - 1, 2 ** 28], [2 ** 31, 1]],
                            dtype=np.uint32)):
        groups, keep = pretraining_records.varint_rows(values)
        for row, row_groups, row_keep in zip(values.tolist(), groups, keep):
            payload = row_groups[row_keep].tobytes()
            serialized = tf.train.Int64List(value=row).SerializeToString()
            assert b"\x0a" + bytes([len(payload)]) + payload == serialized
    with pytest.raises(ValueError, match="non-negative"):
        pretraining_records.varint_rows(np.array([[1, -1]]))


def test_native_framing_crc32c_rfc3720_vectors():
    native = tfrecord_files._tfrecord_native
    if native is None:
        pytest.skip("bert_tf/data/_tfrecord_native.c is not built")
    rng = random.Random(3)
    tails = [bytes(rng.randrange(256) for _ in range(length))
             for length in range(20)]
    for crc32c in (native.crc32c, native.crc32c_tables):
        # RFC 3720 (iSCSI) B.4.
        assert crc32c(b"123456789") == 0xE3069283
        assert crc32c(bytes(32)) == 0x8A9136AA
        assert crc32c(b"\xff" * 32) == 0x62A8AB43
        assert crc32c(bytes(range(32))) == 0x46DD794E
        assert crc32c(b"") == 0
        # Every tail length past the 8-byte steps, against the numpy tables.
        assert [crc32c(data) for data in tails] == [
            tfrecord_files.crc32c(data) for data in tails]
    with pytest.raises(ValueError, match="lengths exceed the data"):
        native.frame_round_robin(b"abc", np.array([2, 2]), 1)
    with pytest.raises(ValueError, match="differ from its length"):
        native.lay_out_rows([(np.zeros((1, 4), np.uint8), None)],
                            np.array([3]))


@pytest.mark.parametrize("hardware", [True, False])
def test_crc32c_rfc3720_vectors(hardware, monkeypatch):
    if not hardware:  # The numpy tables, used without google-crc32c.
        monkeypatch.setattr(tfrecord_files, "_google_crc32c", None)
    elif tfrecord_files._google_crc32c is None:
        pytest.skip("google-crc32c (with its C extension) is not installed")
    assert tfrecord_files.crc32c(b"123456789") == 0xE3069283
    assert tfrecord_files.crc32c(bytes(32)) == 0x8A9136AA
    assert tfrecord_files.crc32c(b"\xff" * 32) == 0x62A8AB43
    assert tfrecord_files.crc32c(bytes(range(32))) == 0x46DD794E
    batch = [bytes(range(32)), b"", b"123456789", bytes(32)]
    assert tfrecord_files.crc32c_batch(batch).tolist() == [
        0x46DD794E, 0, 0xE3069283, 0x8A9136AA]
    # Many lengths at once (every tail length, rows in any order) against
    # the bitwise definition (reflected polynomial 0x82F63B78).
    rng = random.Random(5)
    records = [bytes(rng.randrange(256) for _ in range(length))
               for length in [17, 0, 1, 64, 9, 8, 3, 100, 15, 16]]

    def bitwise(data):
        crc = 0xFFFFFFFF
        for byte in data:
            crc ^= byte
            for _ in range(8):
                crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
        return crc ^ 0xFFFFFFFF
    assert tfrecord_files.crc32c_batch(records).tolist() == [
        bitwise(record) for record in records]


def test_tfrecords_read_back_by_tensorflow(tmp_path, tf):
    rng = random.Random(4)
    records = [bytes(rng.randrange(256) for _ in range(rng.randint(0, 300)))
               for _ in range(40)]
    paths = [tmp_path / "a.tfrecord", tmp_path / "b.tfrecord",
             tmp_path / "c.tfrecord"]
    with tfrecord_files.RoundRobinRecordWriter(
            paths, buffer_records=7) as writer:
        for record in records:
            writer.write(record)
    for i, path in enumerate(paths):
        read = [x.numpy() for x in tf.data.TFRecordDataset(str(path))]
        assert read == records[i::3]
    # TensorFlow checks the CRCs: a flipped data byte is caught.
    data = bytearray(paths[0].read_bytes())
    data[14] ^= 1
    paths[0].write_bytes(bytes(data))
    with pytest.raises(tf.errors.DataLossError):
        list(tf.data.TFRecordDataset(str(paths[0])))


def test_failed_write_leaves_existing_output_untouched(tmp_path):
    output = tmp_path / "out.tfrecord"
    output.write_bytes(b"precious")
    with pytest.raises(RuntimeError):
        with tfrecord_files.RoundRobinRecordWriter([output]) as writer:
            writer.write(b"new")
            raise RuntimeError("interrupted")
    assert output.read_bytes() == b"precious"
    assert os.listdir(tmp_path) == ["out.tfrecord"]


# --------------------------------------------------------------------------
# Reading and tokenizing the corpus.
# --------------------------------------------------------------------------

ADVERSARIAL_LINES = [
    "Hello, World!  It's   a TEST.",
    "naïve café — Ünïcödé “quotes” ½ ﬁ",
    "中文字符和English mixed。日本語のテキスト",
    "a\x1cb c\u2028d e\u00a0f\u3000g\th\x85i",
    "\x07",                     # only a control character: no tokens
    "x" * 250 + " short",       # a word over 200 characters: [UNK]
    "   ",                      # whitespace only: a document break
    "\u00a0\u2003",             # Unicode spaces only: a document break
    "tab\tseparated\tvalues and ~!@#$%^&*()_+",
    "\u0301\u0301 accents only \u0301",
]


def test_corpus_tokens_equal_full_tokenizer(tmp_path, uncased_vocab_file):
    tokenizer = _tokenizer(uncased_vocab_file)
    text = "\n".join(ADVERSARIAL_LINES * 3) + "\n"
    path = tmp_path / "adv.txt"
    path.write_text(text, encoding="utf-8")
    corpus = pretraining_corpus.tokenize_corpus([str(path)], tokenizer)
    # The reference: Google's reading rules applied to FullTokenizer.
    reference = tokenization.FullTokenizer(uncased_vocab_file, True)
    documents, current = [], []
    for line in text.split("\n")[:-1]:
        line = line.strip()
        if not line:
            documents.append(current)
            current = []
            continue
        ids = reference.convert_tokens_to_ids(reference.tokenize(line))
        if ids:
            current.append(ids)
    documents.append(current)
    documents = [d for d in documents if d]
    assert [corpus.document(i) for i in range(corpus.num_documents)] == (
        documents)


def test_corpus_tokens_equal_model_garden_tokenizer(tmp_path,
                                                    uncased_vocab_file):
    mg_tokenization = pytest.importorskip("official.nlp.tools.tokenization")
    tokenizer = _tokenizer(uncased_vocab_file)
    reference = mg_tokenization.FullTokenizer(uncased_vocab_file, True)
    # Model Garden cuts words at 400 characters where Google cuts at 200:
    # leave the over-long word out.
    lines = [line for line in ADVERSARIAL_LINES
             if reference.tokenize(line.strip()) and "x" * 250 not in line]
    path = tmp_path / "adv.txt"
    path.write_text("\n".join(lines), encoding="utf-8")
    corpus = pretraining_corpus.tokenize_corpus([str(path)], tokenizer)
    assert corpus.document(0) == [
        reference.convert_tokens_to_ids(reference.tokenize(line.strip()))
        for line in lines]


def test_documents_continue_across_files_and_blank_lines_split_them(
        tmp_path, tiny_vocab_file):
    tokenizer = _tokenizer(tiny_vocab_file)
    first, second = tmp_path / "1.txt", tmp_path / "2.txt"
    first.write_bytes(b"a b\r\n\n\n c \nd")      # no final newline
    second.write_bytes(b"e\n\x07\nf\n \ng\n\n")
    corpus = pretraining_corpus.tokenize_corpus(
        [str(first), str(second)], tokenizer)
    vocab = tokenizer.vocab
    ids = lambda *tokens: [vocab[t] for t in tokens]  # noqa: E731
    assert [corpus.document(i) for i in range(corpus.num_documents)] == [
        [ids("a", "b")],
        [ids("c"), ids("d"), ids("e"), ids("f")],   # "\x07": no sentence
        [ids("g")],
    ]


def test_invalid_utf8_is_dropped_with_a_warning(tmp_path, tiny_vocab_file,
                                                caplog):
    tokenizer = _tokenizer(tiny_vocab_file)
    path = tmp_path / "bad.txt"
    path.write_bytes(b"a b\nc\xff d\n\xfe\xfe\ne\n")
    with caplog.at_level(logging.WARNING):
        corpus = pretraining_corpus.tokenize_corpus([str(path)], tokenizer)
    assert f"{path}:2: invalid UTF-8" in caplog.text
    assert f"{path}:3: invalid UTF-8" in caplog.text
    vocab = tokenizer.vocab
    # Line 3 holds only invalid bytes: empty once they are dropped, it ends
    # the document, as in Google's reader.
    assert corpus.document(0) == [[vocab["a"], vocab["b"]],
                                  [vocab["c"], vocab["d"]]]
    assert corpus.document(1) == [[vocab["e"]]]


# --------------------------------------------------------------------------
# Bad input.
# --------------------------------------------------------------------------

def test_empty_corpus_is_an_error_naming_the_files(tmp_path, tiny_vocab_file):
    first, second = tmp_path / "empty.txt", tmp_path / "blank.txt"
    first.write_bytes(b"")
    second.write_bytes(b"\n  \n\x07\n")
    with pytest.raises(PretrainingDataError) as error:
        pretraining_corpus.tokenize_corpus(
            [str(first), str(second)], _tokenizer(tiny_vocab_file))
    assert "no line" in str(error.value)
    assert str(first) in str(error.value) and str(second) in str(error.value)


def test_vocab_without_special_tokens_is_an_error(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("[PAD]\n[UNK]\n[SEP]\na\n", encoding="utf-8")
    tokenizer = _tokenizer(str(path))
    with pytest.raises(PretrainingDataError) as error:
        pretraining_instances.PretrainingVocab(tokenizer.vocab, str(path))
    assert str(path) in str(error.value)
    assert "[CLS], [MASK]" in str(error.value)


def test_vocab_without_unk_is_an_error_naming_the_word(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[CLS]\n[SEP]\n[MASK]\na\n", encoding="utf-8")
    with pytest.raises(PretrainingDataError) as error:
        _corpus(tmp_path, "a a\na zebra\n", _tokenizer(str(vocab)))
    assert f"vocab file {vocab} has no '[UNK]'" in str(error.value)
    assert "'zebra'" in str(error.value)


def test_missing_vocab_file_is_an_error_naming_it(tmp_path):
    path = tmp_path / "nowhere" / "vocab.txt"
    with pytest.raises(PretrainingDataError, match="nowhere"):
        pretraining_corpus.load_tokenizer(str(path), True)


@pytest.mark.parametrize("max_seq_length", [4, 0, -3])
def test_max_seq_length_below_5_is_an_error(tmp_path, tiny_vocab_file,
                                            max_seq_length):
    tokenizer = _tokenizer(tiny_vocab_file)
    corpus = _corpus(tmp_path, "a b\n\nc d\n", tokenizer)
    vocab = pretraining_instances.PretrainingVocab(tokenizer.vocab)
    with pytest.raises(PretrainingDataError,
                       match=f"max_seq_length must be at least 5.*got "
                             f"{max_seq_length}"):
        pretraining_instances.create_training_instances(
            corpus, vocab, random.Random(1), max_seq_length, 1, 0.1, 0.15, 20)


def test_output_in_a_missing_directory_is_an_error_before_work(
        tmp_path, tiny_vocab_file):
    (tmp_path / "in.txt").write_text("a b\n", encoding="utf-8")
    output = tmp_path / "missing" / "out.tfrecord"
    with pytest.raises(PretrainingDataError) as error:
        pretraining_instances.create_pretraining_data(
            [str(tmp_path / "in.txt")], [str(output)],
            _tokenizer(tiny_vocab_file))
    assert str(output) in str(error.value)
    assert "does not exist" in str(error.value)


def test_pattern_matching_nothing_is_an_error(tmp_path):
    (tmp_path / "a.txt").write_text("x\n")
    pattern = str(tmp_path / "*.text")
    with pytest.raises(file_io.InputFileError) as error:
        file_io.expand_input_patterns(f"{tmp_path / 'a.txt'},{pattern}")
    assert pattern in str(error.value)
    assert file_io.expand_input_patterns(
        f"{tmp_path / '*.txt'}") == [str(tmp_path / "a.txt")]


# --------------------------------------------------------------------------
# The runner, end to end (subprocesses: the script does not import
# TensorFlow, so they are cheap).
# --------------------------------------------------------------------------

def _run_script(*flags):
    return run_runner("create_pretraining_data.py", None, *flags,
                      expect_success=False)


def test_script_end_to_end(tmp_path, golden_dir, uncased_vocab_file):
    corpus = golden_dir / "create_pretraining_data" / "corpus.txt"
    outputs = [tmp_path / "a.tfrecord", tmp_path / "b.tfrecord"]
    result = _run_script(
        f"--input_file={corpus}",
        f"--output_file={outputs[0]},{outputs[1]}",
        f"--vocab_file={uncased_vocab_file}", "--num_workers=2",
        *[f"--{name}={value}" for name, value in GOLDEN_FLAGS.items()])
    assert result.returncode == 0, result.stderr
    assert "Wrote 2094 total instances" in result.stderr
    # The 20 instances Google's script logs in full (192 lines) only with
    # --verbosity=1.
    assert "*** Example ***" not in result.stderr
    assert "input_ids: " not in result.stderr
    # The same bytes as the library, in this process, with one worker.
    expected = [tmp_path / "x.tfrecord", tmp_path / "y.tfrecord"]
    pretraining_instances.create_pretraining_data(
        [str(corpus)], [str(p) for p in expected],
        _tokenizer(uncased_vocab_file), num_workers=1, **GOLDEN_FLAGS)
    for ours, reference in zip(outputs, expected):
        assert ours.read_bytes() == reference.read_bytes()


def test_script_logs_instances_in_full_with_verbosity_1(
        tmp_path, golden_dir, uncased_vocab_file):
    corpus = golden_dir / "create_pretraining_data" / "corpus.txt"
    output = tmp_path / "a.tfrecord"
    result = _run_script(
        f"--input_file={corpus}", f"--output_file={output}",
        f"--vocab_file={uncased_vocab_file}", "--verbosity=1",
        *[f"--{name}={value}" for name, value in GOLDEN_FLAGS.items()])
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("*** Example ***") == 20
    assert "masked_lm_weights: 1.0" in result.stderr
    assert "Wrote 2094 total instances" in result.stderr


def test_script_sentence_order_flag(tmp_path, golden_dir,
                                    uncased_vocab_file):
    """--pretraining_objective=mlm_sop writes the library's sentence-order
    records (not Google's: the golden tests pin the default)."""
    corpus = golden_dir / "create_pretraining_data" / "corpus.txt"
    output = tmp_path / "sop.tfrecord"
    result = _run_script(
        f"--input_file={corpus}", f"--output_file={output}",
        f"--vocab_file={uncased_vocab_file}", "--num_workers=1",
        "--pretraining_objective=mlm_sop",
        *[f"--{name}={value}" for name, value in GOLDEN_FLAGS.items()])
    assert result.returncode == 0, result.stderr
    expected = tmp_path / "expected.tfrecord"
    pretraining_instances.create_pretraining_data(
        [str(corpus)], [str(expected)], _tokenizer(uncased_vocab_file),
        num_workers=1, sentence_order=True, **GOLDEN_FLAGS)
    google = tmp_path / "google.tfrecord"
    pretraining_instances.create_pretraining_data(
        [str(corpus)], [str(google)], _tokenizer(uncased_vocab_file),
        num_workers=1, **GOLDEN_FLAGS)
    assert output.read_bytes() == expected.read_bytes()
    assert output.read_bytes() != google.read_bytes()


def test_script_reports_bad_input_without_traceback(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\na\n", encoding="utf-8")
    corpus = tmp_path / "in.txt"
    corpus.write_text("a a\n", encoding="utf-8")
    result = _run_script(f"--input_file={corpus}",
                         f"--output_file={tmp_path / 'out.tfrecord'}",
                         f"--vocab_file={vocab}")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert f"vocab file {vocab} lacks [MASK]" in result.stderr
    assert not (tmp_path / "out.tfrecord").exists()
