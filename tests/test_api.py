"""bert_tf.load / bert_tf.finetune: raw text from Python, checked against
independent references and the runners' own files.

- `embed` against Google's `extract_features.py` output of the golden
  checkpoint (the last layer, averaged; the pooler computed in numpy from
  the checkpoint's tensors);
- `fill_mask` against Google's masked-LM head in numpy (the encoder in
  numpy too, `modeling_harness.np_bert_forward`) on ids built by hand from
  the vocabulary;
- `finetune` + `load(output_dir).predict` (and `load(SavedModel)`) against
  the `test_results.tsv`, `test_predictions.txt` / `.jsonl` and
  `predictions.json` that the same runs wrote, and `finetune`'s metrics
  against `eval_results.txt`;
- the "Use it from Python" code of docs/python-api.md, run as written on
  the tiny golden checkpoint;
- every bad input's one-line `ValueError`.

The runs that fine-tune (each 20-40 s of tracing on a shared 2-core
machine) are marked slow; the rest runs by default.
"""

import dataclasses
import importlib
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest


from runner_harness import REPO_ROOT, read_eval_results, run_in_process

import bert_tf
from bert_tf import api
from bert_tf import checkpoints
from bert_tf.export import served as served_lib
from tests import modeling_harness
from tests.modeling_harness import (np_bert_forward, np_gelu, np_layer_norm,
                                    np_softmax)

API_PAGE = REPO_ROOT / "docs" / "python-api.md"
API_PAGE_SECTION = "## Use it from Python: raw text in"
# The page's released-model directory name; the tests put the tiny golden
# checkpoint there (cased, as the name says).
API_PAGE_MODEL = "cased_L-12_H-768_A-12"


@pytest.fixture(scope="module")
def tiny(cased_tiny_dir):
    return api.load(cased_tiny_dir, max_seq_length=48)


def _checkpoint_tensors(directory):
    with checkpoints.open_checkpoint(directory) as tensors:
        return {name: np.asarray(tensors[name], np.float64)
                for name in tensors}


# -- import ----------------------------------------------------------------------

def test_import_bert_tf_does_not_import_tensorflow():
    code = ("import sys, bert_tf; assert callable(bert_tf.__getattr__); "
            "print('tensorflow' in sys.modules, "
            "'load' in dir(bert_tf), 'finetune' in dir(bert_tf))")
    process = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT,
                             capture_output=True, text=True, timeout=120)
    assert process.stdout.split() == ["False", "True", "True"], (
        process.stderr)
    assert bert_tf.load is api.load and bert_tf.finetune is api.finetune
    with pytest.raises(AttributeError, match="no attribute 'lod'"):
        bert_tf.lod  # noqa: B018


# -- a released checkpoint: embed, fill_mask ---------------------------------

def test_checkpoint_directory_casing_comes_from_its_vocabulary(
        tiny, uncased_vocab_file):
    assert tiny.do_lower_case is False  # the golden vocab is cased
    assert api.vocab_is_uncased(uncased_vocab_file)
    assert tiny.max_seq_length == 48


def test_embed_matches_googles_extract_features(tiny, golden_dir):
    modeling_harness.assert_embed_matches_googles_features(
        tiny, golden_dir, _checkpoint_tensors(tiny.checkpoint), count=12)


def test_embed_of_no_text_is_no_row(tiny, cased_tiny_dir):
    """Issue 49 item 6: KeyError 'pooled_output', while predict([]) is []."""
    hidden = json.loads((cased_tiny_dir / "bert_config.json").read_text())[
        "hidden_size"]
    embeddings = tiny.embed([])
    assert sorted(embeddings) == ["mean_pooled", "pooled_output"]
    for values in embeddings.values():
        assert values.shape == (0, hidden) and values.dtype == np.float32


def _numpy_masked_lm(weights, config, ids, positions):
    """Google's get_masked_lm_output in numpy: probabilities
    [masks, vocab] of one example."""
    ids = np.array([ids])
    outputs = np_bert_forward(weights, config, ids, np.ones_like(ids),
                              np.zeros_like(ids))
    hidden = outputs["sequence_output"][0, positions]
    hidden = np_gelu(hidden @ weights[
        "cls/predictions/transform/dense/kernel"]
        + weights["cls/predictions/transform/dense/bias"])
    hidden = np_layer_norm(
        hidden, weights["cls/predictions/transform/LayerNorm/gamma"],
        weights["cls/predictions/transform/LayerNorm/beta"])
    logits = (hidden @ weights["bert/embeddings/word_embeddings"].T
              + weights["cls/predictions/output_bias"])
    return np_softmax(logits)


