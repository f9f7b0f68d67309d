"""Tagging metrics against the `seqeval` package (an independent reference)."""

import random
import warnings

import pytest

from bert_tf.tasks.tagging import metrics as tagging_metrics

seqeval_metrics = pytest.importorskip("seqeval.metrics")
from seqeval.metrics import sequence_labeling  # noqa: E402

TYPES = ("PER", "LOC", "ORG")
# Well-formed and ill-formed tags alike: I-/E- without a B-, mixed schemes,
# and tags seqeval reads in odd ways ("PER" alone, "B", ".", "X-Y-Z").
TAG_POOLS = {
    "bio": ["O"] + [f"{p}-{t}" for p in "BI" for t in TYPES],
    "bioes": ["O"] + [f"{p}-{t}" for p in "BIES" for t in TYPES],
    "malformed": ["O", "B", "I", "E", "S", ".", "PER", "X-Y-Z", "B-",
                  "I-PER", "E-LOC", "S-ORG", "B-PER", "I-LOC"],
}


def _random_sentences(rng, pool, num_sentences):
    return [[rng.choice(pool) for _ in range(rng.randint(0, 8))]
            for _ in range(num_sentences)]


@pytest.mark.parametrize("scheme", sorted(TAG_POOLS))
def test_scores_match_seqeval_on_random_sequences(scheme):
    rng = random.Random(scheme)
    pool = TAG_POOLS[scheme]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(300):
            gold = _random_sentences(rng, pool, rng.randint(1, 5))
            predicted = [[rng.choice(pool) if rng.random() < 0.4 else tag
                          for tag in sentence] for sentence in gold]
            scores = tagging_metrics.entity_scores(gold, predicted)
            assert scores["precision"] == pytest.approx(
                seqeval_metrics.precision_score(gold, predicted), abs=1e-12)
            assert scores["recall"] == pytest.approx(
                seqeval_metrics.recall_score(gold, predicted), abs=1e-12)
            assert scores["f1"] == pytest.approx(
                seqeval_metrics.f1_score(gold, predicted), abs=1e-12)
            assert tagging_metrics.token_accuracy(
                gold, predicted) == pytest.approx(
                    seqeval_metrics.accuracy_score(gold, predicted)
                    if any(gold) else 0.0)
            report = seqeval_metrics.classification_report(
                gold, predicted, output_dict=True, zero_division=0)
            for entity_type, type_scores in scores["per_type"].items():
                reference = report[entity_type]
                assert type_scores["precision"] == pytest.approx(
                    reference["precision"])
                assert type_scores["recall"] == pytest.approx(
                    reference["recall"])
                assert type_scores["f1"] == pytest.approx(
                    reference["f1-score"])
                assert type_scores["support"] == reference["support"]
            for sentence in gold + predicted:
                assert tagging_metrics.get_entities(sentence) == (
                    sequence_labeling.get_entities(list(sentence)))


def test_hand_computed_example():
    gold = [["B-PER", "I-PER", "O", "B-LOC"], ["S-ORG", "O"]]
    predicted = [["B-PER", "I-PER", "O", "I-LOC"], ["O", "B-ORG"]]
    # Entities: gold PER(0,1) LOC(3,3) ORG(5,5); predicted PER(0,1), LOC(3,3)
    # (an I- after O opens an entity), ORG(6,6). 2 of 3 correct each way.
    results = tagging_metrics.tagging_metrics(gold, predicted)
    assert results["eval_precision"] == pytest.approx(2 / 3)
    assert results["eval_recall"] == pytest.approx(2 / 3)
    assert results["eval_f1"] == pytest.approx(2 / 3)
    assert results["eval_accuracy"] == pytest.approx(3 / 6)
    assert results["eval_f1_ORG"] == 0.0
    assert results["eval_f1_PER"] == 1.0


def test_mismatched_lengths_are_named():
    with pytest.raises(ValueError, match="sentence 1: 2 gold tags but 1"):
        tagging_metrics.entity_scores([["O"], ["O", "O"]], [["O"], ["O"]])
