"""BERT pretraining: masked LM + next sentence prediction, as Google's original.

Four objectives, those compared in the BERT paper's ablation (Devlin et al.,
2019, section 5.1) and ALBERT's; the model's variables are the same for all:

- `mlm_nsp` (Google's, the default): masked LM + next sentence prediction;
- `mlm` ("No NSP"): the masked-LM loss alone; the next-sentence head exists
  (and is saved) but gets no loss, so it keeps its initial values;
- `mlm_sop` (ALBERT's sentence-order prediction, Lan et al., 2020): the
  loss of `mlm_nsp`, with the same `cls/seq_relationship` head, on pairs
  whose B is always A's continuation and that are swapped half of the time
  (label 1): `create_pretraining_data.py --pretraining_objective=mlm_sop`
  records, or dynamic masking with `sentence_order`. Eval reports
  `sentence_order_accuracy` / `sentence_order_loss`;
- `ltr` ("LTR & No NSP"): a left-to-right LM. The encoder attends causally
  (position i sees positions <= i) and the hidden state at position t
  predicts the original token at t + 1, through the masked-LM head's
  transform and tied output embedding. The loss is the mean cross-entropy
  over every t + 1 that is a real token. The records hold masked inputs, so
  the original tokens are first put back (`original_input_ids`).

Google's objective uses the losses of its `run_pretraining.py`:

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

import keras
from keras import ops

from bert_tf.modeling import BertModel, MaskedLMHead, NextSentenceHead
from bert_tf.modeling import save_signature
from bert_tf.pretraining import records
from bert_tf.pretraining import sequence_packing
from bert_tf.tasks import base
from bert_tf.tasks import losses

# Google's epsilon in the masked-LM denominator.
MASKED_LM_DENOMINATOR_EPSILON = 1e-5

# The pretraining objectives (`--pretraining_objective`).
MLM_NSP = "mlm_nsp"
MLM = "mlm"
LTR = "ltr"
MLM_SOP = "mlm_sop"
OBJECTIVES = (MLM_NSP, MLM, LTR, MLM_SOP)
# The objectives with a sentence-pair loss on `cls/seq_relationship`.
SENTENCE_PAIR_OBJECTIVES = (MLM_NSP, MLM_SOP)


def check_objective(objective):
    """Raises a ValueError naming the flag unless `objective` is known."""
    if objective not in OBJECTIVES:
        raise ValueError(
            f"--pretraining_objective={objective!r} is not one of "
            f"{', '.join(OBJECTIVES)} (mlm_nsp: masked LM + next sentence, "
            f"Google's; mlm: masked LM only; ltr: left-to-right LM; "
            f"mlm_sop: masked LM + ALBERT's sentence order)")


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


def next_sentence_example_losses(logits, labels):
    """Each example's 2-class cross-entropy, `-sum(log_softmax * one_hot)`.

    Args:
      logits: [batch, 2].
      labels: [batch] or [batch, 1] integers (0: is next, 1: random).

    Returns:
      float32 [batch].
    """
    return losses.cross_entropy(logits, ops.reshape(labels, [-1]))


# -- the left-to-right LM (the paper's "LTR & No NSP") ------------------------

def original_input_ids(input_ids, masked_lm_positions, masked_lm_ids,
                       masked_lm_weights):
    """The unmasked token ids: `masked_lm_ids` put back at their positions.

    Pretraining records hold the masked sequence and, for each prediction,
    the position and the original id. Padding predictions (weight 0) have
    position 0 and id 0; they are skipped, so they do not overwrite token 0
    ([CLS]). Real predictions have distinct positions, as Google's
    `create_pretraining_data.py` and the dynamic-masking pipeline write them.

    Args:
      input_ids: int tensor [batch, seq_length], the masked sequence.
      masked_lm_positions: int tensor [batch, predictions].
      masked_lm_ids: int tensor [batch, predictions].
      masked_lm_weights: float tensor [batch, predictions]; > 0 for real
        predictions.

    Returns:
      int32 [batch, seq_length].
    """
    input_ids = ops.cast(input_ids, "int32")
    seq_length = ops.shape(input_ids)[1]
    # [batch, predictions]
    is_real = ops.cast(ops.greater(masked_lm_weights, 0), "int32")
    # [batch, predictions, seq]: 1 where a real prediction restores a token.
    restores = ops.one_hot(ops.cast(masked_lm_positions, "int32"),
                           seq_length, dtype="int32") * is_real[:, :, None]
    is_restored = ops.max(restores, axis=1)  # [batch, seq]
    # Each restored position has exactly one real prediction: the sum over
    # predictions picks its id.
    restored_ids = ops.sum(
        restores * ops.cast(masked_lm_ids, "int32")[:, :, None],
        axis=1)  # [batch, seq]
    return ops.where(is_restored > 0, restored_ids, input_ids)


def next_token_targets(token_ids, input_mask):
    """What each position predicts in a left-to-right LM: the next token.

    The hidden state at position t (t = 0 .. seq_length - 2) predicts token
    t + 1; the prediction counts (weight 1) when token t + 1 is real.

    Args:
      token_ids: int tensor [batch, seq_length], the original tokens.
      input_mask: int tensor [batch, seq_length], 1 for real tokens.

    Returns:
      `(target_ids, target_weights)`: int32 and float32, both
      [batch, seq_length - 1].
    """
    target_ids = ops.cast(token_ids, "int32")[:, 1:]
    target_weights = ops.cast(input_mask, "float32")[:, 1:]
    return target_ids, target_weights


def left_to_right_example_losses(logits, target_ids):
    """Each position's next-token cross-entropy, `-log_softmax(logits)[id]`.

    The same value as `losses.cross_entropy`, without its one-hot
    [batch, seq, vocab] tensor: scoring every position (not just ~15%)
    makes that tensor as large as the logits. (TensorFlow's
    `sparse_softmax_cross_entropy_with_logits`; on JAX, XLA fuses the
    comparison with the ids into the sum.)

    Args:
      logits: [batch, seq_length - 1, vocab_size], any float dtype.
      target_ids: [batch, seq_length - 1] integer ids.

    Returns:
      float32 [batch, seq_length - 1].
    """
    return ops.sparse_categorical_crossentropy(
        ops.cast(target_ids, "int32"), ops.cast(logits, "float32"),
        from_logits=True)


# -- the model -----------------------------------------------------------------

@keras.saving.register_keras_serializable(package="bert_tf")
class BertPretrainingModel(save_signature.TaskModel):
    """`BertModel` + masked-LM head + next-sentence head.

    Called on a feature dict (the pretraining records' names). Returns, by
    objective:
      mlm_nsp: `{"masked_lm_logits": [b, p, vocab],
                 "next_sentence_logits": [b, 2]}`;
      mlm:     `{"masked_lm_logits": [b, p, vocab]}`;
      ltr:     `{"lm_logits": [b, seq - 1, vocab]}`, the next-token scores
               of positions 0 .. seq - 2 of the original tokens, from a
               causal encoder.
    Variables, whatever the objective: `bert/...`, `cls/predictions/...`,
    `cls/seq_relationship/...`.
    """

    def __init__(self, bert_config, objective=MLM_NSP,
                 name="bert_pretraining_model", **kwargs):
        super().__init__(name=name, **kwargs)
        check_objective(objective)
        self.bert_config = bert_config
        self.objective = objective
        self.bert = BertModel(bert_config,
                              causal_attention=objective == LTR)
        # Create every variable now: the optimizer and checkpoint restore
        # need them before the first step. The next-sentence head is created
        # for every objective, so that all of them write the same checkpoint.
        dummy_ids = ops.zeros((1, 2), dtype="int32")
        encoder_outputs = self.bert(
            dummy_ids, input_mask=ops.ones_like(dummy_ids),
            segment_ids=dummy_ids, training=False)
        self.masked_lm = MaskedLMHead(bert_config, self.bert.embedding_table)
        self.next_sentence = NextSentenceHead(bert_config)
        self.masked_lm(encoder_outputs["sequence_output"],
                       ops.zeros((1, 1), dtype="int32"))
        self.next_sentence(encoder_outputs["pooled_output"])
        self.built = True

    def task_config(self):
        return {"objective": self.objective}

    def saved_input_specs(self):
        """int32 `input_ids`, `input_mask`, `segment_ids` [batch, seq] and
        `masked_lm_positions` [batch, predictions] (with the `ltr`
        objective also `masked_lm_ids` and float32 `masked_lm_weights`,
        which restore the original tokens) -> this objective's logits."""
        specs = save_signature.int_feature_specs(
            (records.INPUT_IDS, records.INPUT_MASK, records.SEGMENT_IDS,
             records.MASKED_LM_POSITIONS))
        if self.objective == LTR:
            specs.update(save_signature.int_feature_specs(
                (records.MASKED_LM_IDS,)))
            specs.update(save_signature.int_feature_specs(
                (records.MASKED_LM_WEIGHTS,), "float32"))
        return specs

    def call(self, features, training=False):
        """The objective's logits (see the class docstring).

        Packed rows (`bert_tf.pretraining.sequence_packing`'s features, with
        `position_ids` and `sequence_ids`) give masked-LM logits at the
        row's `masked_lm_positions` and next-sentence logits
        [batch, sequences per row, 2] at each sequence's [CLS].
        """
        if self.objective == LTR:
            return self._left_to_right_outputs(features, training)
        packed = sequence_packing.SEQUENCE_IDS in features
        encoder_outputs = self.bert(
            features[records.INPUT_IDS],
            input_mask=features[records.INPUT_MASK],
            segment_ids=features[records.SEGMENT_IDS],
            training=training,
            position_ids=features.get(sequence_packing.POSITION_IDS),
            sequence_ids=features.get(sequence_packing.SEQUENCE_IDS))
        outputs = {
            "masked_lm_logits": self.masked_lm(
                encoder_outputs["sequence_output"],
                features[records.MASKED_LM_POSITIONS]),
        }
        if self.objective in SENTENCE_PAIR_OBJECTIVES:
            if packed:
                # The pooler on each sequence's [CLS]: [batch, k, hidden].
                pooled_output = self.bert.pooler(
                    encoder_outputs["sequence_output"],
                    features[sequence_packing.NEXT_SENTENCE_POSITIONS])
            else:
                pooled_output = encoder_outputs["pooled_output"]
            outputs["next_sentence_logits"] = self.next_sentence(
                pooled_output)
        return outputs

    def _left_to_right_outputs(self, features, training):
        # The LM reads the original text: no [MASK] or random replacements.
        token_ids = original_input_ids(
            features[records.INPUT_IDS],
            features[records.MASKED_LM_POSITIONS],
            features[records.MASKED_LM_IDS],
            features[records.MASKED_LM_WEIGHTS])
        encoder_outputs = self.bert(
            token_ids, input_mask=features[records.INPUT_MASK],
            segment_ids=features[records.SEGMENT_IDS], training=training)
        sequence_output = encoder_outputs["sequence_output"]
        batch_size, seq_length = ops.shape(token_ids)[:2]
        # The last position has no next token to predict: score 0 .. seq-2.
        positions = ops.broadcast_to(
            ops.arange(seq_length - 1, dtype="int32")[None, :],
            (batch_size, seq_length - 1))
        # The masked-LM head (transform + tied embeddings) on those positions.
        return {"lm_logits": self.masked_lm(sequence_output, positions)}


# -- the task ------------------------------------------------------------------

def _is_argmax(logits, ids):
    """float32, 1.0 where `ids` is the arg-max of `logits` (the first
    maximum, as `tf.argmax`), else 0.0."""
    predictions = ops.cast(ops.argmax(logits, axis=-1), "int32")
    return ops.cast(ops.equal(predictions, ids), "float32")


def _next_sentence_weights(features):
    """float32 [sequences]: 1 per sequence of the batch (packed rows mark
    their empty slots 0)."""
    if sequence_packing.NEXT_SENTENCE_WEIGHTS in features:
        return ops.reshape(ops.cast(
            features[sequence_packing.NEXT_SENTENCE_WEIGHTS], "float32"),
            [-1])
    labels = ops.reshape(features[records.NEXT_SENTENCE_LABELS], [-1])
    return ops.ones_like(labels, dtype="float32")


@dataclasses.dataclass(frozen=True)
class PretrainingDataConfig:
    """Where the pretraining examples come from.

    Attributes:
      input_patterns: file globs (or the files, already expanded: a
        `file_io.InputFiles`). TFRecords of `create_pretraining_data.py`,
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
      do_whole_word_mask: mask a word's "##" pieces together (dynamic
        masking only; records carry their masks).
      packing: how dynamic masking makes sequences:
        `dynamic_masking.SENTENCE_PAIRS` (Google's A/B pairs) or
        `FULL_SENTENCES` (RoBERTa's: whole sentences packed across
        documents, one segment; for the objectives without a sentence-pair
        loss, mlm and ltr).
      seed: shuffling (and dynamic masking) seed; None for a random one.
      pack_sequences: pack up to `max_sequences_per_pack` sequences into
        each row, as they are read (`sequence_packing`): a batch is
        `batch_size` rows, holding more sequences than rows.
      max_sequences_per_pack: with `pack_sequences`, the sequences a row
        holds at most.
      max_eval_batches: with `pack_sequences`, evaluation packs the
        sequences of this many unpacked batches (the trainer's
        `max_eval_steps`; None: all), so that it evaluates the sequences
        an unpacked evaluation does.
    """
    input_patterns: Sequence[str]
    max_seq_length: int = 128
    max_predictions_per_seq: int = 20
    dynamic_masking: bool = False
    vocab_file: Optional[str] = None
    do_lower_case: bool = True
    masked_lm_prob: float = 0.15
    short_seq_prob: float = 0.1
    do_whole_word_mask: bool = False
    packing: str = "sentence_pairs"
    seed: Optional[int] = None
    pack_sequences: bool = False
    max_sequences_per_pack: int = 3
    max_eval_batches: Optional[int] = None

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
        if self.do_whole_word_mask and not self.dynamic_masking:
            raise ValueError(
                "--do_whole_word_mask masks raw text: it needs "
                "--dynamic_masking (records were masked when they were "
                "made: create_pretraining_data.py --do_whole_word_mask)")
        if self.packing not in ("sentence_pairs", "full_sentences"):
            raise ValueError(f"--packing={self.packing!r} is not one of "
                             f"sentence_pairs, full_sentences")
        if self.packing != "sentence_pairs" and not self.dynamic_masking:
            raise ValueError(
                f"--packing={self.packing} makes sequences from raw text: "
                f"it needs --dynamic_masking")
        if self.pack_sequences and self.max_sequences_per_pack < 1:
            raise ValueError(
                f"--max_sequences_per_pack={self.max_sequences_per_pack} "
                f"must be at least 1")


class PretrainingTask(base.Task):
    """BERT pretraining on Google's pretraining data, by objective.

    `mlm_nsp` (masked LM + next sentence prediction) is Google's; `mlm` and
    `ltr` are the ablations of the BERT paper (see the module docstring).
    """

    name = "pretraining"
    # Packed rows (`sequence_packing`) add two per-token features; the
    # trainer cuts them with the others to a batch's real length.
    sequence_features = base.Task.sequence_features + (
        sequence_packing.POSITION_IDS, sequence_packing.SEQUENCE_IDS)

    def __init__(self, bert_config, data_config, objective=MLM_NSP,
                 init_checkpoint=None):
        """Creates the task.

        Args:
          bert_config: a `bert_tf.config.BertConfig`.
          data_config: a `PretrainingDataConfig`.
          objective: one of `OBJECTIVES` (`--pretraining_objective`).
          init_checkpoint: see `base.Task.init_checkpoint`; its heads are
            loaded when it has them (a released `bert_model.ckpt` has both).

        Raises:
          ValueError: `--max_seq_length` exceeds the model's
            `max_position_embeddings`, or the objective is unknown.
        """
        check_objective(objective)
        bert_config.check_max_seq_length(data_config.max_seq_length)
        if (objective in SENTENCE_PAIR_OBJECTIVES
                and data_config.packing != "sentence_pairs"):
            raise ValueError(
                f"--pretraining_objective={objective} needs sentence pairs; "
                f"--packing={data_config.packing} makes one segment per "
                f"sequence (use mlm, RoBERTa's recipe, or ltr)")
        if data_config.pack_sequences and objective == LTR:
            raise ValueError(
                "--pack_sequences is for the masked-LM objectives (mlm_nsp, "
                "mlm, mlm_sop); --pretraining_objective=ltr reads unpacked "
                "rows")
        self.bert_config = bert_config
        self.data_config = data_config
        self.objective = objective
        self.init_checkpoint = init_checkpoint

    def build_model(self):
        return BertPretrainingModel(self.bert_config, objective=self.objective)

    def build_inputs(self, mode, per_replica_batch_size, input_context=None,
                     pack=True):
        """See `base.Task.build_inputs`; `pack=False` gives the unpacked
        batches even with `pack_sequences` (what packing reads)."""
        # Imported here: the data pipeline is only needed to train/evaluate.
        from bert_tf.pretraining import dataset as pretraining_dataset
        from bert_tf.pretraining import dynamic_masking
        data = self.data_config
        is_training = mode == base.TRAIN
        if data.pack_sequences and pack:
            return self._packed_inputs(is_training, per_replica_batch_size,
                                       input_context)
        if data.dynamic_masking:
            return dynamic_masking.dynamic_masking_dataset(
                data.input_patterns, data.vocab_file, data.do_lower_case,
                per_replica_batch_size, data.max_seq_length,
                data.max_predictions_per_seq, is_training,
                input_context=input_context, seed=data.seed,
                masked_lm_prob=data.masked_lm_prob,
                short_seq_prob=data.short_seq_prob,
                do_whole_word_mask=data.do_whole_word_mask,
                sentence_order=self.objective == MLM_SOP,
                packing=data.packing)
        return pretraining_dataset.pretraining_dataset(
            data.input_patterns, per_replica_batch_size,
            data.max_seq_length, data.max_predictions_per_seq, is_training,
            input_context=input_context, seed=data.seed)

    def _packed_inputs(self, is_training, per_replica_batch_size,
                       input_context):
        """Batches of packed rows (`sequence_packing`) made from the
        sequences the unpacked input gives, in its order; evaluation packs
        those of the first `max_eval_batches` unpacked batches."""
        data = self.data_config
        unpacked = self.build_inputs(
            base.TRAIN if is_training else base.EVAL, per_replica_batch_size,
            input_context, pack=False)
        if not is_training and data.max_eval_batches is not None:
            unpacked = unpacked.take(data.max_eval_batches)
        return sequence_packing.packed_dataset(
            unpacked.unbatch(), per_replica_batch_size, data.max_seq_length,
            data.max_predictions_per_seq, data.max_sequences_per_pack,
            is_training, seed=data.seed)

    def loss_denominators(self, features):
        if self.objective == LTR:
            _, target_weights = next_token_targets(
                features[records.INPUT_IDS], features[records.INPUT_MASK])
            return {"lm_target_count": ops.sum(target_weights)}
        weights = ops.cast(features[records.MASKED_LM_WEIGHTS], "float32")
        if self.objective == MLM:
            return {"masked_lm_weight": ops.sum(weights)}
        return {
            "masked_lm_weight": ops.sum(weights),
            "num_examples": ops.sum(_next_sentence_weights(features)),
        }

    @property
    def metric_names(self):
        if self.objective == LTR:
            return ("lm_loss_sum", "lm_correct", "lm_target_count")
        masked_lm = ("masked_lm_loss_sum", "masked_lm_correct",
                     "masked_lm_weight")
        if self.objective == MLM:
            return masked_lm
        return masked_lm + ("next_sentence_loss_sum", "next_sentence_correct",
                            "next_sentence_count")

    def compute_loss(self, features, outputs, denominators):
        if self.objective == LTR:
            return self._left_to_right_loss(features, outputs, denominators)
        mlm_logits = ops.cast(outputs["masked_lm_logits"], "float32")
        mlm_ids = ops.cast(features[records.MASKED_LM_IDS], "int32")
        mlm_weights = ops.cast(features[records.MASKED_LM_WEIGHTS], "float32")
        mlm_losses = masked_lm_example_losses(mlm_logits, mlm_ids)
        mlm_loss_sum = ops.sum(mlm_weights * mlm_losses)
        mlm_correct = ops.sum(mlm_weights * _is_argmax(mlm_logits, mlm_ids))
        # Google's normalizer, over the global batch.
        mlm_loss = mlm_loss_sum / (denominators["masked_lm_weight"]
                                   + MASKED_LM_DENOMINATOR_EPSILON)
        metrics = {
            "masked_lm_loss_sum": mlm_loss_sum,
            "masked_lm_correct": mlm_correct,
            "masked_lm_weight": ops.sum(mlm_weights),
        }
        if self.objective == MLM:
            # "No NSP": the next-sentence head gets no loss and no update.
            return mlm_loss, metrics

        # [sequences, 2]: one row per sequence, packed or not.
        nsp_logits = ops.reshape(
            ops.cast(outputs["next_sentence_logits"], "float32"), [-1, 2])
        nsp_labels = ops.reshape(
            ops.cast(features[records.NEXT_SENTENCE_LABELS], "int32"), [-1])
        nsp_weights = _next_sentence_weights(features)  # [sequences]
        nsp_losses = next_sentence_example_losses(nsp_logits, nsp_labels)
        nsp_loss_sum = ops.sum(nsp_weights * nsp_losses)
        nsp_correct = ops.sum(nsp_weights * _is_argmax(nsp_logits,
                                                       nsp_labels))

        # Google's normalizer, over the global batch.
        loss = mlm_loss + nsp_loss_sum / ops.maximum(
            denominators["num_examples"], 1.0)
        metrics.update({
            "next_sentence_loss_sum": nsp_loss_sum,
            "next_sentence_correct": nsp_correct,
            "next_sentence_count": ops.sum(nsp_weights),
        })
        return loss, metrics

    def _left_to_right_loss(self, features, outputs, denominators):
        """Next-token cross-entropy, averaged over the global batch's
        targets (`denominators["lm_target_count"]`)."""
        token_ids = original_input_ids(
            features[records.INPUT_IDS],
            features[records.MASKED_LM_POSITIONS],
            features[records.MASKED_LM_IDS],
            features[records.MASKED_LM_WEIGHTS])
        target_ids, target_weights = next_token_targets(
            token_ids, features[records.INPUT_MASK])  # [batch, seq - 1]
        lm_logits = ops.cast(outputs["lm_logits"], "float32")
        lm_losses = left_to_right_example_losses(lm_logits, target_ids)
        lm_loss_sum = ops.sum(target_weights * lm_losses)
        lm_correct = ops.sum(target_weights * _is_argmax(lm_logits,
                                                         target_ids))
        loss = lm_loss_sum / ops.maximum(denominators["lm_target_count"], 1.0)
        return loss, {
            "lm_loss_sum": lm_loss_sum,
            "lm_correct": lm_correct,
            "lm_target_count": ops.sum(target_weights),
        }

    def aggregate_metrics(self, totals):
        """The reported eval metrics of the objective.

        mlm_nsp: Google's (its `metric_fn` in run_pretraining.py):
        `masked_lm_accuracy` and `masked_lm_loss`, weighted by
        `masked_lm_weights`, and the plain means `next_sentence_accuracy`,
        `next_sentence_loss`. mlm: the two masked-LM ones only (its
        next-sentence head is untrained). ltr: `lm_accuracy` and `lm_loss`,
        next-token accuracy and mean cross-entropy over the real targets.
        """
        if self.objective == LTR:
            return {
                "lm_accuracy": base.safe_ratio(
                    totals["lm_correct"], totals["lm_target_count"]),
                "lm_loss": base.safe_ratio(
                    totals["lm_loss_sum"], totals["lm_target_count"]),
            }
        results = {
            "masked_lm_accuracy": base.safe_ratio(
                totals["masked_lm_correct"], totals["masked_lm_weight"]),
            "masked_lm_loss": base.safe_ratio(
                totals["masked_lm_loss_sum"], totals["masked_lm_weight"]),
        }
        if self.objective == MLM:
            return results
        # The pair head's task: next sentence, or ALBERT's sentence order.
        pair = ("sentence_order" if self.objective == MLM_SOP
                else "next_sentence")
        results.update({
            f"{pair}_accuracy": base.safe_ratio(
                totals["next_sentence_correct"],
                totals["next_sentence_count"]),
            f"{pair}_loss": base.safe_ratio(
                totals["next_sentence_loss_sum"],
                totals["next_sentence_count"]),
        })
        return results
