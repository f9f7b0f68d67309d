"""Exports a fine-tuned checkpoint as a SavedModel that serves raw text.

    python export_saved_model.py --task_name=MRPC \\
      --bert_config_file=$BERT_BASE_DIR/bert_config.json \\
      --vocab_file=$BERT_BASE_DIR/vocab.txt \\
      --init_checkpoint=work/mrpc_output/model.ckpt-343 \\
      --max_seq_length=128 --export_dir=work/mrpc_saved_model

The SavedModel's `serving_default` signature takes strings and does what
the runner does, in the graph: Google's tokenization (the same ids as the
Python tokenizer), packing and truncation, the model, and the task's
post-processing:

- a run_classifier.py task (cola, mnli, mnli-mm, mrpc, xnli, sst-2, qqp,
  qnli, rte, wnli, sts-b, generic): `text_a` (and `text_b` for pair tasks)
  -> `probabilities`, `label`, `label_id`, `logits` (sts-b: `score`);
  `label` is the name the training run beside `--init_checkpoint` gives
  the label (its `bert_tf_run.json`: sst-2's `negative`, `positive`, as
  `bert_tf.load` of the run answers), else the label itself;
  a `--multi_label` checkpoint (its run's `bert_tf_run.json` beside it
  says so): sigmoid `probabilities`, `predicted` (0/1 at the run's
  `--threshold`), `labels` (the predicted labels' names, "" elsewhere);
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
`segment_ids`. `--enable_xla` makes the model call of both one XLA-compiled
function (each new batch size and packed length compiles once, at its first
request). `--serving_dtype=bfloat16` stores the weights in bfloat16 and
computes the matmuls in bfloat16 (LayerNorm, softmax and the outputs stay
float32). Loading needs only tensorflow and tensorflow_text
(`import tensorflow_text` registers the tokenizer's ops). The directory is
written under a temporary name and renamed at the end; an existing
`--export_dir` is refused unless `--overwrite`, and even then unless it is an
export of this program's holding nothing else (its `bert_tf_export.json`
lists the files it wrote): a training run, a vocabulary or a user's files
are never deleted. An `--export_dir` that is or holds an input is refused.
"""

from bert_tf import startup

# Before anything imports TensorFlow: keeps its C++ start-up lines out.
startup.quiet_start()

from absl import flags

from bert_tf import cli
from bert_tf.runners import flags as runner_flags
from bert_tf.runners import multi_label as multi_label_runner

FLAGS = flags.FLAGS
PROGRAM = "export_saved_model.py"
SQUAD = "squad"
EMBEDDINGS = "embeddings"
TAGGING = "tagging"
MULTIPLE_CHOICE = "multiple_choice"
# The runners' --doc_stride defaults.
DEFAULT_DOC_STRIDE = {SQUAD: 128, TAGGING: 64}
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
    flags.DEFINE_integer(
        "pad_to_multiple_of", None,
        "serving_default packs each request to its longest text (in word "
        "pieces; tagging and squad: its longest window) rounded up to a "
        "multiple of this, not to --max_seq_length: the same outputs, "
        "without computing on padding (the runners' --pad_to_multiple_of). "
        "--pad_to_multiple_of=<max_seq_length> packs every request to the "
        "full length, as the original. Default: 8; squad: --max_seq_length, "
        "as run_squad.py (Google's n-best lists rank the padding's logits "
        "too). --format=onnx/tflite record it in packing.json for their "
        "callers.", flag_values=flag_values)
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
        "enable_xla", False,
        "Compile with XLA (jit_compile), as the runners' flag: the model "
        "call of serving_default and serving_ids is one XLA-compiled "
        "function (tokenization, packing and string outputs stay outside "
        "it), faster for small requests on CPUs (no per-op dispatch). Each "
        "new (batch size, packed length) compiles once per loaded "
        "SavedModel, at its first request (about 2 s for MiniLM-L6, 4 s for "
        "BERT-Base here): batch to a few sizes. --format=saved_model only "
        "(ONNX Runtime and TFLite never run XLA); TensorFlow Serving runs it "
        "only with --xla_cpu_compilation_enabled=true.",
        flag_values=flag_values)
    flags.DEFINE_enum(
        "serving_dtype", "float32", ("float32", "bfloat16"),
        "float32: the checkpoint's weights as they are. bfloat16: the "
        "weights are converted to bfloat16 and stored so (half the bytes "
        "each call reads) and the matmuls compute in bfloat16; LayerNorm, "
        "softmax, the logits and every output stay float32. Fast only where "
        "the hardware computes bfloat16 (a CPU with AVX512_BF16 or AMX, a "
        "GPU with bfloat16 units); on CPUs not with --enable_xla (XLA's "
        "bfloat16 matmuls are slow there). Probabilities move by up to ~1e-2 "
        "(see docs/serving.md). "
        "--format=saved_model only (ONNX and TFLite have --quantize).",
        flag_values=flag_values)
    flags.DEFINE_bool(
        "overwrite", False,
        "Replace an existing --export_dir (once the new export is "
        "complete); only an export this program wrote, holding no other "
        "file, is replaced.", flag_values=flag_values)
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
    # --multi_label, --label_delimiter, --threshold, as run_classifier.py's.
    multi_label_runner.define_flags(flag_values)
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
        "--span_bilstm or run_tagging.py --tagging_bilstm model is "
        "recognized by its bilstm/ variables.)",
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
    from bert_tf.runners import finetune
    if label_list is None:
        return None
    directory = os.path.dirname(
        checkpoints.resolve_checkpoint(flag_values.init_checkpoint))
    try:
        description = finetune.read_run_description(directory)
    except FileNotFoundError:
        return label_list
    names = description.get("label_names")
    if (description["task"] != finetune.CLASSIFICATION
            or description.get("label_list") != list(label_list)
            or not isinstance(names, list)
            or len(names) != len(label_list)):
        return label_list
    return [str(name) for name in names]


