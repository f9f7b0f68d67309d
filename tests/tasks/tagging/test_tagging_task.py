"""The tagging task: variable names, losses against numpy and the CRF."""

import numpy as np
import pytest

from bert_tf.modeling import crf as crf_lib
from bert_tf.tasks import base
from bert_tf.tasks.tagging import examples as examples_lib
from bert_tf.tasks.tagging import features as features_lib
from bert_tf.tasks.tagging import task as tagging


def _task(tiny_config, use_crf, sentences, labels):
    tagging_file = examples_lib.TaggingFile(
        "t.txt", "conll", [], sentences, has_labels=True)
    label_map = {label: i for i, label in enumerate(labels)}
    rng = np.random.default_rng(0)
    windows = []
    for index, sentence in enumerate(sentences):
        n = len(sentence.words)
        windows.append(features_lib.TaggingWindow(
            input_ids=[2] + list(rng.integers(5, 100, n)) + [3]
            + [0] * (12 - n - 2),
            input_mask=[1] * (n + 2) + [0] * (12 - n - 2),
            segment_ids=[0] * 12,
            word_positions=list(range(1, n + 1)) + [0] * (12 - n),
            word_mask=[1] * n + [0] * (12 - n),
            label_ids=[label_map[l] for l in sentence.labels]
            + [0] * (12 - n),
            label_weights=[1] * n + [0] * (12 - n),
            sentence_index=index, first_word=0))
    tagging_set = tagging.TaggingSet(
        tagging_file, features_lib.windows_to_arrays(windows, 12))
    return tagging.TaggingTask(
        tiny_config, labels,
        tagging.TaggingDataConfig(train_set=tagging_set, eval_set=tagging_set,
                                  predict_set=tagging_set, max_seq_length=12),
        use_crf=use_crf)


SENTENCES = [
    examples_lib.TaggedSentence(["a", "b", "c"], ["B-PER", "I-PER", "O"],
                                [1, 2, 3]),
    examples_lib.TaggedSentence(["d"], ["B-LOC"], [5]),
    examples_lib.TaggedSentence(["e", "f"], ["O", "B-PER"], [7, 8]),
]
LABELS = ["B-LOC", "B-PER", "I-PER", "O"]


@pytest.mark.parametrize("use_crf", [False, True])
def test_variables_loss_and_predictions(tiny_config, use_crf):
    task = _task(tiny_config, use_crf, SENTENCES, LABELS)
    model = task.build_model()
    names = set(task.checkpoint_variables(model))
    assert {"output_weights", "output_bias"} <= names
    assert ("crf/transitions" in names) == use_crf
    assert all(name.startswith("bert/") for name in names - {
        "output_weights", "output_bias", "crf/transitions"})
    if use_crf:
        model.crf.transitions.assign(
            np.random.default_rng(1).normal(size=(4, 4)).astype(np.float32))
    features = next(iter(task.build_inputs(base.EVAL, 3)))
    outputs = model(features, training=False)
    denominators = task.loss_denominators(features)
    loss, metrics = task.compute_loss(features, outputs, denominators)
    logits = outputs["logits"].numpy()
    weights = features["label_weights"].numpy()
    labels = features["label_ids"].numpy()
    if use_crf:
        reference = -crf_lib.log_likelihood(
            logits, labels, features["word_mask"],
            model.crf.transitions).numpy().mean()
        expected_ids = crf_lib.viterbi_decode(
            logits, features["word_mask"], model.crf.transitions).numpy()
    else:
        shifted = logits - logits.max(-1, keepdims=True)
        log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
        word_losses = -np.take_along_axis(log_probs, labels[..., None],
                                          -1)[..., 0]
        reference = (word_losses * weights).sum() / weights.sum()
        expected_ids = logits.argmax(-1)
    assert float(loss) == pytest.approx(reference, rel=1e-5)
    np.testing.assert_array_equal(outputs["predicted_ids"], expected_ids)
    assert float(metrics["num_words"]) == 6
    # The prediction hooks put words back in place, in any batch order.
    kept = {k: np.asarray(v) for k, v in task.prediction_outputs(
        features, outputs, base.EVAL).items()}
    state = None
    for rows in ([2], [0, 1]):
        state = task.aggregate_predictions(
            state, {k: v[rows] for k, v in kept.items()}, base.EVAL)
    predicted = task.predicted_labels(state, base.EVAL)
    assert predicted == [[LABELS[i] for i in expected_ids[row, :n]]
                         for row, n in enumerate([3, 1, 2])]
    metrics = task.reduce_predictions(state, base.EVAL)
    assert {"eval_precision", "eval_recall", "eval_f1",
            "eval_accuracy"} <= set(metrics)


def test_pos_tags_are_scored_as_one_word_chunks(tiny_config):
    sentences = [examples_lib.TaggedSentence(["a", "b"], ["NN", "VB"],
                                             [1, 2])]
    task = _task(tiny_config, False, sentences, ["NN", "VB"])
    assert not task.chunk_scheme
    state = [np.array([0, 0])]
    metrics = task.reduce_predictions(state, base.EVAL)
    assert metrics["eval_accuracy"] == pytest.approx(0.5)
    assert metrics["eval_f1"] == pytest.approx(0.5)
    assert metrics["eval_f1_NN"] == pytest.approx(2 / 3)
    assert metrics["eval_f1_VB"] == 0.0
