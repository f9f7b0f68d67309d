"""Exports a fine-tuned checkpoint as a SavedModel that serves raw text.

    python export_saved_model.py --task_name=MRPC \
      --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --vocab_file=$BERT_BASE_DIR/vocab.txt \
      --init_checkpoint=/tmp/mrpc_output/model.ckpt-343 \
      --max_seq_length=128 --export_dir=/tmp/mrpc_saved_model

The SavedModel's `serving_default` signature takes strings and does what
the runner does, in the graph: Google's tokenization (the same ids as the
Python tokenizer), packing and truncation, the model, and the task's
post-processing:

- a run_classifier.py task (cola, mnli, mnli-mm, mrpc, xnli, sst-2, qqp,
  qnli, rte, wnli, sts-b, generic): `text_a` (and `text_b` for pair tasks)
  -> `probabilities`, `label`, `label_id`, `logits` (sts-b: `score`);
- `squad`: `question`, `context` -> `answer`, `probability`, `score`,
  the n-best list (`nbest_text`, ...), `null_score_diff`;
- `tagging` (run_tagging.py, softmax or CRF): `text` (words separated by
  whitespace) -> `labels` [batch, max_words] (each word's label, "" past
  the sentence's end), `words`, `num_words`; the labels come from
  `label_list.txt` beside `--init_checkpoint` (or `--label_list`);
- `multiple_choice` (run_multiple_choice.py): `context` (and `question`
  with `--input_format=jsonl`), `choices` [batch, num_choices] ->
  `probabilities`, `label` (the likeliest choice's index), `logits`;
- `embeddings` (any checkpoint's encoder): `text` -> `pooled_output`,
  `mean_pooled`.

A second signature, `serving_ids`, takes int32 `input_ids`, `input_mask`,
`segment_ids`. Loading needs only tensorflow and tensorflow_text
(`import tensorflow_text` registers the tokenizer's ops). The directory is
written under a temporary name and renamed at the end; an existing
`--export_dir` is refused unless `--overwrite`.
"""

from bert_tf import startup

# Before anything imports TensorFlow: keeps its C++ start-up lines out.
startup.quiet_start()

from absl import app
from absl import flags

from bert_tf.runners import flags as runner_flags

FLAGS = flags.FLAGS
PROGRAM = "export_saved_model.py"
SQUAD = "squad"
EMBEDDINGS = "embeddings"
TAGGING = "tagging"
MULTIPLE_CHOICE = "multiple_choice"
# The runners' --doc_stride defaults.
DEFAULT_DOC_STRIDE = {SQUAD: 128, TAGGING: 64}
# run_classifier.py tasks whose examples have no second text.
SINGLE_TEXT_TASKS = ("cola", "sst-2")
GENERIC = "generic"


