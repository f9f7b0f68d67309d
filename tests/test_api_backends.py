"""`bert_tf.load(run).predict` and `embed` on Keras' JAX backend against
TensorFlow's: one prediction path, the task's own, on both.

Tiny fine-tuning runs of every task kind are made here, on TensorFlow with
`bert_tf.finetune`: classification of text pairs, SQuAD 2.0, tagging with
a CRF, and multiple choice on JSON lines; and, from their weights, runs of
the other kinds (a SQuAD 1.1 run, a multi-label classifier, a softmax
tagger: the same checkpoint, another `bert_tf_run.json`). A second process
on JAX
(`runner_harness.start_on_backend`, this file's `__main__`) loads each
run and predicts the same inputs while this process predicts them on
TensorFlow. Both must give the same answers, n-best texts, labels, tags,
entities and choices, and numbers within `TOLERANCE`; and they must be what
the runner wrote to its prediction files for the same inputs
(`test_results.tsv`, `predictions.json`, `nbest_predictions.json`,
`null_odds.json`, `test_predictions.jsonl`), since `predict` runs the
recipe's prediction phase. `export_saved_model.py` run with
`KERAS_BACKEND=jax` builds its SavedModel on TensorFlow.
"""

import importlib.util
import json
import pathlib
import shutil
import sys

import numpy as np
import pytest

import bert_tf
from runner_harness import REPO_ROOT, finish_processes, script_environment
from runner_harness import start_on_backend

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("jax") is None,
    reason="jax is not installed (pip install -e .[test])")

# Probabilities and logits, TensorFlow's against JAX's (the same weights),
# and against the runner's files: the largest difference between the
# backends measured on this project's 2-core CPU was 2.4e-7 (float32
# round-off of sums taken in another order); the bound.
TOLERANCE = 1e-5

WORDS = ("thus Most home making music rather Army River algae analysis "
         "death live third higher research right south central movement "
         "person possible rate words written").split()
PLACES = ["India", "China", "Canada"]
PERSONS = ["William", "Huxley"]


def _sentence(rng, size):
    return " ".join(rng.choice(WORDS, size))


def _tagged(rng, size):
    """(words, labels): persons, places and filler words."""
    words, labels = [], []
    for _ in range(size):
        draw = rng.random()
        kind = ("B-PER", PERSONS) if draw < 0.2 else (
            ("B-LOC", PLACES) if draw < 0.35 else ("O", WORDS))
        words.append(str(rng.choice(kind[1])))
        labels.append(kind[0])
    return words, labels


SQUAD_CONTEXT = ("William lives in India . Huxley lives in China , south of "
                 "the River . Most music is written at home by a person "
                 "of higher research , thus the movement .")


def _task_inputs():
    """{run name: (finetune's task, its train list, settings, the inputs
    to predict)}: the same inputs are `finetune`'s test set (the runner's
    prediction files) and `predict`'s."""
    rng = np.random.default_rng(3)
    pairs = [(_sentence(rng, 4), _sentence(rng, 3)) for _ in range(6)]
    tagged = [_tagged(rng, int(rng.integers(2, 12))) for _ in range(10)]
    # Longer than one window of --max_seq_length=12.
    sentences = [_tagged(rng, size)[0] for size in (3, 15, 1, 8)]
    questions = [
        {"question": "Who lives in India ?", "context": SQUAD_CONTEXT,
         "answers": [{"text": "William"}], "is_impossible": False},
        {"question": "Who lives in China ?", "context": SQUAD_CONTEXT,
         "answers": [{"text": "Huxley"}], "is_impossible": False},
        {"question": "Who lives in Canada ?", "context": SQUAD_CONTEXT,
         "answers": [], "is_impossible": True}]
    choices = [{"question": _sentence(rng, 3),
                "choices": [_sentence(rng, 2) for _ in range(3)],
                "answer": int(rng.integers(3))} for _ in range(8)]
    settings = dict(max_seq_length=24, train_batch_size=4,
                    num_train_epochs=1.0, learning_rate=1e-2, seed=1)
    return {
        "classification": (
            "classification",
            [(a, b, label) for (a, b), label in zip(pairs, ["yes", "no"] * 3)],
            settings, [list(pair) for pair in pairs[:4]]),
        "squad": (
            "squad", questions * 2,
            dict(settings, max_seq_length=32, doc_stride=8,
                 max_query_length=8, version_2_with_negative=True),
            [[q["question"], q["context"]] for q in questions]
            + [["Where is the River ?", "The River is south of China ."]]),
        "tagging_crf": (
            "tagging", tagged, dict(settings, max_seq_length=12,
                                    doc_stride=4, use_crf=True), sentences),
        "multiple_choice": (
            "multiple_choice", choices, settings,
            [{key: record[key] for key in ("question", "choices")}
             for record in choices[:4]]),
    }


