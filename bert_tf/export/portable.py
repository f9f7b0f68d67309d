"""Writes an export as a SavedModel, an ONNX graph or a TFLite model.

`save` is what `export_saved_model.py --format=... --quantize=...` calls:

- `saved_model`: `serving.save_export` (raw text in, the runner's outputs).
- `onnx`: `model.onnx`, the ids signature converted by tf2onnx
  (`onnx_export`); `--quantize=int8`: ONNX Runtime's dynamic quantization.
- `tflite`: `model.tflite`, the ids signature converted by TensorFlow's
  TFLite converter (the signature `serving_ids`); `--quantize=int8`:
  dynamic-range quantization (int8 weights, activations quantized per call
  by XNNPACK / the built-in kernels).

The ONNX and TFLite directories hold, beside the model, what a caller
needs to make its inputs with only the `tokenizers` package (or Google's
tokenizer): `vocab.txt`, `tokenizer.json` (Google's tokenization as a
Hugging Face fast tokenizer, with `[CLS] A [SEP] B [SEP]` packing;
`bert_tf.checkpoints.hf_tokenizer`), `tokenizer_config.json`,
`special_tokens_map.json`, and `packing.json`: the task, its inputs and
outputs, `max_seq_length`, `pad_to_multiple_of` (a batch is padded to its
longest row rounded up to a multiple of it, as the SavedModel packs a
request), `do_lower_case`, the label names, and the task's packing
parameters (SQuAD's and tagging's windows, the CRF's transitions, multiple
choice's question input). The directory is written
under a temporary name and renamed when complete, with the marker every
export has (`serving.export_directory`): `--overwrite` replaces only an
export this project wrote. The converters' intermediate files (TFLite's
SavedModel copy; the float32 ONNX graph that int8 quantization reads, and
ONNX Runtime's copies of it) are written inside that temporary directory,
not in `$TMPDIR`: a full disk is
the export's own, which the message names, and what a killed export left
is removed, with its temporary directory, by the next export to the same
`--export_dir`.
"""

import dataclasses
import json
import os
import shutil
import warnings

SAVED_MODEL = "saved_model"
ONNX = "onnx"
TFLITE = "tflite"
FORMATS = (SAVED_MODEL, ONNX, TFLITE)
INT8 = "int8"
NO_QUANTIZATION = "none"
QUANTIZATIONS = (NO_QUANTIZATION, INT8)
MODEL_FILES = {ONNX: "model.onnx", TFLITE: "model.tflite"}
# In the export's temporary directory: the converters' intermediate files
# (removed before the directory becomes the export).
INTERMEDIATE_DIR = ".intermediate"
PACKING_FILE = "packing.json"
VOCAB_FILE = "vocab.txt"
# Increased when packing.json changes meaning.
PACKING_VERSION = 1


def _task(export):
    """The task's name in packing.json, from the export's module name
    (`classifier_export` -> `classifier`)."""
    return export.name[:-len("_export")] if export.name.endswith(
        "_export") else export.name


def _decoded(strings):
    return [value.decode("utf-8") for value in strings.numpy().tolist()]