def define_flags(flag_values=FLAGS):
    """Defines the flags (called when this file runs as a program)."""
    flags.DEFINE_string(
        "task_name", None,
        "What the checkpoint was fine-tuned for: a run_classifier.py task "
        "(cola, mnli, mnli-mm, mrpc, xnli, sst-2, qqp, qnli, rte, wnli, "
        "sts-b, generic), squad, tagging (run_tagging.py), "
        "multiple_choice (run_multiple_choice.py), or embeddings (the "
        "encoder of any checkpoint, for sentence embeddings).",
        flag_values=flag_values)
    flags.DEFINE_string(
        "bert_config_file", None,
        "The config json file corresponding to the BERT model.",
        flag_values=flag_values)
    flags.DEFINE_string(
        "init_checkpoint", None,
        "The fine-tuned checkpoint to export (a prefix such as "
        ".../model.ckpt-343, or a directory: its newest checkpoint). It "
        "must hold the task's head under Google's names.",
        flag_values=flag_values)
    runner_flags.define_tokenizer_flags(flag_values, do_lower_case=True)
    flags.DEFINE_integer(
        "max_seq_length", None,
        "The maximum total input sequence length after WordPiece "
        "tokenization, as in training; longer inputs are truncated as the "
        "runner truncates them. Default: 128, and 384 for squad.",
        flag_values=flag_values)
    flags.DEFINE_string(
        "export_dir", None, "The SavedModel directory to create.",
        flag_values=flag_values)
    flags.DEFINE_enum(
        "format", "saved_model", ("saved_model", "onnx", "tflite"),
        "saved_model: raw text in (serving_default) and ids in "
        "(serving_ids). onnx: model.onnx of the ids signature (tf2onnx; "
        "for ONNX Runtime), tflite: model.tflite of serving_ids; both with "
        "vocab.txt, tokenizer.json and packing.json (the task's packing "
        "and labels) beside the model.", flag_values=flag_values)
    flags.DEFINE_enum(
        "quantize", "none", ("none", "int8"),
        "int8 (--format=onnx or tflite): int8 weights, activations "
        "quantized per call (ONNX Runtime's dynamic quantization; TFLite's "
        "dynamic-range quantization).", flag_values=flag_values)
    flags.DEFINE_bool(
        "overwrite", False,
        "Replace an existing --export_dir (once the new export is "
        "complete).", flag_values=flag_values)
    # Classification.
    flags.DEFINE_list(
        "label_list", None,
        "Classification and tagging: the labels in label-id order, comma "
        "separated. Default: the task's labels (generic: the sorted labels "
        "of --data_dir's training file, as run_classifier.py; tagging: "
        "label_list.txt beside --init_checkpoint, which run_tagging.py "
        "writes to its --output_dir).",
        flag_values=flag_values)
    flags.DEFINE_string(
        "data_dir", None,
        "--task_name=generic without --label_list: the data directory the "
        "model was trained on (its labels are read from the training "
        "file).", flag_values=flag_values)
    flags.DEFINE_string(
        "label_column", "label",
        "--task_name=generic: header name of the label column.",
        flag_values=flag_values)
    flags.DEFINE_string(
        "text_b_column", None,
        "--task_name=generic: set (to the column name) when the model "
        "classifies text pairs; serving_default then takes text_b.",
        flag_values=flag_values)
    flags.DEFINE_enum(
        "data_format", "tsv", ("tsv", "csv"),
        "--task_name=generic: the format of --data_dir's files.",
        flag_values=flag_values)
    # SQuAD and tagging.
    flags.DEFINE_integer(
        "doc_stride", None,
        "squad and tagging: contexts (sentences) longer than one window are "
        "cut into windows whose starts are this many word pieces apart, as "
        "in training. Default: 128 for squad, 64 for tagging (the runners' "
        "defaults).", flag_values=flag_values)
    # Tagging.
    flags.DEFINE_bool(
        "use_crf", None,
        "tagging: whether the model has a CRF (Viterbi decoding in the "
        "graph). Default: whether --init_checkpoint holds crf/transitions; "
        "set, it must agree.", flag_values=flag_values)
    flags.DEFINE_bool(
        "causal_attention", False,
        "The model was fine-tuned with --causal_attention (a left-to-right "
        "encoder; classifiers pool the last real token). Its weights do not "
        "say so: pass the fine-tuning run's value. (A run_squad.py "
        "--span_bilstm model is recognized by its bilstm/ variables.)",
        flag_values=flag_values)
    # Multiple choice.
    flags.DEFINE_enum(
        "input_format", "swag", ("swag", "jsonl"),
        "multiple_choice: the training data's format, as "
        "run_multiple_choice.py's flag. swag: serving_default takes "
        "context and choices (a SWAG choice is sent2 + \" \" + ending). "
        "jsonl: it takes a question too, put after the context as the "
        "JSON-lines reader does.", flag_values=flag_values)
    # SQuAD.
    flags.DEFINE_integer(
        "max_query_length", 64, "squad: questions are cut to this many "
        "word pieces.", flag_values=flag_values)
    flags.DEFINE_integer(
        "n_best_size", 20,
        "squad: start and end positions combined into candidate answers, "
        "and the length of the n-best outputs.", flag_values=flag_values)
    flags.DEFINE_integer(
        "max_answer_length", 30, "squad: longest answer, in word pieces.",
        flag_values=flag_values)
    flags.DEFINE_bool(
        "version_2_with_negative", False,
        "squad: SQuAD 2.0, the answer may be empty (no answer).",
        flag_values=flag_values)
    flags.DEFINE_float(
        "null_score_diff_threshold", 0.0,
        "squad 2.0: answer \"\" when the no-answer score exceeds the best "
        "answer's score by more than this.", flag_values=flag_values)
    for name in ("task_name", "bert_config_file", "vocab_file",
                 "init_checkpoint", "export_dir"):
        flags.mark_flag_as_required(name, flag_values=flag_values)


