"""From logits to answers: n-best, text projection, null answers, files.

References: hand-worked contexts and logits, and Model Garden's
`squad_lib.postprocess_output` (a port of Google's `write_predictions`) on
generated data with the same logits.
"""

import json
import logging
import os
import random

import numpy as np
import pytest

from bert_tf.tasks.squad import examples as squad_examples
from bert_tf.tasks.squad import features as squad_features
from bert_tf.tasks.squad import postprocess as squad_postprocess
from bert_tf.tasks.squad.examples import SquadExample
from bert_tf.tasks.squad.postprocess import RawResult
from bert_tf.text import tokenization
import squad_testdata

_SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]


def _tokenizer(tmp_path, words, do_lower_case=True):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(_SPECIAL + list(words)) + "\n",
                    encoding="utf-8")
    return tokenization.FullTokenizer(str(path), do_lower_case=do_lower_case)


def _answers(**fields):
    """run_squad.py's answer settings: its defaults, but `fields`."""
    return squad_postprocess.SquadPostprocessConfig(**fields)


def _logits(length, peaks, base=-10.0):
    values = np.full([length], base, np.float32)
    for position, value in peaks.items():
        values[position] = value
    return values


# -- get_final_text -----------------------------------------------------------

@pytest.mark.parametrize("pred_text, orig_text, do_lower_case, expected", [
    # The tokenizer's normalization is undone: case, the possessive.
    ("steve smith", "Steve Smith's", True, "Steve Smith"),
    # Accents (precomposed: the same number of characters).
    ("cafe", "Café,", True, "Café"),
    ("ophelie", "Ophélie's", True, "Ophélie"),
    # Punctuation split off by the tokenizer.
    ("1895", "(1895-1943).", True, "1895"),
    ("1943 )", "(1895-1943).", True, "1943)"),
    # Cased models compare case-sensitively.
    ("Smith", "Smith's", False, "Smith"),
    # A combining accent is removed by the tokenizer: lengths differ, the
    # alignment gives up and the whole words are the answer.
    ("cafe", "Cafe\u0301,", True, "Cafe\u0301,"),
    # U+00A0 is a space to the tokenizer but not to the alignment (which
    # strips " " only): the whole words again, as the original.
    ("new", "New\u00a0York", True, "New\u00a0York"),
    # Not found at all.
    ("paris", "London", True, "London"),
])
def test_get_final_text(pred_text, orig_text, do_lower_case, expected):
    assert squad_postprocess.get_final_text(
        pred_text, orig_text, do_lower_case) == expected


def test_get_final_text_agrees_with_model_garden():
    from official.nlp.data import squad_lib
    rng = random.Random(0)
    words = squad_testdata.corpus_words()[:3000] + [
        "Ophélie's", "(1895-1943).", "café,", "ÉLAN!", "naïve", "Æneas,"]
    checked = 0
    for _ in range(300):
        orig_words = [rng.choice(words) for _ in range(rng.randint(1, 5))]
        orig_text = " ".join(orig_words)
        basic = tokenization.BasicTokenizer(True).tokenize(orig_text)
        first = rng.randrange(len(basic))
        pred_text = " ".join(basic[first:first + rng.randint(1, 3)])
        for do_lower_case in (True, False):
            assert squad_postprocess.get_final_text(
                pred_text, orig_text, do_lower_case) == (
                    squad_lib.get_final_text(pred_text, orig_text,
                                             do_lower_case))
            checked += 1
    assert checked == 600


# -- hand-built predictions ---------------------------------------------------

@pytest.fixture
def one_window(tmp_path):
    """A context with odd spacing, accents and punctuation, in one window."""
    tokenizer = _tokenizer(tmp_path, [
        "the", "quick", "brown", "fox", ",", "ophelie", "'", "s", "cafe", ".",
        "what", "?"])
    context = "The  quick\tbrown   fox, Ophélie's café."
    doc_tokens, _ = squad_examples.split_context(context)
    example = SquadExample(qas_id="hand", question_text="What?",
                           doc_tokens=doc_tokens)
    [feature] = squad_features.generate_features(
        [example], tokenizer, 20, 8, 8, is_training=False)
    assert feature.tokens == [
        "[CLS]", "what", "?", "[SEP]", "the", "quick", "brown", "fox", ",",
        "ophelie", "'", "s", "cafe", ".", "[SEP]"]
    return example, feature


