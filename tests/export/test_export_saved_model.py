"""export_saved_model.py: SavedModels that serve raw text, checked against
the runners' own output files.

Google-format checkpoints with a classifier head, a SQuAD head, a tagging
head (softmax, and with a CRF) and a multiple-choice head are written;
`run_classifier.py`, `run_squad.py`, `run_tagging.py` and
`run_multiple_choice.py --do_predict` predict with them and write
`test_results.tsv`, `predictions.json` / `nbest_predictions.json` and
`test_predictions.txt` (`export_harness.py`: the checkpoints, inputs and
runner runs, made once per session and shared with
test_export_onnx.py); `export_saved_model.py` exports the same
checkpoints; then a fresh Python process in which bert_tf cannot be
imported loads the SavedModels with tensorflow and tensorflow_text alone,
feeds them the same raw texts, and its outputs must be the runners'
(answers character for character, every word's label, probabilities to
float round-off). The inputs are chosen to exercise the in-graph steps: pair
truncation, an empty second text (or choice), lower-casing and accents,
punctuation glued to words, several whitespace kinds, words outside the
vocabulary, contexts and sentences spanning several windows and questions
longer than `--max_query_length`.

Also: `saved_model_cli show --all` and `saved_model_cli run` (with the
tensorflow_text ops registered) on an export, TensorFlow Serving's REST
row format, the TFLite conversion of `serving_ids` (classifier, softmax
tagger), the sentence embeddings against Google's own
`extract_features.py` output, and the errors a user sees. With
`--enable_xla` (the MRPC classifier and the CRF tagger): the fresh process
finds XLA's must-compile attribute on the function both signatures call,
and `serving_default` and `serving_ids` give the runners' outputs. With
`--serving_dtype=bfloat16` (the MRPC classifier): the SavedModel's
variables are stored in bfloat16 (LayerNorm and the head's bias in
float32), and the fresh process's predictions are the runner's, its
probabilities to a bfloat16 tolerance.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from export_harness import (
    CLASSIFIER_SEQ_LENGTH, MULTIPLE_CHOICE_RECORDS, MULTIPLE_CHOICE_SEQ_LENGTH,
    PAIRS, QUESTIONS, SINGLE_TEXTS, SQUAD_FLAGS, SQUAD_V2_FLAGS,
    TAGGING_FLAGS, TAGGING_LABELS, TAGGING_SENTENCES,
    assert_embeddings_are_googles, golden_embedding_lines, squad_predictions,
    write_checkpoint)
from runner_harness import (console_script, error_line_in_process,
                            run_in_process, run_runner)
import export_saved_model

from bert_tf.config import BertConfig
from bert_tf.tasks.classification import features as classifier_features
from bert_tf.tasks.classification import glue_processors
from bert_tf.tasks.squad.task import SquadModel
from bert_tf.tasks.tagging.task import TaggingModel
from bert_tf.text import tokenization

# How each sentence is sent: words joined by assorted whitespace (all of it
# whitespace to Python's str.split, as the runner's reader splits).
TAGGING_SEPARATORS = [" ", "\t", "  ", "\u3000", "\u00a0", " \n "]


@pytest.fixture(scope="module")
def workspace(export_workspace):
    """The checkpoints and inputs shared with test_export_onnx.py
    (`export_harness.export_workspace`, made once per session)."""
    return export_workspace


def _export(workspace, model, name, *flag_list):
    """Runs export_saved_model.run in this process; returns the export."""
    export_dir = workspace / "exports" / name
    run_in_process(export_saved_model, f"--export_dir={export_dir}",
                   *flag_list, workspace=workspace / model)
    return export_dir


@pytest.fixture(scope="module")
def squad_v2_run(workspace):
    return squad_predictions(workspace, "squad_v2_output", *SQUAD_V2_FLAGS)


@pytest.fixture(scope="module")
def tagging_export_process(workspace):
    """The softmax tagger exported as a user does: a process of its own,
    whose stderr is checked (`tagging_export`); the export is also the
    `exports` fixture's "tagging". Returns the finished process."""
    (workspace / "exports").mkdir(exist_ok=True)
    return run_runner(
        "export_saved_model.py", workspace / "cased", "--task_name=tagging",
        f"--init_checkpoint={workspace / 'tagging' / 'model.ckpt'}",
        "--do_lower_case=false", *TAGGING_FLAGS,
        f"--export_dir={workspace / 'exports' / 'tagging'}")


@pytest.fixture(scope="module")
def exports(workspace, tagging_export_process):
    checkpoint = f"--init_checkpoint={workspace / 'classifier' / 'model.ckpt'}"
    return {
        "mrpc": _export(workspace, "cased", "mrpc", "--task_name=MRPC",
                        checkpoint, "--do_lower_case=false",
                        f"--max_seq_length={CLASSIFIER_SEQ_LENGTH}"),
        "cola": _export(workspace, "cased", "cola", "--task_name=CoLA",
                        checkpoint, "--do_lower_case=false",
                        f"--max_seq_length={CLASSIFIER_SEQ_LENGTH}"),
        "squad": _export(workspace, "uncased", "squad", "--task_name=squad",
                         f"--init_checkpoint="
                         f"{workspace / 'squad' / 'model.ckpt'}",
                         *SQUAD_FLAGS),
        "squad_v2": _export(workspace, "uncased", "squad_v2",
                            "--task_name=squad",
                            f"--init_checkpoint="
                            f"{workspace / 'squad' / 'model.ckpt'}",
                            *SQUAD_FLAGS, *SQUAD_V2_FLAGS),
        # The label list comes from label_list.txt beside the checkpoint,
        # the CRF from the checkpoint. The softmax tagger's export is the
        # one a process of its own wrote (tagging_export_process).
        "tagging": workspace / "exports" / "tagging",
        "tagging_crf": _export(
            workspace, "cased", "tagging_crf", "--task_name=tagging",
            f"--init_checkpoint={workspace / 'tagging_crf' / 'model.ckpt'}",
            "--do_lower_case=false", *TAGGING_FLAGS),
        # --enable_xla: the model call XLA-compiled (test_xla_...).
        "mrpc_xla": _export(workspace, "cased", "mrpc_xla",
                            "--task_name=MRPC", checkpoint,
                            "--do_lower_case=false", "--enable_xla",
                            f"--max_seq_length={CLASSIFIER_SEQ_LENGTH}"),
        "tagging_crf_xla": _export(
            workspace, "cased", "tagging_crf_xla", "--task_name=tagging",
            f"--init_checkpoint={workspace / 'tagging_crf' / 'model.ckpt'}",
            "--do_lower_case=false", "--enable_xla", *TAGGING_FLAGS),
        # --serving_dtype=bfloat16: weights stored in bfloat16
        # (test_bfloat16_...).
        "mrpc_bf16": _export(workspace, "cased", "mrpc_bf16",
                             "--task_name=MRPC", checkpoint,
                             "--do_lower_case=false",
                             "--serving_dtype=bfloat16",
                             f"--max_seq_length={CLASSIFIER_SEQ_LENGTH}"),
        "tagging_bf16": _export(
            workspace, "cased", "tagging_bf16", "--task_name=tagging",
            f"--init_checkpoint={workspace / 'tagging' / 'model.ckpt'}",
            "--do_lower_case=false", "--serving_dtype=bfloat16",
            *TAGGING_FLAGS),
        **{f"multiple_choice_{input_format}": _export(
            workspace, "cased", f"multiple_choice_{input_format}",
            "--task_name=multiple_choice",
            f"--init_checkpoint={workspace / 'multiple_choice' / 'model.ckpt'}",
            "--do_lower_case=false", f"--input_format={input_format}",
            f"--max_seq_length={MULTIPLE_CHOICE_SEQ_LENGTH}")
           for input_format in ("jsonl", "swag")},
    }


