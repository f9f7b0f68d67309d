"""export_saved_model.py: SavedModels that serve raw text, checked against
the runners' own output files.

A Google-format checkpoint with a classifier head (and one with a SQuAD
head) is written; `run_classifier.py --do_predict` and `run_squad.py
--do_predict` predict with it and write `test_results.tsv` and
`predictions.json` / `nbest_predictions.json`; `export_saved_model.py`
exports the same checkpoint; then a fresh Python process in which bert_tf
cannot be imported loads the SavedModels with tensorflow and
tensorflow_text alone, feeds them the same raw texts, and its outputs must
be the runners' (answers character for character, probabilities to float
round-off). The inputs are chosen to exercise the in-graph steps: pair
truncation, an empty second text, lower-casing and accents, punctuation
glued to words, several whitespace kinds, words outside the vocabulary,
contexts spanning several windows and questions longer than
`--max_query_length`.

Also: `saved_model_cli show --all` and `saved_model_cli run` (with the
tensorflow_text ops registered) on an export, TensorFlow Serving's REST
row format, the TFLite conversion of `serving_ids`, the sentence
embeddings against Google's own `extract_features.py` output, and the
errors a user sees.
"""

import gzip
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from runner_harness import REPO_ROOT, run_in_process, run_runner
import export_saved_model

from bert_tf import checkpoints
from bert_tf.config import BertConfig
from bert_tf.data import classifier_features
from bert_tf.data import glue_processors
from bert_tf.tasks.classification import ClassificationModel
from bert_tf.tasks.squad import SquadModel
from bert_tf.text import tokenization
from tests.modeling_harness import randomize

GOLDEN_TEXT = REPO_ROOT / "tests" / "golden" / "extract_features" / "input.txt"
CLASSIFIER_SEQ_LENGTH = 24
SQUAD_FLAGS = ["--max_seq_length=48", "--doc_stride=12",
               "--max_query_length=10", "--n_best_size=7",
               "--max_answer_length=6"]

PAIRS = [
    ("The Tragedy of Hamlet, Prince of Denmark", "Shakespeare homepage"),
    ("Who's there?", ""),  # an empty second text: the one-text layout
    ("Nay, answer me: stand, and unfold yourself.",
     "Long live the king! " * 6),  # b is cut, then both
    ("Bernardo? " * 12, "He."),  # a is cut
    ("Café Ünïcode façade — naïve résumé", "ĞÜŞİÖÇ ΣΊΣΥΦΟΣ ß"),
    ("x" * 230 + " thin\u2009space\u00a0nbsp", "中文字 and 😀 emoji"),
]
SINGLE_TEXTS = [a for a, _ in PAIRS] + ["", "   "]

QUESTIONS = [
    ("Who is there?",
     "Bernardo (1895). Who's there? Nay, answer me:  stand,\tand unfold "
     "yourself.\nLong live the king! Bernardo? He. You come most "
     "carefully upon your hour."),
    ("What did the ghost of the dead king say to the prince, and when, "
     "and why?",  # longer than --max_query_length
     "Tis now struck twelve; get thee to bed, Francisco. For this relief "
     "much thanks: 'tis bitter cold, And I am sick at heart. Have you had "
     "quiet guard? Not a mouse stirring."),
    ("Où est le café?",
     "Le CAFÉ «Ça-va» est à Paris\u202fdepuis 1895—naïvement; l’été "
     "ΣΊΣΥΦΟΣ İstanbul 中文字 😀 x" + "y" * 210 + " fin."),
    ("Short?", "One"),
]


def _write_tsv(path, rows):
    path.write_text("".join("\t".join(row) + "\n" for row in rows),
                    encoding="utf-8")


def _checkpoint(model, prefix, seed, head_scale):
    """Random weights (heads scaled up, so that candidates are far apart),
    written as a Google-format checkpoint."""
    randomize(model, seed=seed)
    for variable in model.weights:
        if not variable.path.startswith("bert/"):
            variable.assign(variable * head_scale)
    checkpoints.save_checkpoint(
        {checkpoints.variable_name(v): v for v in model.weights}, prefix)
    return prefix


@pytest.fixture(scope="module")
def workspace(tmp_path_factory, golden_dir):
    root = tmp_path_factory.mktemp("export")
    cased = golden_dir / "models" / "cased_tiny"
    (root / "cased").mkdir()
    for name in ("vocab.txt", "bert_config.json"):
        (root / "cased" / name).write_bytes((cased / name).read_bytes())
    config = BertConfig.from_json_file(cased / "bert_config.json")
    _checkpoint(ClassificationModel(config, 2),
                root / "classifier" / "model.ckpt", seed=1, head_scale=30.0)

    (root / "uncased").mkdir()
    (root / "uncased" / "vocab.txt").write_bytes(
        (golden_dir / "models" / "uncased_vocab.txt").read_bytes())
    uncased_config = config.replace(vocab_size=30522)
    uncased_config.to_json_file(root / "uncased" / "bert_config.json")
    _checkpoint(SquadModel(uncased_config), root / "squad" / "model.ckpt",
                seed=2, head_scale=30.0)

    mrpc = root / "mrpc"
    mrpc.mkdir()
    _write_tsv(mrpc / "test.tsv",
               [["index", "#1 ID", "#2 ID", "#1 String", "#2 String"]]
               + [[str(i), "1", "2", a, b] for i, (a, b) in enumerate(PAIRS)])
    cola = root / "cola"
    cola.mkdir()
    _write_tsv(cola / "test.tsv", [["index", "sentence"]]
               + [[str(i), text] for i, text in enumerate(SINGLE_TEXTS)])
    articles = [{"title": "t", "paragraphs": [
        {"context": context,
         "qas": [{"id": f"q{i}", "question": question}]}]}
        for i, (question, context) in enumerate(QUESTIONS)]
    (root / "questions.json").write_text(
        json.dumps({"version": "1.1", "data": articles}), encoding="utf-8")
    return root


