"""GLUE metrics in numpy: accuracy, F1, Matthews, Pearson, Spearman.

Each task reports what the GLUE leaderboard reports for it: accuracy for
every classification task, plus F1 for MRPC and QQP, Matthews correlation
for CoLA, and Pearson and Spearman correlations (no accuracy) for the
regression task STS-B. Metrics are computed over the whole evaluation set
at once (not averaged over batches), so they are exact.
"""

import numpy as np

ACCURACY = "accuracy"
F1 = "f1"
MATTHEWS = "matthews_corrcoef"
PEARSON = "pearson"
SPEARMAN = "spearman"

# Metrics beyond accuracy, per task name (as in `--task_name`).
_EXTRA_CLASSIFICATION_METRICS = {
    "cola": (MATTHEWS,),
    "mrpc": (F1,),
    "qqp": (F1,),
}
_REGRESSION_METRICS = (PEARSON, SPEARMAN)


def _as_vectors(a, b):
    a = np.asarray(a).reshape(-1)
    b = np.asarray(b).reshape(-1)
    if a.shape != b.shape:
        raise ValueError(
            f"metric inputs differ in length: {a.shape[0]} vs {b.shape[0]}")
    if a.size == 0:
        raise ValueError("metrics need at least one example")
    return a, b


def accuracy(labels, predictions):
    """Fraction of predictions equal to their label."""
    labels, predictions = _as_vectors(labels, predictions)
    return float(np.mean(labels == predictions))


def f1_score(labels, predictions, positive_label=1):
    """Binary F1 of the positive class: 2 tp / (2 tp + fp + fn).

    Returns 0.0 when there is neither a positive label nor a positive
    prediction (as scikit-learn does).
    """
    labels, predictions = _as_vectors(labels, predictions)
    predicted = predictions == positive_label
    actual = labels == positive_label
    true_positives = np.sum(predicted & actual)
    denominator = np.sum(predicted) + np.sum(actual)
    if denominator == 0:
        return 0.0
    return float(2.0 * true_positives / denominator)


def matthews_corrcoef(labels, predictions):
    """Matthews correlation coefficient, for two or more classes.

    The multiclass form (Gorodkin's R_K) over the confusion matrix C:
    (c s - p.t) / sqrt((s^2 - p.p) (s^2 - t.t)), with c the correct count,
    s the total, t the true-class counts and p the predicted-class counts.
    It is 0.0 when a factor of the denominator is 0 (every label or every
    prediction is the same class).
    """
    labels, predictions = _as_vectors(labels, predictions)
    classes, encoded = np.unique(np.concatenate([labels, predictions]),
                                 return_inverse=True)
    num_classes = len(classes)
    true_ids = encoded[:labels.size]
    predicted_ids = encoded[labels.size:]
    true_counts = np.bincount(true_ids, minlength=num_classes).astype(
        np.float64)
    predicted_counts = np.bincount(
        predicted_ids, minlength=num_classes).astype(np.float64)
    correct = float(np.sum(true_ids == predicted_ids))
    total = float(labels.size)
    covariance = correct * total - np.dot(predicted_counts, true_counts)
    predicted_spread = total * total - np.dot(predicted_counts,
                                              predicted_counts)
    true_spread = total * total - np.dot(true_counts, true_counts)
    if predicted_spread == 0 or true_spread == 0:
        return 0.0
    return float(covariance / np.sqrt(predicted_spread * true_spread))


def pearson_correlation(x, y):
    """Pearson's r; NaN when either input is constant."""
    x, y = _as_vectors(x, y)
    x = x.astype(np.float64) - np.mean(x, dtype=np.float64)
    y = y.astype(np.float64) - np.mean(y, dtype=np.float64)
    norm = np.sqrt(np.dot(x, x) * np.dot(y, y))
    if norm == 0:
        return float("nan")
    # Clipped: round-off can push a perfect correlation past 1.
    return float(np.clip(np.dot(x, y) / norm, -1.0, 1.0))


def average_ranks(values):
    """1-based ranks, ties sharing the mean of the ranks they span."""
    values = np.asarray(values).reshape(-1)
    order = np.argsort(values, kind="mergesort")
    sorted_values = values[order]
    starts_group = np.concatenate(
        [[True], sorted_values[1:] != sorted_values[:-1]])
    group_of_position = np.cumsum(starts_group) - 1
    group_starts = np.flatnonzero(starts_group)
    group_ends = np.concatenate([group_starts[1:], [values.size]])
    # Positions start..end-1 hold ranks start+1..end; their mean:
    group_ranks = (group_starts + group_ends + 1) / 2.0
    ranks = np.empty(values.size, np.float64)
    ranks[order] = group_ranks[group_of_position]
    return ranks


def spearman_correlation(x, y):
    """Spearman's rho: Pearson's r of the average ranks."""
    x, y = _as_vectors(x, y)
    return pearson_correlation(average_ranks(x), average_ranks(y))


def metric_names(task_name, is_regression=False):
    """The metrics a task reports, in report order."""
    if is_regression:
        return _REGRESSION_METRICS
    return (ACCURACY,) + _EXTRA_CLASSIFICATION_METRICS.get(
        (task_name or "").lower(), ())


def compute_metrics(task_name, labels, predictions, is_regression=False):
    """The task's GLUE metrics.

    Args:
      task_name: the `--task_name` (decides F1 / Matthews).
      labels: true label ids (classification) or scores (regression).
      predictions: predicted label ids, or predicted scores.
      is_regression: report Pearson and Spearman instead.

    Returns:
      A dict from metric name (`metric_names`) to float.
    """
    functions = {
        ACCURACY: accuracy,
        F1: f1_score,
        MATTHEWS: matthews_corrcoef,
        PEARSON: pearson_correlation,
        SPEARMAN: spearman_correlation,
    }
    return {name: functions[name](labels, predictions)
            for name in metric_names(task_name, is_regression)}
