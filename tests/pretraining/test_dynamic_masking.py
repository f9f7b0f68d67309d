"""Dynamic masking: pretraining batches drawn from raw text, in-graph.

The corpora are generated so that every word belongs to exactly one
document (and tokenizes to itself), which lets a test tell from any token
which document and file it came from and where in the document it sits.
"""

import collections
import random

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.pretraining import dynamic_masking
from bert_tf.pretraining.dataset import pretraining_dataset
from bert_tf.pretraining.dynamic_masking import dynamic_masking_dataset
from bert_tf.pretraining.dynamic_masking import pair_lengths_after_truncation
from bert_tf.pretraining.dynamic_masking import write_dynamic_masking_records
from bert_tf.text import tokenization

SEQ = 64
PRED = 10
BATCH = 32
# Instances in the shuffle buffer: smaller than the default (100 * batch)
# so that tests do not read the small corpora dozens of times to fill it.
SHUFFLE = 400

Corpus = collections.namedtuple(
    "Corpus", ["pattern", "files", "document_of_id", "file_of_id",
               "documents"])


@pytest.fixture(scope="module")
def vocab(uncased_vocab_file):
    return tokenization.load_vocab(uncased_vocab_file)


@pytest.fixture(scope="module")
def word_pool(uncased_vocab_file):
    """Whole words of the uncased vocab that tokenize to themselves."""
    python = tokenization.FullTokenizer(uncased_vocab_file, True)
    words = [w for w in python.vocab
             if w.isalpha() and w.isascii() and len(w) >= 3
             and python.tokenize(w) == [w]]
    return words


def _write_corpus(directory, word_pool, vocab, num_files, docs_per_file,
                  seed, sentences=(1, 12), words=(2, 14)):
    """Text files in Google's format; every document has its own words.

    Returns:
      A `Corpus`; `documents[d]` is document d's token ids, sentence by
      sentence (the reference, from the word lists, not a tokenizer).
    """
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    per_document = 20
    files, documents = [], []
    document_of_id, file_of_id = {}, {}
    for f in range(num_files):
        lines = []
        for _ in range(docs_per_file):
            d = len(documents)
            own = word_pool[d * per_document:(d + 1) * per_document]
            assert len(own) == per_document, "corpus too large for the vocab"
            document = []
            for _ in range(rng.randint(*sentences)):
                sentence = [rng.choice(own)
                            for _ in range(rng.randint(*words))]
                # Google's format tolerates stray spaces and case.
                lines.append("  " + " ".join(sentence).capitalize() + " ")
                document.append([vocab[w] for w in sentence])
            for w in own:
                document_of_id[vocab[w]] = d
                file_of_id[vocab[w]] = f
            documents.append(document)
            lines.append(rng.choice(["", "   ", "\t"]))  # document break
        path = directory / f"text-{f}.txt"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        files.append(str(path))
    return Corpus(str(directory / "text-*.txt"), files, document_of_id,
                  file_of_id, documents)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, word_pool, vocab):
    return _write_corpus(tmp_path_factory.mktemp("corpus"), word_pool, vocab,
                         num_files=4, docs_per_file=15, seed=1)


def _examples(dataset, num_batches=None):
    """The batches of a dataset as a list of per-example numpy dicts."""
    if num_batches is not None:
        dataset = dataset.take(num_batches)
    return [{name: value[i] for name, value in batch.items()}
            for batch in dataset.as_numpy_iterator()
            for i in range(len(batch["input_ids"]))]


@pytest.fixture(scope="module")
def training_examples(corpus, uncased_vocab_file):
    dataset = dynamic_masking_dataset(
        corpus.pattern, uncased_vocab_file, True, BATCH, SEQ, PRED,
        is_training=True, seed=5, shuffle_buffer_size=SHUFFLE)
    return _examples(dataset, num_batches=60)


def _unmasked(example):
    """The input ids before masking, and the sequence length."""
    ids = example["input_ids"].copy()
    count = int(example["masked_lm_weights"].sum())
    ids[example["masked_lm_positions"][:count]] = (
        example["masked_lm_ids"][:count])
    return ids, int(example["input_mask"].sum())


def _contains(sequence, part):
    """Index of `part` as a contiguous run in `sequence`, or -1."""
    for start in range(len(sequence) - len(part) + 1):
        if sequence[start:start + len(part)] == part:
            return start
    return -1


# -- schema and structure ----------------------------------------------