def test_fill_mask_matches_a_numpy_masked_lm_head(tiny, cased_tiny_dir):
    vocab = {piece: i for i, piece in enumerate(
        (cased_tiny_dir / "vocab.txt").read_text(
            encoding="utf-8").splitlines())}
    texts = ["The [MASK] of the  king.", "[MASK] at his [MASK]"]
    # By hand: the pieces of the cased vocabulary, [MASK] kept whole.
    pieces = [["[CLS]", "The", "[MASK]", "of", "the", "k", "##ing", ".",
               "[SEP]"],
              ["[CLS]", "[MASK]", "at", "his", "[MASK]", "[SEP]"]]
    assert all(piece in vocab for row in pieces for piece in row)
    results = tiny.fill_mask(texts, top_k=4)
    weights = _checkpoint_tensors(tiny.checkpoint)
    for result, row in zip(results, pieces):
        positions = [i for i, piece in enumerate(row) if piece == "[MASK]"]
        probabilities = _numpy_masked_lm(
            weights, tiny.bert_config, [vocab[p] for p in row], positions)
        assert len(result) == len(positions)
        for candidates, expected in zip(result, probabilities):
            top = np.argsort(-expected)[:4]
            assert [c["token_id"] for c in candidates] == list(top)
            assert [c["token"] for c in candidates] == [
                list(vocab)[i] for i in top]
            np.testing.assert_allclose(
                [c["probability"] for c in candidates], expected[top],
                rtol=1e-4)


def test_fill_mask_errors(tiny, tmp_path, cased_tiny_dir):
    with pytest.raises(ValueError, match=r"^texts\[1\]: no \[MASK\] in "
                                         r"'no mask here'$"):
        tiny.fill_mask(["a [MASK]", "no mask here"])
    with pytest.raises(ValueError, match=r"^texts\[0\]: a \[MASK\] lies "
                                         r"beyond max_seq_length=48"):
        tiny.fill_mask(["word " * 50 + "[MASK]"])
    with pytest.raises(ValueError, match=r"^top_k=0 must be an int"):
        tiny.fill_mask(["a [MASK]"], top_k=0)
    with pytest.raises(ValueError, match=r"^texts must be a list of "
                                         r"strings, got str$"):
        tiny.fill_mask("a [MASK]")
    # The encoder alone (as a sentence-embedding model or a fine-tuned
    # classifier keeps it): no cls/predictions.
    encoder_only = tmp_path / "encoder_only"
    encoder_only.mkdir()
    for name in ("vocab.txt", "bert_config.json"):
        shutil.copy(cased_tiny_dir / name, encoder_only / name)
    with checkpoints.open_checkpoint(cased_tiny_dir) as tensors:
        checkpoints.save_checkpoint(
            {name: tensors[name] for name in tensors
             if name.startswith("bert/")},
            str(encoder_only / "bert_model.ckpt"))
    model = api.load(encoder_only)
    with pytest.raises(ValueError) as error:
        model.fill_mask(["a [MASK]"])
    assert str(error.value) == (
        f"fill_mask: the checkpoint {encoder_only / 'bert_model.ckpt'} has "
        "no masked-LM head (cls/predictions/...); Google's released "
        "checkpoints and run_pretraining.py's have it, fine-tuned and "
        "sentence-embedding checkpoints do not")
    assert model.embed(["still embeds"])["mean_pooled"].shape == (1, 32)


def test_load_errors_name_the_path(tmp_path, cased_tiny_dir):
    missing = tmp_path / "nowhere"
    with pytest.raises(ValueError, match=f"^bert_tf.load: {missing} is not "
                                         "a directory$"):
        api.load(missing)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError) as error:
        api.load(empty)
    assert str(error.value) == (
        f"bert_tf.load: {empty} is neither a checkpoint directory "
        "(bert_config.json, vocab.txt and a checkpoint), a training run's "
        "--output_dir (bert_tf_run.json) nor a SavedModel (saved_model.pb); "
        "it has no bert_config.json or vocab.txt (give it as bert_config= or "
        "vocab=)")
    no_checkpoint = tmp_path / "no_checkpoint"
    no_checkpoint.mkdir()
    for name in ("vocab.txt", "bert_config.json"):
        shutil.copy(cased_tiny_dir / name, no_checkpoint / name)
    with pytest.raises(ValueError, match="; it has no checkpoint$"):
        api.load(no_checkpoint)
    with pytest.raises(ValueError, match=r"^max_seq_length=200 is larger "
                                         r"than|max_position_embeddings"):
        api.load(cased_tiny_dir, max_seq_length=200)
    broken = tmp_path / "broken_run"
    shutil.copytree(cased_tiny_dir, broken)
    (broken / "bert_tf_run.json").write_text('{"task": "poetry"}')
    with pytest.raises(ValueError, match=r"bert_tf_run.json: no 'task' "
                                         r"among classification"):
        api.load(broken)


@pytest.mark.parametrize("name, value", [
    ("batch_size", "8"), ("batch_size", 8.0), ("batch_size", True),
    ("batch_size", 0), ("batch_size", -1), ("batch_size", None),
    ("max_seq_length", "64"), ("max_seq_length", 64.0),
    ("max_seq_length", False), ("max_seq_length", 0),
    ("max_seq_length", -64)])
