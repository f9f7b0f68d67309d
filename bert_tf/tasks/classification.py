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
Pearson, Spearman) need every prediction at once: `predict` collects them,
in input order, and `bert_tf.data.classifier_metrics` computes them.
"""

import dataclasses
from typing import Optional

from absl import logging
import keras
import numpy as np
import tensorflow as tf

from bert_tf import checkpoints
from bert_tf.data import classifier_features as features_lib
from bert_tf.tasks import base
from bert_tf.tasks import losses

# The encoder's checkpoint scope: loaded strictly from --init_checkpoint.
ENCODER_SCOPE = "bert/"
# Added to prediction batches so outputs can be put back in input order
# whatever the distribution strategy did to the batches.
EXAMPLE_INDEX = "example_index"


@keras.saving.register_keras_serializable(package="bert_tf")
class ClassificationModel(keras.Model):
    """`BertModel` + `ClassifierHead`; called on a feature dict.

    Returns `{"logits": float32 [batch, num_outputs]}`. Variables:
    `bert/...`, `output_weights`, `output_bias`.

    Keras-native: `model.save("x.keras")` / `keras.models.load_model` round
    trip, and `tf.saved_model.save(model, path)` exports a serving_default
    signature of int32 `input_ids`, `input_mask`, `segment_ids`
    [batch, seq] -> `logits`.
    """

    def __init__(self, bert_config, num_outputs,
                 name="bert_classification_model", **kwargs):
        """Args:
          bert_config: a `BertConfig`.
          num_outputs: number of labels, or 1 for regression.
          name: Keras model name (not part of any variable's path).
          **kwargs: Keras model arguments.
        """
        super().__init__(name=name, **kwargs)
        # Imported here, as in the pretraining task: the losses and metrics
        # can be used without building a model.
        from bert_tf.modeling import BertModel, ClassifierHead
        self.bert_config = bert_config
        self.num_outputs = num_outputs
        self.bert = BertModel(bert_config)
        self.classifier = ClassifierHead(bert_config, num_outputs)
        # Create every variable now: the optimizer and checkpoint restore
        # need them before the first step.
        dummy_ids = tf.zeros([1, 2], tf.int32)
        pooled = self.bert(dummy_ids, input_mask=tf.ones_like(dummy_ids),
                           token_type_ids=dummy_ids)["pooled_output"]
        self.classifier(pooled)
        self.built = True

    def call(self, features, training=False):
        encoder_outputs = self.bert(
            features[features_lib.INPUT_IDS],
            input_mask=features[features_lib.INPUT_MASK],
            token_type_ids=features[features_lib.SEGMENT_IDS],
            training=training)
        return {"logits": self.classifier(encoder_outputs["pooled_output"],
                                          training=training)}

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
                "bert_config": self.bert_config.to_dict(),
                "num_outputs": self.num_outputs}

    @classmethod
    def from_config(cls, config):
        from bert_tf.config import BertConfig
        config = dict(config)
        bert_config = BertConfig.from_dict(config.pop("bert_config"))
        return cls(bert_config, **config)


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
    predictions = tf.reshape(tf.cast(logits, tf.float32), [-1])
    return tf.square(predictions - tf.cast(scores, tf.float32))


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
                 is_regression=False):
        """Creates the task.

        Args:
          bert_config: a `BertConfig`.
          num_labels: number of classes (ignored for regression).
          data_config: a `ClassificationDataConfig`.
          is_regression: one output trained with mean squared error.

        Raises:
          ValueError: `max_seq_length` exceeds the model's
            `max_position_embeddings`, or fewer than two labels.
        """
        if data_config.max_seq_length > bert_config.max_position_embeddings:
            raise ValueError(
                f"--max_seq_length={data_config.max_seq_length} exceeds the "
                f"model's max_position_embeddings "
                f"({bert_config.max_position_embeddings}, --bert_config_file)")
        if not is_regression and num_labels < 2:
            raise ValueError(
                f"classification needs at least 2 labels, got {num_labels}")
        self.bert_config = bert_config
        self.num_labels = 1 if is_regression else num_labels
        self.is_regression = is_regression
        self.data_config = data_config

    def build_model(self):
        return ClassificationModel(self.bert_config, self.num_labels)

    def _records(self, mode):
        data = self.data_config
        input_file = {base.TRAIN: data.train_file, base.EVAL: data.eval_file,
                      base.PREDICT: data.predict_file}[mode]
        if not input_file:
            raise ValueError(f"the classification task has no {mode} data")
        return features_lib.read_tfrecord(input_file, data.max_seq_length,
                                          self.is_regression)

    def build_inputs(self, mode, per_replica_batch_size, input_context=None):
        dataset = self._records(mode)
        if input_context is not None and input_context.num_input_pipelines > 1:
            dataset = dataset.shard(input_context.num_input_pipelines,
                                    input_context.input_pipeline_id)
        is_training = mode == base.TRAIN
        return features_lib.batch_dataset(
            dataset, per_replica_batch_size, is_training,
            drop_remainder=(is_training
                            or self.data_config.drop_remainder_for_eval),
            shuffle_buffer_size=self.data_config.shuffle_buffer_size,
            seed=self.data_config.seed)

    def prediction_inputs(self, mode, global_batch_size):
        """One in-order pass over a set, each example carrying its index.

        Args:
          mode: `base.EVAL` (the dev set) or `base.PREDICT` (the test set).
          global_batch_size: examples per batch, over all replicas.

        Returns:
          A batched dataset of feature dicts with an extra `example_index`.
        """
        dataset = self._records(mode).enumerate().map(
            lambda index, features: {
                **features, EXAMPLE_INDEX: tf.cast(index, tf.int32)})
        dataset = dataset.batch(
            global_batch_size,
            drop_remainder=self.data_config.drop_remainder_for_eval)
        # Every worker of a multi-worker run reads the whole set: then all
        # run the same number of steps (gathering outputs is a collective
        # op), and `predict` drops the copies by example index. Sharding by
        # worker could leave them with different step counts.
        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = (
            tf.data.experimental.AutoShardPolicy.OFF)
        return dataset.with_options(options).prefetch(tf.data.AUTOTUNE)

    def loss_denominators(self, features):
        # Padding rows of evaluation sets are not examples.
        return {"num_examples": tf.reduce_sum(tf.cast(
            features[features_lib.IS_REAL_EXAMPLE], tf.float32))}

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
        weights = tf.cast(features[features_lib.IS_REAL_EXAMPLE], tf.float32)
        per_example = self.example_losses(outputs, features)
        loss_sum = tf.reduce_sum(weights * per_example)
        # The mean over the global batch's real examples (see base.Task).
        loss = loss_sum / tf.maximum(denominators["num_examples"], 1.0)
        metrics = {"loss_sum": loss_sum,
                   "num_examples": tf.reduce_sum(weights)}
        if not self.is_regression:
            predictions = tf.argmax(outputs["logits"], axis=-1,
                                    output_type=tf.int32)
            labels = tf.cast(features[features_lib.LABEL_IDS], tf.int32)
            metrics["correct"] = tf.reduce_sum(
                weights * tf.cast(tf.equal(predictions, labels), tf.float32))
        return loss, metrics

    def aggregate_metrics(self, totals):
        """Google's `metric_fn`: accuracy and loss over real examples."""
        results = {"eval_loss": base.safe_ratio(totals["loss_sum"],
                                                totals["num_examples"])}
        if not self.is_regression:
            results["eval_accuracy"] = base.safe_ratio(
                totals["correct"], totals["num_examples"])
        return results

    def initialize_from_checkpoint(self, model, init_checkpoint):
        """Loads the encoder (required) and the head when the checkpoint has it.

        A pretrained checkpoint has no `output_weights`: the head starts from
        Google's initializer. A fine-tuned one has it, and it is loaded (as
        Google's `init_from_checkpoint` does), so `--init_checkpoint` of a
        fine-tuned model predicts as that model. A head of another shape
        (another number of labels) is an error.
        """
        variables = self.checkpoint_variables(model)
        available = checkpoints.checkpoint_shapes(init_checkpoint)
        # One strict load: every encoder variable, and the head's variables
        # the checkpoint has (a head of another shape is reported as such).
        to_load = [variable for name, variable in variables.items()
                   if name.startswith(ENCODER_SCOPE) or name in available]
        checkpoints.load_checkpoint(to_load, init_checkpoint, strict=True)
        missing = sorted(name for name in variables
                         if not name.startswith(ENCODER_SCOPE)
                         and name not in available)
        if missing:
            logging.info(
                "--init_checkpoint %s has no classifier (%s); it starts from "
                "random values", init_checkpoint, ", ".join(missing))


# -- prediction ---------------------------------------------------------------

def predict(trainer, mode, global_batch_size, num_examples):
    """Runs the trainer's model over a set and returns outputs in input order.

    Batches are spread over the trainer's strategy; the outputs of all
    replicas (and workers) are gathered and put back in input order by each
    example's index.

    Args:
      trainer: a `bert_tf.training.trainer.Trainer` of a `ClassificationTask`.
      mode: `base.EVAL` (the dev records) or `base.PREDICT` (test records).
      global_batch_size: examples per batch over all replicas.
      num_examples: how many records the set has (padding rows included);
        a check that nothing was lost or repeated.

    Returns:
      A dict of numpy arrays, one row per record in file order: `logits`
      [n, num_outputs], `label_ids` [n], `is_real_example` [n].

    Raises:
      RuntimeError: the strategy did not return each record exactly once.
    """
    task, model, strategy = trainer.task, trainer.model, trainer.strategy
    dataset = strategy.experimental_distribute_dataset(
        task.prediction_inputs(mode, global_batch_size))
    keys = (features_lib.LABEL_IDS, features_lib.IS_REAL_EXAMPLE,
            EXAMPLE_INDEX)

    def replica_step(features):
        outputs = task.forward(model, features, training=False)
        values = {key: features[key] for key in keys}
        values["logits"] = tf.cast(outputs["logits"], tf.float32)
        return values

    # The last batch may be partial: retrace for it only once.
    @tf.function(reduce_retracing=True)
    def step(features):
        per_replica = strategy.run(replica_step, args=(features,))
        return {key: strategy.gather(value, axis=0)
                for key, value in per_replica.items()}

    batches = [{key: value.numpy() for key, value in step(features).items()}
               for features in dataset]
    if not batches:
        raise RuntimeError(f"the {mode} set has no records to predict")
    outputs = {key: np.concatenate([batch[key] for batch in batches])
               for key in batches[0]}
    indices, first_positions = np.unique(outputs.pop(EXAMPLE_INDEX),
                                         return_index=True)
    if not np.array_equal(indices, np.arange(num_examples)):
        raise RuntimeError(
            f"prediction over {num_examples} {mode} records returned "
            f"{len(indices)} distinct ones under {type(strategy).__name__}")
    # Sorted by index; a record repeated by a strategy is kept once.
    return {key: value[first_positions] for key, value in outputs.items()}
