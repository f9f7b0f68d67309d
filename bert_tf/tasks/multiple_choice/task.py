"""Multiple choice (SWAG, OpenBookQA, ...): a softmax over N scored choices.

Each choice is a `[CLS] context [SEP] choice [SEP]` sequence; the encoder's
pooled output of each is scored by one shared dense layer,

    score_i = dropout(pooled_output_i, 0.1) output_weights^T + output_bias

(`output_weights` [1, hidden], `output_bias` [1]: the classifier head of
`run_classifier.py` with one output, Google's names), and the N scores of
an example go through a softmax. The loss is the mean cross-entropy of the
right choice; evaluation reports `eval_accuracy` and `eval_loss`;
prediction writes `test_results.tsv`, each example's N choice
probabilities on a line (as the classifier's file).
"""

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

TEST_RESULTS_FILE = "test_results.tsv"


@keras.saving.register_keras_serializable(package="bert_tf")
class MultipleChoiceModel(save_signature.TaskModel):
    """`BertModel` + a one-output `ClassifierHead` applied to each choice.

    Called on features with `input_ids`, `input_mask`, `segment_ids` of
    shape [batch, num_choices, seq]; returns `{"logits": float32 [batch,
    num_choices]}`. Keras-native: `.keras` files round-trip, and
    `tf.saved_model.save` exports those int32 inputs -> `logits`.
    """

    def __init__(self, bert_config, causal_attention=False,
                 name="bert_multiple_choice_model", **kwargs):
        """Args:
          bert_config: a `BertConfig`.
          causal_attention: the encoder attends left to right only, and
            each choice is scored from its pooled last real token instead
            of [CLS] (see `BertModel`).
          name: Keras model name (not part of any variable's path).
          **kwargs: Keras model arguments.
        """
        super().__init__(name=name, **kwargs)
        self.bert_config = bert_config
        self.causal_attention = bool(causal_attention)
        self.bert = BertModel(bert_config,
                              causal_attention=self.causal_attention)
        self.classifier = ClassifierHead(bert_config, 1)
        dummy = np.zeros([1, 2, 2], np.int32)
        self({features_lib.INPUT_IDS: dummy, features_lib.INPUT_MASK: dummy,
              features_lib.SEGMENT_IDS: dummy})

    def call(self, features, training=False):
        # [batch, num_choices, seq]; on TensorFlow the dimensions unknown
        # when the graph is traced (the exports' [None, None, None]) are
        # scalar tensors, which reshape takes.
        _, num_choices, seq_length = ops.shape(
            features[features_lib.INPUT_IDS])

        def flat(name):  # [batch * num_choices, seq]
            return ops.reshape(features[name], (-1, seq_length))

        pooled = self.bert(flat(features_lib.INPUT_IDS),
                           input_mask=flat(features_lib.INPUT_MASK),
                           segment_ids=flat(features_lib.SEGMENT_IDS),
                           training=training)["pooled_output"]
        scores = self.classifier(pooled, training=training)  # [b * n, 1]
        return {"logits": ops.reshape(scores, (-1, num_choices))}

    def task_config(self):
        return {"causal_attention": self.causal_attention}

    def saved_input_specs(self):
        """int32 [batch, num_choices, seq] inputs."""
        # Only `tf.saved_model.save` reads them (TensorFlow backend).
        import tensorflow as tf  # pylint: disable=import-outside-toplevel
        return {name: tf.TensorSpec([None, None, None], tf.int32, name=name)
                for name in save_signature.ENCODER_INPUTS}


class MultipleChoiceTask(base.InMemoryArraysTask):
    """A softmax over each example's choices; see the module docstring."""

    name = "multiple_choice"

    def __init__(self, bert_config, data_config, init_checkpoint=None,
                 causal_attention=False):
        """Args:
          bert_config: a `BertConfig`.
          data_config: a `base.ArraysDataConfig`.
          init_checkpoint: see `base.Task.init_checkpoint`.
          causal_attention: fine-tune the encoder left to right only,
            scoring each choice's last real token (see
            `MultipleChoiceModel`).
        """
        bert_config.check_max_seq_length(data_config.max_seq_length)
        self.bert_config = bert_config
        self.data_config = data_config
        self.init_checkpoint = init_checkpoint
        self.causal_attention = causal_attention

    def build_model(self):
        return MultipleChoiceModel(self.bert_config,
                                   causal_attention=self.causal_attention)

    @property
    def metric_names(self):
        return ("loss_sum", "correct", "num_examples")

    def compute_loss(self, features, outputs, denominators):
        logits = outputs["logits"]
        labels = ops.cast(features[features_lib.LABEL_IDS], "int32")
        # Padding rows (evaluation on TPUs) have weight 0.
        weights = in_memory.example_weights(features)
        per_example = losses.cross_entropy(logits, labels)
        loss_sum = ops.sum(weights * per_example)
        predicted = ops.cast(ops.argmax(logits, axis=-1), "int32")
        correct = ops.sum(weights * ops.cast(ops.equal(predicted, labels),
                                             "float32"))
        loss = loss_sum / ops.maximum(denominators["num_examples"], 1.0)
        return loss, {"loss_sum": loss_sum, "correct": correct,
                      "num_examples": ops.sum(weights)}

    def aggregate_metrics(self, totals):
        return {"eval_loss": base.safe_ratio(totals["loss_sum"],
                                             totals["num_examples"]),
                "eval_accuracy": base.safe_ratio(totals["correct"],
                                                 totals["num_examples"])}

    # -- prediction -------------------------------------------------------------

    def prediction_outputs(self, features, outputs, mode):
        if mode == base.EVAL:
            return {}  # Accuracy and loss come from the summed metrics.
        return {"probabilities": ops.softmax(
            ops.cast(outputs["logits"], "float32"), axis=-1)}

    def aggregate_predictions(self, state, outputs, mode):
        del mode
        state = [] if state is None else state
        state.append(np.asarray(outputs["probabilities"]))
        return state

    def probabilities(self, state):
        """[examples, num_choices] probabilities, in input order."""
        return np.concatenate(state) if state else np.zeros([0, 0])

    def write_predictions(self, state, output_dir, mode):
        """`test_results.tsv`: each example's choice probabilities."""
        if mode != base.PREDICT:
            return []
        path = os.path.join(output_dir, TEST_RESULTS_FILE)
        with file_io.atomic_write(path) as writer:
            for row in self.probabilities(state):
                writer.write("\t".join(str(np.float32(value))
                                       for value in row) + "\n")
        return [path]
