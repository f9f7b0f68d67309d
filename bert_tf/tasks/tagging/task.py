"""Token tagging (NER, POS): a label per word, by softmax or a CRF.

The model is `BertModel` + `TokenClassifierHead` over every position:

    logits[t] = dropout(sequence_output[t], 0.1) output_weights^T + output_bias

(`output_weights` [num_labels, hidden], `output_bias` [num_labels], at the
checkpoint's root as Google's classifier names them), read at each word's
first piece (`tagging_features`). Without a CRF each word is classified on
its own: the loss is the mean over words of the cross-entropy, and the
prediction the argmax. With `use_crf`, a linear-chain CRF (`crf/transitions`
[num_labels, num_labels]) scores whole tag sequences over a window's words:
the loss is the mean over windows of -log p(gold tags), and the prediction
the Viterbi path.

Every word counts once, in the window where it has most context
(`label_weights`). Evaluation reports `eval_loss` and the token accuracy
(`eval_accuracy`) from the summed metrics, and entity-level
`eval_precision`, `eval_recall`, `eval_f1` plus `eval_f1_<TYPE>` from all
predictions at once (`tagging_metrics`, as seqeval computes them). A tag set
that is not BIO/BIOES (part-of-speech tags) is scored with each word as a
one-word chunk of its tag, so precision = recall = F1 = accuracy overall and
the per-type F1 is each tag's F1.

Prediction writes `test_predictions.txt` (the predict file, line for line,
with each word's predicted label), `test_predictions.jsonl` (one object per
sentence: words, labels, entities with word offsets) and, when the predict
file has labels, `test_results.txt` with the evaluation's metrics under
`test_` names.
"""

import dataclasses
import json
import os
from typing import Dict, Optional

import keras
from keras import ops
import numpy as np

from bert_tf import file_io
from bert_tf.modeling import save_signature
from bert_tf.modeling import TokenClassifierHead
from bert_tf.modeling.layers import gather_positions
from bert_tf.modeling.layers import tensorflow_or_none
from bert_tf.tasks import base
from bert_tf.tasks import losses
from bert_tf.tasks import sequence_model
from bert_tf.tasks.tagging import examples as tagging_examples
from bert_tf.tasks.tagging import features as features_lib
from bert_tf.tasks.tagging import metrics as tagging_metrics

TEST_PREDICTIONS_FILE = "test_predictions.txt"
TEST_PREDICTIONS_JSONL = "test_predictions.jsonl"
TEST_RESULTS_FILE = "test_results.txt"
_CHUNK_PREFIXES = ("B-", "I-", "E-", "S-")
# The CRF's variable (`LinearChainCRF` under its default name): a
# checkpoint that holds it is of a model with a CRF.
CRF_TRANSITIONS = "crf/transitions"


def is_chunk_scheme(label_list):
    """Whether the labels are BIO/BIOES entity tags (else e.g. POS tags)."""
    return all(label == "O" or label.startswith(_CHUNK_PREFIXES)
               for label in label_list)


def chunk_tags(tags, chunk_scheme):
    """Tags as the metrics read them: unchanged, or each word its own chunk."""
    return list(tags) if chunk_scheme else [f"S-{tag}" for tag in tags]


def sentence_entities(words, labels, chunk_scheme):
    """The entities of one tagged sentence, as test_predictions.jsonl lists
    them: [{"type", "start", "end" (word offsets, end excluded), "text"
    (the words joined by spaces)}]; with POS-like labels (`chunk_scheme`
    False) each word is its own entity."""
    return [{"type": entity_type, "start": first, "end": last + 1,
             "text": " ".join(words[first:last + 1])}
            for entity_type, first, last in tagging_metrics.get_entities(
                chunk_tags(labels, chunk_scheme))]


def _argmax(logits):
    """int32 [batch, seq]: the highest logit's label of each word slot."""
    tf = tensorflow_or_none()
    if tf is not None:
        # `keras.ops.argmax` adds ops (for negative zeros) that TensorFlow
        # Lite has no built-in for; the tagging export's `serving_ids`
        # converts with `tf.argmax`.
        return tf.argmax(logits, axis=-1, output_type=tf.int32)
    return ops.cast(ops.argmax(logits, axis=-1), "int32")


