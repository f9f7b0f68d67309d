"""Official SQuAD metrics: hand-computed cases and Model Garden's copies.

Model Garden's `official/nlp/tools/squad_evaluate_v1_1.py` and
`squad_evaluate_v2_0.py` are copies of the official scripts (v1.1 reports
fractions instead of percent, and calls the best-threshold scores
`final_*`).
"""

import logging
import random

import pytest

from bert_tf.tasks.squad import evaluate as squad_evaluate
from testing import squad_synthetic
import squad_testdata


@pytest.mark.parametrize("text, expected", [
    ("The Cat's  hat!", "cats hat"),
    ("An apple, a day", "apple day"),
    ("  the\tTHE theme  ", "theme"),        # Whole words only.
    # Only ASCII punctuation is removed.
    ("Théâtre\u2014the end", "théâtre\u2014 end"),
    ("", ""),
])
def test_normalize_answer(text, expected):
    assert squad_evaluate.normalize_answer(text) == expected


def test_scores_by_hand():
    # "big red dog" vs "red dog barks": 2 common of 3 and 3.
    assert squad_evaluate.f1_score_v1(
        "the big red dog", "a red dog barks") == pytest.approx(2 / 3)
    assert squad_evaluate.exact_match_score("The Dog.", "dog")
    # Repeated words count as often as they appear in both.
    assert squad_evaluate.f1_score_v1("dog dog dog", "dog") == pytest.approx(
        2 * (1 / 3) * 1 / (1 / 3 + 1))
    # The two versions differ on empty answers.
    assert squad_evaluate.f1_score_v1("", "") == 0
    assert squad_evaluate.f1_score_v2("", "") == 1
    assert squad_evaluate.f1_score_v2("the", "") == 1  # "the" normalizes away
    assert squad_evaluate.f1_score_v2("dog", "") == 0


def _dataset_v1():
    return [{"paragraphs": [{"context": "...", "qas": [
        {"id": "a", "answers": [{"text": "Denver Broncos"},
                                {"text": "The Broncos"}]},
        {"id": "b", "answers": [{"text": "Santa Clara, California"}]},
        {"id": "c", "answers": [{"text": "gold"}]},
    ]}]}]


def test_v1_by_hand(caplog):
    predictions = {"a": "broncos", "b": "Santa Clara"}
    with caplog.at_level(logging.WARNING):
        results = squad_evaluate.evaluate_v1(_dataset_v1(), predictions)
    # a: EM 1 (vs "The Broncos"); b: F1 2*(1)(2/3)/(5/3) = 0.8; c: missing.
    assert results["exact_match"] == pytest.approx(100 / 3)
    assert results["f1"] == pytest.approx(100 * 1.8 / 3)
    assert "1 questions have no prediction (first: c)" in caplog.text


def _dataset_v2():
    return [{"paragraphs": [{"context": "...", "qas": [
        {"id": "q1", "answers": [{"text": "Paris"}], "is_impossible": False},
        {"id": "q2", "answers": [], "is_impossible": True},
        {"id": "q3", "answers": [], "is_impossible": True},
        {"id": "q4", "answers": [{"text": "Lyon"}], "is_impossible": False},
    ]}]}]


def test_v2_by_hand():
    predictions = {"q1": "paris", "q2": "", "q3": "London", "q4": ""}
    results = squad_evaluate.evaluate_v2(_dataset_v2(), predictions)
    assert dict(results) == {
        "exact": 50.0, "f1": 50.0, "total": 4,
        "HasAns_exact": 50.0, "HasAns_f1": 50.0, "HasAns_total": 2,
        "NoAns_exact": 50.0, "NoAns_f1": 50.0, "NoAns_total": 2}
    # q2 and q3 have a no-answer score above 1.0: both count as predicted
    # unanswerable (right). Best threshold: switching on q1 first (-5)
    # gains 1 over "no answer everywhere" (2 of 4); nothing gains more.
    na_probs = {"q1": -5.0, "q2": 3.0, "q3": 2.0, "q4": 0.5}
    results = squad_evaluate.evaluate_v2(_dataset_v2(), predictions,
                                         na_probs)
    assert results["exact"] == 75.0
    assert results["NoAns_exact"] == 100.0
    assert (results["best_exact"], results["best_exact_thresh"]) == (75.0,
                                                                     -5.0)
    assert (results["best_f1"], results["best_f1_thresh"]) == (75.0, -5.0)


