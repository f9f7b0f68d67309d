"""Sequence (pair) classification and regression, as Google's run_classifier.py.

The model is `BertModel` + `ClassifierHead` on the pooled output:

    logits = dropout(pooled_output, 0.1) output_weights^T + output_bias

with `output_weights` [num_labels, hidden] and `output_bias` [num_labels] at
the checkpoint's root, Google's names. Classification uses Google's loss,
the mean over examples of `-sum(one_hot(label) * log_softmax(logits))`.
Regression (STS-B) uses the same head with one output
(`output_weights` [1, hidden]) and the mean squared error, as GLUE's
regression baselines do; Google's original has no regression.

Evaluation reports Google's `eval_accuracy` and `eval_loss` (means over the
real examples: padding rows, `is_real_example = 0`, count for nothing);
regression reports `eval_loss` only. GLUE's per-task metrics (F1, Matthews,
Pearson, Spearman) need every prediction at once: the task's prediction
hooks gather the logits and labels of the evaluation set and
`bert_tf.tasks.classification.metrics` computes them, so they land in
`eval_results.txt` with the others. Prediction writes Google's
`test_results.tsv`: the class probabilities (or the score) of each real
test example, in input order.
"""

import dataclasses
from typing import Optional

import os

import keras
from keras import ops
import numpy as np

from bert_tf import file_io
from bert_tf.data import in_memory
from bert_tf.modeling import BertModel, ClassifierHead
from bert_tf.modeling import save_signature
from bert_tf.tasks import base
from bert_tf.tasks import losses
from bert_tf.tasks.classification import features as features_lib
from bert_tf.tasks.classification import metrics as classifier_metrics

TEST_RESULTS_FILE = "test_results.tsv"
LOGITS = "logits"


@keras.saving.register_keras_serializable(package="bert_tf")
class ClassificationModel(save_signature.TaskModel):
    """`BertModel` + `ClassifierHead`; called on a feature dict.

    Returns `{"logits": float32 [batch, num_labels]}`. Variables:
    `bert/...`, `output_weights`, `output_bias`.

    Keras-native: `model.save("x.keras")` / `keras.models.load_model` round
    trip, and `tf.saved_model.save(model, path)` exports a serving_default
    signature of int32 `input_ids`, `input_mask`, `segment_ids`
    [batch, seq] -> `logits`.
    """

    def __init__(self, bert_config, num_labels, causal_attention=False,
                 name="bert_classification_model", **kwargs):
        """Args:
          bert_config: a `BertConfig`.
          num_labels: number of labels, or 1 for regression.
          causal_attention: the encoder attends left to right only, and
            the head classifies the pooled last real token instead of
            [CLS] (see `BertModel`).
          name: Keras model name (not part of any variable's path).
          **kwargs: Keras model arguments.
        """
        super().__init__(name=name, **kwargs)
        self.bert_config = bert_config
        self.num_labels = num_labels
        self.causal_attention = bool(causal_attention)
        self.bert = BertModel(bert_config,
                              causal_attention=self.causal_attention)
        self.classifier = ClassifierHead(bert_config, num_labels)
        # Create every variable now: the optimizer and checkpoint restore
        # need them before the first step.
        dummy_ids = np.zeros([1, 2], np.int32)
        pooled = self.bert(dummy_ids, input_mask=np.ones_like(dummy_ids),
                           segment_ids=dummy_ids)["pooled_output"]
        self.classifier(pooled)
        self.built = True

    def call(self, features, training=False):
        encoder_outputs = self.bert(
            features[features_lib.INPUT_IDS],
            input_mask=features[features_lib.INPUT_MASK],
            segment_ids=features[features_lib.SEGMENT_IDS],
            training=training)
        return {"logits": self.classifier(encoder_outputs["pooled_output"],
                                          training=training)}

    def task_config(self):
        return {"num_labels": self.num_labels,
                "causal_attention": self.causal_attention}


# -- losses (usable on their own) ---------------------------------------------

def classification_example_losses(logits, label_ids):
    """Each example's cross-entropy, `-sum(one_hot * log_softmax)` (Google's).

    Args:
      logits: [batch, num_labels].
      label_ids: [batch] integer label ids.

    Returns:
      float32 [batch].
    """
    return losses.cross_entropy(logits, label_ids)


