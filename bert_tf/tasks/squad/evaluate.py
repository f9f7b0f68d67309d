"""The official SQuAD v1.1 and v2.0 metrics: exact match and F1.

Both official scripts normalize an answer the same way -- lower-case,
remove ASCII punctuation (`string.punctuation`), remove the articles
"a", "an", "the" as whole words, collapse whitespace -- and then compare:

* exact match: the normalized texts are equal;
* F1: over the multisets of normalized words of prediction and gold answer.

A question's score is the maximum over its gold answers; scores are
averaged over questions and reported in percent.

They differ in the details, which are kept here:

v1.1 (`evaluate_v1`): a question without a prediction scores 0 and counts;
  F1 of an empty prediction or gold answer is 0. Returns `exact_match`, `f1`.

v2.0 (`evaluate_v2`): gold answers that normalize to "" are dropped, and a
  question with none left (unanswerable) has the single gold answer "";
  F1 is 1 when both prediction and gold are empty, 0 when only one is.
  A question without a prediction is left out of every total (Model
  Garden's reading; the official script also leaves it out of the overall
  total). With no-answer probabilities (`null_odds.json`), a question whose
  probability exceeds `na_prob_thresh` (default 1.0, the script's) counts
  as predicted unanswerable, and the best threshold is searched. Returns
  `exact`, `f1`, `total`, `HasAns_*`/`NoAns_*` splits and `best_exact`,
  `best_exact_thresh`, `best_f1`, `best_f1_thresh`.
"""

import collections
import re
import string