def test_load_refuses_a_count_that_is_no_positive_int(cased_tiny_dir, name,
                                                      value):
    """As the docstring says: a ValueError naming the argument (not a
    TypeError from comparing a string, nor a silent conversion)."""
    with pytest.raises(ValueError) as error:
        api.load(cased_tiny_dir, **{name: value})
    assert str(error.value) == (
        f"bert_tf.load: {name}={value!r} must be a positive int")


def test_load_refuses_a_casing_that_is_no_bool(cased_tiny_dir):
    # bool("False") is True: the string would silently lower-case.
    with pytest.raises(ValueError) as error:
        api.load(cased_tiny_dir, do_lower_case="False")
    assert str(error.value) == (
        "bert_tf.load: do_lower_case='False' must be True, False or None")


def _serving_default(inputs, outputs):
    """A concrete function with an export's `serving_default` inputs
    ({name: rank}, strings) and outputs (names), as `predict` recognizes
    the task by (no model: the inputs given to it must not reach it)."""
    import tensorflow as tf
    specs = [tf.TensorSpec([None] * rank, tf.string, name=name)
             for name, rank in inputs.items()]

    def serve(*tensors):
        return {name: tf.zeros(tf.shape(tensors[0])[:1]) for name in outputs}

    return tf.function(serve).get_concrete_function(*specs)


class _SignaturePredictor(api.ExportedModel):
    """`predict` over a `_serving_default` function, as over a loaded
    SavedModel's signature."""

    def __init__(self, function):
        self.batch_size = 8
        self._served = served_lib.Served(function, "a test")


SURROGATE_MESSAGE = (" is a lone surrogate '\\ud800', which is not Unicode "
                     "text and cannot be encoded as UTF-8 (was it decoded "
                     "from broken UTF-16, or with errors='surrogateescape'?)")


@pytest.mark.parametrize("task, inputs, outputs, predicted, message", [
    ("classification", {"text_a": 1}, ["label", "probabilities"],
     ["fine", "bad \ud800 text"],
     "inputs[1]: character 4 of 'bad \\ud800 text'"),
    ("pair classification", {"text_a": 1, "text_b": 1},
     ["label", "probabilities"], [("a", "b"), ("a", "b\ud800")],
     "inputs[1]: character 1 of 'b\\ud800'"),
    ("squad", {"question": 1, "context": 1}, ["answer"],
     [("who\ud800", "context")], "inputs[0]: character 3 of 'who\\ud800'"),
    ("tagging", {"text": 1}, ["labels", "words", "num_words"],
     [["Peter"], ["Peter", "\ud800"]], "inputs[1]: character 0 of "
                                        "'\\ud800'"),
    ("multiple choice", {"context": 1, "choices": 2}, ["label"],
     [("context", ["yes", "n\ud800"])],
     "inputs[0]: character 1 of 'n\\ud800'"),
    ("embeddings", {"text": 1}, ["pooled_output", "mean_pooled"],
     ["\ud800"], "inputs[0]: character 0 of '\\ud800'"),
])
def test_predict_names_an_input_with_a_lone_surrogate(task, inputs, outputs,
                                                      predicted, message):
    """A string Python holds but UTF-8 cannot encode is named by its index
    before TensorFlow sees it (its own error names no input)."""
    model = _SignaturePredictor(_serving_default(inputs, outputs))
    with pytest.raises(ValueError) as error:
        model.predict(predicted)
    assert str(error.value) == message + SURROGATE_MESSAGE


def test_embed_names_a_text_with_a_lone_surrogate(tiny):
    with pytest.raises(ValueError) as error:
        tiny.embed(["fine", "x\ud800"])
    assert str(error.value) == (
        "texts[1]: character 1 of 'x\\ud800'" + SURROGATE_MESSAGE)


def test_a_directory_of_checkpoints_only_loads_with_its_config_and_vocab(
        tmp_path, cased_tiny_dir):
    """The --output_dir of Google's run_pretraining.py has checkpoints only:
    its config and vocabulary are given to `load`."""
    only_checkpoints = tmp_path / "google_pretraining_run"
    only_checkpoints.mkdir()
    for path in cased_tiny_dir.glob("bert_model.ckpt*"):
        shutil.copy(path, only_checkpoints / path.name)
    config = cased_tiny_dir / "bert_config.json"
    vocab = cased_tiny_dir / "vocab.txt"
    with pytest.raises(ValueError, match=r"it has no vocab.txt \(give it as "
                                         r"bert_config= or vocab=\)$"):
        api.load(only_checkpoints, bert_config=config)
    with pytest.raises(ValueError, match=f"^bert_tf.load: vocab="
                                         f"{tmp_path / 'no.txt'} is not a "
                                         "file$"):
        api.load(only_checkpoints, bert_config=config,
                 vocab=tmp_path / "no.txt")
    model = api.load(only_checkpoints, bert_config=config, vocab=vocab)
    reference = api.load(cased_tiny_dir)
    assert model.vocab_file == vocab
    assert model.bert_config.to_dict() == reference.bert_config.to_dict()
    assert model.do_lower_case is reference.do_lower_case is False
    np.testing.assert_allclose(
        model.embed(["Hello there"])["pooled_output"],
        reference.embed(["Hello there"])["pooled_output"], atol=1e-6)
    run = tmp_path / "run"
    shutil.copytree(cased_tiny_dir, run)
    (run / "bert_tf_run.json").write_text('{"task": "classification"}')
    with pytest.raises(ValueError, match=f"^bert_tf.load: vocab is fixed "
                                         f"in the training run {run} "):
        api.load(run, vocab=vocab)


