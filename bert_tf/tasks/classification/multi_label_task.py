"""Multi-label classification: a sigmoid per label, binary cross-entropy.

The model is the classifier's (`classification.ClassificationModel`:
`BertModel` + `output_weights` [num_labels, hidden] + `output_bias`
[num_labels], Google's names), read as one independent yes/no score per
label: p(label) = sigmoid(logit), and a label is predicted when p >=
`threshold`. The loss is the mean over examples of the mean over labels of
the binary cross-entropy.

Evaluation reports `eval_loss`, `eval_accuracy` (exact match: every label of
the example right) from summed metrics, and `eval_micro_f1`,
`eval_macro_f1`, `eval_exact_match`, `eval_micro_precision`,
`eval_micro_recall` from all predictions (`multi_label.multi_label_metrics`).
Prediction writes `test_results.tsv`: a line per example with each label's
probability, tab-separated, in label-list order (as the classifier's).
"""

import os

from keras import ops
import numpy as np

from bert_tf import file_io
from bert_tf.data import in_memory
from bert_tf.tasks import base
from bert_tf.tasks.classification import features as features_lib
from bert_tf.tasks.classification import multi_label_data as multi_label_lib

TEST_RESULTS_FILE = "test_results.tsv"


def sigmoid_cross_entropy_with_logits(labels, logits):
    """Each entry's binary cross-entropy from its logit.

    `max(x, 0) - x * z + log(1 + exp(-|x|))` for logits x and labels z:
    the numerically stable formula `tf.nn.sigmoid_cross_entropy_with_logits`
    computes, term for term, written in `keras.ops` so that the loss is the
    same on every backend (it never takes the exp of a large positive
    number).

    Args:
      labels: float32, 0 or 1 (or a probability).
      logits: float32, the same shape.

    Returns:
      float32, the shape of `logits`.
    """
    return (ops.maximum(logits, 0.0) - logits * labels
            + ops.log1p(ops.exp(-ops.abs(logits))))


class MultiLabelTask(base.InMemoryArraysTask):
    """Sigmoid outputs per label; see the module docstring."""

    name = "multi_label"

    def __init__(self, bert_config, label_list, data_config, threshold=0.5,
                 init_checkpoint=None, causal_attention=False):
        """Args:
          bert_config: a `BertConfig`.
          label_list: the labels (column order of `label_ids`).
          data_config: a `base.ArraysDataConfig`.
          threshold: a label is predicted when its probability is at least
            this.
          init_checkpoint: see `base.Task.init_checkpoint`.
          causal_attention: fine-tune the encoder left to right only,
            classifying its last real token (see `ClassificationModel`).

        Raises:
          ValueError: no label, a threshold outside (0, 1), or a sequence
            length beyond the model's.
        """
        if not label_list:
            raise ValueError("multi-label classification needs a label")
        if not 0 < threshold < 1:
            raise ValueError(f"--threshold={threshold} must be in (0, 1)")
        bert_config.check_max_seq_length(data_config.max_seq_length)
        self.bert_config = bert_config
        self.label_list = list(label_list)
        self.data_config = data_config
        self.threshold = threshold
        self.init_checkpoint = init_checkpoint
        self.causal_attention = causal_attention

    def build_model(self):
        from bert_tf.tasks.classification.task import ClassificationModel
        return ClassificationModel(self.bert_config, len(self.label_list),
                                   causal_attention=self.causal_attention)

    @property
    def metric_names(self):
        return ("loss_sum", "exact", "num_examples")

    def compute_loss(self, features, outputs, denominators):
        logits = ops.cast(outputs["logits"], "float32")
        labels = ops.cast(features[features_lib.LABEL_IDS], "float32")
        # Padding rows (evaluation on TPUs) have weight 0.
        weights = in_memory.example_weights(features)
        per_example = ops.mean(
            sigmoid_cross_entropy_with_logits(labels, logits), axis=-1)
        loss_sum = ops.sum(weights * per_example)
        predicted = ops.cast(ops.sigmoid(logits) >= self.threshold,
                             "float32")
        exact = ops.sum(weights * ops.cast(
            ops.all(ops.equal(predicted, labels), axis=-1), "float32"))
        loss = loss_sum / ops.maximum(denominators["num_examples"], 1.0)
        return loss, {"loss_sum": loss_sum, "exact": exact,
                      "num_examples": ops.sum(weights)}

    def aggregate_metrics(self, totals):
        return {"eval_loss": base.safe_ratio(totals["loss_sum"],
                                             totals["num_examples"]),
                "eval_accuracy": base.safe_ratio(totals["exact"],
                                                 totals["num_examples"])}

    # -- prediction -------------------------------------------------------------

    def prediction_outputs(self, features, outputs, mode):
        del mode  # Both keep the probabilities and the gold labels.
        return {"probabilities": ops.sigmoid(ops.cast(outputs["logits"],
                                                      "float32")),
                "label_ids": features[features_lib.LABEL_IDS],
                in_memory.IS_REAL_EXAMPLE: in_memory.example_weights(
                    features)}

    def aggregate_predictions(self, state, outputs, mode):
        """Keeps the real rows' outputs (not the padding of TPU batches)."""
        del mode
        state = {"probabilities": [], "label_ids": []} if state is None else (
            state)
        real = np.asarray(outputs[in_memory.IS_REAL_EXAMPLE]) > 0
        for key in state:
            state[key].append(np.asarray(outputs[key])[real])
        return state

    def stacked_predictions(self, state):
        """(probabilities, label_ids) of every example, in order."""
        if state is None:
            return (np.zeros([0, len(self.label_list)], np.float32),
                    np.zeros([0, len(self.label_list)], np.int32))
        return (np.concatenate(state["probabilities"]),
                np.concatenate(state["label_ids"]))

    def predict_labels(self, probabilities):
        """0/1 [examples, labels]: probability >= threshold."""
        return (np.asarray(probabilities) >= self.threshold).astype(np.int32)

    def reduce_predictions(self, state, mode):
        if mode != base.EVAL:
            return {}
        probabilities, label_ids = self.stacked_predictions(state)
        metrics = multi_label_lib.multi_label_metrics(
            label_ids, self.predict_labels(probabilities))
        return {f"eval_{key}": np.float32(value)
                for key, value in metrics.items()}

    def write_predictions(self, state, output_dir, mode):
        """`test_results.tsv`: each label's probability, per example."""
        if mode != base.PREDICT:
            return []
        probabilities, _ = self.stacked_predictions(state)
        path = os.path.join(output_dir, TEST_RESULTS_FILE)
        with file_io.atomic_write(path) as writer:
            for row in probabilities:
                writer.write("\t".join(str(np.float32(value))
                                       for value in row) + "\n")
        return [path]