def test_element_spec_matches_static_pipeline(corpus, uncased_vocab_file):
    dataset = dynamic_masking_dataset(corpus.pattern, uncased_vocab_file,
                                      True, 4, SEQ, PRED, is_training=False)
    spec = dataset.element_spec
    expected = {
        "input_ids": ([4, SEQ], tf.int32),
        "input_mask": ([4, SEQ], tf.int32),
        "segment_ids": ([4, SEQ], tf.int32),
        "masked_lm_positions": ([4, PRED], tf.int32),
        "masked_lm_ids": ([4, PRED], tf.int32),
        "masked_lm_weights": ([4, PRED], tf.float32),
        "next_sentence_labels": ([4], tf.int32),
    }
    assert set(spec) == set(expected)
    for name, (shape, dtype) in expected.items():
        assert spec[name].shape == shape, name
        assert spec[name].dtype == dtype, name


def test_layout_and_masks_are_well_formed(training_examples, vocab):
    cls, sep = vocab["[CLS]"], vocab["[SEP]"]
    assert len(training_examples) == 60 * BATCH
    for example in training_examples:
        ids, length = _unmasked(example)
        assert 5 <= length <= SEQ
        mask = example["input_mask"]
        assert mask[:length].tolist() == [1] * length
        assert not mask[length:].any() and not ids[length:].any()
        assert not example["segment_ids"][length:].any()
        # [CLS] A [SEP] B [SEP]; segment 0 through the first [SEP].
        seps = np.flatnonzero(ids[:length] == sep).tolist()
        assert ids[0] == cls and len(seps) == 2 and seps[1] == length - 1
        assert 2 <= seps[0] <= length - 3  # A and B not empty
        segments = example["segment_ids"][:length].tolist()
        assert segments == [0] * (seps[0] + 1) + [1] * (length - seps[0] - 1)
        # Masks: Google's count, sorted distinct positions of real tokens
        # other than [CLS]/[SEP], padded with zeros.
        count = int(example["masked_lm_weights"].sum())
        assert count == min(PRED, max(1, int(round(length * 0.15))))
        weights = example["masked_lm_weights"].tolist()
        assert weights == [1.0] * count + [0.0] * (PRED - count)
        positions = example["masked_lm_positions"][:count]
        assert np.all(np.diff(positions) > 0)
        assert positions.min() >= 1 and positions.max() < length
        assert not set(positions.tolist()) & {0, *seps}
        assert not example["masked_lm_positions"][count:].any()
        assert not example["masked_lm_ids"][count:].any()


def test_pairs_come_from_the_documents(training_examples, corpus, vocab):
    """Label 0: B is from A's document, after A. Label 1: B is from another
    document. Either side is a contiguous run of its document's tokens
    (truncation only removes tokens at the ends)."""
    sep = vocab["[SEP]"]
    flat_documents = [[t for sentence in doc for t in sentence]
                      for doc in corpus.documents]
    random_from_other_document = 0
    num_random = 0
    for example in training_examples:
        ids, length = _unmasked(example)
        first_sep = int(np.flatnonzero(ids == sep)[0])
        tokens_a = ids[1:first_sep].tolist()
        tokens_b = ids[first_sep + 1:length - 1].tolist()
        document_a = {corpus.document_of_id[t] for t in tokens_a}
        document_b = {corpus.document_of_id[t] for t in tokens_b}
        assert len(document_a) == 1 and len(document_b) == 1
        (document_a,), (document_b,) = document_a, document_b
        start_a = _contains(flat_documents[document_a], tokens_a)
        start_b = _contains(flat_documents[document_b], tokens_b)
        assert start_a >= 0 and start_b >= 0
        if example["next_sentence_labels"] == 0:
            assert document_b == document_a
            assert start_b >= start_a + len(tokens_a)
        else:
            num_random += 1
            random_from_other_document += document_b != document_a
    assert random_from_other_document >= 0.97 * num_random


def _google_random_next_fraction(documents, max_num_tokens, short_seq_prob,
                                 passes=200):
    """Share of random-next instances Google's create_instances_from_document
    makes from these documents (its loop, run on sentence lengths)."""
    rng = random.Random(0)
    instances = random_next = 0
    for _ in range(passes):
        for document in documents:
            lengths = [len(sentence) for sentence in document]
            target = max_num_tokens
            if rng.random() < short_seq_prob:
                target = rng.randint(2, max_num_tokens)
            chunk, length, i = [], 0, 0
            while i < len(lengths):
                chunk.append(lengths[i])
                length += lengths[i]
                if i == len(lengths) - 1 or length >= target:
                    a_end = 1
                    if len(chunk) >= 2:
                        a_end = rng.randint(1, len(chunk) - 1)
                    if len(chunk) == 1 or rng.random() < 0.5:
                        random_next += 1
                        i -= len(chunk) - a_end  # put back
                    instances += 1
                    chunk, length = [], 0
                i += 1
    return random_next / instances