@pytest.mark.parametrize("start, end, expected", [
    (5, 6, "quick brown"),   # Words joined by one space, as the original.
    (9, 9, "Ophélie"),       # Accent and case restored, "'s" dropped.
    (12, 12, "café"),        # Trailing "." dropped.
    (7, 8, "fox,"),          # Punctuation inside the span kept.
    (4, 13, "The quick brown fox, Ophélie's café."),
])
def test_answer_text_is_projected_onto_the_context(one_window, start, end,
                                                   expected):
    example, feature = one_window
    result = RawResult(feature.unique_id, _logits(20, {start: 5.0}),
                       _logits(20, {end: 5.0}))
    predictions, nbest, _ = squad_postprocess.compute_predictions(
        [example], [feature], [result], _answers(), do_lower_case=True)
    assert predictions == {"hand": expected}
    assert nbest["hand"][0]["text"] == expected
    assert nbest["hand"][0]["start_logit"] == 5.0


def test_invalid_pairs_are_skipped(one_window):
    example, feature = one_window
    # Highest start: in the query (invalid). Highest end: [SEP] (invalid).
    # End 5 is before start 6 (invalid for that start).
    start = _logits(20, {1: 10.0, 6: 8.0, 5: 6.0})
    end = _logits(20, {14: 10.0, 5: 9.0, 6: 7.0})
    result = RawResult(feature.unique_id, start, end)
    predictions, nbest, _ = squad_postprocess.compute_predictions(
        [example], [feature], [result], _answers(), True)
    texts = [entry["text"] for entry in nbest["hand"]]
    # (6, 6) and (5, 5) both score 15; (6, 6) was found first and wins.
    assert texts[:3] == ["brown", "quick", "quick brown"]
    assert predictions["hand"] == "brown"
    # Padding positions (>= 15) are never answers, however high.
    start = _logits(20, {17: 50.0, 5: 1.0})
    end = _logits(20, {18: 50.0, 5: 1.0})
    predictions, _, _ = squad_postprocess.compute_predictions(
        [example], [feature], [RawResult(feature.unique_id, start, end)],
        _answers(), True)
    assert predictions["hand"] == "quick"
    # Spans longer than max_answer_length are skipped.
    start = _logits(20, {5: 5.0, 9: 1.0})
    end = _logits(20, {9: 5.0})
    predictions, _, _ = squad_postprocess.compute_predictions(
        [example], [feature], [RawResult(feature.unique_id, start, end)],
        _answers(max_answer_length=4), do_lower_case=True)
    assert predictions["hand"] == "Ophélie"


def test_nbest_probabilities_by_hand(one_window):
    example, feature = one_window
    start = _logits(20, {5: 2.0}, base=-100.0)
    end = _logits(20, {5: 1.0, 6: 0.0}, base=-100.0)
    _, nbest, _ = squad_postprocess.compute_predictions(
        [example], [feature], [RawResult(feature.unique_id, start, end)],
        _answers(n_best_size=2), do_lower_case=True)
    entries = nbest["hand"]
    assert [e["text"] for e in entries] == ["quick", "quick brown"]
    # softmax([3, 2])
    expected = np.exp([3.0, 2.0]) / np.exp([3.0, 2.0]).sum()
    np.testing.assert_allclose([e["probability"] for e in entries], expected,
                               rtol=1e-12)
    assert list(entries[0]) == ["text", "probability", "start_logit",
                                "end_logit"]


@pytest.fixture
def four_windows(tmp_path):
    words = [f"w{i}" for i in range(10)]
    tokenizer = _tokenizer(tmp_path, words + ["q"])
    example = SquadExample(qas_id="v2", question_text="q", doc_tokens=words)
    features = list(squad_features.generate_features(
        [example], tokenizer, 8, 2, 1, is_training=False))
    assert len(features) == 4
    return example, features


