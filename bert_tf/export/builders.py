"""Export modules from a Google-format checkpoint: model + tokenizer + task.

Each builder creates the task model, loads every one of its variables from
the checkpoint (strictly: a fine-tuned checkpoint must hold the task's head
under Google's names, e.g. `output_weights`/`output_bias` or
`cls/squad/...`), and wraps it with the in-graph tokenizer.
"""

from bert_tf import checkpoints
from bert_tf.export import serving
from bert_tf.text.graph_tokenizer import GraphFullTokenizer


def _check_length(max_seq_length, bert_config):
    bert_config.check_max_seq_length(max_seq_length)
    if max_seq_length < 3:
        raise ValueError(
            f"--max_seq_length={max_seq_length} cannot hold [CLS] and two "
            "[SEP]")


def _load(model, init_checkpoint):
    checkpoints.load_checkpoint(model, init_checkpoint, strict=True)
    return model


def classifier_export(bert_config, vocab_file, do_lower_case,
                      init_checkpoint, max_seq_length, label_list,
                      is_regression=False, has_text_b=False):
    """A `ClassifierExport` of a fine-tuned run_classifier.py checkpoint.

    Args:
      bert_config: the `BertConfig`.
      vocab_file: the model's vocab.txt.
      do_lower_case: the tokenizer's casing.
      init_checkpoint: the fine-tuned checkpoint (encoder and
        `output_weights`/`output_bias`).
      max_seq_length: as in training.
      label_list: label strings in label-id order (None for regression).
      is_regression: a one-output regression model (STS-B).
      has_text_b: the task classifies text pairs.

    Raises:
      ValueError: bad lengths or labels.
      CheckpointError: the checkpoint lacks a variable or has another
        shape (e.g. another number of labels).
    """
    from bert_tf.tasks.classification import ClassificationModel
    _check_length(max_seq_length, bert_config)
    num_labels = 1 if is_regression else len(label_list)
    if not is_regression and num_labels < 2:
        raise ValueError(
            f"classification needs at least 2 labels, got {label_list}")
    model = _load(ClassificationModel(bert_config, num_labels),
                  init_checkpoint)
    tokenizer = GraphFullTokenizer(vocab_file, do_lower_case)
    return serving.ClassifierExport(model, tokenizer, max_seq_length,
                                    label_list, is_regression, has_text_b)


def squad_export(bert_config, vocab_file, do_lower_case, init_checkpoint,
                 max_seq_length, doc_stride, max_query_length, n_best_size,
                 max_answer_length, version_2_with_negative=False,
                 null_score_diff_threshold=0.0):
    """A `SquadExport` of a fine-tuned run_squad.py checkpoint.

    Args: as `classifier_export`, and run_squad.py's flags.

    Raises:
      ValueError: lengths that cannot work.
      CheckpointError: the checkpoint lacks `cls/squad/...` or a variable.
    """
    from bert_tf.tasks.squad import SquadModel
    _check_length(max_seq_length, bert_config)
    tokenizer = GraphFullTokenizer(vocab_file, do_lower_case)
    model = SquadModel(bert_config)
    export = serving.SquadExport(
        model, tokenizer, max_seq_length, doc_stride, max_query_length,
        n_best_size, max_answer_length, version_2_with_negative,
        null_score_diff_threshold)
    _load(model, init_checkpoint)
    return export


def embedding_export(bert_config, vocab_file, do_lower_case, init_checkpoint,
                     max_seq_length):
    """An `EmbeddingExport` of any checkpoint's encoder (`bert/...`)."""
    from bert_tf.modeling import BertModel
    _check_length(max_seq_length, bert_config)
    model = BertModel(bert_config)
    model.build()
    _load(model, init_checkpoint)
    tokenizer = GraphFullTokenizer(vocab_file, do_lower_case)
    return serving.EmbeddingExport(model, tokenizer, max_seq_length)