def _masked_kept_replaced(examples, mask_id):
    """How many masked positions hold [MASK], their own token, another."""
    masked = kept = replaced = 0
    for example in examples:
        count = int(example["masked_lm_weights"].sum())
        positions = example["masked_lm_positions"][:count]
        now = example["input_ids"][positions]
        before = example["masked_lm_ids"][:count]
        masked += int(np.sum(now == mask_id))
        kept += int(np.sum(now == before))
        replaced += int(np.sum((now != mask_id) & (now != before)))
    return masked, kept, replaced


def test_masking_and_label_statistics(training_examples, vocab, corpus):
    """80% [MASK], 10% kept, 10% random; the share of random-next pairs is
    what Google's algorithm gives on the same documents."""
    mask_id = vocab["[MASK]"]
    masked, kept, replaced = _masked_kept_replaced(training_examples, mask_id)
    total = masked + kept + replaced
    assert total > 10000
    assert abs(masked / total - 0.8) < 0.02
    assert abs(kept / total - 0.1) < 0.015
    assert abs(replaced / total - 0.1) < 0.015
    labels = np.array([e["next_sentence_labels"] for e in training_examples])
    # 50% among chunks of several sentences, always for one-sentence chunks
    # (and put-back sentences make more chunks): above one half here.
    expected = _google_random_next_fraction(corpus.documents, SEQ - 3, 0.1)
    assert 0.5 < expected < 0.75
    assert abs(labels.mean() - expected) < 0.04


# -- randomness, determinism, sharding ---------------------------------


def test_seed_makes_the_stream_reproducible(corpus, uncased_vocab_file,
                                            training_examples):
    def training(seed):
        return dynamic_masking_dataset(
            corpus.pattern, uncased_vocab_file, True, BATCH, SEQ, PRED,
            is_training=True, seed=seed, shuffle_buffer_size=SHUFFLE)

    def differ(examples, others):
        return any(not np.array_equal(a["input_ids"], b["input_ids"])
                   for a, b in zip(examples, others))

    dataset = training(5)
    again = _examples(dataset, num_batches=3)
    for got, expected in zip(again, training_examples[:3 * BATCH]):
        for name in expected:
            np.testing.assert_array_equal(got[name], expected[name])
    # A new iterator over the same dataset draws new pairs and masks.
    assert differ(_examples(dataset, num_batches=3), again)
    assert differ(_examples(training(6), num_batches=3), again)


def test_masks_are_fresh_on_every_pass(tmp_path, word_pool, vocab,
                                       uncased_vocab_file):
    """The same pair comes back with other masks (RoBERTa's point)."""
    small = _write_corpus(tmp_path, word_pool, vocab, num_files=1,
                          docs_per_file=3, seed=2, sentences=(2, 2),
                          words=(3, 4))
    examples = _examples(dynamic_masking_dataset(
        small.pattern, uncased_vocab_file, True, 8, SEQ, PRED,
        is_training=True, seed=1, short_seq_prob=0.0,
        shuffle_buffer_size=20), num_batches=20)
    masks_of_pair = collections.defaultdict(set)
    for example in examples:
        ids, _ = _unmasked(example)
        masks_of_pair[ids.tobytes()].add(
            (example["masked_lm_positions"].tobytes(),
             example["input_ids"].tobytes()))
    assert max(len(masks) for masks in masks_of_pair.values()) >= 5


def test_evaluation_is_one_reproducible_pass(corpus, uncased_vocab_file):
    dataset = dynamic_masking_dataset(corpus.pattern, uncased_vocab_file,
                                      True, 16, SEQ, PRED, is_training=False)
    first, second = _examples(dataset), _examples(dataset)
    assert 30 <= len(first) < 1000  # finite: one pass over 60 documents
    assert len(first) == len(second)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a["input_ids"], b["input_ids"])


def _files_and_documents_seen(examples, corpus):
    files, documents = set(), set()
    for example in examples:
        ids, length = _unmasked(example)
        for token in ids[1:length].tolist():
            if token in corpus.document_of_id:
                files.add(corpus.file_of_id[token])
        first = int(ids[1])
        documents.add(corpus.document_of_id[first])
    return files, documents