def _v2_results(features):
    # Null scores per window: 2, 0.75, 6, 4 -> 0.75 (window 1) is the null.
    cls_logits = [(1.0, 1.0), (0.5, 0.25), (3.0, 3.0), (2.0, 2.0)]
    results = []
    for feature, (cls_start, cls_end) in zip(features, cls_logits):
        start = _logits(8, {0: cls_start})
        end = _logits(8, {0: cls_end})
        if feature.doc_span_index == 1:
            # Window 1 is [CLS] q [SEP] w2 w3 w4 w5 [SEP]: w3 .. w4.
            start[4] = 2.0
            end[5] = 1.5
        results.append(RawResult(feature.unique_id, start, end))
    return results


def test_version_2_null_decision_by_hand(four_windows):
    example, features = four_windows
    results = _v2_results(features)
    predictions, nbest, null_odds = squad_postprocess.compute_predictions(
        [example], features, results,
        _answers(version_2_with_negative=True, null_score_diff_threshold=0.0),
        True)
    # score_null - best non-null = 0.75 - (2 + 1.5)
    assert null_odds == {"v2": -2.75}
    assert predictions == {"v2": "w3 w4"}
    null_entry = [e for e in nbest["v2"] if e["text"] == ""]
    assert len(null_entry) == 1
    assert (null_entry[0]["start_logit"], null_entry[0]["end_logit"]) == (
        0.5, 0.25)
    # The threshold moves the decision: -2.75 > -3 -> no answer.
    predictions, _, null_odds = squad_postprocess.compute_predictions(
        [example], features, results,
        _answers(version_2_with_negative=True,
                 null_score_diff_threshold=-3.0), True)
    assert predictions == {"v2": ""}
    assert null_odds == {"v2": -2.75}


def test_version_2_without_a_valid_span_predicts_no_answer(four_windows,
                                                          caplog):
    example, features = four_windows
    # Only the query and [SEP] score: no valid non-null span anywhere.
    results = [RawResult(f.unique_id, _logits(8, {1: 9.0}, base=-1e4),
                         _logits(8, {7: 9.0}, base=-1e4)) for f in features]
    with caplog.at_level(logging.WARNING):
        predictions, _, null_odds = squad_postprocess.compute_predictions(
            [example], features, results,
            _answers(n_best_size=1, version_2_with_negative=True),
            do_lower_case=True)
    assert predictions == {"v2": ""}
    assert null_odds["v2"] == pytest.approx(-2e4)
    assert "question v2 has no valid non-null answer span" in caplog.text


def test_example_without_features_gets_the_originals_placeholder():
    example = SquadExample(qas_id="empty", question_text="q", doc_tokens=[])
    predictions, nbest, _ = squad_postprocess.compute_predictions(
        [example], [], [], _answers(), True)
    assert predictions == {"empty": "empty"}
    assert nbest["empty"][0]["probability"] == 1.0


def test_missing_result_is_named(four_windows):
    example, features = four_windows
    results = _v2_results(features)[:3]
    with pytest.raises(ValueError, match="no model output for feature "
                                         "1000000003 of question v2"):
        squad_postprocess.compute_predictions([example], features, results,
                                              _answers(), True)


