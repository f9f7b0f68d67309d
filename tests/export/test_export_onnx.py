"""export_saved_model.py --format=onnx / tflite (and --quantize=int8):
the ids signature for ONNX Runtime and TFLite, checked against the
runners' own output files.

The checkpoints, inputs and runner runs are test_export_saved_model.py's
(`export_harness.py`, made once per session for both): MRPC pairs (truncation, an empty second text, accents,
long words), CoLA single texts (empty ones too), SQuAD questions over
several windows, the softmax and the CRF tagger over several windows, and
multiple choice. Each export is run in a fresh Python process in which
neither bert_tf nor tensorflow can be imported: ONNX Runtime and the
`tokenizers` package only. The classifiers' texts are tokenized there with
the export's `tokenizer.json` and `packing.json`, each batch padded to its
longest text (the dynamic axes); SQuAD's, tagging's and multiple choice's
windows are the runners' own features (computed here, sent as arrays).
The outputs must be the runners': probabilities to 1e-4, every answer and
n-best logit of run_squad.py (through Google's answer writing), every
word's label of run_tagging.py (the CRF's Viterbi decoding in the graph).
The TFLite exports are run the same way with tensorflow's interpreter
(slow: TensorFlow's import and the converter).
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import export_saved_model
from export_harness import (
    CLASSIFIER_SEQ_LENGTH, GOLDEN_MODEL, MULTIPLE_CHOICE_SEQ_LENGTH, PAIRS,
    QUESTIONS, SINGLE_TEXTS, SQUAD_FLAGS, TAGGING_FLAGS, TAGGING_LABELS,
    TAGGING_SENTENCES, TAGGING_SEQ_LENGTH, TAGGING_STRIDE,
    assert_embeddings_are_googles, golden_embedding_lines)
from runner_harness import error_line_in_process, run_in_process
from bert_tf.tasks.multiple_choice import examples as multiple_choice_data
from bert_tf.tasks.squad import examples as squad_examples
from bert_tf.tasks.squad import features as squad_features
from bert_tf.tasks.squad import postprocess as squad_postprocess
from bert_tf.tasks.tagging import features as tagging_features
from bert_tf.tasks.tagging.examples import TaggedSentence
from bert_tf.text import tokenization

# CoLA texts of few pieces ("Who's there?" and ""): a batch shorter than
# max_seq_length.
SHORT = (1, 6)
SQUAD_SEQ_LENGTH, SQUAD_STRIDE, SQUAD_QUERY_LENGTH = 48, 12, 10


@pytest.fixture(scope="module")
def workspace(export_workspace):
    """The checkpoints and inputs of test_export_saved_model.py
    (`export_harness.export_workspace`, made once per session)."""
    return export_workspace


def _export(workspace, model, name, export_format, *flag_list):
    export_dir = workspace / "portable" / name
    run_in_process(export_saved_model, f"--export_dir={export_dir}",
                   f"--format={export_format}", *flag_list,
                   workspace=workspace / model)
    return export_dir


def _exports(workspace, export_format, names):
    classifier = f"--init_checkpoint={workspace / 'classifier' / 'model.ckpt'}"
    flag_lists = {
        "mrpc": ("cased", "--task_name=MRPC", classifier,
                 "--do_lower_case=false",
                 f"--max_seq_length={CLASSIFIER_SEQ_LENGTH}"),
        "cola": ("cased", "--task_name=CoLA", classifier,
                 "--do_lower_case=false",
                 f"--max_seq_length={CLASSIFIER_SEQ_LENGTH}"),
        "squad": ("uncased", "--task_name=squad",
                  f"--init_checkpoint={workspace / 'squad' / 'model.ckpt'}",
                  *SQUAD_FLAGS),
        **{name: ("cased", "--task_name=tagging",
                  f"--init_checkpoint={workspace / name / 'model.ckpt'}",
                  "--do_lower_case=false", *TAGGING_FLAGS)
           for name in ("tagging", "tagging_crf")},
        "multiple_choice": (
            "cased", "--task_name=multiple_choice",
            f"--init_checkpoint="
            f"{workspace / 'multiple_choice' / 'model.ckpt'}",
            "--do_lower_case=false", "--input_format=jsonl",
            f"--max_seq_length={MULTIPLE_CHOICE_SEQ_LENGTH}"),
        "embeddings": ("cased", "--task_name=embeddings",
                       f"--init_checkpoint={GOLDEN_MODEL}",
                       "--do_lower_case=false", "--max_seq_length=48"),
    }
    exports = {}
    for name in names:
        base = name.removesuffix("_int8")
        model, *flag_list = flag_lists[base]
        if name.endswith("_int8"):
            flag_list.append("--quantize=int8")
        exports[name] = _export(workspace, model, f"{export_format}_{name}",
                                export_format, *flag_list)
    return exports


def _tagging_arrays(workspace):
    tokenizer = tokenization.FullTokenizer(
        str(workspace / "cased" / "vocab.txt"), do_lower_case=False)
    sentences = [TaggedSentence(words, None, [1] * len(words))
                 for words in TAGGING_SENTENCES]
    arrays = tagging_features.windows_to_arrays(
        tagging_features.convert_sentences(
            sentences, TAGGING_LABELS, tagging_features.TaggingWindowConfig(
                TAGGING_SEQ_LENGTH, TAGGING_STRIDE), tokenizer),
        TAGGING_SEQ_LENGTH)
    return sentences, arrays


def _squad_features(workspace):
    """run_squad.py's examples and windows of the questions."""
    examples = squad_examples.read_squad_examples(
        str(workspace / "questions.json"), is_training=False)
    tokenizer = tokenization.FullTokenizer(
        str(workspace / "uncased" / "vocab.txt"), do_lower_case=True)
    features = list(squad_features.generate_features(
        examples, tokenizer, SQUAD_SEQ_LENGTH, SQUAD_STRIDE,
        SQUAD_QUERY_LENGTH, is_training=False))
    return examples, features