def packing_description(export, input_names, input_rank, output_names,
                        export_format, quantize):
    """What packing.json holds for `export` (a JSON-able dict).

    Args:
      export: one of `bert_tf.export.serving`'s exports.
      input_names: the ids signature's inputs.
      input_rank: their rank (3 for multiple choice).
      output_names: the model file's outputs.
      export_format: `ONNX` or `TFLITE`.
      quantize: `NO_QUANTIZATION` or `INT8`.
    """
    tokenizer = export._tokenizer  # noqa: SLF001 (same package)
    description = {
        "packing_version": PACKING_VERSION,
        "task": _task(export),
        "format": export_format,
        "quantization": quantize,
        "model_file": MODEL_FILES[export_format],
        "vocab_file": VOCAB_FILE,
        "do_lower_case": tokenizer.do_lower_case,
        "max_seq_length": export.max_seq_length,
        "inputs": list(input_names),
        "input_shape": (["batch", "choices", "sequence"] if input_rank == 3
                        else ["batch", "sequence"]),
        "outputs": sorted(output_names),
        "pad_to_multiple_of": export.pad_to_multiple_of,
        "padding": ("Each row is [CLS] A [SEP] (B [SEP]) with segment ids "
                    "0 (1 for B), then zeros (input_mask 0) up to the "
                    "batch's longest row rounded up to a multiple of "
                    "pad_to_multiple_of (at most max_seq_length), as the "
                    "SavedModel's serving_default packs a request; the "
                    "outputs of real positions do not depend on the "
                    "padding (pad_to_multiple_of = max_seq_length: every "
                    "row at the full length, as Google's code)."),
    }
    if getattr(export, "is_regression", False):
        description["is_regression"] = True
    elif hasattr(export, "label_names"):
        description["labels"] = _decoded(export.label_names)
    for name in ("has_text_b", "has_question"):
        if hasattr(export, name):
            description[name] = bool(getattr(export, name))
    answerer = getattr(export, "_answerer", None)
    if answerer is not None:
        description.update(dataclasses.asdict(answerer.config))
    windows = getattr(export, "_windows", None)
    if windows is not None:
        description["doc_stride"] = windows.config.doc_stride
        crf = getattr(export.model, "crf", None)
        description["crf_transitions"] = (
            None if crf is None else crf.transitions.numpy().tolist())
    return description


def _ids_function(export):
    """(input names, rank) of the export's ids signature."""
    return tuple(export.ID_INPUTS), export.ID_RANK


def _write_onnx(export, directory, quantize, work_dir):
    import onnx

    from bert_tf.export import onnx_export
    input_names, input_rank = _ids_function(export)
    model = onnx_export.onnx_model(export, input_names, input_rank)
    if quantize == INT8:
        model = onnx_export.quantize_int8(model, work_dir=work_dir)
    onnx.save(model, os.path.join(directory, MODEL_FILES[ONNX]))
    return [output.name for output in model.graph.output]


def tflite_model(export, quantize=NO_QUANTIZATION, work_dir=None):
    """The TFLite flatbuffer of the export's `serving_ids` (bytes).

    Args:
      export: one of `bert_tf.export.serving`'s exports.
      quantize: `INT8`: dynamic-range quantization (int8 weights).
      work_dir: where the SavedModel copy the converter reads is written
        (and removed); default: `$TMPDIR`.
    """
    import tempfile

    import tensorflow as tf

    from bert_tf.export import serving
    # The SavedModel's own serving_ids signature, converted from a saved
    # copy: the converter keeps the signature's names and dynamic axes.
    with tempfile.TemporaryDirectory(dir=work_dir) as saved:
        tf.saved_model.save(export, saved, signatures={
            serving.SERVING_IDS: export.signatures()[serving.SERVING_IDS]})
        converter = tf.lite.TFLiteConverter.from_saved_model(
            saved, signature_keys=[serving.SERVING_IDS])
        if quantize == INT8:
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        return converter.convert()


# The start of TensorFlow's deprecation notice of `tf.lite.Interpreter`.
TFLITE_INTERPRETER_NOTICE = r"\s*Warning: tf.lite.Interpreter is deprecated"


def _write_tflite(export, directory, quantize, work_dir):
    import tensorflow as tf

    from bert_tf.export import serving
    content = tflite_model(export, quantize, work_dir=work_dir)
    with open(os.path.join(directory, MODEL_FILES[TFLITE]), "wb") as writer:
        writer.write(content)
    with warnings.catch_warnings():
        # Reading the signature names back only: TensorFlow's notice that
        # its interpreter moves to ai_edge_litert says nothing to the user.
        warnings.filterwarnings("ignore", TFLITE_INTERPRETER_NOTICE,
                                UserWarning)
        signatures = tf.lite.Interpreter(
            model_content=content).get_signature_list()
    return signatures[serving.SERVING_IDS]["outputs"]


