"""Multiple choice's raw-text export: `serving_default` takes `context` (and
`question`) and `choices` and returns run_multiple_choice.py's probabilities
(`bert_tf.export.serving.MultipleChoiceExport`), built from a fine-tuned
checkpoint by export_saved_model.py's flags (`bert_tf.load` of a training
run predicts through the task's Python path, `python_api.predictor`)."""

from bert_tf.export import builders
from bert_tf.export import serving
from bert_tf.text.graph_tokenizer import GraphFullTokenizer
from bert_tf.training import precision


def multiple_choice_export(bert_config, vocab_file, do_lower_case,
                           init_checkpoint, max_seq_length,
                           has_question=False, causal_attention=False,
                           pad_to_multiple_of=None, enable_xla=False,
                           serving_dtype="float32"):
    """A `MultipleChoiceExport` of a fine-tuned run_multiple_choice.py
    checkpoint (encoder and a one-output `output_weights`/`output_bias`).

    Args: as `classifier_export`, and
      has_question: `serving_default` takes a `question` beside the
        context (run_multiple_choice.py's `--input_format=jsonl`).
    """
    from bert_tf.tasks.multiple_choice.task import MultipleChoiceModel
    builders.check_length(max_seq_length, bert_config, pad_to_multiple_of,
                  serving_dtype)
    with precision.serving_dtype_scope(serving_dtype):
        model = MultipleChoiceModel(bert_config,
                                    causal_attention=causal_attention)
    builders.load_strictly(model, init_checkpoint)
    tokenizer = GraphFullTokenizer(vocab_file, do_lower_case)
    return serving.MultipleChoiceExport(model, tokenizer, max_seq_length,
                                        has_question, enable_xla=enable_xla,
                                        **builders.lengths(pad_to_multiple_of))


def export_from_flags(flag_values, common):
    """`export_saved_model.py --task_name=multiple_choice`."""
    return multiple_choice_export(
        has_question=flag_values.input_format == "jsonl", **common)