def regression_example_losses(logits, scores):
    """Each example's squared error.

    Args:
      logits: [batch, 1], the predicted scores.
      scores: [batch] float targets.

    Returns:
      float32 [batch].
    """
    predictions = ops.reshape(ops.cast(logits, "float32"), [-1])
    return ops.square(predictions - ops.cast(scores, "float32"))


def write_test_results(path, rows):
    """Writes one tab-separated line per row, atomically.

    Values are written with `str` of a float32, as Google's
    `str(class_probability)`.
    """
    with file_io.atomic_write(path) as writer:
        for row in rows:
            writer.write("\t".join(str(np.float32(value)) for value in row)
                         + "\n")


def probabilities_from_logits(logits, is_regression):
    """What `test_results.tsv` holds: softmax probabilities, or the score."""
    logits = np.asarray(logits, np.float32)
    if is_regression:
        return logits
    shifted = logits - logits.max(axis=-1, keepdims=True)
    exponentials = np.exp(shifted)
    return exponentials / exponentials.sum(axis=-1, keepdims=True)


# -- the task -----------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class ClassificationDataConfig:
    """Where a classification task's features come from.

    Attributes:
      train_file: Google-format TFRecord of the training set
        (`train.tf_record`), or None when not training.
      eval_file: record file of the dev set (`eval.tf_record`).
      predict_file: record file of the test set (`predict.tf_record`).
      max_seq_length: sequence length of the records.
      drop_remainder_for_eval: drop a last partial batch in evaluation and
        prediction (TPUs need full batches; pad the sets first with
        `classifier_features.pad_to_batch_multiple`).
      shuffle_buffer_size: training shuffle buffer, in records (Google: 100).
      seed: training shuffle seed; None for a different order every run.
    """
    train_file: Optional[str] = None
    eval_file: Optional[str] = None
    predict_file: Optional[str] = None
    max_seq_length: int = 128
    drop_remainder_for_eval: bool = False
    shuffle_buffer_size: int = 100
    seed: Optional[int] = None