def _classification_labels(flag_values, task_name):
    """(label_list, is_regression, has_text_b) of a run_classifier task."""
    from bert_tf.data.glue_processors import create_processor
    processor = create_processor(
        task_name, label_column=flag_values.label_column,
        text_b_column=flag_values.text_b_column,
        file_format=flag_values.data_format)
    if task_name == GENERIC:
        has_text_b = bool(flag_values.text_b_column)
    else:
        has_text_b = task_name not in SINGLE_TEXT_TASKS
    if processor.is_regression:
        return None, True, has_text_b
    if flag_values.label_list:
        return list(flag_values.label_list), False, has_text_b
    if task_name == GENERIC and not flag_values.data_dir:
        raise ValueError(
            "--task_name=generic needs --label_list (the labels in label-id "
            "order: run_classifier.py sorts them) or --data_dir")
    return processor.get_labels(flag_values.data_dir), False, has_text_b


def _tagging_labels(flag_values):
    """--label_list, or run_tagging.py's label_list.txt beside the
    checkpoint."""
    import os

    from bert_tf.data import tagging_examples
    if flag_values.label_list:
        return list(flag_values.label_list)
    checkpoint = flag_values.init_checkpoint
    directory = (checkpoint if os.path.isdir(checkpoint)
                 else os.path.dirname(checkpoint))
    return tagging_examples.read_label_list(
        os.path.join(directory, tagging_examples.LABEL_LIST_FILE))


def run(flag_values):
    """Builds the export of `--task_name` and writes it to `--export_dir`."""
    runner_flags.require(flag_values, "task_name", "bert_config_file",
                         "vocab_file", "init_checkpoint", "export_dir")
    runner_flags.check_file("bert_config_file", flag_values.bert_config_file)
    runner_flags.check_file("vocab_file", flag_values.vocab_file)

    from absl import logging

    from bert_tf.config import BertConfig
    from bert_tf.export import builders
    from bert_tf.export import portable
    from bert_tf.text import tokenization

    tokenization.validate_case_matches_checkpoint(
        flag_values.do_lower_case, flag_values.init_checkpoint)
    bert_config = BertConfig.from_json_file(flag_values.bert_config_file)
    task_name = flag_values.task_name.lower()
    max_seq_length = flag_values.max_seq_length or (
        384 if task_name == SQUAD else 128)
    common = dict(bert_config=bert_config,
                  vocab_file=flag_values.vocab_file,
                  do_lower_case=flag_values.do_lower_case,
                  init_checkpoint=flag_values.init_checkpoint,
                  max_seq_length=max_seq_length,
                  causal_attention=flag_values.causal_attention)
    doc_stride = flag_values.doc_stride
    if doc_stride is None:
        doc_stride = DEFAULT_DOC_STRIDE.get(task_name)
    if task_name == SQUAD:
        export = builders.squad_export(
            doc_stride=doc_stride,
            max_query_length=flag_values.max_query_length,
            n_best_size=flag_values.n_best_size,
            max_answer_length=flag_values.max_answer_length,
            version_2_with_negative=flag_values.version_2_with_negative,
            null_score_diff_threshold=flag_values.null_score_diff_threshold,
            **common)
    elif task_name == TAGGING:
        export = builders.tagging_export(
            doc_stride=doc_stride, label_list=_tagging_labels(flag_values),
            use_crf=flag_values.use_crf, **common)
    elif task_name == MULTIPLE_CHOICE:
        export = builders.multiple_choice_export(
            has_question=flag_values.input_format == "jsonl", **common)
    elif task_name == EMBEDDINGS:
        export = builders.embedding_export(**common)
    else:
        label_list, is_regression, has_text_b = _classification_labels(
            flag_values, task_name)
        export = builders.classifier_export(
            label_list=label_list, is_regression=is_regression,
            has_text_b=has_text_b, **common)
    portable.save(export, flag_values.export_dir,
                  export_format=flag_values.format,
                  quantize=flag_values.quantize,
                  overwrite=flag_values.overwrite)
    logging.info("Exported %s to %s", task_name, flag_values.export_dir)


def main(argv, flag_values=FLAGS):
    """Runs with parsed flags; a bad flag or input ends with its message."""
    try:
        runner_flags.run_main(PROGRAM, run, argv, flag_values)
    except FileExistsError as error:
        runner_flags.exit_with_error(PROGRAM, error)


if __name__ == "__main__":
    define_flags()
    app.run(main)