def test_input_context_splits_files(corpus, uncased_vocab_file):
    seen = []
    for pipeline_id in range(2):
        context = tf.distribute.InputContext(2, pipeline_id, 2)
        seen.append(_files_and_documents_seen(_examples(
            dynamic_masking_dataset(
                corpus.pattern, uncased_vocab_file, True, 8, SEQ, PRED,
                is_training=False, input_context=context)), corpus))
    # Four files, two pipelines: files 0 and 2, then 1 and 3, whole.
    assert seen[0][0] == {0, 2}
    assert seen[1][0] == {1, 3}


def test_input_context_splits_documents_of_one_file(tmp_path, word_pool,
                                                    vocab,
                                                    uncased_vocab_file):
    single = _write_corpus(tmp_path, word_pool, vocab, num_files=1,
                           docs_per_file=40, seed=3)
    documents = []
    for pipeline_id in range(2):
        context = tf.distribute.InputContext(2, pipeline_id, 2)
        examples = _examples(dynamic_masking_dataset(
            single.pattern, uncased_vocab_file, True, 4, SEQ, PRED,
            is_training=False, input_context=context))
        documents.append(_files_and_documents_seen(examples, single)[1])
    assert documents[0] and documents[1]
    assert documents[0].isdisjoint(documents[1])


# -- writing records, feeding the model --------------------------------


