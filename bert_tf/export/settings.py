"""export_saved_model.py's settings: `ExportConfig`, whose fields are its
flags (`bert_tf.finetuning.fields.setting`; `bert_tf.runners.flags` makes
the flags from them). Each task's export reads the fields it needs
(`bert_tf/tasks/<task>/export.py`, `export_from_flags`)."""

import dataclasses
from typing import List, Optional

from bert_tf import finetuning
from bert_tf.finetuning.fields import override
from bert_tf.finetuning.fields import setting
from bert_tf.tasks.classification.recipe import ClassificationConfig

# `--task_name` of the encoder alone (no task): sentence embeddings.
EMBEDDINGS = "embeddings"


@dataclasses.dataclass
class ExportConfig:
    """export_saved_model.py's flags as fields (see its `--help`)."""
    task_name: Optional[str] = setting(
        None,
        "What the checkpoint was fine-tuned for: a run_classifier.py "
        "task (cola, mnli, mnli-mm, mrpc, xnli, sst-2, qqp, qnli, rte, "
        "wnli, sts-b, generic), squad, tagging (run_tagging.py), "
        "multiple_choice (run_multiple_choice.py), or embeddings (the "
        "encoder of any checkpoint, for sentence embeddings).")
    bert_config_file: Optional[str] = setting(
        None,
        "The config json file corresponding to the BERT model.")
    init_checkpoint: Optional[str] = setting(
        None,
        "The fine-tuned checkpoint to export (a prefix such as "
        ".../model.ckpt-343, or a directory: its newest checkpoint). It "
        "must hold the task's head under Google's names.")
    vocab_file: Optional[str] = override(finetuning.RunConfig, "vocab_file")
    do_lower_case: bool = override(finetuning.RunConfig, "do_lower_case")
    max_seq_length: Optional[int] = setting(
        None,
        "The maximum total input sequence length after WordPiece "
        "tokenization, as in training; longer inputs are truncated as "
        "the runner truncates them. Default: 128, and 384 for squad.")
    pad_to_multiple_of: Optional[int] = setting(
        None,
        "serving_default packs each request to its longest text (in word "
        "pieces; tagging and squad: its longest window) rounded up to a "
        "multiple of this, not to --max_seq_length: the same outputs, "
        "without computing on padding (the runners' "
        "--pad_to_multiple_of). --pad_to_multiple_of=<max_seq_length> "
        "packs every request to the full length, as the original. "
        "Default: 8; squad: --max_seq_length, as run_squad.py (Google's "
        "n-best lists rank the padding's logits too). "
        "--format=onnx/tflite record it in packing.json for their "
        "callers.")
    export_dir: Optional[str] = setting(
        None,
        "The SavedModel directory to create.")
    format: str = setting(
        "saved_model",
        "saved_model: raw text in (serving_default) and ids in "
        "(serving_ids). onnx: model.onnx of the ids signature (tf2onnx; "
        "for ONNX Runtime), tflite: model.tflite of serving_ids; both "
        "with vocab.txt, tokenizer.json and packing.json (the task's "
        "packing and labels) beside the model.",
        choices=("saved_model", "onnx", "tflite"))
    quantize: str = setting(
        "none",
        "int8 (--format=onnx or tflite): int8 weights, activations "
        "quantized per call (ONNX Runtime's dynamic quantization; "
        "TFLite's dynamic-range quantization).",
        choices=("none", "int8"))
    enable_xla: bool = setting(
        False,
        "Compile with XLA (jit_compile), as the runners' flag: the model "
        "call of serving_default and serving_ids is one XLA-compiled "
        "function (tokenization, packing and string outputs stay outside "
        "it), faster for small requests on CPUs (no per-op dispatch). "
        "Each new (batch size, packed length) compiles once per loaded "
        "SavedModel, at its first request (about 2 s for MiniLM-L6, 4 s "
        "for BERT-Base here): batch to a few sizes. --format=saved_model "
        "only (ONNX Runtime and TFLite never run XLA); TensorFlow "
        "Serving runs it only with --xla_cpu_compilation_enabled=true.")
    serving_dtype: str = setting(
        "float32",
        "float32: the checkpoint's weights as they are. bfloat16: the "
        "weights are converted to bfloat16 and stored so (half the bytes "
        "each call reads) and the matmuls compute in bfloat16; "
        "LayerNorm, softmax, the logits and every output stay float32. "
        "Fast only where the hardware computes bfloat16 (a CPU with "
        "AVX512_BF16 or AMX, a GPU with bfloat16 units); on CPUs not "
        "with --enable_xla (XLA's bfloat16 matmuls are slow there). "
        "Probabilities move by up to ~1e-2 (see docs/serving.md). "
        "--format=saved_model only (ONNX and TFLite have --quantize).",
        choices=("float32", "bfloat16"))
    overwrite: bool = setting(
        False,
        "Replace an existing --export_dir (once the new export is "
        "complete); only an export this program wrote, holding no other "
        "file, is replaced.")
    label_list: Optional[List[str]] = setting(
        None,
        "Classification and tagging: the labels in label-id order, comma "
        "separated. Default: the task's labels (generic: the sorted "
        "labels of --data_dir's training file, as run_classifier.py; "
        "tagging: label_list.txt beside --init_checkpoint, which "
        "run_tagging.py writes to its --output_dir).")
    data_dir: Optional[str] = setting(
        None,
        "--task_name=generic without --label_list: the data directory "
        "the model was trained on (its labels are read from the training "
        "file).")
    label_column: str = setting(
        "label",
        "--task_name=generic: header name of the label column.")
    text_b_column: Optional[str] = setting(
        None,
        "--task_name=generic: set (to the column name) when the model "
        "classifies text pairs; serving_default then takes text_b.")
    data_format: str = setting(
        "tsv",
        "--task_name=generic: the format of --data_dir's files.",
        choices=("tsv", "csv"))
    multi_label: bool = override(ClassificationConfig, "multi_label")
    label_delimiter: str = override(ClassificationConfig, "label_delimiter")
    threshold: float = override(ClassificationConfig, "threshold")
    doc_stride: Optional[int] = setting(
        None,
        "squad and tagging: contexts (sentences) longer than one window "
        "are cut into windows whose starts are this many word pieces "
        "apart, as in training. Default: 128 for squad, 64 for tagging "
        "(the runners' defaults).")
    use_crf: Optional[bool] = setting(
        None,
        "tagging: whether the model has a CRF (Viterbi decoding in the "
        "graph). Default: whether --init_checkpoint holds "
        "crf/transitions; set, it must agree.")
    causal_attention: bool = setting(
        False,
        "The model was fine-tuned with --causal_attention (a "
        "left-to-right encoder; classifiers pool the last real token). "
        "Its weights do not say so: pass the fine-tuning run's value. (A "
        "run_squad.py --span_bilstm or run_tagging.py --tagging_bilstm "
        "model is recognized by its bilstm/ variables.)")
    input_format: str = setting(
        "swag",
        "multiple_choice: the training data's format, as "
        "run_multiple_choice.py's flag. swag: serving_default takes "
        "context and choices (a SWAG choice is sent2 + \" \" + ending). "
        "jsonl: it takes a question too, put after the context as the "
        "JSON-lines reader does.",
        choices=("swag", "jsonl"))
    max_query_length: int = setting(
        64,
        "squad: questions are cut to this many word pieces.")
    n_best_size: int = setting(
        20,
        "squad: start and end positions combined into candidate answers, "
        "and the length of the n-best outputs.")
    max_answer_length: int = setting(
        30,
        "squad: longest answer, in word pieces.")
    version_2_with_negative: bool = setting(
        False,
        "squad: SQuAD 2.0, the answer may be empty (no answer).")
    null_score_diff_threshold: float = setting(
        0.0,
        "squad 2.0: answer \"\" when the no-answer score exceeds the best "
        "answer's score by more than this.")

    REQUIRED_FLAGS = ("task_name", "bert_config_file", "vocab_file",
                      "init_checkpoint", "export_dir")


