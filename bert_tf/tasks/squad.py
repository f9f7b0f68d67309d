"""SQuAD fine-tuning: `BertModel` + `SpanHead`, Google's loss, prediction.

The model is Google's `run_squad.create_model`: the encoder's last layer,
then per token a start and an end logit from `cls/squad/output_weights`
[2, hidden] and `cls/squad/output_bias` [2]. The loss is Google's: the mean
over examples of `(start cross-entropy + end cross-entropy) / 2`, where each
cross-entropy is over all `max_seq_length` positions (a window without the
answer has its target at [CLS], position 0).

Training logs, next to the loss, how often the highest logit is at the
target start and end position (`start_accuracy`, `end_accuracy`).

Prediction (`predict_logits`) runs the model over the `eval.tf_record`
features and returns every feature's start and end logits in two float32
arrays indexed by feature, which `bert_tf.data.squad_postprocess` turns
into answers.
"""

import dataclasses
from typing import Optional

from absl import logging
import keras
import numpy as np
import tensorflow as tf

from bert_tf import checkpoints
from bert_tf.data import classifier_features
from bert_tf.data import squad_features as features_lib
from bert_tf.tasks import base
from bert_tf.tasks import losses

# The encoder's checkpoint scope: loaded strictly from --init_checkpoint.
ENCODER_SCOPE = "bert/"
# The pooler is part of the encoder's checkpoint but not of this model's
# computation.
POOLER_SCOPE = "bert/pooler/"
START_LOGITS = "start_logits"
END_LOGITS = "end_logits"
# `unique_ids` of the rows added to fill the last prediction batch.
PADDING_UNIQUE_ID = -1


@keras.saving.register_keras_serializable(package="bert_tf")
class SquadModel(keras.Model):
    """`BertModel` + `SpanHead`, called on a feature dict.

    Returns `{"start_logits", "end_logits"}`, float32 [batch, seq_length].
    Variables: `bert/...`, `cls/squad/output_weights`,
    `cls/squad/output_bias`.

    Keras-native: `model.save("x.keras")` / `keras.models.load_model` round
    trip, and `tf.saved_model.save(model, path)` exports a serving_default
    signature of int32 `input_ids`, `input_mask`, `segment_ids`
    [batch, seq] -> `start_logits`, `end_logits`.
    """

    def __init__(self, bert_config, name="bert_squad_model", **kwargs):
        """Args:
          bert_config: a `BertConfig`.
          name: Keras model name (not part of any variable's path).
          **kwargs: Keras model arguments.
        """
        super().__init__(name=name, **kwargs)
        # Imported here, as in the other tasks: the loss and the input
        # pipeline can be used without the model code.
        from bert_tf.modeling import BertModel, SpanHead
        self.bert_config = bert_config
        self.bert = BertModel(bert_config)
        self.span_head = SpanHead(bert_config)
        # Create every variable now: the optimizer and checkpoint restore
        # need them before the first step.
        dummy_ids = tf.zeros([1, 2], tf.int32)
        sequence_output = self.bert(
            dummy_ids, input_mask=tf.ones_like(dummy_ids),
            token_type_ids=dummy_ids)["sequence_output"]
        self.span_head(sequence_output)
        self.built = True

    def call(self, features, training=False):
        sequence_output = self.bert(
            features[features_lib.INPUT_IDS],
            input_mask=features[features_lib.INPUT_MASK],
            token_type_ids=features[features_lib.SEGMENT_IDS],
            training=training)["sequence_output"]
        start_logits, end_logits = self.span_head(sequence_output,
                                                  training=training)
        return {START_LOGITS: start_logits, END_LOGITS: end_logits}

    @property
    def _default_save_signature(self):
        """What `tf.saved_model.save(model, path)` exports (int32 inputs)."""
        from bert_tf.modeling import save_signature
        return save_signature.feature_dict_signature(
            self, save_signature.int_feature_specs(
                (features_lib.INPUT_IDS, features_lib.INPUT_MASK,
                 features_lib.SEGMENT_IDS)))

    def get_config(self):
        return {**super().get_config(),
                "bert_config": self.bert_config.to_dict()}

    @classmethod
    def from_config(cls, config):
        from bert_tf.config import BertConfig
        config = dict(config)
        bert_config = BertConfig.from_dict(config.pop("bert_config"))
        return cls(bert_config, **config)