def test_written_records_read_back_unchanged(tmp_path, corpus,
                                             uncased_vocab_file):
    dataset = dynamic_masking_dataset(corpus.pattern, uncased_vocab_file,
                                      True, 8, SEQ, PRED, is_training=False)
    expected = _examples(dataset, num_batches=3)
    outputs = [str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")]
    written = write_dynamic_masking_records(dataset, ",".join(outputs), 3)
    assert written == 24
    # Round-robin: a holds examples 0, 2, 4, ...; b holds 1, 3, 5, ...
    for path, offset in zip(outputs, (0, 1)):
        got = _examples(pretraining_dataset(path, 4, SEQ, PRED, False))
        assert len(got) == 12
        for example, reference in zip(got, expected[offset::2]):
            for name in reference:
                np.testing.assert_array_equal(example[name], reference[name])


def test_write_bad_arguments(tmp_path, corpus, uncased_vocab_file):
    dataset = tf.data.Dataset.range(1)
    with pytest.raises(ValueError, match="no output file given"):
        write_dynamic_masking_records(dataset, " , ", 1)
    with pytest.raises(ValueError, match="num_batches must be positive"):
        write_dynamic_masking_records(dataset, str(tmp_path / "x"), 0)


def test_batch_feeds_the_pretraining_heads(training_examples, tiny_config,
                                           vocab):
    from bert_tf.modeling import BertModel, MaskedLMHead, NextSentenceHead
    config = tiny_config.replace(vocab_size=len(vocab),
                                 max_position_embeddings=SEQ)
    batch = {name: tf.constant(np.stack([e[name] for e in
                                         training_examples[:BATCH]]))
             for name in training_examples[0]}
    bert = BertModel(config)
    outputs = bert(batch["input_ids"], batch["input_mask"],
                   batch["segment_ids"])
    mlm_logits = MaskedLMHead(config, bert.embedding_table)(
        outputs["sequence_output"], batch["masked_lm_positions"])
    nsp_logits = NextSentenceHead(config)(outputs["pooled_output"])
    assert mlm_logits.shape == (BATCH, PRED, len(vocab))
    mlm_loss = tf.nn.sparse_softmax_cross_entropy_with_logits(
        batch["masked_lm_ids"], mlm_logits)
    nsp_loss = tf.nn.sparse_softmax_cross_entropy_with_logits(
        batch["next_sentence_labels"], nsp_logits)
    weighted = tf.reduce_sum(mlm_loss * batch["masked_lm_weights"])
    assert np.isfinite(weighted.numpy()) and np.all(np.isfinite(nsp_loss))


# -- the pieces, against Google's rules --------------------------------


def _google_truncate_lengths(length_a, length_b, max_num_tokens):
    """Google's `truncate_seq_pair` loop, on lengths."""
    while length_a + length_b > max_num_tokens:
        if length_a > length_b:
            length_a -= 1
        else:
            length_b -= 1
    return length_a, length_b


def test_truncation_lengths_match_googles_loop():
    pairs = [(a, b) for a in range(1, 40) for b in range(1, 40)]
    for max_num_tokens in (2, 3, 10, 25, 61):
        lengths_a = tf.constant([a for a, _ in pairs])
        lengths_b = tf.constant([b for _, b in pairs])
        got_a, got_b = pair_lengths_after_truncation(lengths_a, lengths_b,
                                                     max_num_tokens)
        expected = [_google_truncate_lengths(a, b, max_num_tokens)
                    for a, b in pairs]
        assert list(zip(got_a.numpy().tolist(), got_b.numpy().tolist())) == (
            expected)


def test_chunk_walk_follows_googles_rules():
    """Instances tile the document; chunks stop at the target; A holds
    1..len-1 sentences; one-sentence chunks are random-next; about half the
    others are."""
    rng = random.Random(0)
    max_num_tokens = 20
    walk = tf.function(
        lambda lengths, seed: dynamic_masking._chunk_document(
            lengths, max_num_tokens, 0.0, seed),
        input_signature=[tf.TensorSpec([None], tf.int32),
                         tf.TensorSpec([], tf.int64)], autograph=False)
    random_multi = multi = 0
    for seed in range(150):
        lengths = [rng.randint(1, 9) for _ in range(rng.randint(1, 25))]
        outline = {k: v.numpy().tolist() for k, v in walk(
            tf.constant(lengths), tf.constant(seed, tf.int64)).items()}
        starts, ends = outline["first_sentence"], outline["end_sentence"]
        assert starts[0] == 0 and ends[-1] == len(lengths)
        assert starts[1:] == ends[:-1]
        for start, end, a_sentences, is_random, target_b in zip(
                starts, ends, outline["a_sentences"],
                outline["is_random_next"], outline["target_b_length"]):
            length_a = sum(lengths[start:start + a_sentences])
            assert target_b == max_num_tokens - length_a
            if is_random:
                assert end == start + a_sentences
                continue
            chunk = lengths[start:end]
            # The chunk closed at the first sentence reaching the target,
            # or at the end of the document.
            assert sum(chunk[:-1]) < max_num_tokens
            assert sum(chunk) >= max_num_tokens or end == len(lengths)
        for start, end, a_sentences, is_random in zip(
                starts, ends, outline["a_sentences"],
                outline["is_random_next"]):
            size = _chunk_size(lengths, start, max_num_tokens)
            if not is_random:
                assert size == end - start
            if size == 1:
                assert is_random and a_sentences == 1
            else:
                assert 1 <= a_sentences <= size - 1
                multi += 1
                random_multi += is_random
    assert 0.4 < random_multi / multi < 0.6


def test_short_targets_follow_short_seq_prob():
    """With probability short_seq_prob a document's target length is uniform
    in [2, max_num_tokens], else it is max_num_tokens."""
    max_num_tokens = 30
    walk = tf.function(
        lambda lengths, seed: dynamic_masking._chunk_document(
            lengths, max_num_tokens, 0.3, seed),
        input_signature=[tf.TensorSpec([None], tf.int32),
                         tf.TensorSpec([], tf.int64)], autograph=False)
    lengths = tf.constant([7, 3, 9, 4, 6, 8, 2, 5] * 5)
    targets = []
    for seed in range(400):
        outline = walk(lengths, tf.constant(seed, tf.int64))
        first_a = int(tf.reduce_sum(lengths[:outline["a_sentences"][0]]))
        targets.append(int(outline["target_b_length"][0]) + first_a)
    targets = np.array(targets)
    assert targets.min() >= 2 and targets.max() == max_num_tokens
    short = targets < max_num_tokens
    # P(short) = 0.3 * (1 - 1/29): the uniform draw can hit the maximum.
    assert 0.2 < short.mean() < 0.38
    assert len(set(targets[short].tolist())) > 15  # spread over [2, 29]


def _chunk_size(lengths, start, target):
    """Sentences Google's walk accumulates from `start` before closing."""
    total = 0
    for index in range(start, len(lengths)):
        total += lengths[index]
        if total >= target:
            return index - start + 1
    return len(lengths) - start


# -- bad input -----------------------------------------------------------


def test_pattern_matching_nothing_is_named(uncased_vocab_file, tmp_path):
    with pytest.raises(ValueError, match=r"no file matches input pattern "
                       r"'.*missing-\*\.txt'"):
        dynamic_masking_dataset(str(tmp_path / "missing-*.txt"),
                                uncased_vocab_file, True, 2, SEQ, PRED, True)


@pytest.mark.parametrize("kwargs, message", [
    ({"max_seq_length": 4}, "max_seq_length must be at least 5"),
    ({"batch_size": 0}, "batch_size must be positive"),
    ({"max_predictions_per_seq": 0}, "max_predictions_per_seq must be"),
    ({"masked_lm_prob": 0.0}, r"masked_lm_prob must be in \(0, 1\]"),
    ({"short_seq_prob": 1.5}, r"short_seq_prob must be in \[0, 1\]"),
])
def test_bad_arguments(corpus, uncased_vocab_file, kwargs, message):
    arguments = dict(text_patterns=corpus.pattern,
                     vocab_file=uncased_vocab_file, do_lower_case=True,
                     batch_size=2, max_seq_length=SEQ,
                     max_predictions_per_seq=PRED, is_training=True)
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=message):
        dynamic_masking_dataset(**arguments)