def test_multi_label_predict_reads_the_runs_record(tmp_path,
                                                  cased_tiny_dir):
    """A multi-label run is served from its bert_tf_run.json (labels and
    threshold; tests/tasks/classification/
    test_run_classifier_multi_label.py checks the predictions against the
    runner's test_results.tsv); a record without its threshold
    is an error naming the file, before any model is built."""
    run_dir = tmp_path / "multi_label_run"
    shutil.copytree(cased_tiny_dir, run_dir)
    (run_dir / "bert_tf_run.json").write_text(json.dumps(
        {"program": "run_classifier.py", "task": "multi_label",
         "max_seq_length": 16, "do_lower_case": False,
         "causal_attention": False, "label_list": ["a", "b"],
         "has_text_b": False}))
    model = api.load(run_dir)
    assert model.labels == ["a", "b"] and model.max_seq_length == 16
    with pytest.raises(ValueError) as error:
        model.predict(["text"])
    assert str(error.value) == (
        f"{run_dir / 'bert_tf_run.json'}: 'threshold' is not a number")


# -- finetune: the library runs without its scripts --------------------------

def test_no_library_module_imports_or_loads_a_program():
    """`bert_tf.finetune` calls the recipes: no module under bert_tf/
    imports a top-level program or loads modules by name (as the finetune
    of issue 34 did, `importlib.import_module("run_classifier")`)."""
    import ast
    programs = {path.stem for path in REPO_ROOT.glob("*.py")}
    assert {"run_classifier", "run_squad", "run_pretraining"} <= programs
    registry_path = REPO_ROOT / "bert_tf" / "tasks" / "registry.py"
    # The registry's lazy hooks are the one place a module is loaded by
    # name: only inside these functions of registry.py.
    lazy_loaders = {"hook", "attribute", "module", "specs"}
    loads_in = set()
    for path in (REPO_ROOT / "bert_tf").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        functions = [node for node in ast.walk(tree)
                     if isinstance(node, ast.FunctionDef)]
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            elif (isinstance(node, ast.Attribute)
                  and node.attr == "import_module"
                  or isinstance(node, ast.Name)
                  and node.id in ("import_module", "__import__")):
                assert path == registry_path, path
                top = [function.name for function in functions
                       if function in tree.body
                       and any(inner is node
                               for inner in ast.walk(function))]
                assert top and top[0] in lazy_loaders, (path, node.lineno)
                loads_in.add(top[0])
                continue
            else:
                continue
            for name in names:
                assert name.split(".")[0] not in programs, (path, name)
    assert loads_in == lazy_loaders

    # What those hooks load: bert_tf's own modules, never a program.
    from bert_tf.tasks import registry

    def check(module_name):
        assert module_name.split(".")[0] == "bert_tf", module_name
        relative = Path(*module_name.split("."))
        assert ((REPO_ROOT / relative).with_suffix(".py").is_file()
                or (REPO_ROOT / relative / "__init__.py").is_file()), (
            module_name)

    for module_name in registry.TASK_SPECS:
        check(module_name)
    lazy = 0
    for spec in [importlib.import_module(module_name).SPEC
                 for module_name in registry.TASK_SPECS]:
        for field in dataclasses.fields(spec):
            value = getattr(spec, field.name)
            if callable(value):
                check(value.lazy_module)
                lazy += 1
    assert lazy >= 4 * 8


# -- finetune: errors before any training ------------------------------------