class ClassificationTask(base.Task):
    """GLUE-style classification (or regression) with Google's head and loss."""

    name = "classification"

    def __init__(self, bert_config, num_labels, data_config,
                 is_regression=False, glue_task_name=None,
                 init_checkpoint=None, causal_attention=False):
        """Creates the task.

        Args:
          bert_config: a `BertConfig`.
          num_labels: number of classes (ignored for regression).
          data_config: a `ClassificationDataConfig`.
          is_regression: one output trained with mean squared error.
          glue_task_name: the `--task_name` whose GLUE metrics evaluation
            adds to accuracy and loss (`classifier_metrics.metric_names`:
            F1 for MRPC and QQP, Matthews for CoLA; Pearson and Spearman for
            any regression task).
          init_checkpoint: see `base.Task.init_checkpoint`.
          causal_attention: fine-tune the encoder left to right only,
            classifying its last real token (see `ClassificationModel`).

        Raises:
          ValueError: `max_seq_length` exceeds the model's
            `max_position_embeddings`, or fewer than two labels.
        """
        bert_config.check_max_seq_length(data_config.max_seq_length)
        if not is_regression and num_labels < 2:
            raise ValueError(
                f"classification needs at least 2 labels, got {num_labels}")
        self.bert_config = bert_config
        self.num_labels = 1 if is_regression else num_labels
        self.is_regression = is_regression
        self.data_config = data_config
        # The metrics that need every prediction at once.
        self.set_metrics = tuple(
            name for name in classifier_metrics.metric_names(
                glue_task_name, is_regression)
            if name != classifier_metrics.ACCURACY)
        self.glue_task_name = glue_task_name
        self.init_checkpoint = init_checkpoint
        self.causal_attention = causal_attention

    def build_model(self):
        return ClassificationModel(self.bert_config, self.num_labels,
                                   causal_attention=self.causal_attention)

    def _records(self, mode):
        data = self.data_config
        input_file = {base.TRAIN: data.train_file, base.EVAL: data.eval_file,
                      base.PREDICT: data.predict_file}[mode]
        if not input_file:
            raise ValueError(f"the classification task has no {mode} data")
        return features_lib.read_tfrecord(input_file, data.max_seq_length,
                                          self.is_regression)

    def build_inputs(self, mode, per_replica_batch_size, input_context=None):
        dataset = in_memory.shard_for_input_pipeline(self._records(mode),
                                                     input_context)
        is_training = mode == base.TRAIN
        return features_lib.batch_dataset(
            dataset, per_replica_batch_size, is_training,
            drop_remainder=(is_training
                            or self.data_config.drop_remainder_for_eval),
            shuffle_buffer_size=self.data_config.shuffle_buffer_size,
            seed=self.data_config.seed)

    def loss_denominators(self, features):
        # Padding rows of evaluation sets are not examples.
        return {"num_examples": ops.sum(ops.cast(
            features[features_lib.IS_REAL_EXAMPLE], "float32"))}

    @property
    def metric_names(self):
        if self.is_regression:
            return ("loss_sum", "num_examples")
        return ("loss_sum", "correct", "num_examples")

    def example_losses(self, outputs, features):
        """Each example's loss (cross-entropy or squared error), float32."""
        labels = features[features_lib.LABEL_IDS]
        if self.is_regression:
            return regression_example_losses(outputs["logits"], labels)
        return classification_example_losses(outputs["logits"], labels)

    def compute_loss(self, features, outputs, denominators):
        weights = ops.cast(features[features_lib.IS_REAL_EXAMPLE], "float32")
        per_example = self.example_losses(outputs, features)
        loss_sum = ops.sum(weights * per_example)
        # The mean over the global batch's real examples (see base.Task).
        loss = loss_sum / ops.maximum(denominators["num_examples"], 1.0)
        metrics = {"loss_sum": loss_sum, "num_examples": ops.sum(weights)}
        if not self.is_regression:
            predictions = ops.cast(ops.argmax(outputs["logits"], axis=-1),
                                   "int32")
            labels = ops.cast(features[features_lib.LABEL_IDS], "int32")
            metrics["correct"] = ops.sum(
                weights * ops.cast(ops.equal(predictions, labels),
                                   "float32"))
        return loss, metrics

    def aggregate_metrics(self, totals):
        """Google's `metric_fn`: accuracy and loss over real examples."""
        results = {"eval_loss": base.safe_ratio(totals["loss_sum"],
                                                totals["num_examples"])}
        if not self.is_regression:
            results["eval_accuracy"] = base.safe_ratio(
                totals["correct"], totals["num_examples"])
        return results

    # -- prediction hooks (see base.Task) ------------------------------------

    def prediction_inputs(self, mode):
        """The dev (`EVAL`) or test (`PREDICT`) records, in file order."""
        return self._records(mode)

    def prediction_outputs(self, features, outputs, mode):
        """Logits, labels and `is_real_example` of each row.

        In `EVAL` only when a metric needs every prediction.
        """
        if mode == base.EVAL and not self.set_metrics:
            return {}
        return {LOGITS: outputs[LOGITS],
                features_lib.LABEL_IDS: features[features_lib.LABEL_IDS],
                features_lib.IS_REAL_EXAMPLE:
                    features[features_lib.IS_REAL_EXAMPLE]}

    def aggregate_predictions(self, state, outputs, mode):
        """Keeps the real examples' logits and labels (not the padding)."""
        state = state or {LOGITS: [], features_lib.LABEL_IDS: []}
        real = outputs[features_lib.IS_REAL_EXAMPLE] == 1
        for key in state:
            state[key].append(outputs[key][real])
        return state

    def _concatenated(self, state):
        if state is None:
            raise RuntimeError("the classification set has no examples")
        return {key: np.concatenate(value) for key, value in state.items()}

    def reduce_predictions(self, state, mode):
        """The GLUE metrics over all real dev examples (`EVAL` only)."""
        if mode != base.EVAL or not self.set_metrics:
            return {}
        outputs = self._concatenated(state)
        logits = outputs[LOGITS]
        predictions = (logits[:, 0] if self.is_regression
                       else logits.argmax(axis=-1))
        metrics = classifier_metrics.compute_metrics(
            self.glue_task_name, outputs[features_lib.LABEL_IDS],
            predictions, self.is_regression)
        return {f"eval_{name}": metrics[name] for name in self.set_metrics}

    def predicted_probabilities(self, state):
        """`test_results.tsv`'s rows: probabilities (or scores), numpy."""
        return probabilities_from_logits(self._concatenated(state)[LOGITS],
                                         self.is_regression)

    def write_predictions(self, state, output_dir, mode):
        """Google's `test_results.tsv` (`PREDICT` only)."""
        if mode != base.PREDICT:
            return []
        path = os.path.join(output_dir, TEST_RESULTS_FILE)
        write_test_results(path, self.predicted_probabilities(state))
        return [path]