def _tagging_texts():
    """The tagging sentences as one string each, words joined by assorted
    whitespace; and an empty one."""
    texts = []
    for index, words in enumerate(TAGGING_SENTENCES):
        separators = TAGGING_SEPARATORS[index:] + TAGGING_SEPARATORS[:index]
        text = words[0]
        for position, word in enumerate(words[1:]):
            text += separators[position % len(separators)] + word
        texts.append(f" {text}\t")
    return texts + [""]


# What the fresh process runs: tensorflow and tensorflow_text only.
LOADER = r'''
import json, sys
sys.modules["bert_tf"] = None  # installed or not, it cannot be imported
try:
    import bert_tf  # noqa: F401
    raise SystemExit("bert_tf is importable")
except ImportError:
    pass
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer's ops)

def decoded(value):
    if isinstance(value, list):
        return [decoded(item) for item in value]
    return value.decode("utf-8") if isinstance(value, bytes) else value

def outputs_of(signature, inputs, dtype):
    outputs = signature(**{key: tf.constant(values, dtype)
                           for key, values in inputs.items()})
    return {key: decoded(value.numpy().tolist())
            for key, value in outputs.items()}

def must_compile(signature):
    """The functions the signature calls that XLA must compile."""
    return sorted(function.signature.name for function in
                  signature.graph.as_graph_def().library.function
                  if function.attr["_XlaMustCompile"].b)

requests = json.load(open(sys.argv[1], encoding="utf-8"))
results = {"serving_default": {}, "serving_ids": {}, "must_compile": {}}
for name, request in requests.items():
    signatures = tf.saved_model.load(request["export_dir"]).signatures
    results["serving_default"][name] = outputs_of(
        signatures["serving_default"], request["inputs"], tf.string)
    if "ids_inputs" in request:
        results["serving_ids"][name] = outputs_of(
            signatures["serving_ids"], request["ids_inputs"], tf.int32)
    results["must_compile"][name] = {
        key: must_compile(signature) for key, signature in signatures.items()}
json.dump(results, open(sys.argv[2], "w", encoding="utf-8"))
'''


# The tagging exports' serving_ids inputs.
TAGGING_ID_INPUTS = ("input_ids", "input_mask", "segment_ids",
                     "word_positions", "word_mask")


def _tagging_windows(workspace):
    """run_tagging.py's sentences and windows (its own Python conversion)
    of `TAGGING_SENTENCES`: (sentences, `windows_to_arrays`' arrays, of
    which serving_ids takes `TAGGING_ID_INPUTS`)."""
    from bert_tf.tasks.tagging import features as tagging_features
    from bert_tf.tasks.tagging.examples import TaggedSentence
    tokenizer = tokenization.FullTokenizer(
        str(workspace / "cased" / "vocab.txt"), do_lower_case=False)
    sentences = [TaggedSentence(words, None, [1] * len(words))
                 for words in TAGGING_SENTENCES]
    arrays = tagging_features.windows_to_arrays(
        tagging_features.convert_sentences(
            sentences, TAGGING_LABELS,
            tagging_features.TaggingWindowConfig(16, 5), tokenizer), 16)
    return sentences, arrays


@pytest.fixture(scope="module")
def fresh_process(workspace, exports):
    """What a fresh process that loads the exports gets: every export's
    serving_default outputs, some exports' serving_ids outputs, and the
    XLA-compiled functions each signature calls
    ({"serving_default": {export: outputs}, "serving_ids": ...,
    "must_compile": {export: {signature: [function, ...]}}, "xla_compiled":
    whether XLA compiled a program in that process})."""
    pair_inputs = {"text_a": [a for a, _ in PAIRS],
                   "text_b": [b for _, b in PAIRS]}
    pair_ids = {name: value.tolist() for name, value in _python_features(
        workspace / "cased" / "vocab.txt", False, *pair_inputs.values(),
        CLASSIFIER_SEQ_LENGTH).items()}
    tagging_arrays = _tagging_windows(workspace)[1]
    tagging_ids = {name: tagging_arrays[name].tolist()
                   for name in TAGGING_ID_INPUTS}
    requests = {
        "mrpc": {"export_dir": str(exports["mrpc"]), "inputs": pair_inputs},
        "mrpc_xla": {"export_dir": str(exports["mrpc_xla"]),
                     "inputs": pair_inputs, "ids_inputs": pair_ids},
        "mrpc_bf16": {"export_dir": str(exports["mrpc_bf16"]),
                      "inputs": pair_inputs, "ids_inputs": pair_ids},
        "tagging_crf_xla": {"export_dir": str(exports["tagging_crf_xla"]),
                            "inputs": {"text": _tagging_texts()},
                            "ids_inputs": tagging_ids},
        "cola": {"export_dir": str(exports["cola"]),
                 "inputs": {"text_a": SINGLE_TEXTS}},
        "squad": {"export_dir": str(exports["squad"]), "inputs": {
            "question": [q for q, _ in QUESTIONS],
            "context": [c for _, c in QUESTIONS]}},
        "squad_v2": {"export_dir": str(exports["squad_v2"]), "inputs": {
            "question": [q for q, _ in QUESTIONS],
            "context": [c for _, c in QUESTIONS]}},
        **{name: {"export_dir": str(exports[name]),
                  "inputs": {"text": _tagging_texts()}}
           for name in ("tagging", "tagging_crf", "tagging_bf16")},
        "multiple_choice_jsonl": {
            "export_dir": str(exports["multiple_choice_jsonl"]), "inputs": {
                "context": [r.get("context", "")
                            for r in MULTIPLE_CHOICE_RECORDS],
                "question": [r["question"] for r in MULTIPLE_CHOICE_RECORDS],
                "choices": [r["choices"] for r in MULTIPLE_CHOICE_RECORDS]}},
        # The same examples without a question input: the context is what
        # the JSON-lines reader makes of context and question.
        "multiple_choice_swag": {
            "export_dir": str(exports["multiple_choice_swag"]), "inputs": {
                "context": [f"{r['context']} {r['question']}"
                            if r.get("context") else r["question"]
                            for r in MULTIPLE_CHOICE_RECORDS],
                "choices": [r["choices"] for r in MULTIPLE_CHOICE_RECORDS]}},
    }
    (workspace / "requests.json").write_text(json.dumps(requests),
                                             encoding="utf-8")
    (workspace / "loader.py").write_text(LOADER, encoding="utf-8")
    xla_dump = workspace / "xla_dump"
    xla_dump.mkdir()
    env = {key: value for key, value in os.environ.items()
           if key != "PYTHONPATH"}
    process = subprocess.run(
        [sys.executable, "-I", str(workspace / "loader.py"),
         str(workspace / "requests.json"), str(workspace / "served.json")],
        cwd=workspace, env={**env, "TF_CPP_MIN_LOG_LEVEL": "2",
                            "CUDA_VISIBLE_DEVICES": "",
                            "XLA_FLAGS": f"--xla_dump_to={xla_dump}"},
        capture_output=True, text=True, timeout=600)
    assert process.returncode == 0, process.stderr[-5000:]
    results = json.loads((workspace / "served.json").read_text(
        encoding="utf-8"))
    # XLA's own record that it compiled a program: the modules it dumps
    # (TensorFlow 2.20 also logged "Compiled cluster using XLA!", 2.21 no
    # longer does at TF_CPP_MIN_LOG_LEVEL=2).
    results["xla_compiled"] = any(
        name.startswith("module_") for name in os.listdir(xla_dump))
    return results