@pytest.mark.parametrize("call, message", [
    (dict(task="poetry"), r"^finetune: task='poetry' is none of "
                          r"classification, squad, tagging"),
    (dict(task="classification", train=[("text", "1")], no_such_flag=1),
     r"^finetune: run_classifier.py has no flag --no_such_flag$"),
    (dict(task="classification", train=[("text", "1"), "text"]),
     r"^finetune: train\[1\]: expected \(text, label\) or \(text_a, "
     r"text_b, label\), got 'text'$"),
    (dict(task="classification", train=[("a", "1")], test=[("a", "b", "c")]),
     r"^finetune: test\[0\]: expected a text or \(text_a, text_b\)"),
    (dict(task="classification", train=[("a", "1")], dev=[("a", "b", "1")]),
     r"^finetune: mixed single texts and text pairs in train/dev/test$"),
    (dict(task="classification", train="train.tsv"),
     r"^finetune: train of task='classification' must be a list"),
    (dict(task="mrpc", train=[("a", "b", "1")]),
     r"^finetune: task='mrpc' reads data_dir=\.\.\."),
    (dict(task="tagging", train=[(["a", "b"], ["O"])]),
     r"^finetune: train\[0\]: 2 words but 1 labels$"),
    (dict(task="tagging", train=[(["a b"], ["O"])]),
     r"^finetune: train\[0\]: word 'a b' must be a non-empty string "
     r"without whitespace$"),
    (dict(task="tagging", train=[["a", "b"]]),
     r"^finetune: train\[0\]: expected \(words, labels\)$"),
    (dict(task="tagging", train=[(["a"], ["O"])],
          dev=[(["b"], ["O"]), (["c", "d"], ["O", "B-X"])]),
     r"^finetune: dev\[1\]: label 'B-X' does not occur in train "
     r"\(labels: O\)$"),
    (dict(task="squad", dev=[{"question": "q", "context": "c"}],
          test=[{"question": "q", "context": "c"}]),
     r"^finetune: squad predicts one file"),
    (dict(task="squad", train=[{"question": "q", "context": "abc",
                                "answers": [{"text": "x"}]}]),
     r"^finetune: train\[0\]: answer 'x' is not in the context$"),
    (dict(task="multiple_choice", train=["not a dict"]),
     r"^finetune: train\[0\]: expected a dict with 'question' and "
     r"'choices'$"),
    (dict(task="classification", train=[("a", "1")],
          max_seq_length="long"),
     r"^finetune: max_seq_length='long' must be an integer$"),
    # Issue 37 items 2-3: a label None is no class 'None'; labels of mixed
    # types are not four classes '0', '1', '1.0', 'True' without a word.
    (dict(task="classification", train=[("a", "1"), ("b", None)]),
     r"^finetune: train\[1\]: label None: a labelled example needs a "
     r"label \(texts to predict go in test\)$"),
    (dict(task="classification",
          train=[("a", 1), ("b", 0), ("c", 1.0), ("d", True)]),
     r"^finetune: train\[2\]: label 1\.0 is of type float, but "
     r"train\[0\]'s label 1 is of type int: labels are read as text, so "
     r"these would be two classes '1' and '1\.0'; give every label as one "
     r"type$"),
    # Labels all of one type pass (the next check stops the call).
    (dict(task="classification", train=[("a", 1), ("b", 0)],
          dev=[("c", 1)], max_seq_length="long"),
     r"^finetune: max_seq_length='long' must be an integer$"),
    (dict(task="classification", train=[("a", "1")], dev=[("b", True)]),
     r"^finetune: dev\[0\]: label True is of type bool, but "
     r"train\[0\]'s label '1' is of type str"),
    (dict(task="classification", train=[("a", "1")], dev=[("b", "2")]),
     r"^finetune: dev\[0\]: label '2' is not one of the labels '1'$"),
    # Issue 37 items 10-11: the message names the argument, not a
    # temporary file.
    (dict(task="classification", train=[]),
     r"^finetune: train: no examples$"),
    (dict(task="tagging", train=[]), r"^finetune: train: no examples$"),
    (dict(task="multiple_choice", train=[]),
     r"^finetune: train: no examples$"),
    (dict(task="squad", train=[]), r"^finetune: train: no examples$"),
    (dict(task="multiple_choice",
          train=[{"question": "q", "choices": ["a", "b"], "answer": 5}]),
     r"^finetune: train\[0\]: answer 5 is none of the 2 choices$"),
    (dict(task="multiple_choice",
          train=[{"question": "q", "choices": ["a", "b"], "answer": 0},
                 {"question": "q", "choices": ["a", "b", "c"],
                  "answer": 0}]),
     r"^finetune: train\[1\]: 3 choices, but the dataset has 2"),
    (dict(task="multiple_choice",
          train=[{"question": "q", "choices": ["a", "b"]}]),
     r"^finetune: train\[0\]: no 'answer' \(a train example needs one\)$"),
    # Issue 49 item 9: Python's int() error without the question; the
    # words blamed for labels given as one string.
    (dict(task="squad", train=[{"question": "q", "context": "a x b",
                                "answers": [{"text": "x",
                                             "answer_start": "x4"}]}]),
     r"^finetune: train\[0\]: answer_start 'x4' must be a character offset "
     r"\(an integer >= 0\)$"),
    (dict(task="tagging", train=[(["John", "runs"], "B-PER O")]),
     r"^finetune: train\[0\]: labels 'B-PER O' must be a list of labels, "
     r"one per word$"),
])
def test_finetune_bad_input_is_one_line(tmp_path, cased_tiny_dir, call,
                                        message):
    call = dict(call)
    task = call.pop("task")
    with pytest.raises(ValueError, match=message) as error:
        api.finetune(task, cased_tiny_dir, tmp_path / "out", **call)
    assert "\n" not in str(error.value)
    assert not (tmp_path / "out").exists()


