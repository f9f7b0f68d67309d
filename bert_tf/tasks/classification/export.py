"""Classification's raw-text export: `serving_default` takes `text_a` (and
`text_b`) and returns run_classifier.py's `test_results.tsv` numbers
(`bert_tf.export.serving.ClassifierExport`), built from a fine-tuned
checkpoint by export_saved_model.py's flags (`bert_tf.load` of a training
run predicts through the task's Python path, `python_api.predictor`)."""

from bert_tf.export import builders
from bert_tf.export import serving
from bert_tf.text.graph_tokenizer import GraphFullTokenizer
from bert_tf.training import precision

GENERIC = "generic"


def classifier_export(bert_config, vocab_file, do_lower_case,
                      init_checkpoint, max_seq_length, label_list,
                      is_regression=False, has_text_b=False,
                      causal_attention=False, multi_label=False,
                      threshold=0.5, pad_to_multiple_of=None,
                      enable_xla=False, serving_dtype="float32"):
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
      causal_attention: the model was fine-tuned with `--causal_attention`
        (left-to-right encoder; the checkpoint's weights do not say so).
      multi_label: a `run_classifier.py --multi_label` model (a sigmoid per
        label; one label is enough).
      threshold: its `--threshold`.
      pad_to_multiple_of: `serving_default` packs a request to its longest
        text rounded up to a multiple of this (None: 8, see
        `serving._TextExport`); `max_seq_length` packs to the full length,
        as Google's fixed-length inputs.
      enable_xla: the model call of both signatures is one XLA-compiled
        function (`serving._TextExport`).
      serving_dtype: `float32`, or `bfloat16` (variables stored and matmuls
        computed in bfloat16; see the module's docstring).

    Raises:
      ValueError: bad lengths or labels.
      CheckpointError: the checkpoint lacks a variable or has another
        shape (e.g. another number of labels).
    """
    from bert_tf.tasks.classification.task import ClassificationModel
    builders.check_length(max_seq_length, bert_config, pad_to_multiple_of,
                  serving_dtype)
    num_labels = 1 if is_regression else len(label_list)
    if not is_regression and num_labels < (1 if multi_label else 2):
        raise ValueError(
            f"classification needs at least 2 labels, got {label_list}")
    with precision.serving_dtype_scope(serving_dtype):
        model = ClassificationModel(bert_config, num_labels,
                                    causal_attention=causal_attention)
    builders.load_strictly(model, init_checkpoint)
    tokenizer = GraphFullTokenizer(vocab_file, do_lower_case)
    return serving.ClassifierExport(model, tokenizer, max_seq_length,
                                    label_list, is_regression, has_text_b,
                                    multi_label=multi_label,
                                    threshold=threshold,
                                    enable_xla=enable_xla,
                                    **builders.lengths(pad_to_multiple_of))


def export_from_flags(flag_values, common):
    """`export_saved_model.py --task_name=<a run_classifier.py task>`."""
    task_name = flag_values.task_name.lower()
    multi_label = _multi_label_head(flag_values, task_name)
    if multi_label is None:
        label_list, is_regression, has_text_b = _classification_labels(
            flag_values, task_name)
        return classifier_export(
            label_list=_run_label_names(flag_values, label_list),
            is_regression=is_regression, has_text_b=has_text_b, **common)
    label_list, threshold = multi_label
    return classifier_export(
        label_list=label_list, has_text_b=bool(flag_values.text_b_column),
        multi_label=True, threshold=threshold, **common)


def _run_label_names(flag_values, label_list):
    """The names the export answers with for `label_list`: those of the
    training run beside `--init_checkpoint` (its `bert_tf_run.json`'s
    `label_names`: SST-2's `negative`, `positive` for its "0", "1"), as
    `bert_tf.load` of that run answers, where the run trained these
    labels; else the labels themselves.

    Args:
      flag_values: the parsed flags (`--init_checkpoint`).
      label_list: the export's labels in label-id order, or None
        (regression).

    Returns:
      The label strings the export serves, in label-id order.

    Raises:
      ValueError: the run's description is not one (naming the file).
    """
    import os

    from bert_tf import checkpoints
    from bert_tf import finetuning
    if label_list is None:
        return None
    directory = os.path.dirname(
        checkpoints.resolve_checkpoint(flag_values.init_checkpoint))
    try:
        description = finetuning.read_run_description(directory)
    except FileNotFoundError:
        return label_list
    names = description.get("label_names")
    if (description["task"] != finetuning.CLASSIFICATION
            or description.get("label_list") != list(label_list)
            or not isinstance(names, list)
            or len(names) != len(label_list)):
        return label_list
    return [str(name) for name in names]


def _classification_labels(flag_values, task_name):
    """(label_list, is_regression, has_text_b) of a run_classifier task."""
    from bert_tf.tasks.classification.glue_processors import create_processor
    processor = create_processor(
        task_name, label_column=flag_values.label_column,
        text_b_column=flag_values.text_b_column,
        file_format=flag_values.data_format)
    has_text_b = processor.has_text_b
    if processor.is_regression:
        return None, True, has_text_b
    if flag_values.label_list:
        return list(flag_values.label_list), False, has_text_b
    if task_name == GENERIC and not flag_values.data_dir:
        raise ValueError(
            "--task_name=generic needs --label_list (the labels in label-id "
            "order: run_classifier.py sorts them) or --data_dir")
    return processor.get_labels(flag_values.data_dir), False, has_text_b


def _multi_label_head(flag_values, task_name):
    """None for a single-label classifier, else `(label_list, threshold)`.

    A `run_classifier.py --multi_label` run records itself beside its
    checkpoints (`bert_tf_run.json`, read by
    `finetuning.read_multi_label_head`): its weights look like a softmax
    classifier's, whose probabilities would not be the runner's. That
    record makes the export multi-label; `--multi_label=false` against it
    is refused. Without the record (`--multi_label` given), the labels come
    from `--label_list` or `--data_dir`/`--label_column`, as the runner
    reads them, the threshold from `--threshold`.

    Raises:
      ValueError: the flags contradict the record, or name no labels.
    """
    import os

    from bert_tf import checkpoints
    from bert_tf import finetuning
    from bert_tf.tasks.classification import multi_label_data
    record = finetuning.read_multi_label_head(os.path.dirname(
        checkpoints.resolve_checkpoint(flag_values.init_checkpoint)))
    asked = flag_values["multi_label"]
    if record is not None and asked.present and not asked.value:
        raise ValueError(
            f"--init_checkpoint={flag_values.init_checkpoint} was trained "
            f"with --multi_label ({os.path.basename(record['path'])} "
            "beside it); a single-label export would serve other "
            "probabilities: leave out --multi_label=false")
    if record is None and not asked.value:
        return None
    if task_name != GENERIC:
        raise ValueError("--multi_label needs --task_name=generic, as in "
                         f"run_classifier.py, not {task_name}")
    threshold = (flag_values.threshold
                 if flag_values["threshold"].present or record is None
                 else record["threshold"])
    if flag_values.label_list:
        labels = list(flag_values.label_list)
    elif record is not None:
        labels = record["label_list"]
    else:
        processor = multi_label_data.MultiLabelProcessor(
            label_column=flag_values.label_column,
            label_delimiter=flag_values.label_delimiter,
            file_format=flag_values.data_format)
        if processor.one_column and not flag_values.data_dir:
            raise ValueError(
                "--multi_label with one --label_column needs --label_list "
                "(the labels in label-id order: run_classifier.py sorts "
                "them) or --data_dir")
        labels = processor.get_labels(flag_values.data_dir)
    if record is not None and labels != record["label_list"]:
        raise ValueError(
            f"--label_list {','.join(labels)} is not the training run's "
            f"labels {','.join(record['label_list'])} "
            f"({record['path']})")
    return labels, threshold