from absl import logging

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text):
    """Lower-cases and removes punctuation, articles and extra whitespace."""
    text = text.lower()
    text = "".join(char for char in text if char not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _f1_of_tokens(prediction_tokens, gold_tokens):
    common = (collections.Counter(prediction_tokens)
              & collections.Counter(gold_tokens))
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = num_same / len(prediction_tokens)
    recall = num_same / len(gold_tokens)
    return (2 * precision * recall) / (precision + recall)


def exact_match_score(prediction, gold):
    """Whether the normalized texts are equal (v1.1 and v2.0 alike)."""
    return normalize_answer(prediction) == normalize_answer(gold)


def f1_score_v1(prediction, gold):
    """SQuAD v1.1 F1 of one prediction against one gold answer (0 to 1)."""
    return _f1_of_tokens(normalize_answer(prediction).split(),
                         normalize_answer(gold).split())


def f1_score_v2(prediction, gold):
    """SQuAD v2.0 F1: as v1.1, but two empty answers agree (F1 = 1)."""
    prediction_tokens = (normalize_answer(prediction).split() if prediction
                         else [])
    gold_tokens = normalize_answer(gold).split() if gold else []
    if not prediction_tokens or not gold_tokens:
        return int(prediction_tokens == gold_tokens)
    return _f1_of_tokens(prediction_tokens, gold_tokens)


def _questions(dataset):
    """Yields every question dict of a SQuAD `data` list."""
    for article in dataset:
        for paragraph in article["paragraphs"]:
            yield from paragraph["qas"]


def _warn_missing(missing, version):
    if missing:
        logging.warning(
            "SQuAD %s evaluation: %d questions have no prediction (first: "
            "%s)", version, len(missing), ", ".join(map(str, missing[:5])))


def evaluate_v1(dataset, predictions):
    """The official SQuAD v1.1 metrics.

    Args:
      dataset: the `data` list of the SQuAD file (with answers).
      predictions: dict question id -> predicted text.

    Returns:
      `{"exact_match": percent, "f1": percent}`; questions without a
      prediction score 0.

    Raises:
      ValueError: the dataset has no questions.
    """
    exact_match = f1 = 0.0
    total = 0
    missing = []
    for qa in _questions(dataset):
        total += 1
        if qa["id"] not in predictions:
            missing.append(qa["id"])
            continue
        prediction = predictions[qa["id"]]
        golds = [answer["text"] for answer in qa["answers"]]
        if not golds:
            # The official script fails on max([]); such a question can
            # only be missed.
            continue
        exact_match += max(exact_match_score(prediction, gold)
                           for gold in golds)
        f1 += max(f1_score_v1(prediction, gold) for gold in golds)
    if not total:
        raise ValueError("no questions to evaluate")
    _warn_missing(missing, "v1.1")
    return {"exact_match": 100.0 * exact_match / total,
            "f1": 100.0 * f1 / total}


def _best_threshold(predictions, scores, na_probs, has_answer):
    """The official `find_best_thresh`: best score over no-answer thresholds.

    Starting from "predict no answer everywhere" (every unanswerable
    question right), questions are switched to their prediction in order of
    increasing no-answer probability; the best running score and the
    probability where it was reached are returned.
    """
    score = best_score = sum(1 for qid in scores if not has_answer[qid])
    best_threshold = 0.0
    for qid in sorted(na_probs, key=lambda k: na_probs[k]):
        if qid not in scores:
            continue
        if has_answer[qid]:
            score += scores[qid]
        elif predictions[qid]:
            score -= 1
        if score > best_score:
            best_score = score
            best_threshold = na_probs[qid]
    return 100.0 * best_score / len(scores), best_threshold


def evaluate_v2(dataset, predictions, na_probs=None, na_prob_thresh=1.0):
    """The official SQuAD v2.0 metrics.

    Args:
      dataset: the `data` list of the SQuAD 2.0 file.
      predictions: dict question id -> predicted text ("" = no answer).
      na_probs: dict question id -> no-answer score (`null_odds.json`), or
        None (all 0, and no best-threshold search), as the script without
        `--na-prob-file`.
      na_prob_thresh: questions with a no-answer score above it count as
        predicted unanswerable (the script's `--na-prob-thresh`).

    Returns:
      An OrderedDict: `exact`, `f1`, `total`, then `HasAns_exact`,
      `HasAns_f1`, `HasAns_total` and `NoAns_*` when there are such
      questions, then `best_exact`, `best_exact_thresh`, `best_f1`,
      `best_f1_thresh` when `na_probs` is given. Scores in percent.

    Raises:
      ValueError: no question has a prediction, or a no-answer score is
        missing for a predicted question.
    """
    has_answer = {}
    exact_raw = {}
    f1_raw = {}
    missing = []
    for qa in _questions(dataset):
        qid = qa["id"]
        if qid not in predictions:
            missing.append(qid)
            continue
        has_answer[qid] = bool(qa["answers"])
        golds = [answer["text"] for answer in qa["answers"]
                 if normalize_answer(answer["text"])]
        if not golds:
            golds = [""]  # Unanswerable: only "" is right.
        prediction = predictions[qid]
        exact_raw[qid] = max(int(exact_match_score(prediction, gold))
                             for gold in golds)
        f1_raw[qid] = max(f1_score_v2(prediction, gold) for gold in golds)
    _warn_missing(missing, "v2.0")
    if not exact_raw:
        raise ValueError("no question of the dataset has a prediction")
    search_threshold = na_probs is not None
    if na_probs is None:
        na_probs = {qid: 0.0 for qid in predictions}
    unscored = [qid for qid in exact_raw if qid not in na_probs]
    if unscored:
        raise ValueError(
            f"no-answer scores are missing for {len(unscored)} questions "
            f"(first: {', '.join(map(str, unscored[:5]))})")

    def thresholded(raw):
        return {qid: (float(not has_answer[qid])
                      if na_probs[qid] > na_prob_thresh else score)
                for qid, score in raw.items()}

    exact = thresholded(exact_raw)
    f1 = thresholded(f1_raw)

    def summary(qids):
        total = len(qids)
        return [("exact", 100.0 * sum(exact[q] for q in qids) / total),
                ("f1", 100.0 * sum(f1[q] for q in qids) / total),
                ("total", total)]

    results = collections.OrderedDict(summary(list(exact)))
    for prefix, wanted in (("HasAns", True), ("NoAns", False)):
        qids = [qid for qid, value in has_answer.items() if value == wanted]
        if qids:
            for key, value in summary(qids):
                results[f"{prefix}_{key}"] = value
    if search_threshold:
        best_exact, exact_threshold = _best_threshold(
            predictions, exact_raw, na_probs, has_answer)
        best_f1, f1_threshold = _best_threshold(
            predictions, f1_raw, na_probs, has_answer)
        results["best_exact"] = best_exact
        results["best_exact_thresh"] = exact_threshold
        results["best_f1"] = best_f1
        results["best_f1_thresh"] = f1_threshold
    return results


def evaluate(dataset, predictions, version_2_with_negative=False,
             na_probs=None):
    """`evaluate_v2` or `evaluate_v1`, by SQuAD version."""
    if version_2_with_negative:
        return evaluate_v2(dataset, predictions, na_probs)
    return evaluate_v1(dataset, predictions)