def test_v2_errors():
    with pytest.raises(ValueError, match="no question of the dataset has a "
                                         "prediction"):
        squad_evaluate.evaluate_v2(_dataset_v2(), {"other": ""})
    with pytest.raises(ValueError, match=r"no-answer scores are missing for "
                                         r"1 questions \(first: q4\)"):
        squad_evaluate.evaluate_v2(
            _dataset_v2(), {"q1": "", "q2": "", "q3": "", "q4": ""},
            {"q1": 0.0, "q2": 0.0, "q3": 0.0})


# -- against Model Garden's copies of the official scripts --------------------

def _variant(rng, gold, other_texts):
    """A prediction: the gold answer changed in a way the metrics notice."""
    words = gold.split()
    choice = rng.randrange(8)
    if choice == 0:
        return gold
    if choice == 1:
        return "The " + gold.upper() + "!"
    if choice == 2:
        return " ".join(words[:-1]) if len(words) > 1 else gold + " extra"
    if choice == 3:
        return rng.choice(other_texts)
    if choice == 4:
        return ""
    if choice == 5:
        return " ".join(words + [rng.choice(other_texts)])
    if choice == 6:
        return "a " + gold + ", an"
    return " ".join(reversed(words))


def _generated(version_2, seed):
    rng = random.Random(seed)
    document = squad_synthetic.make_squad(
        rng, squad_testdata.corpus_words(), num_paragraphs=30,
        version_2=version_2)
    dataset = document["data"]
    golds = [a["text"] for article in dataset
             for p in article["paragraphs"] for qa in p["qas"]
             for a in qa["answers"]]
    predictions = {}
    na_probs = {}
    for article in dataset:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                if qa["answers"] and rng.random() < 0.5:
                    # Dev sets have several answers per question.
                    qa["answers"].append(
                        {"text": _variant(rng, qa["answers"][0]["text"],
                                          golds), "answer_start": 0})
                if rng.random() < 0.05:
                    continue  # No prediction.
                gold = (qa["answers"][0]["text"] if qa["answers"]
                        else rng.choice(golds))
                predictions[qa["id"]] = _variant(rng, gold, golds)
                na_probs[qa["id"]] = round(rng.uniform(-4, 4), 1)
    return dataset, predictions, na_probs


def test_v1_matches_model_garden():
    from official.nlp.tools import squad_evaluate_v1_1
    dataset, predictions, _ = _generated(version_2=False, seed=1)
    ours = squad_evaluate.evaluate_v1(dataset, predictions)
    theirs = squad_evaluate_v1_1.evaluate(dataset, predictions)
    assert ours["exact_match"] == pytest.approx(
        100 * theirs["exact_match"], rel=1e-12)
    assert ours["f1"] == pytest.approx(100 * theirs["final_f1"], rel=1e-12)
    assert 10 < ours["exact_match"] < ours["f1"] < 90


@pytest.mark.parametrize("with_na_probs", [False, True])
def test_v2_matches_model_garden(with_na_probs):
    from official.nlp.tools import squad_evaluate_v2_0
    dataset, predictions, na_probs = _generated(version_2=True, seed=2)
    if not with_na_probs:
        na_probs = None
    ours = squad_evaluate.evaluate_v2(dataset, predictions, na_probs)
    theirs = squad_evaluate_v2_0.evaluate(dataset, predictions, na_probs)
    names = ["exact", "f1", "total", "HasAns_exact", "HasAns_f1",
             "HasAns_total", "NoAns_exact", "NoAns_f1", "NoAns_total"]
    if with_na_probs:
        names += ["best_exact", "best_exact_thresh", "best_f1",
                  "best_f1_thresh"]
    else:
        assert "best_exact" not in ours
    assert list(ours) == names
    for name in names:
        their_name = name.replace("best_", "final_")
        assert ours[name] == pytest.approx(theirs[their_name], rel=1e-12), name
    assert 0 < ours["NoAns_total"] < ours["total"]