def task_spec(task_name):
    """The registry's spec of `--task_name` (None: `EMBEDDINGS`).

    Raises:
      ValueError: an unknown name; the message lists every known one.
    """
    from bert_tf.tasks import registry
    spec = registry.of_export_name(task_name)
    if spec is None and task_name != EMBEDDINGS:
        known = [name for spec in registry.specs()
                 for name in spec.exported_as()] + [EMBEDDINGS]
        raise ValueError(f"--task_name={task_name}: unknown task; one of: "
                         f"{', '.join(known)}")
    return spec


def check_export_dir(settings):
    """Refuses, before the checkpoint is loaded, an --export_dir that is or
    holds an input, or that exists and may not be replaced.

    Args:
      settings: the parsed flags (or an `ExportConfig`): `export_dir`,
        `overwrite` and the inputs' fields.

    Raises:
      ValueError: the message names the flags.
    """
    import os

    from bert_tf import file_io
    from bert_tf.export import serving
    from bert_tf.tasks.tagging import examples as tagging_examples
    checkpoint = settings.init_checkpoint
    checkpoint_dir = (checkpoint if os.path.isdir(checkpoint)
                      else os.path.dirname(checkpoint))
    file_io.check_outputs_are_not_inputs(
        [("--export_dir", settings.export_dir)],
        [(f"--{name}", getattr(settings, name)) for name in (
            "bert_config_file", "vocab_file", "init_checkpoint", "data_dir")]
        + [("label list", os.path.join(checkpoint_dir,
                                       tagging_examples.LABEL_LIST_FILE))],
        whole_directories=True)
    serving.check_export_dir(settings.export_dir, settings.overwrite)