def _runner(script, workspace, model, *flags):
    run_runner(script, workspace / model, *flags)


def _export(workspace, model, name, *flag_list):
    """Runs export_saved_model.run in this process; returns the export."""
    export_dir = workspace / "exports" / name
    run_in_process(export_saved_model, f"--export_dir={export_dir}",
                   *flag_list, workspace=workspace / model)
    return export_dir


@pytest.fixture(scope="module")
def classifier_runs(workspace):
    """test_results.tsv of MRPC (pairs) and CoLA (one text)."""
    results = {}
    for task in ("mrpc", "cola"):
        output_dir = workspace / f"{task}_output"
        _runner("run_classifier.py", workspace, "cased",
                f"--task_name={task}", "--do_predict=true",
                "--do_lower_case=false",
                f"--data_dir={workspace / task}",
                f"--init_checkpoint={workspace / 'classifier' / 'model.ckpt'}",
                f"--max_seq_length={CLASSIFIER_SEQ_LENGTH}",
                f"--output_dir={output_dir}")
        results[task] = np.loadtxt(output_dir / "test_results.tsv",
                                   delimiter="\t", ndmin=2)
    return results


def _squad_run(workspace, name, *extra_flags):
    output_dir = workspace / name
    _runner("run_squad.py", workspace, "uncased", "--do_predict=true",
            f"--predict_file={workspace / 'questions.json'}",
            f"--init_checkpoint={workspace / 'squad' / 'model.ckpt'}",
            f"--output_dir={output_dir}", *SQUAD_FLAGS, *extra_flags)
    read = lambda name: json.loads(  # noqa: E731
        (output_dir / name).read_text(encoding="utf-8"))
    return read("predictions.json"), read("nbest_predictions.json")


@pytest.fixture(scope="module")
def squad_run(workspace):
    return _squad_run(workspace, "squad_output")


# The threshold makes some questions answer "" and others not.
SQUAD_V2_FLAGS = ["--version_2_with_negative=true",
                  "--null_score_diff_threshold=-2.0"]


@pytest.fixture(scope="module")
def squad_v2_run(workspace):
    return _squad_run(workspace, "squad_v2_output", *SQUAD_V2_FLAGS)


@pytest.fixture(scope="module")
def exports(workspace):
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
    }


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

requests = json.load(open(sys.argv[1], encoding="utf-8"))
results = {}
for name, request in requests.items():
    serve = tf.saved_model.load(request["export_dir"]).signatures[
        "serving_default"]
    outputs = serve(**{key: tf.constant(values, tf.string)
                       for key, values in request["inputs"].items()})
    results[name] = {key: decoded(value.numpy().tolist())
                     for key, value in outputs.items()}