def position_cross_entropy(logits, positions):
    """Each example's cross-entropy of a position over the sequence.

    Google's `compute_loss` before its mean:
    `-sum(one_hot(positions, seq_length) * log_softmax(logits))`.

    Args:
      logits: [batch, seq_length].
      positions: [batch] integer target positions.

    Returns:
      float32 [batch].
    """
    return losses.cross_entropy(logits, positions)


def span_example_losses(outputs, features):
    """Each example's loss: the mean of its start and end cross-entropies."""
    start_loss = position_cross_entropy(
        outputs[START_LOGITS], features[features_lib.START_POSITIONS])
    end_loss = position_cross_entropy(
        outputs[END_LOGITS], features[features_lib.END_POSITIONS])
    return (start_loss + end_loss) / 2.0


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

    def __init__(self, bert_config, data_config):
        """Creates the task.

        Args:
          bert_config: a `BertConfig`.
          data_config: a `SquadDataConfig`.

        Raises:
          ValueError: `max_seq_length` exceeds the model's
            `max_position_embeddings`.
        """
        if data_config.max_seq_length > bert_config.max_position_embeddings:
            raise ValueError(
                f"Cannot use sequence length {data_config.max_seq_length} "
                "(--max_seq_length) because the BERT model was only trained "
                "up to sequence length "
                f"{bert_config.max_position_embeddings}")
        self.bert_config = bert_config
        self.data_config = data_config

    def build_model(self):
        return SquadModel(self.bert_config)

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
        dataset = self._records(mode)
        if input_context is not None and input_context.num_input_pipelines > 1:
            dataset = dataset.shard(input_context.num_input_pipelines,
                                    input_context.input_pipeline_id)
        is_training = mode == base.TRAIN
        return classifier_features.batch_dataset(
            dataset, per_replica_batch_size, is_training,
            shuffle_buffer_size=self.data_config.shuffle_buffer_size,
            seed=self.data_config.seed)

    def prediction_inputs(self, global_batch_size, num_features,
                          pad_to_full_batches=False):
        """One in-order pass over the prediction features.

        Args:
          global_batch_size: features per batch, over all replicas.
          num_features: how many records the prediction file holds.
          pad_to_full_batches: append rows with `unique_ids` = -1 so every
            batch is full (TPUs need static shapes); they are dropped from
            the outputs.

        Returns:
          A batched dataset of feature dicts.
        """
        dataset = self._records(base.PREDICT)
        num_padding = -num_features % global_batch_size
        if pad_to_full_batches and num_padding:
            length = self.data_config.max_seq_length
            padding = {
                features_lib.UNIQUE_IDS: tf.fill([num_padding],
                                                 tf.constant(PADDING_UNIQUE_ID,
                                                             tf.int64)),
                features_lib.INPUT_IDS: tf.zeros([num_padding, length],
                                                 tf.int32),
                features_lib.INPUT_MASK: tf.zeros([num_padding, length],
                                                  tf.int32),
                features_lib.SEGMENT_IDS: tf.zeros([num_padding, length],
                                                   tf.int32),
            }
            dataset = dataset.concatenate(
                tf.data.Dataset.from_tensor_slices(padding))
        return dataset.batch(
            global_batch_size, drop_remainder=pad_to_full_batches
        ).prefetch(tf.data.AUTOTUNE)

    @property
    def metric_names(self):
        return ("loss_sum", "start_correct", "end_correct", "num_examples")

    def compute_loss(self, features, outputs, denominators):
        per_example = span_example_losses(outputs, features)
        loss_sum = tf.reduce_sum(per_example)
        # The mean over the global batch (see base.Task).
        loss = loss_sum / tf.maximum(denominators["num_examples"], 1.0)

        def correct(logits_name, positions_name):
            predicted = tf.argmax(outputs[logits_name], axis=-1,
                                  output_type=tf.int32)
            target = tf.cast(features[positions_name], tf.int32)
            return tf.reduce_sum(tf.cast(tf.equal(predicted, target),
                                         tf.float32))

        metrics = {
            "loss_sum": loss_sum,
            "start_correct": correct(START_LOGITS,
                                     features_lib.START_POSITIONS),
            "end_correct": correct(END_LOGITS, features_lib.END_POSITIONS),
            "num_examples": tf.cast(tf.shape(per_example)[0], tf.float32),
        }
        return loss, metrics

    def aggregate_metrics(self, totals):
        return {
            "start_accuracy": base.safe_ratio(totals["start_correct"],
                                              totals["num_examples"]),
            "end_accuracy": base.safe_ratio(totals["end_correct"],
                                            totals["num_examples"]),
        }

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

    def initialize_from_checkpoint(self, model, init_checkpoint):
        """Loads the encoder (required) and the span head when present.

        A pretrained checkpoint has no `cls/squad/...`: the head starts from
        Google's initializer. A fine-tuned one has it and it is loaded (as
        Google's `init_from_checkpoint` does), so `--init_checkpoint` of a
        fine-tuned model predicts as that model.
        """
        variables = self.checkpoint_variables(model)
        encoder = [v for name, v in variables.items()
                   if name.startswith(ENCODER_SCOPE)]
        head = [v for name, v in variables.items()
                if not name.startswith(ENCODER_SCOPE)]
        checkpoints.load_checkpoint(encoder, init_checkpoint, strict=True)
        report = checkpoints.load_checkpoint(head, init_checkpoint,
                                             strict=False)
        if report.mismatched:
            raise checkpoints.CheckpointError(
                f"--init_checkpoint {report.checkpoint}: its span head does "
                f"not fit the model: {', '.join(report.mismatched)}")
        if report.missing:
            logging.info(
                "--init_checkpoint %s has no SQuAD head (%s); it starts from "
                "random values", report.checkpoint, ", ".join(report.missing))


