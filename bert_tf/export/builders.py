"""Export modules from a Google-format checkpoint: model + tokenizer + task.

Each builder creates the task model, loads every one of its variables from
the checkpoint (strictly: a fine-tuned checkpoint must hold the task's head
under Google's names, e.g. `output_weights`/`output_bias` or
`cls/squad/...`), and wraps it with the in-graph tokenizer.

`serving_dtype` (`export_saved_model.py --serving_dtype`): `float32`, or
`bfloat16`: the model is built under Keras' bfloat16 policy, so its
variables are stored in bfloat16 (converted from the float32 checkpoint as
it loads) and its matmuls compute in bfloat16; LayerNorm, softmax, the
logits and every output stay float32.
"""

from bert_tf import checkpoints
from bert_tf import sequence_lengths
from bert_tf.export import serving
from bert_tf.text.graph_tokenizer import GraphFullTokenizer
from bert_tf.training import precision


def _check_length(max_seq_length, bert_config, pad_to_multiple_of=None,
                  serving_dtype="float32"):
    precision.validate_serving_dtype(serving_dtype)
    bert_config.check_max_seq_length(max_seq_length)
    if max_seq_length < 3:
        raise ValueError(
            f"--max_seq_length={max_seq_length} cannot hold [CLS] and two "
            "[SEP]")
    if pad_to_multiple_of is not None:
        sequence_lengths.LengthPolicy(
            pad_to_multiple_of=pad_to_multiple_of).validate()


def _lengths(pad_to_multiple_of):
    """The export's `pad_to_multiple_of` keyword: none when None (the
    export's own default)."""
    return {} if pad_to_multiple_of is None else {
        "pad_to_multiple_of": pad_to_multiple_of}


def _load(model, init_checkpoint):
    checkpoints.load_checkpoint(model, init_checkpoint, strict=True)
    return model


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
    _check_length(max_seq_length, bert_config, pad_to_multiple_of,
                  serving_dtype)
    num_labels = 1 if is_regression else len(label_list)
    if not is_regression and num_labels < (1 if multi_label else 2):
        raise ValueError(
            f"classification needs at least 2 labels, got {label_list}")
    with precision.serving_dtype_scope(serving_dtype):
        model = ClassificationModel(bert_config, num_labels,
                                    causal_attention=causal_attention)
    _load(model, init_checkpoint)
    tokenizer = GraphFullTokenizer(vocab_file, do_lower_case)
    return serving.ClassifierExport(model, tokenizer, max_seq_length,
                                    label_list, is_regression, has_text_b,
                                    multi_label=multi_label,
                                    threshold=threshold,
                                    enable_xla=enable_xla,
                                    **_lengths(pad_to_multiple_of))


# A variable of the BiLSTM of run_squad.py --span_bilstm and run_tagging.py
# --tagging_bilstm, [units, 4 * units].
BILSTM_RECURRENT_KERNEL = "bilstm/fw/lstm_cell/recurrent_kernel"


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
    _check_length(max_seq_length, bert_config, pad_to_multiple_of,
                  serving_dtype)
    tokenizer = GraphFullTokenizer(vocab_file, do_lower_case)
    recurrent_kernel = checkpoints.checkpoint_shapes(init_checkpoint).get(
        BILSTM_RECURRENT_KERNEL)
    with precision.serving_dtype_scope(serving_dtype):
        model = SquadModel(
            bert_config, causal_attention=causal_attention,
            bilstm_units=(None if recurrent_kernel is None
                          else recurrent_kernel[0]))
    config = SquadPostprocessConfig(
        doc_stride=doc_stride, max_query_length=max_query_length,
        n_best_size=n_best_size, max_answer_length=max_answer_length,
        version_2_with_negative=version_2_with_negative,
        null_score_diff_threshold=null_score_diff_threshold)
    export = serving.SquadExport(
        model, tokenizer, max_seq_length, config,
        pad_to_multiple_of=pad_to_multiple_of, enable_xla=enable_xla)
    _load(model, init_checkpoint)
    return export


def embedding_export(bert_config, vocab_file, do_lower_case, init_checkpoint,
                     max_seq_length, causal_attention=False,
                     pad_to_multiple_of=None, enable_xla=False,
                     serving_dtype="float32"):
    """An `EmbeddingExport` of any checkpoint's encoder (`bert/...`).

    Args: as `classifier_export`'s.
    """
    from bert_tf.modeling import BertModel
    _check_length(max_seq_length, bert_config, pad_to_multiple_of,
                  serving_dtype)
    with precision.serving_dtype_scope(serving_dtype):
        model = BertModel(bert_config, causal_attention=causal_attention)
    model.build()
    _load(model, init_checkpoint)
    tokenizer = GraphFullTokenizer(vocab_file, do_lower_case)
    return serving.EmbeddingExport(model, tokenizer, max_seq_length,
                                   enable_xla=enable_xla,
                                   **_lengths(pad_to_multiple_of))


# The CRF's variable (`LinearChainCRF` under its default name).
CRF_TRANSITIONS = "crf/transitions"


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
    from bert_tf.tasks.tagging.task import TaggingModel
    _check_length(max_seq_length, bert_config, pad_to_multiple_of,
                  serving_dtype)
    if not label_list:
        raise ValueError("tagging needs at least one label")
    shapes = checkpoints.checkpoint_shapes(init_checkpoint)
    has_crf = CRF_TRANSITIONS in shapes
    recurrent_kernel = shapes.get(BILSTM_RECURRENT_KERNEL)
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
            bilstm_units=(None if recurrent_kernel is None
                          else recurrent_kernel[0]))
    export = serving.TaggingExport(
        model, tokenizer,
        TaggingWindowConfig(max_seq_length=max_seq_length,
                            doc_stride=doc_stride),
        label_list, enable_xla=enable_xla, **_lengths(pad_to_multiple_of))
    _load(model, init_checkpoint)
    return export


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
    _check_length(max_seq_length, bert_config, pad_to_multiple_of,
                  serving_dtype)
    with precision.serving_dtype_scope(serving_dtype):
        model = MultipleChoiceModel(bert_config,
                                    causal_attention=causal_attention)
    _load(model, init_checkpoint)
    tokenizer = GraphFullTokenizer(vocab_file, do_lower_case)
    return serving.MultipleChoiceExport(model, tokenizer, max_seq_length,
                                        has_question, enable_xla=enable_xla,
                                        **_lengths(pad_to_multiple_of))