def test_finetune_reports_progress_as_the_runner_does(tmp_path,
                                                     cased_tiny_dir,
                                                     monkeypatch):
    """`finetune` used to print nothing for the whole run (absl's INFO lines
    are off outside `app.run`)."""
    from absl import logging
    # What absl's handler writes: to stderr (before absl's flags are
    # parsed) or to its stream.
    shown = io.StringIO()
    monkeypatch.setattr(sys, "stderr", shown)
    monkeypatch.setattr(logging.get_absl_handler().python_handler, "stream",
                        shown)
    previous = logging.get_verbosity()
    reviews = [("good film", "positive"), ("bad film", "negative")] * 4
    api.finetune("classification", cased_tiny_dir, tmp_path / "out",
                 train=reviews, dev=reviews[:2], num_train_epochs=1,
                 train_batch_size=4, max_seq_length=16)
    text = shown.getvalue()
    assert re.search(r"train classification: 2/2 steps \(100%\)", text)
    assert re.search(r"evaluate classification: 1/1 batch", text)
    assert "eval_accuracy = " in text
    # The caller's verbosity is left as it was; quiet on request.
    assert logging.get_verbosity() == previous
    with api._program_logging(verbose=False):
        logging.info("an INFO line")
        logging.warning("a warning")
    assert "an INFO line" not in shown.getvalue()
    assert "a warning" in shown.getvalue()


def test_quiet_run_leaves_the_absl_loggers_level_unset():
    """Outside a program (absl's handler not on the root logger) a quiet
    run puts the absl logger's own level back, unset: pinned to the level
    it inherited, its INFO lines would no longer reach a root logger (or a
    test's caplog) set to INFO later."""
    import logging as python_logging
    from absl import logging
    root, handler = python_logging.getLogger(), logging.get_absl_handler()
    had_handler = handler in root.handlers
    root.removeHandler(handler)
    absl_logger = logging.get_absl_logger()
    level = absl_logger.level
    absl_logger.setLevel(python_logging.NOTSET)
    try:
        with api._program_logging(verbose=False):
            assert not absl_logger.isEnabledFor(python_logging.INFO)
        assert absl_logger.level == python_logging.NOTSET
    finally:
        absl_logger.setLevel(level)
        if had_handler:
            root.addHandler(handler)


def test_finetune_refuses_another_models_files_in_output_dir(
        tmp_path, cased_tiny_dir):
    output_dir = tmp_path / "out"
    output_dir.mkdir()
    (output_dir / "vocab.txt").write_text("[PAD]\nmine\n")
    with pytest.raises(ValueError) as error:
        api.finetune("classification", cased_tiny_dir, output_dir,
                     train=[("a", "1"), ("b", "0")], train_batch_size=1)
    assert str(error.value) == (
        f"--output_dir: {output_dir / 'vocab.txt'} exists and differs from "
        f"--vocab_file={cased_tiny_dir / 'vocab.txt'} (another model's file "
        "is not overwritten; use another --output_dir)")
    assert (output_dir / "vocab.txt").read_text() == "[PAD]\nmine\n"


# -- the docs page's code, then predict against the runners' files -------------

def _api_page_code():
    text = API_PAGE.read_text(encoding="utf-8")
    start = text.index(API_PAGE_SECTION + "\n")
    end = text.index("\n## ", start + 1)
    blocks = re.findall(r"```python\n(.*?)```", text[start:end], re.S)
    assert len(blocks) >= 3
    return blocks


@pytest.fixture(scope="module")
def readme_run(tmp_path_factory, cased_tiny_dir):
    """The docs page section's code blocks run in order, in a directory where
    `cased_L-12_H-768_A-12` is the tiny golden checkpoint."""
    import os
    root = tmp_path_factory.mktemp("readme")
    shutil.copytree(cased_tiny_dir, root / API_PAGE_MODEL)
    namespace = {}
    cwd = os.getcwd()
    os.chdir(root)
    try:
        for block in _api_page_code():
            exec(compile(block, str(API_PAGE), "exec"), namespace)  # noqa: S102
    finally:
        os.chdir(cwd)
    return root, namespace


@pytest.mark.slow
def test_readme_code_runs_and_predicts_what_run_classifier_wrote(
        readme_run):
    root, namespace = readme_run
    output_dir = root / "work" / "reviews"
    # finetune returns the runner's metrics, as eval_results.txt has them.
    written = read_eval_results(output_dir)
    assert {key: float(value) for key, value in
            namespace["results"]["eval"].items()} == pytest.approx(written)
    classifier = namespace["classifier"]
    assert classifier.labels == ["negative", "positive"]
    predicted = classifier.predict(["what a film", "so dull"])
    expected = np.loadtxt(output_dir / "test_results.tsv", delimiter="\t",
                          ndmin=2)
    np.testing.assert_allclose(
        [row["probabilities"] for row in predicted], expected, atol=2e-6)
    assert [row["label"] for row in predicted] == [
        classifier.labels[i] for i in expected.argmax(axis=1)]
    description = json.loads((output_dir / "bert_tf_run.json").read_text())
    assert description["task"] == "classification"
    assert (output_dir / "vocab.txt").read_bytes() == (
        root / API_PAGE_MODEL / "vocab.txt").read_bytes()