@pytest.fixture(scope="module")
def served(fresh_process):
    """Every export's serving_default outputs, from a fresh process."""
    return fresh_process["serving_default"]


def test_classifier_probabilities_are_run_classifiers(classifier_runs,
                                                      served):
    for task in ("mrpc", "cola"):
        expected = classifier_runs[task]
        probabilities = np.array(served[task]["probabilities"])
        np.testing.assert_allclose(probabilities, expected, atol=2e-6)
        labels = ["0", "1"]  # MRPC's and CoLA's label lists
        assert served[task]["label"] == [
            labels[i] for i in expected.argmax(axis=1)]
        assert served[task]["label_id"] == expected.argmax(axis=1).tolist()


# -- --pad_to_multiple_of: the length serving_default packs a request to --

def _built_export(workspace, monkeypatch, model, *flag_list):
    """The export `export_saved_model.run` builds for these flags (in this
    process, its saving replaced: the module is returned, not written)."""
    from bert_tf.export import portable
    built = []
    monkeypatch.setattr(portable, "save",
                        lambda export, *args, **kwargs: built.append(export))
    run_in_process(export_saved_model,
                   f"--export_dir={workspace / 'exports' / 'unwritten'}",
                   *flag_list, workspace=workspace / model)
    return built[0]


def _task_flags(workspace):
    """{task: (model, flags)} of every kind of export."""
    checkpoint = lambda name: (  # noqa: E731
        f"--init_checkpoint={workspace / name / 'model.ckpt'}")
    cased = ["--do_lower_case=false"]
    return {
        "mrpc": ("cased", ["--task_name=MRPC", checkpoint("classifier"),
                           *cased,
                           f"--max_seq_length={CLASSIFIER_SEQ_LENGTH}"]),
        "squad": ("uncased", ["--task_name=squad", checkpoint("squad"),
                              *SQUAD_FLAGS]),
        "tagging": ("cased", ["--task_name=tagging", checkpoint("tagging"),
                              *cased, *TAGGING_FLAGS]),
        "multiple_choice": ("cased", [
            "--task_name=multiple_choice", checkpoint("multiple_choice"),
            *cased, f"--max_seq_length={MULTIPLE_CHOICE_SEQ_LENGTH}"]),
        "embeddings": ("cased", [
            "--task_name=embeddings", *cased,
            f"--init_checkpoint={workspace / 'classifier' / 'model.ckpt'}",
            f"--max_seq_length={CLASSIFIER_SEQ_LENGTH}"]),
    }


def test_pad_to_multiple_of_reaches_every_export(workspace, monkeypatch):
    from bert_tf.export import portable
    for task, (model, flag_list) in _task_flags(workspace).items():
        export = _built_export(workspace, monkeypatch, model, *flag_list)
        # The defaults: 8, and the full length for squad (run_squad.py's).
        expected = (export.max_seq_length if task == "squad" else 8)
        assert export.pad_to_multiple_of == expected, task
        export = _built_export(workspace, monkeypatch, model, *flag_list,
                               "--pad_to_multiple_of=4")
        assert export.pad_to_multiple_of == 4, task
        assert export.length_policy.pad_to_multiple_of == 4, task
        # What ONNX and TFLite callers read.
        description = portable.packing_description(
            export, export.ID_INPUTS, export.ID_RANK, ["logits"],
            portable.ONNX, portable.NO_QUANTIZATION)
        assert description["pad_to_multiple_of"] == 4, task


@pytest.mark.extended(reason=(
    "exports packing every request to the full length; the default run "
    "serves length-cut requests and checks that --pad_to_multiple_of "
    "reaches every export"))
