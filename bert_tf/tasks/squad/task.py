"""SQuAD fine-tuning: `BertModel` + `SpanHead`, Google's loss, prediction.

The model is Google's `run_squad.create_model`: the encoder's last layer,
then per token a start and an end logit from `cls/squad/output_weights`
[2, hidden] and `cls/squad/output_bias` [2]. The loss is Google's: the mean
over examples of `(start cross-entropy + end cross-entropy) / 2`, where each
cross-entropy is over all `max_seq_length` positions (a window without the
answer has its target at [CLS], position 0).

Training logs, next to the loss, how often the highest logit is at the
target start and end position (`start_accuracy`, `end_accuracy`).

Prediction (`Trainer.run_predictions(PREDICT, ...)` with a
`SpanPredictions` as the initial state) runs the model over the
`eval.tf_record` features and stores every feature's start and end logits
in two float32 arrays indexed by feature; `bert_tf.tasks.squad.postprocess`
turns them into answers (`predictions.json`, `nbest_predictions.json`,
`null_odds.json`), which are scored with the official metrics when the
predict file has answers.
"""

import dataclasses
from typing import Optional

import os

import keras
from keras import ops
import numpy as np

from bert_tf import checkpoints
from bert_tf.data import in_memory
from bert_tf.modeling import SpanHead
from bert_tf.tasks import base
from bert_tf.tasks import losses
from bert_tf.tasks import sequence_model
from bert_tf.tasks.classification import features as classifier_features
from bert_tf.tasks.squad import evaluate as squad_evaluate
from bert_tf.tasks.squad import examples as squad_examples
from bert_tf.tasks.squad import features as features_lib
from bert_tf.tasks.squad import postprocess as squad_postprocess

# The pooler is part of the encoder's checkpoint but not of this model's
# computation.
POOLER_SCOPE = base.ENCODER_SCOPE + "pooler/"
START_LOGITS = "start_logits"
# The start/end logit of the padding in a batch cut to its length.
PADDING_LOGIT = -1e9
END_LOGITS = "end_logits"


@keras.saving.register_keras_serializable(package="bert_tf")
class SquadModel(sequence_model.SequenceOutputModel):
    """`BertModel` (+ `BiLSTM`) + `SpanHead`, called on a feature dict.

    Returns `{"start_logits", "end_logits"}`, float32 [batch, seq_length].
    Variables: `bert/...`, `cls/squad/output_weights`,
    `cls/squad/output_bias`; with a BiLSTM also `bilstm/fw/...` and
    `bilstm/bw/...` (see `bert_tf.modeling.bilstm`), and the span head
    reads its [batch, seq, 2 * units] states instead of the encoder's.

    Keras-native: `model.save("x.keras")` / `keras.models.load_model` round
    trip, and `tf.saved_model.save(model, path)` exports a serving_default
    signature of int32 `input_ids`, `input_mask`, `segment_ids`
    [batch, seq] -> `start_logits`, `end_logits`.
    """

    def __init__(self, bert_config, causal_attention=False,
                 bilstm_units=None, name="bert_squad_model", **kwargs):
        """Args:
          bert_config: a `BertConfig`.
          causal_attention: the encoder attends left to right only (see
            `BertModel`).
          bilstm_units: None (Google's model), or the state size of each
            direction of a randomly initialized `BiLSTM` between the
            encoder and the span head.
          name: Keras model name (not part of any variable's path).
          **kwargs: Keras model arguments.
        """
        super().__init__(bert_config, causal_attention, bilstm_units,
                         name=name, **kwargs)
        self.span_head = SpanHead(bert_config,
                                  input_size=self.head_input_size)
        # Create every variable now: the optimizer and checkpoint restore
        # need them before the first step.
        dummy_ids = np.zeros([1, 2], np.int32)
        self({features_lib.INPUT_IDS: dummy_ids,
              features_lib.INPUT_MASK: np.ones_like(dummy_ids),
              features_lib.SEGMENT_IDS: dummy_ids})
        self.built = True

    def call(self, features, training=False):
        start_logits, end_logits = self.span_head(
            self.sequence_output(features, training), training=training)
        return {START_LOGITS: start_logits, END_LOGITS: end_logits}


