"""BERT pretraining: masked LM + next sentence prediction, as Google's original.

The losses are those of Google's `run_pretraining.py`:

- masked LM: the encoder's hidden states are gathered at
  `masked_lm_positions` and projected onto the vocabulary (weights tied to
  the word embeddings); each prediction's loss is
  `-sum(log_softmax(logits) * one_hot(masked_lm_ids))`, and the batch loss is
  `sum(masked_lm_weights * loss) / (sum(masked_lm_weights) + 1e-5)`;
- next sentence: mean cross-entropy over the two classes of the pooled output;
- total: their sum.

Under the trainer, the sums in those formulas run over the *global* batch
(see `bert_tf.tasks.base`), so any number of replicas or accumulation steps
gives the loss one device computes on the whole batch.
"""

import dataclasses
from typing import Optional, Sequence

from absl import logging
import keras
import tensorflow as tf

from bert_tf import checkpoints
from bert_tf.data import pretraining_records as records
from bert_tf.tasks import base
from bert_tf.tasks import losses

# Google's epsilon in the masked-LM denominator.
MASKED_LM_DENOMINATOR_EPSILON = 1e-5
# The encoder's checkpoint scope: loaded strictly from --init_checkpoint.
ENCODER_SCOPE = "bert/"


# -- losses (Google's formulas, usable on their own) -------------------------

def masked_lm_example_losses(logits, masked_lm_ids):
    """Each masked position's loss, `-sum(log_softmax * one_hot(id))`.

    Args:
      logits: [batch, predictions, vocab_size], any float dtype.
      masked_lm_ids: [batch, predictions] integer ids.

    Returns:
      float32 [batch, predictions].
    """
    return losses.cross_entropy(logits, masked_lm_ids)


def masked_lm_loss(logits, masked_lm_ids, masked_lm_weights):
    """Google's masked-LM loss of one batch.

    Returns:
      float32 scalar: `sum(w * loss) / (sum(w) + 1e-5)`.
    """
    weights = tf.cast(masked_lm_weights, tf.float32)
    per_prediction = masked_lm_example_losses(logits, masked_lm_ids)
    return tf.reduce_sum(weights * per_prediction) / (
        tf.reduce_sum(weights) + MASKED_LM_DENOMINATOR_EPSILON)


def next_sentence_example_losses(logits, labels):
    """Each example's 2-class cross-entropy, `-sum(log_softmax * one_hot)`.

    Args:
      logits: [batch, 2].
      labels: [batch] or [batch, 1] integers (0: is next, 1: random).

    Returns:
      float32 [batch].
    """
    return losses.cross_entropy(logits, tf.reshape(labels, [-1]))


def next_sentence_loss(logits, labels):
    """Google's next-sentence loss of one batch: the mean cross-entropy."""
    return tf.reduce_mean(next_sentence_example_losses(logits, labels))


# -- the model -----------------------------------------------------------------

class BertPretrainingModel(keras.Model):
    """`BertModel` + masked-LM head + next-sentence head.

    Called on a feature dict (the pretraining records' names); returns
    `{"masked_lm_logits": [b, p, vocab], "next_sentence_logits": [b, 2]}`.
    Variables: `bert/...`, `cls/predictions/...`, `cls/seq_relationship/...`.
    """

    def __init__(self, bert_config, name="bert_pretraining_model", **kwargs):
        super().__init__(name=name, **kwargs)
        # Imported here so that the task's losses can be used and tested
        # without the modeling package.
        from bert_tf.modeling import BertModel, MaskedLMHead, NextSentenceHead
        self.bert_config = bert_config
        self.bert = BertModel(bert_config)
        # Create every variable now: the optimizer and checkpoint restore
        # need them before the first step.
        dummy_ids = tf.zeros([1, 2], tf.int32)
        encoder_outputs = self.bert(
            dummy_ids, input_mask=tf.ones_like(dummy_ids),
            token_type_ids=dummy_ids, training=False)
        self.masked_lm = MaskedLMHead(bert_config, self.bert.embedding_table)
        self.next_sentence = NextSentenceHead(bert_config)
        self.masked_lm(encoder_outputs["sequence_output"],
                       tf.zeros([1, 1], tf.int32))
        self.next_sentence(encoder_outputs["pooled_output"])

    def call(self, features, training=False):
        encoder_outputs = self.bert(
            features[records.INPUT_IDS],
            input_mask=features[records.INPUT_MASK],
            token_type_ids=features[records.SEGMENT_IDS],
            training=training)
        return {
            "masked_lm_logits": self.masked_lm(
                encoder_outputs["sequence_output"],
                features[records.MASKED_LM_POSITIONS]),
            "next_sentence_logits": self.next_sentence(
                encoder_outputs["pooled_output"]),
        }