def test_vocab_without_mask_token(corpus, tmp_path):
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\n",
                          encoding="utf-8")
    with pytest.raises(ValueError, match=r"vocab\.txt lacks \[MASK\]"):
        dynamic_masking_dataset(corpus.pattern, vocab_file, True, 2, SEQ,
                                PRED, True)


# -- whole-word masking ------------------------------------------------


@pytest.fixture(scope="module")
def whole_word_examples(tmp_path_factory, word_pool, uncased_vocab_file):
    """Examples of text where many words are several WordPiece pieces."""
    python = tokenization.FullTokenizer(uncased_vocab_file, True)
    rng = random.Random(3)
    # Words of two vocabulary words run together ("castleghost"): several
    # pieces ("castle", "##gh", "##ost") for most of them.
    pieced = []
    while len(pieced) < 300:
        word = rng.choice(word_pool) + rng.choice(word_pool)
        if len(python.tokenize(word)) >= 2:
            pieced.append(word)
    lines = []
    for _ in range(40):
        for _ in range(rng.randint(2, 8)):
            lines.append(" ".join(
                rng.choice(pieced) if rng.random() < 0.5
                else rng.choice(word_pool)
                for _ in range(rng.randint(3, 15))))
        lines.append("")
    directory = tmp_path_factory.mktemp("pieces")
    (directory / "text.txt").write_text("\n".join(lines) + "\n",
                                        encoding="utf-8")
    dataset = dynamic_masking_dataset(
        str(directory / "text.txt"), uncased_vocab_file, True, BATCH, SEQ,
        PRED, is_training=True, seed=9, shuffle_buffer_size=SHUFFLE,
        do_whole_word_mask=True)
    return _examples(dataset, num_batches=25)


def _word_grouper(vocab):
    """`_word_groups` for `vocab`: the vocabulary is read once (its "##"
    pieces), not once per example."""
    continuation = {index for token, index in vocab.items()
                    if token.startswith("##")}
    special = {vocab["[CLS]"], vocab["[SEP]"]}
    return lambda ids, length: _word_groups(ids, length, continuation,
                                            special)


def _word_groups(ids, length, continuation, special):
    """Google's candidate groups of an unmasked sequence: lists of
    positions, a "##" piece (an id in `continuation`) joining the candidate
    before it; `special` ids ([CLS], [SEP]) in none."""
    groups = []
    for position in range(length):
        if int(ids[position]) in special:
            continue
        if groups and int(ids[position]) in continuation:
            groups[-1].append(position)
        else:
            groups.append([position])
    return groups


def test_whole_words_are_masked_together(whole_word_examples, vocab):
    word_groups = _word_grouper(vocab)
    groups_seen = pieced_masked = 0
    for example in whole_word_examples:
        ids, length = _unmasked(example)
        count = int(example["masked_lm_weights"].sum())
        masked = set(example["masked_lm_positions"][:count].tolist())
        num_to_predict = min(PRED, max(1, int(round(length * 0.15))))
        assert count <= num_to_predict
        groups = word_groups(ids, length)
        for group in groups:
            taken = [position in masked for position in group]
            assert all(taken) or not any(taken), (group, sorted(masked))
            groups_seen += 1
            pieced_masked += len(group) > 1 and all(taken)
        # Every masked position belongs to a taken group: the count is
        # what the taken groups hold.
        assert count == sum(len(g) for g in groups if g[0] in masked)
        # Greedy taking: no group left out would still have fitted.
        assert all(len(g) > num_to_predict - count for g in groups
                   if g[0] not in masked)
        assert list(example["masked_lm_positions"][:count]) == sorted(masked)
    assert groups_seen > 8000 and pieced_masked > 300


