"""The two SQuAD post-processing twins give the same answers.

`postprocess.compute_predictions` (with `features.generate_features`'
windows) and its in-graph twin `graph_answers.SquadAnswerer` (raw-text
SavedModels) read one `SquadPostprocessConfig`. Here both get the same
generated questions, settings and logits: the graph's windows must be the
Python features' model inputs, and its answer, n-best texts in order, their
probabilities and logits, and the null odds must be the Python path's.

The Python path is the reference: tests/tasks/squad/test_squad_postprocess.py
holds it to Model Garden's port of Google's `write_predictions`.

The cases are drawn from a seeded RNG: SQuAD 1.1 and 2.0 with several
thresholds, contexts of one to several windows (`doc_stride` overlaps),
logits drawn from a few integers (n-best and null-score ties), short and
long `max_answer_length`, starts after ends, top logits on the question,
the separators and the padding, and words split into pieces, unknown to the
vocab, accented, with punctuation, or repeating a letter in one word (where
`get_final_text` looks the answer up by its first occurrence).
"""

import dataclasses
import random

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.tasks.squad import examples as squad_examples
from bert_tf.tasks.squad import features as squad_features
from bert_tf.tasks.squad import graph_answers
from bert_tf.tasks.squad import postprocess as squad_postprocess
from bert_tf.tasks.squad.postprocess import RawResult
from bert_tf.tasks.squad.postprocess import SquadPostprocessConfig
from bert_tf.text import graph_tokenizer
from bert_tf.text import tokenization

# Questions (each with its own windows and logits), and answer settings
# tried on each.
NUM_QUESTIONS = 20
NUM_EXTENDED_QUESTIONS = 400
ANSWER_SETTINGS_PER_QUESTION = 3

_VOCAB = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "quick", "brown", "fox",
    "jump", "##s", "##ed", "over", "lazy", "dog", "un", "##able", "a", "##a",
    "b", "##b", "##ab", "cafe", "ophelie", "'", "s", ",", ".", "(", ")", "-",
    "1895", "1943", "what", "who", "?", "is", "river", "miss", "##iss",
    "##ippi", "new", "york",
]

# Context words: in the vocab, split into pieces, accented, with
# punctuation, unknown ("zebra"), and repeated letters ("Aa", "aBab").
_CONTEXT_WORDS = [
    "The", "quick", "brown", "fox", "jumps", "jumped", "over", "the",
    "lazy", "dog.", "unable", "Aa", "aBab", "bab", "Café,", "Ophélie's",
    "(1895-1943).", "zebra", "Mississippi", "river", "New", "York", "a",
    "AAA", "Ba",
]
_QUESTION_WORDS = ["What", "who", "is", "the", "river?", "fox", "zebra"]


@pytest.fixture(scope="module")
def tokenizers(tmp_path_factory):
    """(Python, graph) tokenizers of one vocab, by `do_lower_case`."""
    path = tmp_path_factory.mktemp("twins") / "vocab.txt"
    path.write_text("\n".join(_VOCAB) + "\n", encoding="utf-8")
    return {
        do_lower_case: (
            tokenization.FullTokenizer(str(path), do_lower_case),
            graph_tokenizer.GraphFullTokenizer(str(path), do_lower_case))
        for do_lower_case in (True, False)}


def _question(rng, index):
    """Window settings, a question and a context."""
    max_query_length = rng.randint(1, 6)
    max_seq_length = rng.randint(max_query_length + 4, 24)
    windows = SquadPostprocessConfig(doc_stride=rng.randint(1, 10),
                                     max_query_length=max_query_length)
    question = " ".join(rng.choice(_QUESTION_WORDS)
                        for _ in range(rng.randint(1, 4)))
    context = rng.choice([" ", "  ", "\t", "\n"]).join(
        rng.choice(_CONTEXT_WORDS) for _ in range(rng.randint(1, 14)))
    return windows, max_seq_length, f"q{index}", question, context


def _answer_settings(rng, windows):
    """`windows` with answer settings drawn."""
    return dataclasses.replace(
        windows, n_best_size=rng.randint(1, 8),
        max_answer_length=rng.choice([1, 2, 3, 30]),
        version_2_with_negative=rng.random() < 0.5,
        null_score_diff_threshold=rng.choice([0.0, -2.0, 1.5, 4.0]))


def _logits(rng, np_rng, shape):
    """Logits with many ties (a few integers), or spread out."""
    if rng.random() < 0.6:
        return np_rng.integers(-3, 4, size=shape).astype(np.float32)
    return np_rng.normal(0.0, 3.0, size=shape).astype(np.float32)


def _python_answers(tokenizer, config, max_seq_length, qas_id, question,
                    context, start_logits, end_logits, do_lower_case):
    doc_tokens, _ = squad_examples.split_context(context)
    example = squad_examples.SquadExample(
        qas_id=qas_id, question_text=question, doc_tokens=doc_tokens)
    features = list(squad_features.generate_features(
        [example], tokenizer, max_seq_length, config.doc_stride,
        config.max_query_length, is_training=False))
    results = [RawResult(feature.unique_id, start, end)
               for feature, start, end in zip(features, start_logits,
                                              end_logits)]
    predictions, nbest, null_odds = squad_postprocess.compute_predictions(
        [example], features, results, config, do_lower_case)
    return features, predictions[qas_id], nbest[qas_id], null_odds.get(qas_id)


