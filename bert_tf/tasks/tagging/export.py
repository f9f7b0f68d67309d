"""Tagging's raw-text export: `serving_default` takes `text` (words separated
by whitespace) and returns run_tagging.py's labels, words and windows in the
graph (`graph_windows`; `bert_tf.export.serving.TaggingExport`), built from
a fine-tuned checkpoint by export_saved_model.py's flags (`bert_tf.load` of
a training run predicts through the task's Python path,
`python_api.predictor`)."""

from bert_tf import checkpoints
from bert_tf.export import builders
from bert_tf.export import serving
from bert_tf.tasks import sequence_model
from bert_tf.text.graph_tokenizer import GraphFullTokenizer
from bert_tf.training import precision


def tagging_export(bert_config, vocab_file, do_lower_case, init_checkpoint,
                   max_seq_length, doc_stride, label_list, use_crf=None,
                   causal_attention=False, pad_to_multiple_of=None,
                   enable_xla=False, serving_dtype="float32"):
    """A `TaggingExport` of a fine-tuned run_tagging.py checkpoint.

    Args: as `classifier_export`, and
      doc_stride: run_tagging.py's `--doc_stride`.
      label_list: the training run's labels (its `label_list.txt`).
      use_crf: whether the model has a CRF; None: whether the checkpoint
        holds `crf/transitions`.

    A checkpoint of `run_tagging.py --tagging_bilstm` (it holds
    `bilstm/fw/lstm_cell/...`) gets its BiLSTM, with the units its
    variables have.

    Raises:
      ValueError: bad lengths, no label, or `use_crf` contradicting the
        checkpoint.
      CheckpointError: the checkpoint lacks a variable or has another
        shape (e.g. another number of labels).
    """
    from bert_tf.tasks.tagging.features import TaggingWindowConfig
    from bert_tf.tasks.tagging.task import CRF_TRANSITIONS
    from bert_tf.tasks.tagging.task import TaggingModel
    builders.check_length(max_seq_length, bert_config, pad_to_multiple_of,
                          serving_dtype)
    if not label_list:
        raise ValueError("tagging needs at least one label")
    shapes = checkpoints.checkpoint_shapes(init_checkpoint)
    has_crf = CRF_TRANSITIONS in shapes
    if use_crf is not None and use_crf != has_crf:
        raise ValueError(
            f"--use_crf={str(use_crf).lower()}, but the checkpoint "
            f"{init_checkpoint} {'has' if has_crf else 'has no'} "
            f"{CRF_TRANSITIONS}")
    tokenizer = GraphFullTokenizer(vocab_file, do_lower_case)
    with precision.serving_dtype_scope(serving_dtype):
        model = TaggingModel(
            bert_config, len(label_list), use_crf=has_crf,
            causal_attention=causal_attention,
            bilstm_units=sequence_model.bilstm_units_of(shapes))
    export = serving.TaggingExport(
        model, tokenizer,
        TaggingWindowConfig(max_seq_length=max_seq_length,
                            doc_stride=doc_stride),
        label_list, enable_xla=enable_xla,
        **builders.lengths(pad_to_multiple_of))
    builders.load_strictly(model, init_checkpoint)
    return export


# export_saved_model.py's --doc_stride default: run_tagging.py's.
DEFAULT_DOC_STRIDE = 64


def export_from_flags(flag_values, common):
    """`export_saved_model.py --task_name=tagging`."""
    doc_stride = flag_values.doc_stride
    return tagging_export(
        doc_stride=DEFAULT_DOC_STRIDE if doc_stride is None else doc_stride,
        label_list=_tagging_labels(flag_values), use_crf=flag_values.use_crf,
        **common)


def _tagging_labels(flag_values):
    """--label_list, or run_tagging.py's label_list.txt beside the
    checkpoint."""
    import os

    from bert_tf.tasks.tagging import examples as tagging_examples
    if flag_values.label_list:
        return list(flag_values.label_list)
    checkpoint = flag_values.init_checkpoint
    directory = (checkpoint if os.path.isdir(checkpoint)
                 else os.path.dirname(checkpoint))
    return tagging_examples.read_label_list(
        os.path.join(directory, tagging_examples.LABEL_LIST_FILE))