def _multiple_choice_arrays(workspace):
    examples = multiple_choice_data.read_examples(
        str(workspace / "choices.jsonl"), "jsonl")
    tokenizer = tokenization.FullTokenizer(
        str(workspace / "cased" / "vocab.txt"), do_lower_case=False)
    return multiple_choice_data.examples_to_arrays(
        examples, MULTIPLE_CHOICE_SEQ_LENGTH, tokenizer)


ID_NAMES = ("input_ids", "input_mask", "segment_ids")


def _requests(workspace, exports):
    """What the fresh process runs: texts for the classifiers (it
    tokenizes them), the runners' arrays for the others."""
    _, tagging = _tagging_arrays(workspace)
    _, squad = _squad_features(workspace)
    squad_arrays = squad_features.features_to_arrays(squad, False)
    choices = _multiple_choice_arrays(workspace)
    tagging_names = ID_NAMES + ("word_positions", "word_mask")
    inputs = {
        "mrpc": {"texts": [[a, b] for a, b in PAIRS]},
        "cola": {"texts": [[text, ""] for text in SINGLE_TEXTS]},
        # Shorter texts: a batch shorter than max_seq_length.
        "cola_short": {"texts": [[SINGLE_TEXTS[i], ""] for i in SHORT]},
        "squad": {"arrays": {name: squad_arrays[name].tolist()
                             for name in ID_NAMES}},
        "tagging": {"arrays": {name: tagging[name].tolist()
                               for name in tagging_names}},
        "multiple_choice": {"arrays": {name: choices[name].tolist()
                                       for name in ID_NAMES}},
        "embeddings": {"texts": [[text, ""]
                                 for text in golden_embedding_lines()[1]]},
    }
    inputs["tagging_crf"] = inputs["tagging"]
    requests = {name: {"export_dir": str(directory),
                       **inputs[name.removesuffix("_int8")]}
                for name, directory in exports.items()}
    if "cola" in exports:
        requests["cola_short"] = {"export_dir": str(exports["cola"]),
                                  **inputs["cola_short"]}
    return requests