def _multi_label_head(flag_values, task_name):
    """None for a single-label classifier, else `(label_list, threshold)`.

    A `run_classifier.py --multi_label` run records itself beside its
    checkpoints (`bert_tf_run.json`, read by
    `finetune.read_multi_label_head`): its weights look like a softmax
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
    from bert_tf.runners import finetune
    from bert_tf.tasks.classification import multi_label_data
    record = finetune.read_multi_label_head(os.path.dirname(
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


def _check_task_name(task_name):
    """Refuses a --task_name that names no export (all of them listed)."""
    from bert_tf.tasks.classification.glue_processors import PROCESSORS
    known = sorted(PROCESSORS) + [SQUAD, TAGGING, MULTIPLE_CHOICE, EMBEDDINGS]
    if task_name not in known:
        raise ValueError(f"--task_name={task_name}: unknown task; one of: "
                         f"{', '.join(known)}")


def _check_export_dir(flag_values):
    """Refuses, before the checkpoint is loaded, an --export_dir that is or
    holds an input, or that exists and may not be replaced."""
    import os

    from bert_tf import file_io
    from bert_tf.export import serving
    from bert_tf.tasks.tagging import examples as tagging_examples
    checkpoint = flag_values.init_checkpoint
    checkpoint_dir = (checkpoint if os.path.isdir(checkpoint)
                      else os.path.dirname(checkpoint))
    file_io.check_outputs_are_not_inputs(
        [("--export_dir", flag_values.export_dir)],
        [(f"--{name}", flag_values[name].value) for name in (
            "bert_config_file", "vocab_file", "init_checkpoint", "data_dir")]
        + [("label list", os.path.join(checkpoint_dir,
                                       tagging_examples.LABEL_LIST_FILE))],
        whole_directories=True)
    serving.check_export_dir(flag_values.export_dir, flag_values.overwrite)


def run(flag_values):
    """Builds the export of `--task_name` and writes it to `--export_dir`."""
    runner_flags.require(flag_values, "task_name", "bert_config_file",
                         "vocab_file", "init_checkpoint", "export_dir")
    _check_task_name(flag_values.task_name.lower())
    from bert_tf.export import portable
    portable.check_options(flag_values.format, flag_values.quantize,
                           flag_values.enable_xla, flag_values.serving_dtype)
    runner_flags.check_file("bert_config_file", flag_values.bert_config_file)
    runner_flags.check_file("vocab_file", flag_values.vocab_file)
    # Before the slow work (loading the checkpoint, tracing the graph).
    _check_export_dir(flag_values)

    from absl import logging

    from bert_tf.config import BertConfig
    from bert_tf.export import builders
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
                  causal_attention=flag_values.causal_attention,
                  # None: the builder's default for its task.
                  pad_to_multiple_of=flag_values.pad_to_multiple_of,
                  enable_xla=flag_values.enable_xla,
                  serving_dtype=flag_values.serving_dtype)
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
        multi_label = _multi_label_head(flag_values, task_name)
        if multi_label is None:
            label_list, is_regression, has_text_b = _classification_labels(
                flag_values, task_name)
            export = builders.classifier_export(
                label_list=_run_label_names(flag_values, label_list),
                is_regression=is_regression,
                has_text_b=has_text_b, **common)
        else:
            label_list, threshold = multi_label
            export = builders.classifier_export(
                label_list=label_list, has_text_b=bool(
                    flag_values.text_b_column),
                multi_label=True, threshold=threshold, **common)
    with startup.tensorflow_python_info_hidden():
        portable.save(export, flag_values.export_dir,
                      export_format=flag_values.format,
                      quantize=flag_values.quantize,
                      overwrite=flag_values.overwrite)
    logging.info("Exported %s to %s", task_name, flag_values.export_dir)


def main(argv, flag_values=FLAGS):
    """Runs with parsed flags; a bad flag or input (an existing
    --export_dir, a full disk: OSErrors) ends with its message."""
    runner_flags.run_main(PROGRAM, run, argv, flag_values)


if __name__ == "__main__":
    define_flags()
    cli.run_app(main)