def test_write_predictions_files(tmp_path, four_windows):
    example, features = four_windows
    results = _v2_results(features)
    out = tmp_path / "out"
    out.mkdir()
    paths = [str(out / name) for name in (
        squad_postprocess.PREDICTIONS_FILE,
        squad_postprocess.NBEST_PREDICTIONS_FILE,
        squad_postprocess.NULL_ODDS_FILE)]
    returned = squad_postprocess.write_predictions(
        [example], features, results, 20, 30, True, *paths,
        version_2_with_negative=True)
    assert returned == {"v2": "w3 w4"}
    assert sorted(os.listdir(out)) == sorted(
        ["predictions.json", "nbest_predictions.json", "null_odds.json"])
    text = (out / "predictions.json").read_text()
    assert text == '{\n    "v2": "w3 w4"\n}\n'  # Google's indent=4 format.
    assert json.loads((out / "null_odds.json").read_text()) == {"v2": -2.75}
    nbest = json.loads((out / "nbest_predictions.json").read_text())
    assert nbest["v2"][0]["text"] == "w3 w4"
    # SQuAD 1.1 writes no null_odds.json.
    v1_out = tmp_path / "v1"
    v1_out.mkdir()
    squad_postprocess.write_predictions(
        [example], features, results, 20, 30, True,
        str(v1_out / "predictions.json"),
        str(v1_out / "nbest_predictions.json"),
        str(v1_out / "null_odds.json"))
    assert sorted(os.listdir(v1_out)) == ["nbest_predictions.json",
                                          "predictions.json"]


# -- against Model Garden -----------------------------------------------------

def _random_logits(unique_id, max_seq_length, version_2):
    rng = np.random.default_rng(unique_id)
    # One decimal: many exact ties, which must be broken as the original.
    start = np.round(rng.normal(0, 2, max_seq_length), 1).astype(np.float32)
    end = np.round(rng.normal(0, 2, max_seq_length), 1).astype(np.float32)
    if version_2 and unique_id % 3 == 0:
        start[0] += 6
        end[0] += 6
    return start, end


@pytest.mark.parametrize("version_2, threshold", [(False, 0.0), (True, 0.0),
                                                  (True, 2.5)])
def test_predictions_match_model_garden(tmp_path, uncased_vocab_file,
                                        version_2, threshold):
    from official.nlp.data import squad_lib
    from official.nlp.tools import tokenization as mg_tokenization
    path = squad_testdata.generated_squad_file(
        tmp_path, seed=8, num_paragraphs=12, version_2=version_2)
    vocab_file = str(uncased_vocab_file)
    max_seq_length, doc_stride, max_query_length = 96, 24, 16

    examples = squad_examples.read_squad_examples(path, False, version_2)
    tokenizer = tokenization.FullTokenizer(vocab_file, True)
    features = [f.without_model_inputs() for f in
                squad_features.generate_features(
                    examples, tokenizer, max_seq_length, doc_stride,
                    max_query_length, False)]
    results = [RawResult(f.unique_id,
                         *_random_logits(f.unique_id, max_seq_length,
                                         version_2))
               for f in features]
    ours = squad_postprocess.compute_predictions(
        examples, features, results,
        _answers(version_2_with_negative=version_2,
                 null_score_diff_threshold=threshold), do_lower_case=True)

    mg_examples = squad_lib.read_squad_examples(path, False, version_2)
    mg_features = []
    squad_lib.convert_examples_to_features(
        mg_examples, mg_tokenization.FullTokenizer(vocab_file, True),
        max_seq_length, doc_stride, max_query_length, False,
        lambda feature, is_padding: mg_features.append(feature),
        batch_size=1)
    # Google's RawResult holds lists of Python floats.
    mg_results = [RawResult(f.unique_id,
                            *[[float(x) for x in logits] for logits in
                              _random_logits(f.unique_id, max_seq_length,
                                             version_2)])
                  for f in mg_features]
    theirs = squad_lib.postprocess_output(
        mg_examples, mg_features, mg_results, n_best_size=20,
        max_answer_length=30, do_lower_case=True,
        version_2_with_negative=version_2,
        null_score_diff_threshold=threshold)

    predictions, nbest, null_odds = ours
    assert len(features) > 2 * len(examples)
    # Identical JSON: texts, probabilities and logits, bit for bit.
    assert json.dumps(predictions) == json.dumps(theirs[0])
    assert json.dumps(nbest) == json.dumps(theirs[1])
    assert json.dumps(null_odds) == json.dumps(theirs[2])
    if version_2:
        answers = list(predictions.values())
        assert 0 < answers.count("") < len(answers)