# -- the task ------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class PretrainingDataConfig:
    """Where the pretraining examples come from.

    Attributes:
      input_patterns: file globs. TFRecords of `create_pretraining_data.py`,
        or, with `dynamic_masking`, raw text in its input format (one sentence
        per line, blank lines between documents).
      max_seq_length: `--max_seq_length`; must match the records.
      max_predictions_per_seq: `--max_predictions_per_seq`; must match the
        records.
      dynamic_masking: mask raw text on the fly (new masks every epoch)
        instead of reading pre-masked records.
      vocab_file: WordPiece vocabulary (dynamic masking only).
      do_lower_case: lower-case and strip accents (dynamic masking only).
      masked_lm_prob: fraction of tokens to mask (dynamic masking only).
      short_seq_prob: probability of a shorter sequence (dynamic masking).
      seed: shuffling (and dynamic masking) seed; None for a random one.
    """
    input_patterns: Sequence[str]
    max_seq_length: int = 128
    max_predictions_per_seq: int = 20
    dynamic_masking: bool = False
    vocab_file: Optional[str] = None
    do_lower_case: bool = True
    masked_lm_prob: float = 0.15
    short_seq_prob: float = 0.1
    seed: Optional[int] = None

    def __post_init__(self):
        if isinstance(self.input_patterns, str):
            object.__setattr__(self, "input_patterns",
                               (self.input_patterns,))
        if not self.input_patterns:
            raise ValueError("--input_file: no input files given")
        if self.max_seq_length <= 0:
            raise ValueError(
                f"--max_seq_length={self.max_seq_length} must be positive")
        if not 0 < self.max_predictions_per_seq <= self.max_seq_length:
            raise ValueError(
                f"--max_predictions_per_seq={self.max_predictions_per_seq} "
                f"must be in [1, --max_seq_length={self.max_seq_length}]")
        if self.dynamic_masking and not self.vocab_file:
            raise ValueError(
                "--dynamic_masking reads raw text and needs --vocab_file "
                "(and --do_lower_case to match the vocabulary)")