# The fresh process: no bert_tf, no tensorflow; onnxruntime (or the TFLite
# interpreter), tokenizers, numpy.
LOADER = r'''
import json, os, sys
BACKEND = sys.argv[3]
blocked = ["bert_tf"] + (["tensorflow"] if BACKEND == "onnx" else [])
for name in blocked:
    sys.modules[name] = None  # installed or not, it cannot be imported
    try:
        __import__(name)
        raise SystemExit(f"{name} is importable")
    except ImportError:
        pass
import numpy as np
import tokenizers

def tokenized(export_dir, packing, texts):
    """The runner's packing with tokenizer.json's pieces: [CLS] A [SEP]
    (B [SEP]), Google's pair truncation (from the longer text, from B on
    ties: tokenizers' "longest_first" cuts A on ties), padded to the
    batch's longest row."""
    tokenizer = tokenizers.Tokenizer.from_file(
        os.path.join(export_dir, "tokenizer.json"))
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    rows = []
    for a, b in texts:
        a = tokenizer.encode(a, add_special_tokens=False).ids
        b = tokenizer.encode(b, add_special_tokens=False).ids if b else []
        budget = packing["max_seq_length"] - (3 if b else 2)
        while len(a) + len(b) > budget:
            (a if len(a) > len(b) else b).pop()
        rows.append(([cls] + a + [sep] + (b + [sep] if b else []),
                     [0] * (len(a) + 2) + [1] * (len(b) + 1 if b else 0)))
    length = max(len(ids) for ids, _ in rows)
    pad = lambda values: values + [0] * (length - len(values))  # noqa
    return {"input_ids": [pad(ids) for ids, _ in rows],
            "input_mask": [pad([1] * len(ids)) for ids, _ in rows],
            "segment_ids": [pad(segments) for _, segments in rows]}

def run(export_dir, packing, inputs):
    arrays = {name: np.asarray(inputs[name], np.int32)
              for name in packing["inputs"]}
    path = os.path.join(export_dir, packing["model_file"])
    if BACKEND == "onnx":
        import onnxruntime
        session = onnxruntime.InferenceSession(
            path, providers=["CPUExecutionProvider"])
        names = [output.name for output in session.get_outputs()]
        return dict(zip(names, session.run(names, arrays)))
    import tensorflow as tf
    interpreter = tf.lite.Interpreter(model_path=path)
    return interpreter.get_signature_runner("serving_ids")(**arrays)

requests = json.load(open(sys.argv[1], encoding="utf-8"))
results = {}
for name, request in requests.items():
    export_dir = request["export_dir"]
    packing = json.load(open(os.path.join(export_dir, "packing.json"),
                             encoding="utf-8"))
    inputs = (tokenized(export_dir, packing, request["texts"])
              if "texts" in request else request["arrays"])
    outputs = run(export_dir, packing, inputs)
    results[name] = {"inputs": inputs, **{
        key: np.asarray(value).tolist() for key, value in outputs.items()
        if np.asarray(value).dtype.kind in "fiu"}}
json.dump(results, open(sys.argv[2], "w", encoding="utf-8"))
'''


def _serve(workspace, exports, backend):
    """Every export's outputs, from a fresh process."""
    prefix = workspace / f"{backend}_"
    requests = prefix.with_name(prefix.name + "requests.json")
    served = prefix.with_name(prefix.name + "served.json")
    loader = workspace / "portable_loader.py"
    requests.write_text(json.dumps(_requests(workspace, exports)),
                        encoding="utf-8")
    loader.write_text(LOADER, encoding="utf-8")
    env = {key: value for key, value in os.environ.items()
           if key != "PYTHONPATH"}
    process = subprocess.run(
        [sys.executable, "-I", str(loader), str(requests), str(served),
         backend], cwd=workspace, capture_output=True, text=True,
        timeout=600, env={**env, "TF_CPP_MIN_LOG_LEVEL": "2",
                          "CUDA_VISIBLE_DEVICES": ""})
    assert process.returncode == 0, process.stderr[-5000:]
    return json.loads(served.read_text(encoding="utf-8"))


# The golden MRPC, SQuAD and tagging cases (extended: `pytest --extended`,
# ONNX_SERVED), and the other tasks and int8 (slow).
ONNX_NAMES = ("mrpc", "cola", "squad", "tagging", "tagging_crf")
MORE_ONNX_NAMES = ("multiple_choice", "embeddings", "mrpc_int8")


@pytest.fixture(scope="module")
def onnx_exports(workspace):
    return _exports(workspace, "onnx", ONNX_NAMES)


@pytest.fixture(scope="module")
def onnx_served(workspace, onnx_exports):
    return _serve(workspace, onnx_exports, "onnx")


@pytest.fixture(scope="module")
def more_onnx_exports(workspace):
    return _exports(workspace, "onnx", MORE_ONNX_NAMES)


@pytest.fixture(scope="module")
def more_onnx_served(workspace, more_onnx_exports):
    return _serve(workspace, more_onnx_exports, "onnx")


ONNX_SERVED = pytest.mark.extended(reason=(
    "ONNX exports converted and served by ONNX Runtime; the default run "
    "serves every task's SavedModel export in a fresh process and checks "
    "the ONNX flags' rules"))


def _assert_classifiers(classifier_runs, served, atol=1e-4):
    for task in ("mrpc", "cola"):
        outputs = served[task]
        np.testing.assert_allclose(outputs["probabilities"],
                                   classifier_runs[task], atol=atol)
        assert outputs["label_id"] == classifier_runs[task].argmax(
            axis=1).tolist()
    short = served["cola_short"]
    assert len(short["inputs"]["input_ids"][0]) < CLASSIFIER_SEQ_LENGTH
    np.testing.assert_allclose(short["probabilities"],
                               classifier_runs["cola"][list(SHORT)],
                               atol=atol)