def _check_twins_agree(tokenizers, num_questions, seed):
    rng = random.Random(seed)
    np_rng = np.random.default_rng(seed)
    seen = {"several_windows": 0, "null_answer": 0, "version_2": 0,
            "ties": 0, "unknown_piece": 0, "cut_answer": 0}
    for index in range(num_questions):
        windows_config, max_seq_length, qas_id, question, context = (
            _question(rng, index))
        do_lower_case = rng.random() < 0.75
        tokenizer, graph = tokenizers[do_lower_case]
        inputs, windows = graph_answers.SquadAnswerer(
            graph, max_seq_length, windows_config).features(
                tf.constant(question), tf.constant(context))
        num_windows = int(inputs["input_ids"].shape[0])
        start_logits = _logits(rng, np_rng, [num_windows, max_seq_length])
        end_logits = _logits(rng, np_rng, [num_windows, max_seq_length])
        for _ in range(ANSWER_SETTINGS_PER_QUESTION):
            config = _answer_settings(rng, windows_config)
            features, text, nbest, null_odds = _python_answers(
                tokenizer, config, max_seq_length, qas_id, question, context,
                start_logits, end_logits, do_lower_case)
            where = (f"question {index}: {config}, "
                     f"max_seq_length={max_seq_length}, "
                     f"do_lower_case={do_lower_case}, "
                     f"question={question!r}, context={context!r}")

            # The windows: the Python features' model inputs.
            assert num_windows == len(features), where
            for name in ("input_ids", "input_mask", "segment_ids"):
                np.testing.assert_array_equal(
                    inputs[name].numpy(),
                    [getattr(feature, name) for feature in features],
                    err_msg=where)

            answerer = graph_answers.SquadAnswerer(graph, max_seq_length,
                                                   config)
            got = answerer.answer(windows, tf.constant(start_logits),
                                  tf.constant(end_logits))
            count = int(got["nbest_count"])
            texts = [text.decode("utf-8")
                     for text in got["nbest_text"].numpy()[:count]]
            assert texts == [entry["text"] for entry in nbest], where
            assert got["answer"].numpy().decode("utf-8") == text, where
            for name in ("probability", "start_logit", "end_logit"):
                np.testing.assert_allclose(
                    got[f"nbest_{name}"].numpy()[:count],
                    [entry[name] for entry in nbest], rtol=1e-6, atol=1e-6,
                    err_msg=f"{name}, {where}")
            if config.version_2_with_negative:
                # float64 sums in both, the graph's cast to float32.
                np.testing.assert_allclose(
                    float(got["null_score_diff"]), null_odds, rtol=1e-6,
                    atol=1e-5, err_msg=where)

            seen["several_windows"] += len(features) > 1
            seen["version_2"] += config.version_2_with_negative
            seen["null_answer"] += (config.version_2_with_negative
                                    and text == "")
            scores = [entry["start_logit"] + entry["end_logit"]
                      for entry in nbest]
            seen["ties"] += len(set(scores)) < len(scores)
            seen["unknown_piece"] += any("[UNK]" in feature.tokens
                                         for feature in features)
            seen["cut_answer"] += config.max_answer_length < 30
    return seen


def test_python_and_graph_answers_agree(tokenizers):
    seen = _check_twins_agree(tokenizers, NUM_QUESTIONS, seed=47)
    # The generated cases reach what they are for.
    assert min(seen.values()) >= 3, seen


@pytest.mark.extended(reason="ten times the questions of "
                      "test_python_and_graph_answers_agree: about 2 minutes")
def test_python_and_graph_answers_agree_on_many_questions(tokenizers):
    seen = _check_twins_agree(tokenizers, NUM_EXTENDED_QUESTIONS, seed=4747)
    assert min(seen.values()) >= 50, seen


def test_both_answer_the_first_occurrence_as_googles_find(tokenizers):
    """An answer that starts inside a word is looked up in the word's
    normalized text with `str.find`, as Google's `get_final_text`: the
    second piece of "Aa" ("a", "##a") is answered with the first "A"."""
    config = SquadPostprocessConfig(doc_stride=8, max_query_length=4)
    tokenizer, graph = tokenizers[True]
    max_seq_length = 12
    answerer = graph_answers.SquadAnswerer(graph, max_seq_length, config)
    inputs, windows = answerer.features(tf.constant("who"),
                                        tf.constant("Aa river"))
    # [CLS] who [SEP] a ##a river [SEP]: the answer is "##a" alone.
    np.testing.assert_array_equal(inputs["input_ids"].numpy()[0, :7],
                                  [2, 33, 3, 16, 17, 36, 3])
    start_logits = np.zeros([1, max_seq_length], np.float32)
    end_logits = np.zeros([1, max_seq_length], np.float32)
    start_logits[0, 4] = end_logits[0, 4] = 5.0
    _, text, _, _ = _python_answers(
        tokenizer, config, max_seq_length, "aa", "who", "Aa river",
        start_logits, end_logits, do_lower_case=True)
    got = answerer.answer(windows, tf.constant(start_logits),
                          tf.constant(end_logits))
    assert text == "A"
    assert got["answer"].numpy().decode("utf-8") == "A"