@keras.saving.register_keras_serializable(package="bert_tf")
class TaggingModel(sequence_model.SequenceOutputModel):
    """`BertModel` (+ `BiLSTM`) + `TokenClassifierHead` (+ `LinearChainCRF`).

    Called on a tagging feature dict; returns, per window and word slot
    (`word_positions`): `logits` float32 [batch, seq, num_labels],
    `predicted_ids` int32 [batch, seq] (argmax, or the Viterbi path), and
    with a CRF, when the features have `label_ids`, `log_likelihood`
    float32 [batch] of them. With a BiLSTM (variables `bilstm/fw/...`,
    `bilstm/bw/...`, as `run_squad.py --span_bilstm`'s; see
    `bert_tf.modeling.bilstm`) the classifier reads its [batch, seq,
    2 * units] states instead of the encoder's output.

    Keras-native: `.keras` files round-trip, and `tf.saved_model.save`
    exports int32 `input_ids`, `input_mask`, `segment_ids`,
    `word_positions`, `word_mask` [batch, seq] -> `logits`,
    `predicted_ids`.
    """

    def __init__(self, bert_config, num_labels, use_crf=False,
                 causal_attention=False, bilstm_units=None,
                 name="bert_tagging_model", **kwargs):
        """Args:
          bert_config: a `BertConfig`.
          num_labels: number of tags.
          use_crf: a `LinearChainCRF` over each window's words.
          causal_attention: the encoder attends left to right only (see
            `BertModel`).
          bilstm_units: None, or the state size of each direction of a
            randomly initialized `BiLSTM` between the encoder and the
            classifier (the paper's "+ BiLSTM": right context for a
            left-to-right encoder).
          name: Keras model name (not part of any variable's path).
          **kwargs: Keras model arguments.
        """
        super().__init__(bert_config, causal_attention, bilstm_units,
                         name=name, **kwargs)
        from bert_tf.modeling.crf import LinearChainCRF
        self.num_labels = num_labels
        self.use_crf = use_crf
        self.classifier = TokenClassifierHead(
            bert_config, num_labels, input_size=self.head_input_size)
        self.crf = LinearChainCRF(num_labels) if use_crf else None
        # Create every variable now (the optimizer and restore need them).
        dummy = np.zeros([1, 2], np.int32)
        self({name: dummy for name in features_lib.SEQUENCE_FEATURES})

    def call(self, features, training=False):
        token_logits = self.classifier(
            self.sequence_output(features, training), training=training)
        # The logits of each word's first piece, in word order:
        # [batch, seq, num_labels] read at word_positions [batch, seq].
        logits = gather_positions(
            token_logits,
            ops.cast(features[features_lib.WORD_POSITIONS], "int32"))
        outputs = {"logits": logits}
        if self.crf is None:
            outputs["predicted_ids"] = _argmax(logits)
            return outputs
        word_mask = features[features_lib.WORD_MASK]
        if features_lib.LABEL_IDS in features:
            outputs["log_likelihood"] = self.crf(
                logits, features[features_lib.LABEL_IDS], word_mask)
        outputs["predicted_ids"] = self.crf.decode(logits, word_mask)
        return outputs

    saved_output_names = ("logits", "predicted_ids")

    def task_config(self):
        return {"num_labels": self.num_labels, "use_crf": self.use_crf,
                **super().task_config()}

    def saved_input_specs(self):
        """int32 [batch, seq]: the encoder's inputs and the words' first
        pieces."""
        return save_signature.int_feature_specs(
            save_signature.ENCODER_INPUTS
            + (features_lib.WORD_POSITIONS, features_lib.WORD_MASK))


@dataclasses.dataclass
class TaggingSet:
    """One set: the file as read and its windows' feature arrays."""
    tagging_file: tagging_examples.TaggingFile
    arrays: Dict[str, np.ndarray]

    @property
    def num_windows(self):
        return len(self.arrays[features_lib.INPUT_IDS])


def make_tagging_set(tagging_file, label_list, window_config, tokenizer):
    """Reads nothing: converts a read file into a `TaggingSet`, its windows
    cut as `window_config` (a `features.TaggingWindowConfig`) says.

    Raises:
      TaggingDataError: a label not in `label_list` (file and line named).
    """
    tagging_examples.check_labels(tagging_file, label_list)
    windows = features_lib.convert_sentences(
        tagging_file.sentences, label_list, window_config, tokenizer)
    return TaggingSet(tagging_file, features_lib.windows_to_arrays(
        windows, window_config.max_seq_length))