@ONNX_SERVED
def test_onnx_classifier_probabilities_are_run_classifiers(
        classifier_runs, onnx_served):
    _assert_classifiers(classifier_runs, onnx_served)


@ONNX_SERVED
def test_onnx_inputs_are_padded_to_the_batchs_longest_text(
        workspace, onnx_served):
    """The fresh process's ids (tokenizer.json, packing.json) are the
    runner's features cut to the batch's longest row: Google's
    tokenization and pair truncation."""
    tokenizer = tokenization.FullTokenizer(
        str(workspace / "cased" / "vocab.txt"), do_lower_case=False)
    from bert_tf.tasks.classification import (
        features as classifier_features,
        glue_processors,
    )
    for task, pairs in (
            ("mrpc", PAIRS), ("cola", [(text, "") for text in SINGLE_TEXTS]),
            ("cola_short", [(SINGLE_TEXTS[i], "") for i in SHORT])):
        features = [classifier_features.convert_single_example(
            glue_processors.InputExample(str(i), a, b or None), ["0", "1"],
            CLASSIFIER_SEQ_LENGTH, tokenizer)
            for i, (a, b) in enumerate(pairs)]
        inputs = onnx_served[task]["inputs"]
        length = max(sum(f.input_mask) for f in features)
        assert len(inputs["input_ids"][0]) == length
        for name in ID_NAMES:
            assert inputs[name] == [getattr(f, name)[:length]
                                    for f in features], (task, name)
    assert len(onnx_served["cola_short"]["inputs"]["input_ids"][0]) < (
        CLASSIFIER_SEQ_LENGTH)


def _assert_squad(workspace, squad_run, outputs, atol=1e-4):
    """ORT's logits through Google's answer writing give run_squad.py's
    answers and n-best lists."""
    examples, features = _squad_features(workspace)
    results = [squad_postprocess.RawResult(
        feature.unique_id, np.asarray(start, np.float32),
        np.asarray(end, np.float32)) for feature, start, end in zip(
            features, outputs["start_logits"], outputs["end_logits"])]
    predictions, nbest, _ = squad_postprocess.compute_predictions(
        examples, features, results,
        squad_postprocess.SquadPostprocessConfig(n_best_size=7,
                                                 max_answer_length=6),
        do_lower_case=True)
    expected_predictions, expected_nbest = squad_run
    assert dict(predictions) == expected_predictions
    for qid, entries in expected_nbest.items():
        assert [e["text"] for e in nbest[qid]] == [
            e["text"] for e in entries], qid
        for key in ("start_logit", "end_logit", "probability"):
            np.testing.assert_allclose([e[key] for e in nbest[qid]],
                                       [e[key] for e in entries], atol=atol)
    assert len(features) > len(QUESTIONS)  # several windows


@ONNX_SERVED
def test_onnx_squad_answers_are_run_squads(workspace, squad_run,
                                           onnx_served):
    _assert_squad(workspace, squad_run, onnx_served["squad"])


def _assert_tagging(workspace, tagging_runs, served):
    sentences, arrays = _tagging_arrays(workspace)
    for name in ("tagging", "tagging_crf"):
        assert tagging_features.assemble_sentence_predictions(
            sentences, arrays, np.asarray(served[name]["predicted_ids"]),
            TAGGING_LABELS) == tagging_runs[name], name


@ONNX_SERVED
def test_onnx_tagging_labels_are_run_taggings(workspace, tagging_runs,
                                              onnx_served):
    _assert_tagging(workspace, tagging_runs, onnx_served)


@pytest.mark.slow
def test_onnx_multiple_choice_probabilities_are_run_multiple_choices(
        multiple_choice_run, more_onnx_exports, more_onnx_served):
    assert _packing(more_onnx_exports["multiple_choice"])["input_shape"] == [
        "batch", "choices", "sequence"]
    np.testing.assert_allclose(
        more_onnx_served["multiple_choice"]["probabilities"], multiple_choice_run,
        atol=1e-4)


@pytest.mark.slow
def test_onnx_embeddings_are_googles_extract_features(more_onnx_served):
    """Mean-pooled last layer and pooled output of the golden checkpoint,
    against Google's extract_features.py values of the same texts."""
    assert_embeddings_are_googles(more_onnx_served["embeddings"],
                                  golden_embedding_lines()[0], atol=1e-4)


def _packing(export_dir):
    return json.loads((export_dir / "packing.json").read_text(
        encoding="utf-8"))