def span_example_losses(outputs, features):
    """Each example's loss: the mean of its start and end cross-entropies
    over the sequence's positions (Google's `compute_loss` before its batch
    mean)."""
    start_loss = losses.cross_entropy(
        outputs[START_LOGITS], features[features_lib.START_POSITIONS])
    end_loss = losses.cross_entropy(
        outputs[END_LOGITS], features[features_lib.END_POSITIONS])
    return (start_loss + end_loss) / 2.0


@dataclasses.dataclass(frozen=True)
class SquadPredictionConfig:
    """How the prediction pass turns logits into answers and scores them.

    Attributes:
      postprocess: a `postprocess.SquadPostprocessConfig` (run_squad.py's
        answer flags).
      do_lower_case: the tokenizer's setting (to align answers with text).
      verbose_logging: log every answer whose text could not be aligned.
      gold_file: the SQuAD JSON whose answers score the predictions (the
        `--predict_file` when it has answers); None: not scored.
      gold_articles: instead of `gold_file`, its `data` list, already read.
    """
    postprocess: squad_postprocess.SquadPostprocessConfig = (
        squad_postprocess.SquadPostprocessConfig())
    do_lower_case: bool = True
    verbose_logging: bool = False
    gold_file: Optional[str] = None
    gold_articles: Optional[list] = None


class SpanPredictions:
    """The state `SquadTask`'s prediction hooks fill and reduce.

    Holds the prediction set's examples and features (host-side data the
    records lack) and every feature's start and end logits, stored by
    `unique_id` straight into two preallocated float32 arrays; then the
    answers computed from them.

    Attributes:
      start_logits, end_logits: float32 [num_features, max_seq_length], row
        `i` for unique id `first_unique_id + i` (released once the answers
        are computed).
      predictions, nbest, null_odds: the answers (set by the task's
        `reduce_predictions` when examples were given).
    """

    def __init__(self, num_features, max_seq_length, examples=None,
                 features=None, first_unique_id=features_lib.BASE_UNIQUE_ID):
        """Args:
          num_features: records in the prediction file; their `unique_ids`
            are `first_unique_id` .. `first_unique_id + num_features - 1`.
          max_seq_length: the records' sequence length.
          examples: the `SquadExample`s, to compute answers; None keeps only
            the logits.
          features: their features (`without_model_inputs()` suffices).
          first_unique_id: the first feature's id.
        """
        self.num_features = num_features
        self.first_unique_id = first_unique_id
        self.examples = examples
        self.features = features
        self.start_logits = np.zeros([num_features, max_seq_length],
                                     np.float32)
        self.end_logits = np.zeros([num_features, max_seq_length], np.float32)
        self._filled = np.zeros([num_features], np.int32)
        self.predictions = self.nbest = self.null_odds = None

    def add(self, outputs):
        """Stores one batch of outputs in the rows of their unique ids."""
        rows = outputs[features_lib.UNIQUE_IDS] - self.first_unique_id
        if rows.size and (rows.min() < 0 or rows.max() >= self.num_features):
            raise RuntimeError(
                f"prediction returned feature ids outside "
                f"{self.first_unique_id}.."
                f"{self.first_unique_id + self.num_features - 1}")
        self.start_logits[rows] = outputs[START_LOGITS]
        self.end_logits[rows] = outputs[END_LOGITS]
        np.add.at(self._filled, rows, 1)

    def check_complete(self):
        """Raises RuntimeError when a feature got no output."""
        if not np.all(self._filled >= 1):
            missing = np.flatnonzero(self._filled == 0)
            raise RuntimeError(
                f"prediction over {self.num_features} features returned no "
                f"output for {missing.size} of them (first unique id "
                f"{self.first_unique_id + int(missing[0])})")