class PretrainingTask(base.Task):
    """Masked LM + next sentence prediction on Google's pretraining data."""

    name = "pretraining"

    def __init__(self, bert_config, data_config):
        """Creates the task.

        Args:
          bert_config: a `bert_tf.config.BertConfig`.
          data_config: a `PretrainingDataConfig`.

        Raises:
          ValueError: `--max_seq_length` exceeds the model's
            `max_position_embeddings`.
        """
        if data_config.max_seq_length > bert_config.max_position_embeddings:
            raise ValueError(
                f"--max_seq_length={data_config.max_seq_length} exceeds the "
                f"model's max_position_embeddings "
                f"({bert_config.max_position_embeddings}, --bert_config_file)")
        self.bert_config = bert_config
        self.data_config = data_config

    def build_model(self):
        return BertPretrainingModel(self.bert_config)

    def build_inputs(self, mode, per_replica_batch_size, input_context=None):
        # Imported here: the data pipeline is only needed to train/evaluate.
        from bert_tf.data import dynamic_masking
        from bert_tf.data import pretraining_dataset
        data = self.data_config
        is_training = mode == base.TRAIN
        if data.dynamic_masking:
            return dynamic_masking.dynamic_masking_dataset(
                list(data.input_patterns), data.vocab_file, data.do_lower_case,
                per_replica_batch_size, data.max_seq_length,
                data.max_predictions_per_seq, is_training,
                input_context=input_context, seed=data.seed,
                masked_lm_prob=data.masked_lm_prob,
                short_seq_prob=data.short_seq_prob)
        return pretraining_dataset.pretraining_dataset(
            list(data.input_patterns), per_replica_batch_size,
            data.max_seq_length, data.max_predictions_per_seq, is_training,
            input_context=input_context, seed=data.seed)

    def loss_denominators(self, features):
        weights = tf.cast(features[records.MASKED_LM_WEIGHTS], tf.float32)
        labels = features[records.NEXT_SENTENCE_LABELS]
        return {
            "masked_lm_weight": tf.reduce_sum(weights),
            "num_examples": tf.cast(tf.shape(labels)[0], tf.float32),
        }

    @property
    def metric_names(self):
        return ("masked_lm_loss_sum", "masked_lm_correct", "masked_lm_weight",
                "next_sentence_loss_sum", "next_sentence_correct",
                "next_sentence_count")

    def compute_loss(self, features, outputs, denominators):
        mlm_logits = tf.cast(outputs["masked_lm_logits"], tf.float32)
        mlm_ids = tf.cast(features[records.MASKED_LM_IDS], tf.int32)
        mlm_weights = tf.cast(features[records.MASKED_LM_WEIGHTS], tf.float32)
        mlm_losses = masked_lm_example_losses(mlm_logits, mlm_ids)
        mlm_loss_sum = tf.reduce_sum(mlm_weights * mlm_losses)
        mlm_predictions = tf.argmax(mlm_logits, axis=-1, output_type=tf.int32)
        mlm_correct = tf.reduce_sum(
            mlm_weights * tf.cast(tf.equal(mlm_predictions, mlm_ids),
                                  tf.float32))

        nsp_logits = tf.cast(outputs["next_sentence_logits"], tf.float32)
        nsp_labels = tf.reshape(
            tf.cast(features[records.NEXT_SENTENCE_LABELS], tf.int32), [-1])
        nsp_losses = next_sentence_example_losses(nsp_logits, nsp_labels)
        nsp_loss_sum = tf.reduce_sum(nsp_losses)
        nsp_predictions = tf.argmax(nsp_logits, axis=-1, output_type=tf.int32)
        nsp_correct = tf.reduce_sum(
            tf.cast(tf.equal(nsp_predictions, nsp_labels), tf.float32))

        # Google's normalizers, over the global batch.
        loss = (mlm_loss_sum / (denominators["masked_lm_weight"]
                                + MASKED_LM_DENOMINATOR_EPSILON)
                + nsp_loss_sum / tf.maximum(denominators["num_examples"], 1.0))
        metrics = {
            "masked_lm_loss_sum": mlm_loss_sum,
            "masked_lm_correct": mlm_correct,
            "masked_lm_weight": tf.reduce_sum(mlm_weights),
            "next_sentence_loss_sum": nsp_loss_sum,
            "next_sentence_correct": nsp_correct,
            "next_sentence_count": tf.cast(tf.shape(nsp_labels)[0],
                                           tf.float32),
        }
        return loss, metrics

    def aggregate_metrics(self, totals):
        """Google's eval metrics (its `metric_fn` in run_pretraining.py).

        `masked_lm_accuracy` and `masked_lm_loss` are weighted by
        `masked_lm_weights`; the next-sentence ones are plain means.
        """
        return {
            "masked_lm_accuracy": base.safe_ratio(
                totals["masked_lm_correct"], totals["masked_lm_weight"]),
            "masked_lm_loss": base.safe_ratio(
                totals["masked_lm_loss_sum"], totals["masked_lm_weight"]),
            "next_sentence_accuracy": base.safe_ratio(
                totals["next_sentence_correct"],
                totals["next_sentence_count"]),
            "next_sentence_loss": base.safe_ratio(
                totals["next_sentence_loss_sum"],
                totals["next_sentence_count"]),
        }

    def initialize_from_checkpoint(self, model, init_checkpoint):
        """Loads the encoder (required) and whatever heads the checkpoint has.

        A released `bert_model.ckpt` holds the encoder and both heads; an
        encoder-only checkpoint (e.g. converted from elsewhere) leaves the
        heads freshly initialized. A head tensor of the wrong shape is an
        error either way.
        """
        encoder = {name: variable for name, variable
                   in self.checkpoint_variables(model).items()
                   if name.startswith(ENCODER_SCOPE)}
        heads = {name: variable for name, variable
                 in self.checkpoint_variables(model).items()
                 if not name.startswith(ENCODER_SCOPE)}
        checkpoints.load_checkpoint(list(encoder.values()), init_checkpoint,
                                    strict=True)
        if not heads:
            return
        report = checkpoints.load_checkpoint(list(heads.values()),
                                             init_checkpoint, strict=False)
        if report.mismatched:
            raise checkpoints.CheckpointError(
                f"--init_checkpoint {report.checkpoint}: the pretraining "
                f"heads do not fit the model: {', '.join(report.mismatched)}")
        if report.missing:
            logging.info(
                "--init_checkpoint %s has no pretraining heads for %s; they "
                "start from random values", report.checkpoint,
                ", ".join(report.missing))