def predict_logits(trainer, global_batch_size, num_features,
                   first_unique_id=features_lib.BASE_UNIQUE_ID,
                   pad_to_full_batches=False):
    """Start and end logits of every prediction feature.

    Batches are spread over the trainer's strategy; the outputs of all
    replicas are gathered and stored by each feature's `unique_id`, straight
    into two preallocated arrays (the logits exist once, as float32).

    Args:
      trainer: a `Trainer` of a `SquadTask` (its model and strategy).
      global_batch_size: features per batch over all replicas.
      num_features: records in the prediction file; their `unique_ids`
        are `first_unique_id` .. `first_unique_id + num_features - 1`.
      first_unique_id: the first feature's id.
      pad_to_full_batches: see `SquadTask.prediction_inputs`.

    Returns:
      `(start_logits, end_logits)`: float32 [num_features, max_seq_length],
      row `i` for unique id `first_unique_id + i`.

    Raises:
      RuntimeError: some feature got no output, or an output has an id
        outside the range.
    """
    task, model, strategy = trainer.task, trainer.model, trainer.strategy
    dataset = strategy.experimental_distribute_dataset(
        task.prediction_inputs(global_batch_size, num_features,
                               pad_to_full_batches))

    def replica_step(features):
        outputs = task.forward(model, features, training=False)
        return {features_lib.UNIQUE_IDS: features[features_lib.UNIQUE_IDS],
                START_LOGITS: tf.cast(outputs[START_LOGITS], tf.float32),
                END_LOGITS: tf.cast(outputs[END_LOGITS], tf.float32)}

    # The last batch may be partial: retrace for it only once.
    @tf.function(reduce_retracing=True)
    def step(features):
        per_replica = strategy.run(replica_step, args=(features,))
        return {key: strategy.gather(value, axis=0)
                for key, value in per_replica.items()}

    length = task.data_config.max_seq_length
    start_logits = np.zeros([num_features, length], np.float32)
    end_logits = np.zeros([num_features, length], np.float32)
    filled = np.zeros([num_features], np.int32)
    next_report = 1000
    for features in dataset:
        outputs = step(features)
        unique_ids = outputs[features_lib.UNIQUE_IDS].numpy()
        real = unique_ids != PADDING_UNIQUE_ID
        rows = unique_ids[real] - first_unique_id
        if rows.size and (rows.min() < 0 or rows.max() >= num_features):
            raise RuntimeError(
                f"prediction returned feature ids outside "
                f"{first_unique_id}..{first_unique_id + num_features - 1}")
        start_logits[rows] = outputs[START_LOGITS].numpy()[real]
        end_logits[rows] = outputs[END_LOGITS].numpy()[real]
        np.add.at(filled, rows, 1)
        done = int(np.count_nonzero(filled))
        if done >= next_report:
            logging.info("Processing example: %d", done)
            next_report = (done // 1000 + 1) * 1000
    # A feature output twice (a strategy repeating a row) is harmless: both
    # copies hold the same logits. A missing one is a bug.
    if not np.all(filled >= 1):
        missing = np.flatnonzero(filled == 0)
        raise RuntimeError(
            f"prediction over {num_features} features returned no output for "
            f"{missing.size} of them (first unique id "
            f"{first_unique_id + int(missing[0])}) under "
            f"{type(strategy).__name__}")
    return start_logits, end_logits