def test_whole_word_masking_splits_80_10_10(whole_word_examples, vocab):
    mask_id = vocab["[MASK]"]
    masked, kept, replaced = _masked_kept_replaced(whole_word_examples,
                                                   mask_id)
    total = masked + kept + replaced
    # Binomial standard deviations at this size: about 0.005 and 0.004.
    assert total > 5000
    assert abs(masked / total - 0.8) < 0.02
    assert abs(kept / total - 0.1) < 0.015
    assert abs(replaced / total - 0.1) < 0.015


def test_whole_word_groups_are_drawn_as_googles_rule_draws_them(
        whole_word_examples, vocab):
    """Single pieces and several-piece words are masked as often as
    Google's rule (shuffle the groups, take each that still fits) masks
    them on the same sequences, simulated here in plain Python."""
    rng = random.Random(11)
    observed = {"single": [0, 0], "pieced": [0, 0]}
    expected = {"single": 0.0, "pieced": 0.0}
    simulations = 20
    word_groups = _word_grouper(vocab)
    for example in whole_word_examples:
        ids, length = _unmasked(example)
        count = int(example["masked_lm_weights"].sum())
        masked = set(example["masked_lm_positions"][:count].tolist())
        groups = word_groups(ids, length)
        num_to_predict = min(PRED, max(1, int(round(length * 0.15))))
        for group in groups:
            kind = "single" if len(group) == 1 else "pieced"
            observed[kind][0] += group[0] in masked
            observed[kind][1] += 1
        for _ in range(simulations):
            shuffled = list(groups)
            rng.shuffle(shuffled)
            taken = 0
            for group in shuffled:
                if taken >= num_to_predict:
                    break
                if taken + len(group) > num_to_predict:
                    continue
                taken += len(group)
                kind = "single" if len(group) == 1 else "pieced"
                expected[kind] += 1 / simulations
    for kind in ("single", "pieced"):
        hits, total = observed[kind]
        assert total > 3000
        assert abs(hits / total - expected[kind] / total) < 0.02, kind
    # Several-piece words are skipped when they no longer fit.
    assert (observed["pieced"][0] / observed["pieced"][1]
            < observed["single"][0] / observed["single"][1])


def test_whole_word_greedy_rule_on_fixed_groups(uncased_vocab_file):
    """Groups of 3 with room for 4: one group; groups of 2 with room for 5:
    two groups (Google skips what does not fit and never splits a word)."""
    pipeline = dynamic_masking._DynamicMaskingPipeline(
        uncased_vocab_file, True, SEQ, PRED, 0.15, 0.1,
        do_whole_word_mask=True)
    vocab = tokenization.load_vocab(uncased_vocab_file)
    word, piece = vocab["castle"], vocab["##s"]
    for group_size, room, expected in ((3, 4, 3), (2, 5, 4), (1, 3, 3)):
        ids = [vocab["[CLS]"]]
        for _ in range(6):
            ids += [word] + [piece] * (group_size - 1)
        ids.append(vocab["[SEP]"])
        input_ids = tf.constant(ids, tf.int32)
        is_candidate = ((input_ids != vocab["[CLS]"])
                        & (input_ids != vocab["[SEP]"]))
        for seed in range(20):
            positions = pipeline._whole_word_positions(
                input_ids, is_candidate, tf.constant(room),
                tf.constant(seed, tf.int64)).numpy().tolist()
            assert len(positions) == expected
            # Whole groups: each starts at a word and runs over its pieces.
            for start in positions[::group_size]:
                assert ids[start] == word
                assert positions[positions.index(start):][:group_size] == (
                    list(range(start, start + group_size)))


# -- ALBERT's sentence order and RoBERTa's full sentences -------------------

LETTERS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(
    "abcdefghijklmnopqrstuvwxyz")
# Four documents: 3 sentences (3, 2, 4 tokens), 2 (2, 1), 1 (6), 1 (1).
LETTER_CORPUS = "a b c\nd e\nf g h i\n\nj k\nl\n\nm n o p q r\n\ns\n"


@pytest.fixture(scope="module")
def letter_files(tmp_path_factory):
    directory = tmp_path_factory.mktemp("letters")
    (directory / "vocab.txt").write_text("\n".join(LETTERS) + "\n")
    (directory / "corpus.txt").write_text(LETTER_CORPUS)
    return str(directory / "corpus.txt"), str(directory / "vocab.txt")