def _derived_run(runs, source, name, description_changes):
    """A copy of the run `source` whose description says `changes`: the
    same weights read as another kind of run (no prediction files)."""
    directory = runs[source][0].parent / name
    shutil.copytree(runs[source][0], directory, ignore=shutil.ignore_patterns(
        "test_*", "predictions.json", "nbest_predictions.json",
        "null_odds.json"))
    path = directory / "bert_tf_run.json"
    path.write_text(json.dumps({**json.loads(path.read_text()),
                                **description_changes}))
    return directory


@pytest.fixture(scope="module")
def runs(tmp_path_factory, cased_tiny_dir):
    """{run name: (its --output_dir, the inputs to predict)}: runs of
    `bert_tf.finetune` (each predicted its inputs into the runner's files),
    and runs read as another kind of the same weights."""
    from bert_tf import checkpoints
    root = tmp_path_factory.mktemp("predict_backends")
    made = {}
    for name, (task, train, settings, inputs) in _task_inputs().items():
        test = inputs
        if task == "squad":
            test = [{"question": q, "context": c, "id": str(i)}
                    for i, (q, c) in enumerate(inputs)]
        bert_tf.finetune(task, cased_tiny_dir, root / name, train=train,
                         test=test, verbose=False, **settings)
        made[name] = (root / name, inputs)
    # The SQuAD 2.0 run as a 1.1 run: its answers without the null one.
    made["squad_v1"] = (_derived_run(made, "squad", "squad_v1", {
        "version_2_with_negative": False}), made["squad"][1])
    # The classifier's two outputs as a sigmoid each (a multi-label run's
    # head is a classifier's).
    made["multi_label"] = (_derived_run(made, "classification",
                                        "multi_label", {
        "task": "multi_label", "label_list": ["person", "place"],
        "threshold": 0.5}), made["classification"][1])
    # The CRF run without its CRF: the softmax tagger of the same weights.
    softmax = _derived_run(made, "tagging_crf", "tagging_softmax",
                           {"use_crf": False})
    prefix = checkpoints.resolve_checkpoint(softmax)
    tensors = checkpoints.read_checkpoint(prefix)
    del tensors["crf/transitions"]
    checkpoints.save_checkpoint(tensors, prefix)
    made["tagging_softmax"] = (softmax, made["tagging_crf"][1])
    return made


@pytest.fixture(scope="module")
def predictions(runs, tmp_path_factory):
    """{backend: {run name: predict's results, and "embed": the
    classification run's embeddings}}, TensorFlow's made in this process
    while a JAX process makes JAX's; and "export": (the SavedModel that
    `export_saved_model.py` wrote for the multiple-choice run, run with
    KERAS_BACKEND=jax at the same time, its stderr)."""
    work = tmp_path_factory.mktemp("predictions")
    plan = {name: (str(directory), inputs)
            for name, (directory, inputs) in runs.items()}
    (work / "plan.json").write_text(json.dumps(plan))
    processes = [start_on_backend(
        [sys.executable, __file__, str(work / "plan.json"),
         str(work / "jax.json")], "jax", work / "jax.stderr",
        PYTHONPATH=script_environment(__file__)["PYTHONPATH"])]
    run_dir = runs["multiple_choice"][0]
    processes.append(start_on_backend(
        [sys.executable, str(REPO_ROOT / "export_saved_model.py"),
         "--task_name=multiple_choice", "--input_format=jsonl",
         f"--init_checkpoint={run_dir}",
         f"--bert_config_file={run_dir / 'bert_config.json'}",
         f"--vocab_file={run_dir / 'vocab.txt'}", "--do_lower_case=false",
         "--max_seq_length=24", f"--export_dir={work / 'export'}"],
        "jax", work / "export.stderr"))
    try:
        tensorflow = _predict_plan(plan)
    finally:
        _, export_stderr = finish_processes(*processes)
    return {"tensorflow": tensorflow,
            "jax": json.loads((work / "jax.json").read_text()),
            "export": (work / "export", export_stderr)}


