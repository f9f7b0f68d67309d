"""Sentence-pair regression: one score per `[CLS] a [SEP] b [SEP]`.

    score = dropout(pooled_output, 0.1) output_weights^T + output_bias

(`output_weights` [1, hidden], `output_bias` [1]: run_classifier.py's head
with one output). The loss is the mean squared error; evaluation reports
`eval_loss` (that mean over the set); prediction writes `test_results.tsv`,
one score a line.
"""

import dataclasses
import os
from typing import Optional

from keras import ops
import numpy as np

from bert_tf import file_io
from bert_tf.data import encoded_input
from bert_tf.data import in_memory
from bert_tf.modeling import BertModel, ClassifierHead
from bert_tf.modeling import save_signature
from bert_tf.tasks import base

TEST_RESULTS_FILE = "test_results.tsv"
# The arrays' column of the target scores.
TARGETS = "targets"


@dataclasses.dataclass
class PairExample:
    """Two sentences and their score (None: to predict)."""
    sentence1: str
    sentence2: str
    score: Optional[float] = None


def examples_to_arrays(examples, max_seq_length, tokenizer):
    """The model's inputs of `examples`, padded to `max_seq_length`.

    Returns:
      int32 `input_ids`, `input_mask`, `segment_ids` [n, max_seq_length];
      float32 `targets` [n] (0 where there is no score).
    """
    arrays = {name: np.zeros([len(examples), max_seq_length], np.int32)
              for name in (base.INPUT_IDS, base.INPUT_MASK,
                           base.SEGMENT_IDS)}
    for row, example in enumerate(examples):
        # Google's framing and truncation, as run_classifier.py's pairs.
        tokens, segment_ids = encoded_input.frame_pair(
            tokenizer.tokenize(example.sentence1),
            tokenizer.tokenize(example.sentence2), max_seq_length)
        length = len(tokens)
        arrays[base.INPUT_IDS][row, :length] = (
            tokenizer.convert_tokens_to_ids(tokens))
        arrays[base.INPUT_MASK][row, :length] = 1
        arrays[base.SEGMENT_IDS][row, :length] = segment_ids
    arrays[TARGETS] = np.array(
        [0.0 if example.score is None else example.score
         for example in examples], np.float32)
    return arrays


class PairRegressionModel(save_signature.TaskModel):
    """`BertModel` + a one-output `ClassifierHead`: {"score": float32
    [batch]}."""

    def __init__(self, bert_config, causal_attention=False,
                 name="pair_regression_model", **kwargs):
        """Args:
          bert_config: a `BertConfig`.
          causal_attention: a left-to-right encoder (see `BertModel`).
          name: Keras model name (not part of any variable's path).
          **kwargs: Keras model arguments.
        """
        super().__init__(name=name, **kwargs)
        self.bert_config = bert_config
        self.causal_attention = bool(causal_attention)
        self.bert = BertModel(bert_config,
                              causal_attention=self.causal_attention)
        self.head = ClassifierHead(bert_config, 1)
        # Every variable exists before the trainer restores a checkpoint.
        dummy = np.zeros([1, 2], np.int32)
        self({base.INPUT_IDS: dummy, base.INPUT_MASK: dummy,
              base.SEGMENT_IDS: dummy})

    def call(self, features, training=False):
        pooled = self.bert(features[base.INPUT_IDS],
                           input_mask=features[base.INPUT_MASK],
                           segment_ids=features[base.SEGMENT_IDS],
                           training=training)["pooled_output"]
        score = self.head(pooled, training=training)[:, 0]
        return {"score": ops.cast(score, "float32")}

    def task_config(self):
        return {"causal_attention": self.causal_attention}


class PairRegressionTask(base.InMemoryArraysTask):
    """Mean squared error of one score per pair; see the module
    docstring."""

    name = "pair_regression"

    def __init__(self, bert_config, data_config, init_checkpoint=None,
                 causal_attention=False):
        """Args:
          bert_config: a `BertConfig`.
          data_config: a `base.ArraysDataConfig` of `examples_to_arrays`'
            arrays.
          init_checkpoint: see `base.Task.init_checkpoint`.
          causal_attention: see `PairRegressionModel`.
        """
        bert_config.check_max_seq_length(data_config.max_seq_length)
        self.bert_config = bert_config
        self.data_config = data_config
        self.init_checkpoint = init_checkpoint
        self.causal_attention = causal_attention

    def build_model(self):
        return PairRegressionModel(self.bert_config,
                                   causal_attention=self.causal_attention)

    @property
    def metric_names(self):
        return ("squared_error_sum", "num_examples")

    def compute_loss(self, features, outputs, denominators):
        # Padding rows (evaluation on TPUs) have weight 0.
        weights = in_memory.example_weights(features)
        errors = ops.square(outputs["score"]
                            - ops.cast(features[TARGETS], "float32"))
        squared_error_sum = ops.sum(weights * errors)
        # This replica's share of the global batch's mean (base.Task).
        loss = squared_error_sum / ops.maximum(denominators["num_examples"],
                                               1.0)
        return loss, {"squared_error_sum": squared_error_sum,
                      "num_examples": ops.sum(weights)}

    def aggregate_metrics(self, totals):
        return {"eval_loss": base.safe_ratio(totals["squared_error_sum"],
                                             totals["num_examples"])}

    # -- prediction -------------------------------------------------------------

    def prediction_outputs(self, features, outputs, mode):
        if mode == base.EVAL:
            return {}  # The loss comes from the summed metrics.
        return {"score": outputs["score"]}

    def aggregate_predictions(self, state, outputs, mode):
        del mode
        state = [] if state is None else state
        state.append(np.asarray(outputs["score"]))
        return state

    def scores(self, state):
        """float32 [examples] scores, in input order."""
        return (np.concatenate(state) if state
                else np.zeros([0], np.float32))

    def write_predictions(self, state, output_dir, mode):
        """`test_results.tsv`: one score a line."""
        if mode != base.PREDICT:
            return []
        path = os.path.join(output_dir, TEST_RESULTS_FILE)
        with file_io.atomic_write(path) as writer:
            for score in self.scores(state):
                writer.write(f"{np.float32(score)}\n")
        return [path]