def _letter_sequences(dataset):
    """Each example's tokens (masks undone, padding dropped), segment ids
    and label."""
    result = []
    for example in _examples(dataset):
        ids, length = _unmasked(example)
        result.append(([LETTERS[i] for i in ids[:length]],
                       example["segment_ids"][:length].tolist(),
                       int(example["next_sentence_labels"])))
    return result


def test_full_sentences_packing_by_hand(letter_files):
    """max_seq_length 10: 8 tokens between [CLS] and [SEP]. "a b c" + "d e"
    = 5, + "f g h i" would be 9: the first sequence is done. "f g h i",
    then [SEP] (a new document) "j k" and "l": 8. "m .. r" then starts a
    sequence that "[SEP] s" fills to 8 -- the last, unfinished at the end
    of the pass, is dropped."""
    corpus, vocab = letter_files
    dataset = dynamic_masking_dataset(
        corpus, vocab, True, 1, 10, 3, is_training=False, seed=1,
        shuffle_buffer_size=1, packing=dynamic_masking.FULL_SENTENCES)
    assert _letter_sequences(dataset) == [
        (["[CLS]", "a", "b", "c", "d", "e", "[SEP]"], [0] * 7, 0),
        (["[CLS]", "f", "g", "h", "i", "[SEP]", "j", "k", "l", "[SEP]"],
         [0] * 10, 0),
    ]
    # max_seq_length 6: 4 tokens. A sentence longer than a sequence is cut
    # to it ("m .. r" to "m n o p").
    short = dynamic_masking_dataset(
        corpus, vocab, True, 1, 6, 2, is_training=False, seed=1,
        shuffle_buffer_size=1, packing=dynamic_masking.FULL_SENTENCES)
    assert [tokens for tokens, _, _ in _letter_sequences(short)] == [
        ["[CLS]", "a", "b", "c", "[SEP]"], ["[CLS]", "d", "e", "[SEP]"],
        ["[CLS]", "f", "g", "h", "i", "[SEP]"],
        ["[CLS]", "j", "k", "l", "[SEP]"],  # One document: no [SEP].
        ["[CLS]", "m", "n", "o", "p", "[SEP]"]]
    # Every non-special position is a candidate; the [SEP] between
    # documents is never masked.
    for example in _examples(dataset):
        count = int(example["masked_lm_weights"].sum())
        # round(7 * 0.15) = 1, round(10 * 0.15) = 2 (half to even).
        assert count == round(example["input_mask"].sum() * 0.15)
        assert not {LETTERS[i] for i in example["masked_lm_ids"][:count]
                    } & {"[CLS]", "[SEP]"}


def test_sentence_order_pairs_by_hand(letter_files):
    """Every pair is a chunk of one document split in two, in order (label
    0) or swapped (label 1); a one-sentence chunk is split inside the
    sentence, a one-token document ("s") makes nothing."""
    corpus, vocab = letter_files
    documents = [doc.replace("\n", " ").split()
                 for doc in LETTER_CORPUS.strip().split("\n\n")]
    # Training: endless passes over the file, new draws on each.
    dataset = dynamic_masking_dataset(
        corpus, vocab, True, 1, 12, 3, is_training=True, seed=4,
        short_seq_prob=0.0, shuffle_buffer_size=1, sentence_order=True)
    labels = []
    for tokens, segments, label in _letter_sequences(dataset.take(36)):
        first_sep = tokens.index("[SEP]")
        a, b = tokens[1:first_sep], tokens[first_sep + 1:-1]
        assert a and b
        assert segments == [0] * (len(a) + 2) + [1] * (len(b) + 1)
        # Target 9 tokens: a chunk is a whole document, its halves in
        # order or swapped; "s" makes no pair.
        text = b + a if label else a + b
        assert any(text == document for document in documents), tokens
        labels.append(label)
    assert 0.3 < np.mean(labels) < 0.7, labels


def test_sentence_order_and_full_sentences_exclude_each_other(letter_files):
    corpus, vocab = letter_files
    with pytest.raises(ValueError, match="no sentence order to predict"):
        dynamic_masking_dataset(corpus, vocab, True, 1, 12, 3, True,
                                sentence_order=True,
                                packing=dynamic_masking.FULL_SENTENCES)
    with pytest.raises(ValueError, match="packing must be one of"):
        dynamic_masking_dataset(corpus, vocab, True, 1, 12, 3, True,
                                packing="documents")