def _predict_plan(plan):
    """What `predict` (and `embed`) give for each run of the plan, as
    JSON values."""
    results = {}
    for name, (directory, inputs) in plan.items():
        model = bert_tf.load(directory)
        results[name] = model.predict(inputs)
        if name == "classification":
            results["embed"] = {key: value.tolist() for key, value in
                                model.embed(inputs[0]).items()}
    return json.loads(json.dumps(results))


def _assert_same(value, reference, where):
    """Equal structure, strings and ints; floats within TOLERANCE."""
    if isinstance(reference, dict):
        assert sorted(value) == sorted(reference), where
        for key in reference:
            _assert_same(value[key], reference[key], f"{where}.{key}")
    elif isinstance(reference, list):
        assert len(value) == len(reference), where
        for i, (item, expected) in enumerate(zip(value, reference)):
            _assert_same(item, expected, f"{where}[{i}]")
    elif isinstance(reference, float):
        assert abs(value - reference) <= TOLERANCE, (where, value, reference)
    else:
        assert value == reference, where


RUN_NAMES = ["classification", "multi_label", "squad", "squad_v1",
             "tagging_softmax", "tagging_crf", "multiple_choice"]


@pytest.mark.parametrize("name", RUN_NAMES + ["embed"])
def test_jax_predicts_what_tensorflow_predicts(predictions, name):
    _assert_same(predictions["jax"][name], predictions["tensorflow"][name],
                 name)


def _tsv(path):
    return np.loadtxt(path, delimiter="\t", ndmin=2)


@pytest.mark.parametrize("name", ["classification", "multiple_choice"])
def test_jax_probabilities_are_the_runners(predictions, runs, name):
    run_dir = runs[name][0]
    results = predictions["jax"][name]
    written = np.loadtxt(run_dir / "test_results.tsv", delimiter="\t",
                         ndmin=2)
    np.testing.assert_allclose([r["probabilities"] for r in results],
                               written, rtol=0, atol=TOLERANCE)
    # The label of each row: the classifier's label name, or the choice.
    names = json.loads((run_dir / "bert_tf_run.json").read_text()).get(
        "label_names")
    assert [r["label"] for r in results] == [
        names[i] if names else int(i) for i in written.argmax(axis=1)]


def test_multi_label_labels_are_those_over_the_threshold(predictions):
    for result in predictions["jax"]["multi_label"]:
        assert result["labels"] == [
            label for label, p in zip(["person", "place"],
                                      result["probabilities"]) if p >= 0.5]


def test_jax_answers_are_the_runners(predictions, runs):
    results = predictions["jax"]["squad"]
    run_dir = runs["squad"][0]
    answers, nbest, null_odds = (
        json.loads((run_dir / name).read_text()) for name in (
            "predictions.json", "nbest_predictions.json", "null_odds.json"))
    assert [r["answer"] for r in results] == [
        answers[str(i)] for i in range(len(results))]
    for i, result in enumerate(results):
        _assert_same(result["nbest"], nbest[str(i)], f"nbest {i}")
        assert abs(result["null_score_diff"] - null_odds[str(i)]) <= (
            TOLERANCE)
        # SQuAD 2.0's null answer is always listed.
        assert "" in [entry["text"] for entry in result["nbest"]]


def test_jax_tags_are_the_runners(predictions, runs):
    records = [json.loads(line) for line in (
        runs["tagging_crf"][0] / "test_predictions.jsonl"
    ).read_text().splitlines()]
    assert predictions["jax"]["tagging_crf"] == [
        {key: record[key] for key in ("words", "labels", "entities")}
        for record in records]


def test_export_saved_model_on_jax_builds_the_export_on_tensorflow(
        predictions, runs):
    """The program runs itself on TensorFlow's backend: its SavedModel
    predicts what the run predicts."""
    export_dir, stderr = predictions["export"]
    assert ("export_saved_model.py: KERAS_BACKEND=jax: a SavedModel is a "
            "TensorFlow graph; building it on the TensorFlow backend"
            ) in stderr.splitlines()
    exported = bert_tf.load(export_dir).predict(runs["multiple_choice"][1])
    _assert_same(json.loads(json.dumps(exported)),
                 predictions["tensorflow"]["multiple_choice"], "export")


if __name__ == "__main__":
    # python test_api_backends.py PLAN RESULTS: the plan's predictions on
    # this process's Keras backend, as JSON.
    pathlib.Path(sys.argv[2]).write_text(json.dumps(_predict_plan(
        json.loads(pathlib.Path(sys.argv[1]).read_text()))))