@ONNX_SERVED
def test_onnx_packing_json_describes_the_task(workspace, onnx_exports):
    mrpc = _packing(onnx_exports["mrpc"])
    assert {key: mrpc[key] for key in (
        "task", "max_seq_length", "do_lower_case", "labels", "has_text_b",
        "inputs", "model_file", "quantization")} == {
        "task": "classifier", "max_seq_length": CLASSIFIER_SEQ_LENGTH,
        "do_lower_case": False, "labels": ["0", "1"], "has_text_b": True,
        "inputs": list(ID_NAMES), "model_file": "model.onnx",
        "quantization": "none"}
    squad = _packing(onnx_exports["squad"])
    assert {key: squad[key] for key in (
        "task", "max_seq_length", "doc_stride", "max_query_length",
        "do_lower_case", "outputs")} == {
        "task": "squad", "max_seq_length": SQUAD_SEQ_LENGTH,
        "doc_stride": SQUAD_STRIDE, "max_query_length": SQUAD_QUERY_LENGTH,
        "do_lower_case": True, "outputs": ["end_logits", "start_logits"]}
    # The CRF's transitions, as the checkpoint holds them.
    crf = _packing(onnx_exports["tagging_crf"])
    reader = tf.train.load_checkpoint(
        str(workspace / "tagging_crf" / "model.ckpt"))
    np.testing.assert_array_equal(crf["crf_transitions"],
                                  reader.get_tensor("crf/transitions"))
    assert crf["labels"] == TAGGING_LABELS
    assert _packing(onnx_exports["tagging"])["crf_transitions"] is None
    for directory in onnx_exports.values():
        assert (directory / "vocab.txt").read_bytes() == (
            workspace / ("uncased" if "squad" in directory.name else "cased")
            / "vocab.txt").read_bytes()
        assert (directory / "tokenizer.json").is_file()


@pytest.mark.slow
def test_onnx_int8_is_quantized_and_close(onnx_exports, more_onnx_exports,
                                          more_onnx_served, classifier_runs):
    """Dynamic quantization: integer MatMuls, probabilities near the
    float32 runner's (random weights; the accuracy on real tasks is in the
    README)."""
    import onnx
    float_model = onnx.load(str(onnx_exports["mrpc"] / "model.onnx"))
    model = onnx.load(str(more_onnx_exports["mrpc_int8"] / "model.onnx"))
    operators = {node.op_type for node in model.graph.node}
    assert {"DynamicQuantizeLinear", "MatMulInteger"} <= operators
    assert "MatMulInteger" not in {n.op_type for n in float_model.graph.node}
    assert _packing(more_onnx_exports["mrpc_int8"])["quantization"] == "int8"
    np.testing.assert_allclose(more_onnx_served["mrpc_int8"]["probabilities"],
                               classifier_runs["mrpc"], atol=0.05)


def test_quantize_needs_onnx_or_tflite(workspace):
    error = error_line_in_process(
        export_saved_model, "--task_name=cola",
        f"--init_checkpoint={workspace / 'classifier' / 'model.ckpt'}",
        "--do_lower_case=false", "--quantize=int8",
        f"--export_dir={workspace / 'never'}", workspace=workspace / "cased")
    assert error == (
        "export_saved_model.py: error: --quantize=int8 needs --format=onnx "
        "or --format=tflite (Keras' int8 quantization does not make the "
        "SavedModel faster on CPUs; see docs/serving.md)")
    assert not (workspace / "never").exists()


@pytest.mark.slow
def test_tflite_exports_are_the_runners(workspace, classifier_runs,
                                        squad_run, tagging_runs,
                                        multiple_choice_run):
    """model.tflite, float32 and int8 (dynamic range), in a fresh process
    with tensorflow's interpreter and tokenizers."""
    exports = _exports(workspace, "tflite",
                       ("mrpc", "cola", "squad", "tagging", "tagging_crf",
                        "multiple_choice", "embeddings", "mrpc_int8"))
    served = _serve(workspace, exports, "tflite")
    assert_embeddings_are_googles(served["embeddings"],
                                  golden_embedding_lines()[0], atol=1e-4)
    _assert_classifiers(classifier_runs, served)
    _assert_squad(workspace, squad_run, served["squad"])
    _assert_tagging(workspace, tagging_runs, served)
    np.testing.assert_allclose(served["multiple_choice"]["probabilities"],
                               multiple_choice_run, atol=1e-4)
    np.testing.assert_allclose(served["mrpc_int8"]["probabilities"],
                               classifier_runs["mrpc"], atol=0.05)
    assert _packing(exports["mrpc_int8"])["model_file"] == "model.tflite"
    assert (exports["mrpc_int8"] / "model.tflite").stat().st_size < (
        exports["mrpc"] / "model.tflite").stat().st_size
