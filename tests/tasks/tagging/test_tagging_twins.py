"""The two tagging window twins cut the same windows and read labels back
alike.

`features.convert_sentences` / `assemble_sentence_predictions` and their
in-graph twin `graph_windows.TaggingWindows` (raw-text SavedModels) read one
`TaggingWindowConfig`. Here both get the same generated sentences, window
settings and predicted label ids: the graph's model inputs must be the
Python windows', and each word must get the same label.

The Python windows are the reference: tests/tasks/tagging/test_tagging_data.py
holds them to hand-worked windows. The cases are drawn from a seeded RNG:
several windows per sentence (`doc_stride` overlaps, strides longer than a
window), words split into pieces, words longer than a window (cut), words
that give no piece ("[UNK]"), unknown words, Chinese characters, empty
sentences, batches of several sentences.
"""

import random

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.tasks.tagging import features as features_lib
from bert_tf.tasks.tagging import graph_windows
from bert_tf.tasks.tagging.examples import TaggedSentence
from bert_tf.tasks.tagging.features import TaggingWindowConfig
from bert_tf.text import graph_tokenizer
from bert_tf.text import tokenization

NUM_BATCHES = 20
LABELS = ["O", "B-PER", "I-PER", "B-LOC"]

_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "eu", "rejects", "german",
          "call", "black", "##burn", "##s", "peter", "a", "##b", "##c", "b",
          "c", ".", ",", "中", "国"]
# Words: in the vocab, split into pieces, long (cut), without pieces,
# unknown, Chinese, with punctuation.
_WORDS = ["EU", "rejects", "German", "call", "Blackburns", "Peter", "a",
          "abc", "b", "c", "cab", "abcbcbcabcbc", "\x00", "zebra", "中国",
          "German.", "a,b"]
_SEPARATORS = [" ", "  ", "\t", "\u3000"]


@pytest.fixture(scope="module")
def tokenizers(tmp_path_factory):
    """(Python, graph) tokenizers of one vocab."""
    path = tmp_path_factory.mktemp("twins") / "vocab.txt"
    path.write_text("\n".join(_VOCAB) + "\n", encoding="utf-8")
    return (tokenization.FullTokenizer(str(path), do_lower_case=True),
            graph_tokenizer.GraphFullTokenizer(str(path), do_lower_case=True))


def _batch(rng):
    """Sentences (lists of words), each with at least one word but rarely."""
    batch = []
    for _ in range(rng.randint(1, 3)):
        num_words = 0 if rng.random() < 0.1 else rng.randint(1, 12)
        batch.append([rng.choice(_WORDS) for _ in range(num_words)])
    return batch


def test_python_and_graph_windows_agree(tokenizers):
    tokenizer, graph = tokenizers
    rng = random.Random(47)
    np_rng = np.random.default_rng(47)
    seen = {"several_windows": 0, "cut_word": 0, "empty_word": 0}
    for index in range(NUM_BATCHES):
        config = TaggingWindowConfig(max_seq_length=rng.randint(3, 10),
                                     doc_stride=rng.randint(1, 9))
        batch = _batch(rng)
        sentences = [TaggedSentence(words, None, [1] * len(words))
                     for words in batch]
        windows = features_lib.convert_sentences(sentences, LABELS, config,
                                                 tokenizer)
        arrays = features_lib.windows_to_arrays(windows,
                                                config.max_seq_length)
        twin = graph_windows.TaggingWindows(graph, config)
        texts = [rng.choice(_SEPARATORS).join(words) for words in batch]
        inputs, graph_windows_ = twin.features(tf.constant(texts, tf.string))
        where = f"batch {index}: {config}, {texts!r}"

        for name in (features_lib.INPUT_IDS, features_lib.INPUT_MASK,
                     features_lib.SEGMENT_IDS, features_lib.WORD_POSITIONS,
                     features_lib.WORD_MASK):
            np.testing.assert_array_equal(inputs[name].numpy(), arrays[name],
                                          err_msg=f"{name}, {where}")
        assert graph_windows_["words"].to_list() == [
            [word.encode("utf-8") for word in words] for words in batch
        ], where

        predicted_ids = np_rng.integers(
            0, len(LABELS), size=[len(windows), config.max_seq_length])
        expected = features_lib.assemble_sentence_predictions(
            sentences, arrays, predicted_ids, LABELS)
        got = twin.labels(graph_windows_,
                          tf.constant(predicted_ids, tf.int32),
                          tf.constant(LABELS))
        assert [[label.decode("utf-8") for label in labels]
                for labels in got.to_list()] == expected, where

        seen["several_windows"] += len(windows) > len(batch)
        pieces = [len(tokenizer.tokenize(word)) for words in batch
                  for word in words]
        seen["cut_word"] += max(pieces, default=0) > config.max_seq_length - 2
        seen["empty_word"] += 0 in pieces
    # The generated cases reach what they are for.
    assert min(seen.values()) >= 3, seen