def _write_tokenizer(export, directory):
    from bert_tf.checkpoints import hf_tokenizer
    tokenizer = export._tokenizer  # noqa: SLF001 (same package)
    shutil.copyfile(tokenizer.vocab_file, os.path.join(directory, VOCAB_FILE))
    files = hf_tokenizer.tokenizer_files(
        tokenizer.vocab_file, tokenizer.do_lower_case, export.max_seq_length)
    if hf_tokenizer.TOKENIZER_JSON_NAME not in files:
        raise ValueError(
            f"{tokenizer.vocab_file}: cannot write tokenizer.json (it needs "
            "the `tokenizers` package, pip install bert_tf[onnx], and a "
            "vocabulary with [UNK])")
    for name, text in files.items():
        with open(os.path.join(directory, name), "w",
                  encoding="utf-8") as writer:
            writer.write(text)


def check_options(export_format, quantize, enable_xla=False,
                  serving_dtype="float32"):
    """Raises ValueError for a combination `save` cannot write (the
    program calls it before loading the checkpoint, `save` again).

    Args:
      export_format: one of `FORMATS`.
      quantize: one of `QUANTIZATIONS`.
      enable_xla: the export compiles its model with XLA, which only
        TensorFlow runs: `SAVED_MODEL` only.
      serving_dtype: `float32`, or `bfloat16` (variables stored in
        bfloat16): `SAVED_MODEL` only; ONNX and TFLite have `quantize`.
    """
    if export_format not in FORMATS:
        raise ValueError(f"--format={export_format} is not one of "
                         f"{', '.join(FORMATS)}")
    if quantize not in QUANTIZATIONS:
        raise ValueError(f"--quantize={quantize} is not one of "
                         f"{', '.join(QUANTIZATIONS)}")
    if export_format == SAVED_MODEL and quantize != NO_QUANTIZATION:
        raise ValueError(
            "--quantize=int8 needs --format=onnx or --format=tflite (Keras' "
            "int8 quantization does not make the SavedModel faster on CPUs; "
            "see docs/serving.md)")
    if enable_xla and export_format != SAVED_MODEL:
        raise ValueError(
            f"--enable_xla needs --format=saved_model: {export_format} "
            "models run in their own runtime, which never runs TensorFlow's "
            "XLA-compiled functions")
    if serving_dtype != "float32" and export_format != SAVED_MODEL:
        raise ValueError(
            f"--serving_dtype={serving_dtype} needs --format=saved_model: "
            f"the {export_format} export is converted from float32 weights "
            "(for smaller, faster weights there: --quantize=int8)")


def save(export, export_dir, export_format=SAVED_MODEL,
         quantize=NO_QUANTIZATION, overwrite=False):
    """Writes `export` to `export_dir` in `export_format`.

    Args:
      export: one of `bert_tf.export.serving`'s exports.
      export_dir: the directory to create.
      export_format: one of `FORMATS`.
      quantize: one of `QUANTIZATIONS` (int8: ONNX or TFLite only).
      overwrite: replace an existing `export_dir` (once the new one is
        complete; an export of this project's only).

    Raises:
      ValueError: an unknown format or quantization, int8 with
        `saved_model`, or an `enable_xla` or bfloat16 export with another
        format.
      FileExistsError, file_io.WriteError: see
        `serving.export_directory`.
    """
    from bert_tf.export import serving
    check_options(export_format, quantize, export.enable_xla,
                  export.model.dtype_policy.name)
    if export_format == SAVED_MODEL:
        serving.save_export(export, export_dir, overwrite=overwrite)
        return
    input_names, input_rank = _ids_function(export)
    with serving.export_directory(export_dir, overwrite,
                                  description=MODEL_FILES[export_format]
                                  ) as directory:
        _write_tokenizer(export, directory)
        # Intermediates on the export's disk, in its temporary directory
        # (see the module docstring).
        work_dir = os.path.join(directory, INTERMEDIATE_DIR)
        os.mkdir(work_dir)
        writer = _write_onnx if export_format == ONNX else _write_tflite
        output_names = writer(export, directory, quantize, work_dir)
        shutil.rmtree(work_dir)
        description = packing_description(
            export, input_names, input_rank, output_names, export_format,
            quantize)
        with open(os.path.join(directory, PACKING_FILE), "w",
                  encoding="utf-8") as writer:
            json.dump(description, writer, indent=2, ensure_ascii=False)
            writer.write("\n")