@dataclasses.dataclass(frozen=True)
class SquadDataConfig:
    """Where the SQuAD task's features come from.

    Attributes:
      train_file: `train.tf_record` (features with targets), or None when not
        training.
      predict_file: `eval.tf_record` (features to predict), or None.
      max_seq_length: the records' sequence length.
      shuffle_buffer_size: training shuffle buffer, in records (Google: 100).
      seed: training shuffle seed; None for a different order every run.
    """
    train_file: Optional[str] = None
    predict_file: Optional[str] = None
    max_seq_length: int = 384
    shuffle_buffer_size: int = 100
    seed: Optional[int] = None


class SquadTask(base.Task):
    """SQuAD v1.1/v2.0 span prediction with Google's head and loss."""

    name = "squad"
    # Padded back to max_seq_length after a batch cut to its length, the
    # padding at a logit no real token has: answers start and end at real
    # tokens, and the n-best candidates (the top logits) are then the same
    # whatever the batch a window ran in.
    sequence_outputs = {START_LOGITS: PADDING_LOGIT, END_LOGITS: PADDING_LOGIT}

    def __init__(self, bert_config, data_config,
                 prediction_config=SquadPredictionConfig(),
                 init_checkpoint=None, causal_attention=False,
                 bilstm_units=None):
        """Creates the task.

        Args:
          bert_config: a `BertConfig`.
          data_config: a `SquadDataConfig`.
          prediction_config: a `SquadPredictionConfig`.
          init_checkpoint: see `base.Task.init_checkpoint`.
          causal_attention: fine-tune the encoder left to right only (see
            `BertModel`).
          bilstm_units: None, or the per-direction size of a BiLSTM
            between the encoder and the span head (see `SquadModel`).

        Raises:
          ValueError: `max_seq_length` exceeds the model's
            `max_position_embeddings`.
        """
        bert_config.check_max_seq_length(data_config.max_seq_length)
        self.bert_config = bert_config
        self.data_config = data_config
        self.prediction_config = prediction_config
        self.init_checkpoint = init_checkpoint
        self.causal_attention = causal_attention
        self.bilstm_units = bilstm_units

    def build_model(self):
        return SquadModel(self.bert_config,
                          causal_attention=self.causal_attention,
                          bilstm_units=self.bilstm_units)

    def _records(self, mode):
        data = self.data_config
        if mode == base.TRAIN:
            input_file, is_training = data.train_file, True
        elif mode == base.PREDICT:
            input_file, is_training = data.predict_file, False
        else:
            raise ValueError(
                "the SQuAD task has no evaluation input: it predicts and "
                "scores the predictions (--do_predict)")
        if not input_file:
            raise ValueError(f"the SQuAD task has no {mode} data")
        return features_lib.read_tfrecord(input_file, data.max_seq_length,
                                          is_training)

    def build_inputs(self, mode, per_replica_batch_size, input_context=None):
        dataset = in_memory.shard_for_input_pipeline(self._records(mode),
                                                     input_context)
        is_training = mode == base.TRAIN
        return classifier_features.batch_dataset(
            dataset, per_replica_batch_size, is_training,
            shuffle_buffer_size=self.data_config.shuffle_buffer_size,
            seed=self.data_config.seed)

    @property
    def metric_names(self):
        return ("loss_sum", "start_correct", "end_correct", "num_examples")

    def compute_loss(self, features, outputs, denominators):
        per_example = span_example_losses(outputs, features)
        loss_sum = ops.sum(per_example)
        # The mean over the global batch (see base.Task).
        loss = loss_sum / ops.maximum(denominators["num_examples"], 1.0)

        def correct(logits_name, positions_name):
            predicted = ops.cast(ops.argmax(outputs[logits_name], axis=-1),
                                 "int32")
            target = ops.cast(features[positions_name], "int32")
            return ops.sum(ops.cast(ops.equal(predicted, target), "float32"))

        metrics = {
            "loss_sum": loss_sum,
            "start_correct": correct(START_LOGITS,
                                     features_lib.START_POSITIONS),
            "end_correct": correct(END_LOGITS, features_lib.END_POSITIONS),
            "num_examples": ops.cast(ops.shape(per_example)[0], "float32"),
        }
        return loss, metrics

    def aggregate_metrics(self, totals):
        return {
            "start_accuracy": base.safe_ratio(totals["start_correct"],
                                              totals["num_examples"]),
            "end_accuracy": base.safe_ratio(totals["end_correct"],
                                            totals["num_examples"]),
        }

    # -- prediction hooks (see base.Task) ------------------------------------

    def prediction_inputs(self, mode):
        """The prediction features (`eval.tf_record`), in file order."""
        return self._records(mode)

    def prediction_outputs(self, features, outputs, mode):
        return {features_lib.UNIQUE_IDS: features[features_lib.UNIQUE_IDS],
                START_LOGITS: outputs[START_LOGITS],
                END_LOGITS: outputs[END_LOGITS]}

    def aggregate_predictions(self, state, outputs, mode):
        """Stores the logits in the `SpanPredictions` given as initial state."""
        if not isinstance(state, SpanPredictions):
            raise ValueError("SQuAD prediction needs a SpanPredictions as "
                             "the initial state")
        state.add(outputs)
        return state

    def reduce_predictions(self, state, mode):
        """Answers from the logits; the official metrics when scored."""
        state.check_complete()
        if state.examples is None:
            return {}
        options = self.prediction_config
        # Rows of the logit arrays, not copies.
        raw_results = {
            feature.unique_id: squad_postprocess.RawResult(
                feature.unique_id, state.start_logits[row],
                state.end_logits[row])
            for row, feature in enumerate(state.features)}
        state.predictions, state.nbest, state.null_odds = (
            squad_postprocess.compute_predictions(
                state.examples, state.features, raw_results,
                options.postprocess, options.do_lower_case,
                options.verbose_logging))
        del raw_results
        state.start_logits = state.end_logits = None  # Not needed any more.
        dataset = options.gold_articles
        if dataset is None:
            if not options.gold_file:
                return {}
            dataset = squad_examples.load_squad_json(options.gold_file)
        if options.postprocess.version_2_with_negative:
            return dict(squad_evaluate.evaluate_v2(dataset, state.predictions,
                                                   state.null_odds))
        return squad_evaluate.evaluate_v1(dataset, state.predictions)

    def write_predictions(self, state, output_dir, mode):
        """Google's `predictions.json`, `nbest_predictions.json` and, for
        SQuAD 2.0, `null_odds.json`."""
        if state.predictions is None:
            return []
        outputs = [(squad_postprocess.PREDICTIONS_FILE, state.predictions),
                   (squad_postprocess.NBEST_PREDICTIONS_FILE, state.nbest)]
        if self.prediction_config.postprocess.version_2_with_negative:
            outputs.append((squad_postprocess.NULL_ODDS_FILE,
                            state.null_odds))
        paths = []
        for name, value in outputs:
            path = os.path.join(output_dir, name)
            squad_postprocess.write_json(path, value)
            paths.append(path)
        return paths

    # -- checkpoints ---------------------------------------------------------

    def trainable_variables(self, model):
        """Every trainable variable except the pooler's.

        The span head reads the sequence output, so the pooler gets no
        gradient; Google's optimizer skips such variables (no update, no
        Adam slots), and so does this task: its checkpoints have the same
        tensors as the original's.
        """
        return [variable for variable in model.trainable_variables
                if not checkpoints.variable_name(variable).startswith(
                    POOLER_SCOPE)]