@pytest.mark.slow
def test_predict_input_shapes_are_checked(readme_run):
    _, namespace = readme_run
    classifier = namespace["classifier"]
    with pytest.raises(ValueError, match=r"^inputs\[1\]: expected a text "
                                         r"\(a string\), got \('a', 'b'\)$"):
        classifier.predict(["fine", ("a", "b")])
    with pytest.raises(ValueError, match=r"^inputs must be a list, got "
                                         r"str$"):
        classifier.predict("one text")
    tagger = api.load(readme_run[0] / "work" / "ner")
    with pytest.raises(ValueError, match=r"^inputs\[0\]: expected a list "
                                         r"of words, got 'Peter Blackburn'"):
        tagger.predict(["Peter Blackburn"])
    with pytest.raises(ValueError, match=r"^inputs\[0\]: word 'a b' must "
                                         r"be a non-empty string"):
        tagger.predict([["a b"]])
    # A lone surrogate, named before TensorFlow sees it.
    for model, inputs in ((classifier, ["fine", "x\ud800"]),
                          (tagger, [["fine"], ["x\ud800"]])):
        with pytest.raises(ValueError) as error:
            model.predict(inputs)
        assert str(error.value) == (
            "inputs[1]: character 1 of 'x\\ud800'" + SURROGATE_MESSAGE)


@pytest.mark.slow
def test_saved_model_predicts_what_run_classifier_wrote(readme_run):
    import export_saved_model
    root, namespace = readme_run
    output_dir = root / "work" / "reviews"
    description = json.loads((output_dir / "bert_tf_run.json").read_text())
    export_dir = root / "work" / "reviews_saved_model"
    run_in_process(
        export_saved_model, "--task_name=generic",
        f"--init_checkpoint={output_dir}",
        f"--label_list={','.join(description['label_list'])}",
        "--do_lower_case=false",
        f"--max_seq_length={description['max_seq_length']}",
        f"--export_dir={export_dir}", workspace=output_dir)
    exported = api.load(export_dir)
    assert isinstance(exported, api.ExportedModel)
    predicted = exported.predict(["what a film", "so dull"])
    expected = np.loadtxt(output_dir / "test_results.tsv", delimiter="\t",
                          ndmin=2)
    np.testing.assert_allclose(
        [row["probabilities"] for row in predicted], expected, atol=2e-6)
    with pytest.raises(ValueError, match=r"^bert_tf.load: do_lower_case is "
                                         r"fixed in the SavedModel"):
        api.load(export_dir, do_lower_case=True)
    with pytest.raises(ValueError, match=r"^finetune: base_dir .* is a "
                                         r"SavedModel; fine-tuning starts"):
        api.finetune("classification", export_dir, root / "work" / "again",
                     train=[("a", "1")])


# -- the other tasks: finetune, then predict = the runner's files -----------

TAG_SENTENCES = [
    (["EU", "rejects", "German", "call", "to", "boycott", "British", "lamb",
      "."], ["B-ORG", "O", "B-MISC", "O", "O", "O", "B-MISC", "O", "O"]),
    (["Peter", "Blackburn"], ["B-PER", "I-PER"]),
    (["BRUSSELS", "1996-08-22"], ["B-LOC", "O"]),
]
TAG_TEST = [["Peter", "rejects", "the", "EU", "call"],
            # Longer than one window of --max_seq_length=12.
            "The European Commission said on Thursday it disagreed with "
            "German advice to consumers to shun British lamb .".split(),
            ["Blackburn"]]


@pytest.mark.slow
def test_tagging_predict_is_run_taggings(tmp_path, cased_tiny_dir):
    output_dir = tmp_path / "ner"
    # The test set as the runner's own file (--predict_file), the training
    # set as lists.
    test_file = tmp_path / "test.txt"
    test_file.write_text("".join("".join(f"{word}\n" for word in words)
                                 + "\n" for words in TAG_TEST))
    api.finetune("tagging", cased_tiny_dir, output_dir,
                 train=TAG_SENTENCES * 3, test=test_file, max_seq_length=12,
                 doc_stride=4, train_batch_size=3, num_train_epochs=1.0,
                 learning_rate=1e-2)
    predicted = api.load(output_dir).predict(TAG_TEST)
    records = [json.loads(line) for line in (
        output_dir / "test_predictions.jsonl").read_text().splitlines()]
    assert len(records) == len(TAG_TEST)
    for result, record, words in zip(predicted, records, TAG_TEST):
        assert result["words"] == words == record["words"]
        assert result["labels"] == record["labels"]
        assert result["entities"] == record["entities"]
    # test_predictions.txt: the word and its predicted label per line.
    lines = [line.split() for line in (
        output_dir / "test_predictions.txt").read_text().splitlines()
        if line.strip()]
    assert [label for _, label in lines] == [
        label for result in predicted for label in result["labels"]]


CHOICES = [
    {"question": "Who is there?", "context": "Francisco at his post.",
     "choices": ["Bernardo", "the king", "nobody"], "answer": 0},
    {"question": "What is the hour?", "choices": ["twelve", "noon", "one"],
     "answer": 0},
]


