"""SQuAD's raw-text export: `serving_default` takes `question` and `context`
and returns run_squad.py's answers and n-best lists, windows and answer
selection in the graph (`graph_answers`;
`bert_tf.export.serving.SquadExport`), built from a fine-tuned checkpoint by
export_saved_model.py's flags (`bert_tf.load` of a training run predicts
through the task's Python path, `python_api.predictor`)."""

from bert_tf import checkpoints
from bert_tf.export import builders
from bert_tf.export import serving
from bert_tf.tasks import sequence_model
from bert_tf.text.graph_tokenizer import GraphFullTokenizer
from bert_tf.training import precision


def squad_export(bert_config, vocab_file, do_lower_case, init_checkpoint,
                 max_seq_length, doc_stride, max_query_length, n_best_size,
                 max_answer_length, version_2_with_negative=False,
                 null_score_diff_threshold=0.0, causal_attention=False,
                 pad_to_multiple_of=None, enable_xla=False,
                 serving_dtype="float32"):
    """A `SquadExport` of a fine-tuned run_squad.py checkpoint.

    A checkpoint of `run_squad.py --span_bilstm` (it holds
    `bilstm/fw/lstm_cell/...`) gets its BiLSTM, with the units its
    variables have.

    Args: as `classifier_export` (but `pad_to_multiple_of` None is
      `max_seq_length`, as run_squad.py's default: Google's n-best lists
      rank the padding's logits too), and run_squad.py's flags.

    Raises:
      ValueError: lengths that cannot work.
      CheckpointError: the checkpoint lacks `cls/squad/...` or a variable.
    """
    from bert_tf.tasks.squad.postprocess import SquadPostprocessConfig
    from bert_tf.tasks.squad.task import SquadModel
    builders.check_length(max_seq_length, bert_config, pad_to_multiple_of,
                          serving_dtype)
    tokenizer = GraphFullTokenizer(vocab_file, do_lower_case)
    with precision.serving_dtype_scope(serving_dtype):
        model = SquadModel(
            bert_config, causal_attention=causal_attention,
            bilstm_units=sequence_model.bilstm_units_of(
                checkpoints.checkpoint_shapes(init_checkpoint)))
    config = SquadPostprocessConfig(
        doc_stride=doc_stride, max_query_length=max_query_length,
        n_best_size=n_best_size, max_answer_length=max_answer_length,
        version_2_with_negative=version_2_with_negative,
        null_score_diff_threshold=null_score_diff_threshold)
    export = serving.SquadExport(
        model, tokenizer, max_seq_length, config,
        pad_to_multiple_of=pad_to_multiple_of, enable_xla=enable_xla)
    builders.load_strictly(model, init_checkpoint)
    return export


# The run description's fields (and export_saved_model.py's flags) of the
# windows and the answer selection.
POSTPROCESS_FIELDS = ("doc_stride", "max_query_length", "n_best_size",
                      "max_answer_length", "version_2_with_negative",
                      "null_score_diff_threshold")
# export_saved_model.py's --doc_stride default: run_squad.py's.
DEFAULT_DOC_STRIDE = 128


def export_from_flags(flag_values, common):
    """`export_saved_model.py --task_name=squad`."""
    settings = {name: flag_values[name].value for name in POSTPROCESS_FIELDS}
    if settings["doc_stride"] is None:
        settings["doc_stride"] = DEFAULT_DOC_STRIDE
    return squad_export(**settings, **common)
