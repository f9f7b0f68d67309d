"""Pair regression's raw-text export: `serving_default` takes `sentence1`
and `sentence2` and returns the model's `score`; `serving_ids` takes the
packed ids. Built from a fine-tuned checkpoint by export_saved_model.py's
flags."""

import tensorflow as tf

from bert_tf.export import builders
from bert_tf.export import serving
from bert_tf.text.graph_tokenizer import GraphFullTokenizer
from bert_tf.training import precision


class PairRegressionExport(serving.TextExport):
    """`[CLS] sentence1 [SEP] sentence2 [SEP]` packed in the graph (the
    in-graph tokenizer gives the Python tokenizer's ids), then the model."""

    def __init__(self, model, tokenizer, max_seq_length, **options):
        """Args:
          model: a `PairRegressionModel` with its weights.
          tokenizer: a `GraphFullTokenizer` of its vocabulary.
          max_seq_length: the run's `--max_seq_length`.
          **options: `pad_to_multiple_of`, `enable_xla` (see
            `serving.TextExport`).
        """
        super().__init__(model, tokenizer, max_seq_length,
                         name="pair_regression_export", **options)

    def serve_ids(self, input_ids, input_mask, segment_ids):
        outputs = self._run_model({serving.INPUT_IDS: input_ids,
                                   serving.INPUT_MASK: input_mask,
                                   serving.SEGMENT_IDS: segment_ids})
        return {"score": tf.cast(outputs["score"], tf.float32)}

    def serve_text(self, sentence1, sentence2):
        features = self._pack(sentence1, sentence2)
        return self.serve_ids(features[serving.INPUT_IDS],
                              features[serving.INPUT_MASK],
                              features[serving.SEGMENT_IDS])

    def text_signature(self):
        return self.serve_text, [
            tf.TensorSpec([None], tf.string, name="sentence1"),
            tf.TensorSpec([None], tf.string, name="sentence2")]


def pair_regression_export(bert_config, vocab_file, do_lower_case,
                           init_checkpoint, max_seq_length,
                           causal_attention=False, pad_to_multiple_of=None,
                           enable_xla=False, serving_dtype="float32"):
    """A `PairRegressionExport` of a fine-tuned checkpoint (encoder and the
    one-output `output_weights`/`output_bias`, loaded strictly).

    Args: the keywords every task's builder takes (`common` of
      `export_from_flags`).
    """
    from .task import PairRegressionModel
    builders.check_length(max_seq_length, bert_config, pad_to_multiple_of,
                          serving_dtype)
    with precision.serving_dtype_scope(serving_dtype):
        model = PairRegressionModel(bert_config,
                                    causal_attention=causal_attention)
    builders.load_strictly(model, init_checkpoint)
    tokenizer = GraphFullTokenizer(vocab_file, do_lower_case)
    return PairRegressionExport(model, tokenizer, max_seq_length,
                                enable_xla=enable_xla,
                                **builders.lengths(pad_to_multiple_of))


def export_from_flags(flag_values, common):
    """`export_saved_model.py --task_name=pair_regression`."""
    del flag_values
    return pair_regression_export(**common)