@pytest.mark.slow
def test_multiple_choice_predict_is_run_multiple_choices(tmp_path,
                                                         cased_tiny_dir):
    output_dir = tmp_path / "choices"
    test = [{key: value for key, value in record.items() if key != "answer"}
            for record in CHOICES]
    api.finetune("multiple_choice", cased_tiny_dir, output_dir,
                 train=CHOICES * 2, test=test, max_seq_length=24,
                 train_batch_size=2, num_train_epochs=1.0)
    model = api.load(output_dir)
    predicted = model.predict(test)
    expected = np.loadtxt(output_dir / "test_results.tsv", delimiter="\t",
                          ndmin=2)
    np.testing.assert_allclose(
        [row["probabilities"] for row in predicted], expected, atol=2e-6)
    assert [row["label"] for row in predicted] == list(
        expected.argmax(axis=1))
    with pytest.raises(ValueError, match=r"^inputs\[1\]: 2 choices, but "
                                         r"inputs\[0\] has 3"):
        model.predict([test[0], {"question": "q", "choices": ["a", "b"]}])
    with pytest.raises(ValueError, match=r"^inputs\[0\]: needs a "
                                         r"'question'$"):
        model.predict([{"choices": ["a", "b", "c"]}])


SQUAD_CONTEXT = ("Bernardo (1895). Who's there? Nay, answer me: stand, and "
                 "unfold yourself. Long live the king! Bernardo? He. You come "
                 "most carefully upon your hour.")
SQUAD_TRAIN = [
    {"question": "Who is there?", "context": SQUAD_CONTEXT,
     "answers": [{"text": "Bernardo"}]},
    {"question": "Who lives long?", "context": SQUAD_CONTEXT,
     "answers": [{"text": "the king", "answer_start": 60}]},
]


@pytest.mark.slow
def test_squad_predict_is_run_squads(tmp_path, uncased_vocab_file,
                                     cased_tiny_dir):
    output_dir = tmp_path / "squad"
    test = [{"question": q, "context": c, "id": f"q{i}"} for i, (q, c) in
            enumerate([("Who is there?", SQUAD_CONTEXT),
                       ("What is the hour?", "Tis now struck twelve; get "
                        "thee to bed, Francisco.")])]
    api.finetune("squad", cased_tiny_dir, output_dir, train=SQUAD_TRAIN * 2,
                 test=test, max_seq_length=32, doc_stride=8,
                 max_query_length=8, train_batch_size=2,
                 num_train_epochs=1.0)
    predicted = api.load(output_dir).predict(
        [(record["question"], record["context"]) for record in test])
    answers = json.loads((output_dir / "predictions.json").read_text())
    nbest = json.loads((output_dir / "nbest_predictions.json").read_text())
    for result, record in zip(predicted, test):
        assert result["answer"] == answers[record["id"]]
        assert [entry["text"] for entry in result["nbest"]] == [
            entry["text"] for entry in nbest[record["id"]]]
        np.testing.assert_allclose(
            [entry["probability"] for entry in result["nbest"]],
            [entry["probability"] for entry in nbest[record["id"]]],
            atol=1e-5)


MRPC_PAIRS = [("He said hello.", "Hello, he said.", "1"),
              ("The cat sat.", "A dog ran.", "0"),
              ("Who's there?", "Nay, answer me.", "0"),
              ("Long live the king!", "The king: long may he live!", "1")]


@pytest.mark.slow
def test_finetune_glue_task_reads_data_dir(tmp_path, cased_tiny_dir):
    """A GLUE task as run_classifier.py reads it (--data_dir, Google's
    MRPC layout), phases by the runner's own flags."""
    data_dir = tmp_path / "MRPC"
    data_dir.mkdir()
    header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
    for split in ("train", "dev"):
        (data_dir / f"{split}.tsv").write_text(header + "".join(
            f"{label}\t1\t2\t{a}\t{b}\n" for a, b, label in MRPC_PAIRS * 2))
    output_dir = tmp_path / "mrpc"
    results = api.finetune("mrpc", cased_tiny_dir, output_dir,
                           data_dir=data_dir, do_train=True, do_eval=True,
                           max_seq_length=24, train_batch_size=4,
                           num_train_epochs=1.0)
    assert {key: float(value) for key, value in results["eval"].items()} == (
        pytest.approx(read_eval_results(output_dir)))
    assert "eval_f1" in results["eval"]  # MRPC's own metric
    model = api.load(output_dir)
    # MRPC's labels "0" and "1", by their names.
    assert model.labels == ["not_equivalent", "equivalent"]
    predicted = model.predict([(a, b) for a, b, _ in MRPC_PAIRS])
    assert [len(row["probabilities"]) for row in predicted] == [2] * 4
    with pytest.raises(ValueError, match=r"^inputs\[0\]: expected a pair "
                                         r"\(text_a, text_b\) of strings"):
        model.predict(["one text"])