@dataclasses.dataclass(frozen=True)
class TaggingDataConfig:
    """The sets of a tagging task (each None when that phase does not run).

    Attributes:
      train_set, eval_set, predict_set: `TaggingSet`s.
      max_seq_length: window length.
      seed: training shuffle seed; None for a different order every run.
      pad_to_full_batches: evaluation batches all full (TPUs): the windows
        are padded with all-zero windows, whose words have weight 0 (see
        `base.InMemoryArraysTask`).
    """
    train_set: Optional[TaggingSet] = None
    eval_set: Optional[TaggingSet] = None
    predict_set: Optional[TaggingSet] = None
    max_seq_length: int = 128
    seed: Optional[int] = None
    pad_to_full_batches: bool = False


class TaggingTask(base.InMemoryArraysTask):
    """Per-word tagging with a softmax or a CRF; see the module docstring."""

    name = "tagging"
    # The word-slot features are cut with the pieces: a window has fewer
    # words than real pieces. Its per-slot outputs are padded back.
    sequence_features = features_lib.SEQUENCE_FEATURES
    sequence_outputs = ("logits", "predicted_ids",
                        features_lib.LABEL_WEIGHTS)

    def __init__(self, bert_config, label_list, data_config, use_crf=False,
                 init_checkpoint=None, causal_attention=False,
                 bilstm_units=None):
        """Args:
          bert_config: a `BertConfig`.
          label_list: the labels; ids are indexes into it.
          data_config: a `TaggingDataConfig`.
          use_crf: a CRF over each window's words.
          init_checkpoint: see `base.Task.init_checkpoint`.
          causal_attention: fine-tune the encoder left to right only (see
            `BertModel`).
          bilstm_units: None, or the per-direction size of a BiLSTM
            between the encoder and the classifier (see `TaggingModel`).

        Raises:
          ValueError: `max_seq_length` exceeds `max_position_embeddings`, or
            no label.
        """
        bert_config.check_max_seq_length(data_config.max_seq_length)
        if not label_list:
            raise ValueError("tagging needs at least one label")
        self.bert_config = bert_config
        self.label_list = list(label_list)
        self.data_config = data_config
        self.use_crf = use_crf
        self.init_checkpoint = init_checkpoint
        self.causal_attention = causal_attention
        self.bilstm_units = bilstm_units
        self.chunk_scheme = is_chunk_scheme(self.label_list)

    def build_model(self):
        return TaggingModel(self.bert_config, len(self.label_list),
                            self.use_crf,
                            causal_attention=self.causal_attention,
                            bilstm_units=self.bilstm_units)

    def _set(self, mode):
        data = self.data_config
        tagging_set = {base.TRAIN: data.train_set, base.EVAL: data.eval_set,
                       base.PREDICT: data.predict_set}[mode]
        if tagging_set is None:
            raise ValueError(f"the tagging task has no {mode} data")
        return tagging_set

    def _arrays(self, mode):
        # Batched by `base.InMemoryArraysTask`: training shuffles all
        # windows, not a window of neighbouring sentences of one document.
        return self._set(mode).arrays

    # -- loss and summed metrics ----------------------------------------------

    def loss_denominators(self, features):
        if self.use_crf:
            return {"num_sequences": ops.sum(ops.cast(
                features[features_lib.WORD_MASK][:, 0], "float32"))}
        return {"num_words": ops.sum(ops.cast(
            features[features_lib.LABEL_WEIGHTS], "float32"))}

    @property
    def metric_names(self):
        return ("loss_sum", "loss_count", "correct", "num_words")

    def compute_loss(self, features, outputs, denominators):
        weights = ops.cast(features[features_lib.LABEL_WEIGHTS], "float32")
        labels = ops.cast(features[features_lib.LABEL_IDS], "int32")
        if self.use_crf:
            has_words = ops.cast(features[features_lib.WORD_MASK][:, 0],
                                 "float32")
            loss_sum = -ops.sum(has_words * outputs["log_likelihood"])
            loss_count = ops.sum(has_words)
            denominator = denominators["num_sequences"]
        else:
            word_losses = losses.cross_entropy(outputs["logits"], labels)
            loss_sum = ops.sum(weights * word_losses)
            loss_count = ops.sum(weights)
            denominator = denominators["num_words"]
        correct = ops.sum(weights * ops.cast(
            ops.equal(ops.cast(outputs["predicted_ids"], "int32"), labels),
            "float32"))
        loss = loss_sum / ops.maximum(denominator, 1.0)
        return loss, {"loss_sum": loss_sum, "loss_count": loss_count,
                      "correct": correct, "num_words": ops.sum(weights)}

    def aggregate_metrics(self, totals):
        """`eval_loss` (per word, or per window with a CRF), token accuracy."""
        return {"eval_loss": base.safe_ratio(totals["loss_sum"],
                                             totals["loss_count"]),
                "eval_accuracy": base.safe_ratio(totals["correct"],
                                                 totals["num_words"])}

    # -- prediction -------------------------------------------------------------

    def prediction_outputs(self, features, outputs, mode):
        """Each window's predicted ids and where they belong."""
        del mode  # Evaluation and prediction keep the same.
        return {
            "predicted_ids": outputs["predicted_ids"],
            features_lib.LABEL_WEIGHTS: features[features_lib.LABEL_WEIGHTS],
            features_lib.SENTENCE_INDEX: features[
                features_lib.SENTENCE_INDEX],
            features_lib.FIRST_WORD: features[features_lib.FIRST_WORD],
        }

    def aggregate_predictions(self, state, outputs, mode):
        """Puts each owned word's predicted id in its sentence.

        The state is a list (one per sentence) of int arrays, -1 where no
        prediction came yet. Batches may come in any order.
        """
        if state is None:
            state = [np.full([len(sentence.words)], -1, np.int64)
                     for sentence in self._set(mode).tagging_file.sentences]
        for row in range(len(outputs["predicted_ids"])):
            sentence = state[outputs[features_lib.SENTENCE_INDEX][row]]
            first_word = outputs[features_lib.FIRST_WORD][row]
            for slot in np.flatnonzero(
                    outputs[features_lib.LABEL_WEIGHTS][row]):
                sentence[first_word + slot] = outputs["predicted_ids"][row][
                    slot]
        return state

    def predicted_labels(self, state, mode):
        """Each sentence's predicted labels (lists of strings).

        Raises:
          RuntimeError: a word got no prediction.
        """
        if state is None:
            raise RuntimeError(f"no {mode} prediction came back")
        for index, ids in enumerate(state):
            if (ids < 0).any():
                raise RuntimeError(
                    f"{mode}: sentence {index} has words without a "
                    "prediction")
        return [[self.label_list[i] for i in ids] for ids in state]

    def set_metrics(self, state, mode, prefix):
        """Entity-level and token-level metrics of a labelled set."""
        tagging_file = self._set(mode).tagging_file
        gold = [chunk_tags(sentence.labels, self.chunk_scheme)
                for sentence in tagging_file.sentences]
        predicted = [chunk_tags(labels, self.chunk_scheme)
                     for labels in self.predicted_labels(state, mode)]
        return tagging_metrics.tagging_metrics(gold, predicted, prefix)

    def reduce_predictions(self, state, mode):
        """Evaluation: seqeval's entity scores and the token accuracy.

        Prediction reports nothing here (its metrics, when the predict file
        has labels, go to `test_results.txt`, not `eval_results.txt`).
        """
        if mode != base.EVAL:
            return {}
        return {key: np.float32(value) for key, value in
                self.set_metrics(state, mode, "eval_").items()}

    def sentence_records(self, state, mode):
        """`test_predictions.jsonl`'s objects, one per sentence."""
        tagging_file = self._set(mode).tagging_file
        records = []
        for sentence, labels in zip(tagging_file.sentences,
                                    self.predicted_labels(state, mode)):
            records.append({"line": sentence.line_numbers[0],
                            "words": sentence.words, "labels": labels,
                            "entities": sentence_entities(
                                sentence.words, labels, self.chunk_scheme)})
        return records

    def write_predictions(self, state, output_dir, mode):
        """`test_predictions.txt`, `.jsonl` and (labelled) `test_results.txt`."""
        if mode != base.PREDICT:
            return []
        tagging_file = self._set(mode).tagging_file
        paths = []
        lines = tagging_examples.predicted_file_lines(
            tagging_file, self.predicted_labels(state, mode))
        path = os.path.join(output_dir, TEST_PREDICTIONS_FILE)
        with file_io.atomic_write(path) as writer:
            writer.write("".join(f"{line}\n" for line in lines))
        paths.append(path)
        path = os.path.join(output_dir, TEST_PREDICTIONS_JSONL)
        with file_io.atomic_write(path) as writer:
            for record in self.sentence_records(state, mode):
                writer.write(json.dumps(record, ensure_ascii=False) + "\n")
        paths.append(path)
        if tagging_file.has_labels:
            metrics = self.set_metrics(state, mode, "test_")
            path = os.path.join(output_dir, TEST_RESULTS_FILE)
            with file_io.atomic_write(path) as writer:
                writer.write("".join(
                    f"{key} = {str(np.float32(metrics[key]))}\n"
                    for key in sorted(metrics)))
            paths.append(path)
        return paths