def test_full_length_packing_serves_the_same_outputs(
        workspace, monkeypatch, classifier_runs, tagging_runs):
    """--pad_to_multiple_of=<max_seq_length> packs every request to the
    full length; the default packs a short one shorter; both serve the
    runners' outputs (their files: the reference)."""
    model, flag_list = _task_flags(workspace)["mrpc"]
    full = f"--pad_to_multiple_of={CLASSIFIER_SEQ_LENGTH}"
    exports_by_packing = {
        "default": _built_export(workspace, monkeypatch, model, *flag_list),
        "full": _built_export(workspace, monkeypatch, model, *flag_list,
                              full)}
    short_pair = PAIRS[1]  # an empty text b: [CLS] a [SEP]
    pieces = tokenization.FullTokenizer(
        str(workspace / "cased" / "vocab.txt"),
        do_lower_case=False).tokenize(short_pair[0])
    lengths = {name: export._pack(*[tf.constant([text]) for text in
                                    short_pair])["input_ids"].shape[1]
               for name, export in exports_by_packing.items()}
    assert lengths == {"default": -(-(len(pieces) + 2) // 8) * 8,
                       "full": CLASSIFIER_SEQ_LENGTH}
    assert lengths["default"] < CLASSIFIER_SEQ_LENGTH
    for name, export in exports_by_packing.items():
        serve = export.signatures()["serving_default"]
        # One pair per request: each packed to its own length.
        probabilities = np.concatenate([
            serve(text_a=tf.constant([a]), text_b=tf.constant([b]))[
                "probabilities"].numpy() for a, b in PAIRS])
        np.testing.assert_allclose(probabilities, classifier_runs["mrpc"],
                                   atol=2e-6, err_msg=name)

    model, flag_list = _task_flags(workspace)["tagging"]
    for packing in ([], ["--pad_to_multiple_of=16"]):  # 16: the full length
        serve = _built_export(workspace, monkeypatch, model, *flag_list,
                              *packing).signatures()["serving_default"]
        for index, words in enumerate(TAGGING_SENTENCES):
            labels = _decoded(serve(text=tf.constant([" ".join(words)]))[
                "labels"])[0]
            assert labels[:len(words)] == tagging_runs["tagging"][index], (
                packing, index)


# -- --enable_xla: the model call one XLA-compiled function -----------------

def _must_compile(concrete_function):
    """The functions `concrete_function` calls that XLA must compile (the
    loader's `must_compile`, in this process)."""
    return sorted(function.signature.name for function in
                  concrete_function.graph.as_graph_def().library.function
                  if function.attr["_XlaMustCompile"].b)


@pytest.mark.extended(reason=(
    "--enable_xla on every kind of export; the default run serves XLA-compiled "
    "classifier and CRF tagger exports in a fresh process"))
def test_enable_xla_reaches_every_export(workspace, monkeypatch):
    """Every kind of export, both signatures: with --enable_xla each calls
    one function XLA must compile (without it none:
    test_xla_export_runs_compiled_in_a_fresh_process)."""
    for task, (model, flag_list) in _task_flags(workspace).items():
        export = _built_export(workspace, monkeypatch, model, *flag_list,
                               "--enable_xla")
        assert export.enable_xla, task
        for name, function in export.signatures().items():
            assert len(_must_compile(function)) == 1, (task, name)


def test_xla_export_runs_compiled_in_a_fresh_process(fresh_process):
    """The SavedModel keeps the must-compile attribute: a process that
    loads it runs the model as XLA programs (the same function for both
    signatures; XLA dumps what it compiles); the export without the
    flag has none."""
    assert fresh_process["xla_compiled"]
    must_compile = fresh_process["must_compile"]
    for name in ("mrpc_xla", "tagging_crf_xla"):
        functions = must_compile[name]
        assert len(functions["serving_default"]) == 1, name
        assert functions["serving_ids"] == functions["serving_default"], name
    assert must_compile["mrpc"] == {"serving_default": [],
                                    "serving_ids": []}


def test_xla_classifier_serves_run_classifiers_probabilities(
        fresh_process, classifier_runs):
    """Both signatures of the --enable_xla export give run_classifier.py's
    test_results.tsv (serving_ids: on its own Python features)."""
    expected = classifier_runs["mrpc"]
    for signature in ("serving_default", "serving_ids"):
        outputs = fresh_process[signature]["mrpc_xla"]
        np.testing.assert_allclose(outputs["probabilities"], expected,
                                   atol=1e-5, err_msg=signature)
        assert outputs["label_id"] == expected.argmax(axis=1).tolist()


def test_xla_tagger_serving_ids_gives_run_taggings_labels(
        workspace, fresh_process, tagging_runs):
    """The --enable_xla CRF tagger's serving_ids (Viterbi decoding
    compiled too) on run_tagging.py's own windows: its labels.
    (serving_default: test_tagging_labels_are_run_taggings.)"""
    from bert_tf.tasks.tagging import features as tagging_features
    sentences, arrays = _tagging_windows(workspace)
    predicted_ids = np.array(
        fresh_process["serving_ids"]["tagging_crf_xla"]["predicted_ids"])
    assert tagging_features.assemble_sentence_predictions(
        sentences, arrays, predicted_ids, TAGGING_LABELS) == (
        tagging_runs["tagging_crf"])


# -- --serving_dtype=bfloat16: weights stored and matmuls computed in bfloat16

# How far a bfloat16 export's probabilities may be from float32's. bfloat16
# keeps 8 significant bits: each weight, and each matmul's output, is
# rounded by up to 2^-9 (0.2%) of itself; a probability p moves by
# p(1 - p) <= 1/4 times the change of the logits' gap. Measured on a
# fine-tuned MiniLM-L6 (Rotten Tomatoes dev, 1,275 snippets, README): logits
# moved by at most 0.026, probabilities by at most 9.3e-3 (p99 5e-3).
# 2e-2 bounds that with room. The test classifier's probabilities are
# saturated (its head scaled 30x: logits ~35, which bfloat16 moved by up to
# 0.9 here, the probabilities by 3e-4); the argmax must be the runner's, for
# the classifier and for every word of the tagger (a pretrained encoder:
# varied labels).
BF16_PROBABILITY_TOLERANCE = 2e-2


def test_bfloat16_classifier_serves_run_classifiers_predictions(
        fresh_process, classifier_runs):
    """Both signatures of the --serving_dtype=bfloat16 export, loaded in the
    fresh process, give run_classifier.py's test_results.tsv labels and,
    to the bfloat16 tolerance, its probabilities (serving_ids: on the
    runner's own Python features); the outputs stay float32."""
    expected = classifier_runs["mrpc"]
    for signature in ("serving_default", "serving_ids"):
        outputs = fresh_process[signature]["mrpc_bf16"]
        probabilities = np.array(outputs["probabilities"])
        np.testing.assert_allclose(probabilities, expected,
                                   atol=BF16_PROBABILITY_TOLERANCE,
                                   err_msg=signature)
        assert outputs["label_id"] == expected.argmax(axis=1).tolist()
        assert outputs["label"] == [
            ["0", "1"][i] for i in expected.argmax(axis=1)]
    # bfloat16 did compute: the probabilities are not float32's to
    # float32 round-off (test_classifier_probabilities_are_run_classifiers:
    # 2e-6).
    assert np.abs(np.array(fresh_process["serving_default"]["mrpc_bf16"][
        "probabilities"]) - expected).max() > 1e-5


def test_bfloat16_tagger_gives_run_taggings_labels(tagging_runs, served):
    """The --serving_dtype=bfloat16 softmax tagger (the golden pretrained
    encoder, so words get varied labels), loaded in the fresh process,
    labels every word as run_tagging.py's test_predictions.txt."""
    expected = tagging_runs["tagging"]
    outputs = served["tagging_bf16"]
    for index, labels in enumerate(expected):
        assert outputs["labels"][index][:len(labels)] == labels, index
    assert len({label for labels in expected for label in labels}) > 2


def _saved_variable_dtypes(export_dir):
    """{variable path: dtype name} of a SavedModel's variables, read from
    its checkpoint files with TensorFlow's reader (no model code), the
    paths from the saved object graph."""
    from tensorflow.core.protobuf import trackable_object_graph_pb2
    reader = tf.train.load_checkpoint(
        str(export_dir / "variables" / "variables"))
    graph = trackable_object_graph_pb2.TrackableObjectGraph()
    graph.ParseFromString(reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"))
    dtypes = reader.get_variable_to_dtype_map()
    saved, pending = {}, [(0, "")]
    while pending:
        node_id, path = pending.pop()
        node = graph.nodes[node_id]
        for attribute in node.attributes:
            if attribute.name == "VARIABLE_VALUE":
                saved[path.rstrip("/")] = dtypes[
                    attribute.checkpoint_key].name
        pending.extend((child.node_id, f"{path}{child.local_name}/")
                       for child in node.children)
    return saved


def test_bfloat16_export_stores_bfloat16_variables(exports):
    """The SavedModel holds every weight matrix and embedding table in
    bfloat16 (half the bytes), LayerNorm's gamma and beta and the head's
    output_bias in float32; without the flag everything is float32."""
    saved = _saved_variable_dtypes(exports["mrpc_bf16"])
    assert len(saved) > 20, saved  # the encoder's variables are there
    float32 = {name for name, dtype in saved.items() if dtype == "float32"}
    bfloat16 = {name for name, dtype in saved.items() if dtype == "bfloat16"}
    assert float32 | bfloat16 == set(saved), saved
    assert float32 and all(
        "gamma" in name or "beta" in name or "output_bias" in name
        for name in float32), sorted(float32)
    assert any("word_embeddings" in name for name in bfloat16)
    assert any("output_weights" in name for name in bfloat16)
    assert sum("kernel" in name for name in bfloat16) == sum(
        "kernel" in name for name in saved)
    assert set(_saved_variable_dtypes(exports["mrpc"]).values()) == {
        "float32"}


def test_each_variable_is_saved_once_under_its_keras_path(exports):
    """The SavedModel's checkpoint holds each weight once, named by the
    model's variable path: as many tensors as the model has variables, no
    second copy (which doubled the export's size)."""
    saved = _saved_variable_dtypes(exports["mrpc"])
    reader = tf.train.load_checkpoint(
        str(exports["mrpc"] / "variables" / "variables"))
    values = [key for key in reader.get_variable_to_shape_map()
              if key.endswith("VARIABLE_VALUE")]
    assert len(values) == len(saved)
    assert all(name.startswith("model_variables/") for name in saved)
    assert "model_variables/bert/embeddings/word_embeddings" in saved


def test_serving_dtype_reaches_every_export(workspace, monkeypatch):
    """Every kind of export, with --serving_dtype=bfloat16: its model's
    weight matrices are bfloat16, LayerNorm's parameters float32."""
    for task, (model, flag_list) in _task_flags(workspace).items():
        export = _built_export(workspace, monkeypatch, model, *flag_list,
                               "--serving_dtype=bfloat16")
        dtypes = {weight.path: weight.dtype for weight in
                  export.model.weights}
        kernels = [path for path in dtypes if path.endswith("kernel")]
        assert kernels, task
        assert {dtypes[path] for path in kernels} == {"bfloat16"}, task
        assert {dtype for path, dtype in dtypes.items()
                if "LayerNorm" in path} == {"float32"}, task


@pytest.mark.slow
def test_bfloat16_exports_return_no_bfloat16(workspace, monkeypatch):
    """Every kind of bfloat16 export: neither signature returns a bfloat16
    tensor; serving_ids' float outputs (logits, scores, embeddings) are
    float32. (Traces every signature: ~40 s.)"""
    for task, (model, flag_list) in _task_flags(workspace).items():
        export = _built_export(workspace, monkeypatch, model, *flag_list,
                               "--serving_dtype=bfloat16")
        output_dtypes = {
            name: {tensor.dtype for tensor in tf.nest.flatten(
                function.structured_outputs)}
            for name, function in export.signatures().items()}
        for name, dtypes in output_dtypes.items():
            assert tf.bfloat16 not in dtypes, (task, name)
        assert tf.float32 in output_dtypes["serving_ids"], task


def test_serving_dtype_is_checked_before_the_checkpoint(workspace):
    """The builders refuse a dtype they do not serve, naming the flag,
    before reading the (here absent) checkpoint."""
    from bert_tf.tasks.classification import export as classification_export
    config = BertConfig.from_json_file(workspace / "cased" /
                                       "bert_config.json")
    with pytest.raises(ValueError, match=r"--serving_dtype='float16' is "
                       r"not one of float32, bfloat16"):
        classification_export.classifier_export(
            config, str(workspace / "cased" / "vocab.txt"), False,
            str(workspace / "absent" / "model.ckpt"), CLASSIFIER_SEQ_LENGTH,
            ["0", "1"], serving_dtype="float16")


@pytest.mark.parametrize("name", ["tagging", "tagging_crf",
                                  "tagging_crf_xla"])
def test_tagging_labels_are_run_taggings(tagging_runs, served, name):
    expected = tagging_runs[name.removesuffix("_xla")]
    outputs = served[name]
    assert len(outputs["labels"]) == len(TAGGING_SENTENCES) + 1
    for index, words in enumerate(TAGGING_SENTENCES):
        count = outputs["num_words"][index]
        assert count == len(words)
        assert outputs["words"][index][:count] == words
        assert outputs["labels"][index][:count] == expected[index], index
        assert set(outputs["labels"][index][count:]) <= {""}
    # The empty text has no word.
    assert outputs["num_words"][-1] == 0
    assert set(outputs["labels"][-1]) <= {""}


def test_tagging_inputs_exercise_windows_and_the_crf(workspace,
                                                     tagging_runs):
    from bert_tf.text.tokenization import FullTokenizer
    tokenizer = FullTokenizer(str(workspace / "cased" / "vocab.txt"),
                              do_lower_case=False)
    window = 16 - 2
    assert max(sum(len(tokenizer.tokenize(word)) for word in words)
               for words in TAGGING_SENTENCES) > 2 * window
    # The CRF's transitions change some labels of the same emissions.
    assert tagging_runs["tagging"] != tagging_runs["tagging_crf"]
    # Several labels occur.
    assert len({label for labels in tagging_runs["tagging"]
                for label in labels}) > 2


def test_multiple_choice_probabilities_are_run_multiple_choices(
        multiple_choice_run, served):
    for name in ("multiple_choice_jsonl", "multiple_choice_swag"):
        outputs = served[name]
        np.testing.assert_allclose(outputs["probabilities"],
                                   multiple_choice_run, atol=2e-6)
        assert outputs["label"] == multiple_choice_run.argmax(
            axis=1).tolist()


def _assert_same_answers(outputs, predictions, nbest):
    for index in range(len(QUESTIONS)):
        qid = f"q{index}"
        assert outputs["answer"][index] == predictions[qid], qid
        count = outputs["nbest_count"][index]
        assert outputs["nbest_text"][index][:count] == [
            entry["text"] for entry in nbest[qid]], qid
        np.testing.assert_allclose(
            outputs["nbest_probability"][index][:count],
            [entry["probability"] for entry in nbest[qid]], atol=1e-5)
        np.testing.assert_allclose(
            outputs["nbest_start_logit"][index][:count],
            [entry["start_logit"] for entry in nbest[qid]], atol=1e-5)
        best = next(entry for entry in nbest[qid]
                    if entry["text"] == predictions[qid])
        assert outputs["probability"][index] == pytest.approx(
            best["probability"], abs=1e-5)


def test_squad_answers_are_run_squads(squad_run, served):
    predictions, nbest = squad_run
    _assert_same_answers(served["squad"], predictions, nbest)
    # The inputs exercise what they are meant to: answers that are not
    # whole words, and several windows.
    assert any(entry["text"] not in QUESTIONS[i][1].split()
               for i in range(len(QUESTIONS))
               for entry in nbest[f"q{i}"])


def test_squad_2_answers_are_run_squads(squad_v2_run, served):
    predictions, nbest = squad_v2_run
    _assert_same_answers(served["squad_v2"], predictions, nbest)
    # Both kinds of answers occur.
    assert "" in predictions.values()
    assert any(predictions.values())


def test_rest_row_format_maps_onto_the_signature(exports, classifier_runs):
    """TensorFlow Serving's `{"instances": [{"text_a": ..., "text_b": ...}]}`
    becomes one [batch] string tensor per key; the signature takes exactly
    those keys."""
    body = json.loads(json.dumps({"instances": [
        {"text_a": a, "text_b": b} for a, b in PAIRS]}))
    serve = tf.saved_model.load(str(exports["mrpc"])).signatures[
        "serving_default"]
    keys = set(serve.structured_input_signature[1])
    assert all(set(instance) == keys for instance in body["instances"])
    for spec in serve.structured_input_signature[1].values():
        assert spec.dtype == tf.string and spec.shape.as_list() == [None]
    inputs = {key: tf.constant([instance[key]
                                for instance in body["instances"]])
              for key in keys}
    np.testing.assert_allclose(serve(**inputs)["probabilities"],
                               classifier_runs["mrpc"], atol=2e-6)


def test_rest_row_format_of_tagging_and_multiple_choice(exports):
    """The instances' keys are the signatures' inputs: one string per
    instance, and a list of choices per instance."""
    expected = {
        "tagging": {"text": [None]},
        "tagging_crf": {"text": [None]},
        "multiple_choice_swag": {"context": [None], "choices": [None, None]},
        "multiple_choice_jsonl": {"context": [None], "question": [None],
                                  "choices": [None, None]},
    }
    for name, inputs in expected.items():
        serve = tf.saved_model.load(str(exports[name])).signatures[
            "serving_default"]
        specs = serve.structured_input_signature[1]
        assert {key: spec.shape.as_list() for key, spec in specs.items()} == (
            inputs), name
        assert all(spec.dtype == tf.string for spec in specs.values())


@pytest.mark.parametrize("name", ["tagging", "tagging_crf"])
def test_tagging_serving_ids_converts_to_tflite(workspace, exports,
                                                tagging_runs, name):
    """The softmax and the CRF tagger: the TFLite interpreter on the
    windows run_tagging.py's own conversion makes gives the labels of its
    test_predictions.txt (the CRF's Viterbi decoding included)."""
    from bert_tf.tasks.tagging import features as tagging_features
    sentences, arrays = _tagging_windows(workspace)
    converter = tf.lite.TFLiteConverter.from_saved_model(
        str(exports[name]), signature_keys=["serving_ids"])
    interpreter = tf.lite.Interpreter(model_content=converter.convert())
    outputs = interpreter.get_signature_runner("serving_ids")(**{
        name: arrays[name] for name in TAGGING_ID_INPUTS})
    assert tagging_features.assemble_sentence_predictions(
        sentences, arrays, outputs["predicted_ids"], TAGGING_LABELS) == (
        tagging_runs[name])


@pytest.mark.extended(reason=(
    "TensorFlow's saved_model_cli (the session-based loader of TensorFlow "
    "Serving) in two processes; the default run checks that each variable "
    "is saved once under its name and serves every export in a fresh "
    "process"))
def test_saved_model_cli_show_and_run(exports):
    export_dir = str(exports["mrpc"])
    shown = subprocess.run(
        [console_script("saved_model_cli"), "show", "--all", "--dir",
         export_dir],
        capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0, shown.stderr[-3000:]
    for line in ("signature_def['serving_default']",
                 "signature_def['serving_ids']", "inputs['text_a']",
                 "inputs['text_b']", "outputs['probabilities']",
                 "inputs['input_ids']"):
        assert line in shown.stdout
    # `saved_model_cli run` is TensorFlow's CLI; the tokenizer's ops come
    # from tensorflow_text, which must be imported first (TensorFlow
    # Serving links them in).
    ran = subprocess.run(
        [sys.executable, "-c",
         "import tensorflow_text; "
         "from tensorflow.python.tools.saved_model_cli import main; main()",
         "run", "--dir", export_dir, "--tag_set", "serve",
         "--signature_def", "serving_default", "--input_exprs",
         f"text_a={[PAIRS[0][0]]!r};text_b={[PAIRS[0][1]]!r}"],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "Result for output key probabilities" in ran.stdout
    assert "Result for output key label" in ran.stdout


def _python_features(vocab_file, do_lower_case, text_a, text_b,
                     max_seq_length):
    """run_classifier.py's features, by its own Python code."""
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case)
    features = [classifier_features.convert_single_example(
        glue_processors.InputExample(guid=str(i), text_a=a, text_b=b),
        ["0", "1"], max_seq_length, tokenizer)
        for i, (a, b) in enumerate(zip(text_a, text_b))]
    return {name: np.array([getattr(f, name) for f in features], np.int32)
            for name in ("input_ids", "input_mask", "segment_ids")}


def test_serving_ids_converts_to_tflite(workspace, exports, classifier_runs):
    converter = tf.lite.TFLiteConverter.from_saved_model(
        str(exports["mrpc"]), signature_keys=["serving_ids"])
    interpreter = tf.lite.Interpreter(model_content=converter.convert())
    runner = interpreter.get_signature_runner("serving_ids")
    features = _python_features(
        workspace / "cased" / "vocab.txt", False, [a for a, _ in PAIRS],
        [b for _, b in PAIRS], CLASSIFIER_SEQ_LENGTH)
    outputs = runner(**features)
    np.testing.assert_allclose(outputs["probabilities"],
                               classifier_runs["mrpc"], atol=1e-5)


def test_embeddings_match_googles_extract_features(tmp_path, golden_dir):
    """Mean-pooled last layer and pooled output of the golden checkpoint,
    against Google's extract_features.py values of the same text."""
    model_dir = golden_dir / "models" / "cased_tiny"
    export_dir = _export_embeddings(tmp_path, model_dir)
    serve = tf.saved_model.load(str(export_dir)).signatures["serving_default"]
    indexes, lines = golden_embedding_lines()
    outputs = serve(text=tf.constant(lines))
    assert_embeddings_are_googles(
        {name: outputs[name].numpy() for name in ("mean_pooled",
                                                  "pooled_output")},
        indexes, atol=1e-5)


def _export_embeddings(tmp_path, model_dir):
    export_dir = tmp_path / "embeddings"
    run_in_process(export_saved_model, "--task_name=embeddings",
                   f"--init_checkpoint={model_dir / 'bert_model.ckpt'}",
                   "--do_lower_case=false", "--max_seq_length=48",
                   f"--export_dir={export_dir}", workspace=model_dir)
    return export_dir


def test_existing_export_dir_is_refused_unless_overwrite(workspace, exports):
    export_dir = exports["cola"]
    before = sorted(os.listdir(export_dir))
    marker = export_dir / "user_file.txt"
    marker.write_text("mine")
    checkpoint = f"--init_checkpoint={workspace / 'classifier' / 'model.ckpt'}"
    error = error_line_in_process(
        export_saved_model, "--task_name=cola", checkpoint,
        "--do_lower_case=false", f"--export_dir={export_dir}",
        workspace=workspace / "cased")
    assert error == (
        f"export_saved_model.py: error: {export_dir} already exists; choose "
        "another directory or allow replacing it (--overwrite)")
    assert marker.read_text() == "mine"
    # Nor with --overwrite: a file the export did not write is never
    # deleted.
    error = error_line_in_process(
        export_saved_model, "--task_name=cola", checkpoint,
        "--do_lower_case=false", f"--export_dir={export_dir}", "--overwrite",
        workspace=workspace / "cased")
    assert error == (
        f"export_saved_model.py: error: --overwrite replaces only a "
        f"SavedModel that export_saved_model.py wrote, and {export_dir} also "
        f"holds {marker}, which the export did not write: refusing to delete "
        f"it; move it away or choose another --export_dir")
    assert marker.read_text() == "mine"
    marker.unlink()
    # With --overwrite the new export replaces the old one whole.
    run_in_process(
        export_saved_model, "--task_name=cola", checkpoint,
        "--do_lower_case=false", f"--export_dir={export_dir}", "--overwrite",
        f"--max_seq_length={CLASSIFIER_SEQ_LENGTH}",
        workspace=workspace / "cased")
    assert sorted(os.listdir(export_dir)) == before
    assert not [name for name in os.listdir(export_dir.parent)
                if name.startswith(".")]


@pytest.mark.parametrize("flag_list, message", [
    (["--task_name=cola", "--init_checkpoint={pretrained}"],
     "output_weights"),  # a checkpoint without the classifier head
    (["--task_name=nope", "--init_checkpoint={classifier}"],
     "--task_name=nope: unknown task; one of: cola, generic, "),
    (["--task_name=cola", "--init_checkpoint={classifier}",
      "--pad_to_multiple_of=0"],
     "--pad_to_multiple_of=0 must be a positive integer"),
    (["--task_name=generic", "--init_checkpoint={classifier}"],
     "--task_name=generic needs --label_list"),
    (["--task_name=mnli", "--init_checkpoint={classifier}"],
     "output_weights"),  # 3 labels, the checkpoint has 2
    (["--task_name=squad", "--init_checkpoint={squad}",
      "--max_seq_length=12", "--max_query_length=10"],
     "The max_seq_length (12) must be greater than max_query_length (10) "
     "+ 3"),
    # No label_list.txt beside the checkpoint, and no --label_list.
    (["--task_name=tagging", "--init_checkpoint={classifier}"],
     "label_list.txt not found"),
    (["--task_name=tagging", "--init_checkpoint={tagging}", "--use_crf"],
     "--use_crf=true, but the checkpoint"),
    (["--task_name=tagging", "--init_checkpoint={tagging}",
      "--label_list=O,B-PER"],
     "output_weights"),  # 2 labels, the checkpoint has 4
    (["--task_name=multiple_choice", "--init_checkpoint={classifier}"],
     "output_weights"),  # one score per choice, the checkpoint has 2
    # Refused before the checkpoint (which lacks the head) is loaded.
    *[(["--task_name=cola", "--init_checkpoint={pretrained}",
        f"--format={export_format}", "--enable_xla"],
       f"--enable_xla needs --format=saved_model: {export_format} models "
       "run in their own runtime")
      for export_format in ("onnx", "tflite")],
    *[(["--task_name=cola", "--init_checkpoint={pretrained}",
        f"--format={export_format}", "--serving_dtype=bfloat16"],
       f"--serving_dtype=bfloat16 needs --format=saved_model: the "
       f"{export_format} export is converted from float32 weights (for "
       "smaller, faster weights there: --quantize=int8)")
      for export_format in ("onnx", "tflite")],
])
def test_bad_input_is_reported_without_traceback(workspace, tmp_path,
                                                 golden_dir, flag_list,
                                                 message):
    raw_flags = flag_list
    flag_list = [flag.format(
        squad=workspace / "squad" / "model.ckpt",
        classifier=workspace / "classifier" / "model.ckpt",
        tagging=workspace / "tagging" / "model.ckpt",
        pretrained=golden_dir / "models" / "cased_tiny" / "bert_model.ckpt")
        for flag in flag_list]
    model = "uncased" if "squad" in flag_list[0] else "cased"
    flag_list += [f"--export_dir={tmp_path / 'out'}"]
    if message == "output_weights" and "{pretrained}" in raw_flags[1]:
        # One case as the user meets it: a process of its own, status 1.
        process = run_runner("export_saved_model.py", workspace / model,
                             *flag_list, expect_success=False)
        assert process.returncode == 1
        assert "Traceback" not in process.stderr
        error = process.stderr[process.stderr.index(
            "export_saved_model.py: error: "):]
    else:
        error = error_line_in_process(export_saved_model, *flag_list,
                                      workspace=workspace / model)
    # The error's first line is the program's; a checkpoint error goes on
    # to list each variable that does not fit.
    assert error.startswith("export_saved_model.py: error: ")
    assert message in error
    assert not os.path.exists(tmp_path / "out")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("causal_attention", [False, True])
def test_export_rebuilds_causal_and_bilstm_squad_models(workspace,
                                                        causal_attention):
    """A --span_bilstm checkpoint is exported with its BiLSTM (units read
    from its variables) and --causal_attention reaches the encoder: the
    export's model gives the fine-tuned model's logits."""
    from bert_tf.tasks.squad import export as squad_export_lib
    from tests.modeling_harness import random_batch
    config = BertConfig.from_json_file(
        workspace / "uncased" / "bert_config.json")
    trained = SquadModel(config, causal_attention=True, bilstm_units=6)
    prefix = write_checkpoint(
        trained, workspace / "squad_ltr_bilstm" / "model.ckpt", seed=5,
        head_scale=1.0)
    export = squad_export_lib.squad_export(
        config, str(workspace / "uncased" / "vocab.txt"), True, str(prefix),
        max_seq_length=32, doc_stride=16, max_query_length=8, n_best_size=3,
        max_answer_length=5, causal_attention=causal_attention)
    assert export.model.bilstm_units == 6
    input_ids, input_mask, segment_ids = random_batch(config, 2, 12, seed=6)
    features = {"input_ids": input_ids, "input_mask": input_mask,
                "segment_ids": segment_ids}
    expected = trained(features)
    got = export.model(features)
    same = all(np.allclose(expected[key], got[key], atol=1e-5)
               for key in ("start_logits", "end_logits"))
    # Only the fine-tuning run's --causal_attention gives its logits.
    assert same == causal_attention


def test_export_rebuilds_a_tagging_model_with_its_bilstm(workspace):
    """A run_tagging.py --tagging_bilstm checkpoint is exported with its
    BiLSTM (units read from its variables): the fine-tuned model's
    logits."""
    from bert_tf.tasks.tagging import export as tagging_export_lib
    from tests.modeling_harness import random_batch
    config = BertConfig.from_json_file(
        workspace / "uncased" / "bert_config.json")
    trained = TaggingModel(config, 3, bilstm_units=5)
    prefix = write_checkpoint(trained,
                              workspace / "tagging_bilstm" / "model.ckpt",
                              seed=7, head_scale=1.0)
    export = tagging_export_lib.tagging_export(
        config, str(workspace / "uncased" / "vocab.txt"), True, str(prefix),
        max_seq_length=32, doc_stride=16, label_list=["O", "B-X", "I-X"])
    assert export.model.bilstm_units == 5
    input_ids, input_mask, segment_ids = random_batch(config, 2, 12, seed=8)
    positions = np.tile(np.arange(12, dtype=np.int32), (2, 1))
    features = {"input_ids": input_ids, "input_mask": input_mask,
                "segment_ids": segment_ids, "word_positions": positions,
                "word_mask": np.ones((2, 12), np.int32)}
    np.testing.assert_allclose(export.model(features)["logits"],
                               trained(features)["logits"], atol=1e-5)
    # --serving_dtype=bfloat16: the LSTMs keep float32 variables (Keras'
    # orthogonal initializer cannot make bfloat16 ones) and compute in
    # bfloat16 like the encoder; the logits are the model's to bfloat16's
    # precision (these are O(1): 2^-9 relative per rounding, a few dozen
    # roundings deep; observed 0.019).
    bf16 = tagging_export_lib.tagging_export(
        config, str(workspace / "uncased" / "vocab.txt"), True, str(prefix),
        max_seq_length=32, doc_stride=16, label_list=["O", "B-X", "I-X"],
        serving_dtype="bfloat16")
    dtypes = {weight.path: weight.dtype for weight in bf16.model.weights}
    assert {dtype for path, dtype in dtypes.items()
            if path.startswith("bilstm/")} == {"float32"}
    assert {dtype for path, dtype in dtypes.items()
            if path.startswith("bert/encoder/")
            and path.endswith("kernel")} == {"bfloat16"}
    logits = bf16.model(features)["logits"]
    assert logits.dtype == tf.float32
    np.testing.assert_allclose(logits, trained(features)["logits"],
                               atol=5e-2)


@pytest.fixture(scope="module")
def tagging_export(exports, tagging_export_process):
    """The softmax tagger exported as a user does (a process of its own;
    its stderr kept as `tagging_export.stderr`), loaded here."""
    import tensorflow_text  # noqa: F401  (registers the tokenizer's ops)
    serve = tf.saved_model.load(str(exports["tagging"])).signatures[
        "serving_default"]
    serve.stderr = tagging_export_process.stderr
    return serve


def test_export_prints_none_of_tensorflows_info_lines(tagging_export):
    """The quiet start holds for the save: no `Function ... contains input
    name(s)`, `Sharding callback duration`, `Assets written to`; the
    program's own lines stay."""
    lines = tagging_export.stderr.splitlines()
    assert any("] Exported tagging to " in line for line in lines), lines
    for noise in ("contains input name(s)", "Sharding callback duration",
                  "Assets written to", "Writing fingerprint"):
        assert not any(noise in line for line in lines), noise


def _decoded(tensor):
    return [[value.decode("utf-8") for value in row]
            for row in tensor.numpy().tolist()]


def test_tagging_words_keep_a_nul_character(tagging_export):
    """run_tagging.py's reader splits with str.split(), which keeps a NUL
    inside its word; the tokenizer then drops it (Google's _clean_text), so
    "a\\x00b" is labelled as "ab" is."""
    texts = ["a\x00b EU rejects", "ab EU rejects", "\x00 x"]
    outputs = tagging_export(text=tf.constant(texts))
    assert _decoded(outputs["words"]) == [
        text.split() + [""] * (3 - len(text.split())) for text in texts]
    assert outputs["num_words"].numpy().tolist() == [3, 3, 2]
    labels = _decoded(outputs["labels"])
    assert labels[0] == labels[1]


def test_a_single_example_is_a_batch_of_one(exports, tagging_export):
    """A scalar string (and one example's choices) is served as a batch of
    one, with the outputs of the same example in a batch; a rank too high
    is an error naming the input."""
    sentence = "Who's there? Bernardo"
    single = tagging_export(text=tf.constant(sentence))
    batch = tagging_export(text=tf.constant([sentence, "x"]))
    assert _decoded(single["labels"]) == [
        _decoded(batch["labels"])[0][:3]]
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"input text must have rank 0 \(one example\) "
                             r"or 1 \(a batch\)"):
        tagging_export(text=tf.constant([[sentence]]))
    serve = tf.saved_model.load(str(exports["multiple_choice_swag"])
                                ).signatures["serving_default"]
    record = MULTIPLE_CHOICE_RECORDS[0]
    single = serve(context=tf.constant(record["context"]),
                   choices=tf.constant(record["choices"]))
    batch = serve(context=tf.constant([record["context"]] * 2),
                  choices=tf.constant([record["choices"]] * 2))
    np.testing.assert_allclose(single["probabilities"].numpy(),
                               batch["probabilities"].numpy()[:1], atol=1e-6)