json.dump(results, open(sys.argv[2], "w", encoding="utf-8"))
'''


@pytest.fixture(scope="module")
def served(workspace, exports):
    """Every export's serving_default outputs, from a fresh process."""
    requests = {
        "mrpc": {"export_dir": str(exports["mrpc"]), "inputs": {
            "text_a": [a for a, _ in PAIRS], "text_b": [b for _, b in PAIRS]}},
        "cola": {"export_dir": str(exports["cola"]),
                 "inputs": {"text_a": SINGLE_TEXTS}},
        "squad": {"export_dir": str(exports["squad"]), "inputs": {
            "question": [q for q, _ in QUESTIONS],
            "context": [c for _, c in QUESTIONS]}},
        "squad_v2": {"export_dir": str(exports["squad_v2"]), "inputs": {
            "question": [q for q, _ in QUESTIONS],
            "context": [c for _, c in QUESTIONS]}},
    }
    (workspace / "requests.json").write_text(json.dumps(requests),
                                             encoding="utf-8")
    (workspace / "loader.py").write_text(LOADER, encoding="utf-8")
    env = {key: value for key, value in os.environ.items()
           if key != "PYTHONPATH"}
    process = subprocess.run(
        [sys.executable, "-I", str(workspace / "loader.py"),
         str(workspace / "requests.json"), str(workspace / "served.json")],
        cwd=workspace, env={**env, "TF_CPP_MIN_LOG_LEVEL": "2",
                            "CUDA_VISIBLE_DEVICES": ""},
        capture_output=True, text=True, timeout=600)
    assert process.returncode == 0, process.stderr[-5000:]
    return json.loads((workspace / "served.json").read_text(encoding="utf-8"))


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


def test_saved_model_cli_show_and_run(exports):
    export_dir = str(exports["mrpc"])
    shown = subprocess.run(
        ["saved_model_cli", "show", "--all", "--dir", export_dir],
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
    lines = GOLDEN_TEXT.read_text(encoding="utf-8").splitlines()
    path = golden_dir / "extract_features" / "expected_output.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as records:
        golden = [json.loads(line) for line in records]
    # One-text lines only (Google's " ||| " marks a pair).
    indexes = [i for i, line in enumerate(lines) if "|||" not in line][:4]
    outputs = serve(text=tf.constant([lines[i] for i in indexes]))
    reader = tf.train.load_checkpoint(str(model_dir / "bert_model.ckpt"))
    kernel = reader.get_tensor("bert/pooler/dense/kernel")
    bias = reader.get_tensor("bert/pooler/dense/bias")
    for row, index in enumerate(indexes):
        last_layer = np.array([
            next(layer["values"] for layer in feature["layers"]
                 if layer["index"] == -1)
            for feature in golden[index]["features"]])
        np.testing.assert_allclose(outputs["mean_pooled"][row],
                                   last_layer.mean(axis=0), atol=1e-5)
        np.testing.assert_allclose(outputs["pooled_output"][row],
                                   np.tanh(last_layer[0] @ kernel + bias),
                                   atol=1e-5)


def _export_embeddings(tmp_path, model_dir):
    export_dir = tmp_path / "embeddings"
    run_in_process(export_saved_model, "--task_name=embeddings",
                   f"--init_checkpoint={model_dir / 'bert_model.ckpt'}",
                   "--do_lower_case=false", "--max_seq_length=48",
                   f"--export_dir={export_dir}", workspace=model_dir)
    return export_dir


def _run_export_script(workspace, *flag_list):
    return run_runner("export_saved_model.py", workspace / "cased",
                      *flag_list, expect_success=False)


def test_existing_export_dir_is_refused_unless_overwrite(workspace, exports):
    export_dir = exports["cola"]
    before = sorted(os.listdir(export_dir))
    marker = export_dir / "user_file.txt"
    marker.write_text("mine")
    checkpoint = f"--init_checkpoint={workspace / 'classifier' / 'model.ckpt'}"
    process = _run_export_script(
        workspace, "--task_name=cola", checkpoint, "--do_lower_case=false",
        f"--export_dir={export_dir}")
    assert process.returncode != 0
    last_line = process.stderr.strip().splitlines()[-1]
    assert last_line == (
        f"export_saved_model.py: error: {export_dir} already exists; choose "
        "another directory or allow replacing it (--overwrite)")
    assert marker.read_text() == "mine"
    # With --overwrite the new export replaces the old one whole.
    process = _run_export_script(
        workspace, "--task_name=cola", checkpoint, "--do_lower_case=false",
        f"--export_dir={export_dir}", "--overwrite",
        f"--max_seq_length={CLASSIFIER_SEQ_LENGTH}")
    assert process.returncode == 0, process.stderr[-3000:]
    assert sorted(os.listdir(export_dir)) == before
    assert not [name for name in os.listdir(export_dir.parent)
                if name.startswith(".")]


@pytest.mark.parametrize("flag_list, message", [
    (["--task_name=cola", "--init_checkpoint={pretrained}"],
     "output_weights"),  # a checkpoint without the classifier head
    (["--task_name=nope", "--init_checkpoint={classifier}"],
     "Task not found: nope"),
    (["--task_name=generic", "--init_checkpoint={classifier}"],
     "--task_name=generic needs --label_list"),
    (["--task_name=mnli", "--init_checkpoint={classifier}"],
     "output_weights"),  # 3 labels, the checkpoint has 2
    (["--task_name=squad", "--init_checkpoint={squad}",
      "--max_seq_length=12", "--max_query_length=10"],
     "The max_seq_length (12) must be greater than max_query_length (10) "
     "+ 3"),
])
def test_bad_input_is_reported_without_traceback(workspace, tmp_path,
                                                 golden_dir, flag_list,
                                                 message):
    flag_list = [flag.format(
        squad=workspace / "squad" / "model.ckpt",
        classifier=workspace / "classifier" / "model.ckpt",
        pretrained=golden_dir / "models" / "cased_tiny" / "bert_model.ckpt")
        for flag in flag_list]
    model = "uncased" if "squad" in flag_list[0] else "cased"
    process = run_runner("export_saved_model.py", workspace / model,
                         *flag_list, f"--export_dir={tmp_path / 'out'}",
                         expect_success=False)
    assert process.returncode == 1
    assert "Traceback" not in process.stderr
    # The error's first line is the program's; a checkpoint error goes on
    # to list each variable that does not fit.
    error = process.stderr[process.stderr.index(
        "export_saved_model.py: error: "):]
    assert message in error
    assert not os.path.exists(tmp_path / "out")
    assert os.listdir(tmp_path) == []
