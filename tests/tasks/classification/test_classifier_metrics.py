"""GLUE metrics against scikit-learn and scipy."""

import warnings

import numpy as np
import pytest
import scipy.stats
import sklearn.metrics

from bert_tf.tasks.classification import metrics as m


def random_labels(seed, size, num_classes):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, num_classes, size)
    # Predictions that agree more often than chance, as a model's would.
    noise = rng.integers(0, num_classes, size)
    predictions = np.where(rng.random(size) < 0.6, labels, noise)
    return labels, predictions


@pytest.mark.parametrize("seed, size, num_classes", [
    (0, 50, 2), (1, 997, 2), (2, 300, 3), (3, 8, 5), (4, 1, 2)])
def test_classification_metrics_match_sklearn(seed, size, num_classes):
    labels, predictions = random_labels(seed, size, num_classes)
    assert m.accuracy(labels, predictions) == pytest.approx(
        sklearn.metrics.accuracy_score(labels, predictions), abs=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn warns on degenerate input
        expected_mcc = sklearn.metrics.matthews_corrcoef(labels, predictions)
        expected_f1 = sklearn.metrics.f1_score(
            labels == 1, predictions == 1, zero_division=0.0)
    assert m.matthews_corrcoef(labels, predictions) == pytest.approx(
        expected_mcc, abs=1e-12)
    assert m.f1_score(labels, predictions) == pytest.approx(expected_f1,
                                                            abs=1e-12)


def test_degenerate_cases_match_sklearn():
    labels = np.array([0, 1, 1, 0])
    constant = np.zeros(4, int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert m.matthews_corrcoef(labels, constant) == (
            sklearn.metrics.matthews_corrcoef(labels, constant)) == 0.0
        assert m.f1_score(constant, constant) == sklearn.metrics.f1_score(
            constant, constant, zero_division=0.0) == 0.0
    assert m.matthews_corrcoef(labels, labels) == pytest.approx(1.0)
    assert m.matthews_corrcoef(labels, 1 - labels) == pytest.approx(-1.0)


@pytest.mark.parametrize("seed, size, tie_levels", [
    (0, 100, None), (1, 1500, None), (2, 60, 5), (3, 2, None), (4, 40, 2)])
def test_correlations_match_scipy(seed, size, tie_levels):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=size) * 2 + 2.5
    y = x + rng.normal(size=size)
    if tie_levels:  # STS-B gold scores repeat a lot: exercise tied ranks.
        x = np.round(x * tie_levels) / tie_levels
        y = np.round(y)
    assert m.pearson_correlation(x, y) == pytest.approx(
        scipy.stats.pearsonr(x, y)[0], abs=1e-10)
    assert m.spearman_correlation(x, y) == pytest.approx(
        scipy.stats.spearmanr(x, y)[0], abs=1e-10)
    np.testing.assert_allclose(m.average_ranks(y), scipy.stats.rankdata(y))


def test_constant_input_has_no_correlation():
    assert np.isnan(m.pearson_correlation([1, 1, 1], [1, 2, 3]))


def test_task_metric_names_and_values():
    labels = [0, 1, 1, 0, 1]
    predictions = [0, 1, 0, 0, 1]
    assert m.metric_names("CoLA") == ("accuracy", "matthews_corrcoef")
    assert m.metric_names("mrpc") == ("accuracy", "f1")
    assert m.metric_names("qqp") == ("accuracy", "f1")
    assert m.metric_names("rte") == ("accuracy",)
    assert m.metric_names("sts-b", is_regression=True) == (
        "pearson", "spearman")
    result = m.compute_metrics("mrpc", labels, predictions)
    assert result == {"accuracy": pytest.approx(0.8),
                      "f1": pytest.approx(0.8)}  # tp 2, fp 0, fn 1


def test_bad_inputs():
    with pytest.raises(ValueError, match="differ in length: 2 vs 3"):
        m.accuracy([1, 0], [1, 0, 1])
    with pytest.raises(ValueError, match="at least one example"):
        m.accuracy([], [])
