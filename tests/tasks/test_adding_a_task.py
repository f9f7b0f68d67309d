"""Adding a task is one folder and one registry line (docs/adding-a-task.md).

The folder `example_task/pair_regression/` (sentence-pair regression: a
one-output head on the pooled output, mean squared error) is copied into a
temporary directory, outside bert_tf, and registered with
`registry.register(SPEC)`. Without any other change, `bert_tf.finetune`
trains, evaluates and predicts with it, `bert_tf.load(run).predict` serves
the run, and `export_saved_model.py --task_name=pair_regression` writes a
SavedModel that `bert_tf.load` serves as well. The scores are checked
against a forward pass computed here (the encoder on the Python
tokenizer's ids, the checkpoint's head in numpy) and the evaluation loss
against the mean squared error of the scores.
"""

import importlib
import json
import pathlib
import shutil
import sys

import numpy as np
import pytest

import bert_tf
from bert_tf.tasks import registry

import export_saved_model
from runner_harness import run_in_process

EXAMPLE = pathlib.Path(__file__).resolve().parent / "example_task"
PACKAGE = "pair_regression"
MAX_SEQ_LENGTH = 32
TRAIN = [("A man plays a guitar.", "A man plays music.", 4.2),
         ("A dog runs in a park.", "The stock market fell.", 0.3),
         ("Two women are talking.", "Two women speak.", 4.8),
         ("A child eats an apple.", "Rain falls on the city.", 0.1)]
TEST = [("A man plays a guitar.", "A man plays music."),
        ("A cat sleeps on a mat, then wakes up and stretches.",
         "Someone is cooking dinner in a small kitchen.")]


@pytest.fixture(scope="module")
def spec(tmp_path_factory):
    """The copied package's spec, registered while the module's tests run
    (then unregistered, its modules and path gone)."""
    home = tmp_path_factory.mktemp("elsewhere")
    shutil.copytree(EXAMPLE / PACKAGE, home / PACKAGE,
                    ignore=shutil.ignore_patterns("__pycache__"))
    sys.path.insert(0, str(home))
    try:
        spec_module = importlib.import_module(f"{PACKAGE}.spec")
        assert pathlib.Path(spec_module.__file__).parent == home / PACKAGE
        registry.register(spec_module.SPEC)
        yield spec_module.SPEC
    finally:
        registry.unregister("pair_regression")
        sys.path.remove(str(home))
        for name in [name for name in sys.modules
                     if name == PACKAGE or name.startswith(f"{PACKAGE}.")]:
            del sys.modules[name]


@pytest.fixture(scope="module")
def run(spec, tmp_path_factory, cased_tiny_dir):
    """A fine-tuning run of the registered task: one training step on the
    four pairs, evaluation on them, prediction of TEST."""
    output_dir = tmp_path_factory.mktemp("pair_run") / "run"
    results = bert_tf.finetune(
        "pair_regression", cased_tiny_dir, output_dir, train=TRAIN,
        dev=TRAIN, test=TEST, verbose=False, max_seq_length=MAX_SEQ_LENGTH,
        train_batch_size=4, eval_batch_size=4, num_train_epochs=1.0,
        learning_rate=1e-3, seed=1)
    return output_dir, results


def _manual_scores(run_dir, pairs):
    """The scores of `pairs`, computed here: the run's encoder (a
    `BertModel` with the newest checkpoint's weights) on the pairs framed
    and tokenized by the Python tokenizer, then the checkpoint's
    `output_weights`/`output_bias` applied in numpy."""
    import tensorflow as tf

    from bert_tf import checkpoints
    from bert_tf.config import BertConfig
    from bert_tf.data.encoded_input import frame_pair
    from bert_tf.modeling import BertModel
    from bert_tf.text import tokenization

    checkpoint = checkpoints.resolve_checkpoint(str(run_dir))
    encoder = BertModel(BertConfig.from_json_file(
        str(run_dir / "bert_config.json")))
    encoder.build()
    checkpoints.load_checkpoint(list(encoder.weights), checkpoint)
    tokenizer = tokenization.FullTokenizer(str(run_dir / "vocab.txt"),
                                           do_lower_case=False)
    reader = tf.train.load_checkpoint(checkpoint)
    weights = reader.get_tensor("output_weights")  # [1, hidden]
    bias = reader.get_tensor("output_bias")  # [1]
    scores = []
    for first, second in pairs:
        tokens, segment_ids = frame_pair(tokenizer.tokenize(first),
                                         tokenizer.tokenize(second),
                                         MAX_SEQ_LENGTH)
        ids = np.array([tokenizer.convert_tokens_to_ids(tokens)], np.int32)
        pooled = np.asarray(encoder(
            ids, input_mask=np.ones_like(ids),
            segment_ids=np.array([segment_ids], np.int32),
            training=False)["pooled_output"])[0]
        scores.append(float(pooled @ weights[0] + bias[0]))
    return np.array(scores)


def test_finetune_trains_evaluates_and_predicts_a_registered_task(run):
    output_dir, results = run
    assert results["train"]["global_step"] == 1
    description = json.loads((output_dir / "bert_tf_run.json").read_text())
    assert description["task"] == "pair_regression"
    assert description["program"] == "run_pair_regression.py"
    predicted = np.asarray(results["predict"])
    assert predicted.shape == (len(TEST),)
    # The recipe's file says what its results say.
    written = [float(line) for line in
               (output_dir / "test_results.tsv").read_text().splitlines()]
    np.testing.assert_allclose(written, predicted, rtol=1e-6)
    # The prediction phase is the forward pass computed here.
    np.testing.assert_allclose(predicted,
                               _manual_scores(output_dir, TEST),
                               rtol=1e-4, atol=1e-5)
    # eval_loss is the mean squared error of the final model's scores.
    scores = _manual_scores(output_dir, [pair[:2] for pair in TRAIN])
    targets = np.array([pair[2] for pair in TRAIN])
    assert results["eval"]["eval_loss"] == pytest.approx(
        float(np.mean((scores - targets) ** 2)), rel=1e-4)


def test_load_predict_serves_the_run(run):
    output_dir, results = run
    model = bert_tf.load(output_dir)
    assert model.task == "pair_regression"
    predictions = model.predict(TEST)
    assert [sorted(p) for p in predictions] == [["score"]] * len(TEST)
    np.testing.assert_allclose([p["score"] for p in predictions],
                               results["predict"], rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match=r"^inputs\[1\]: expected a pair "
                       r"\(sentence1, sentence2\) of strings"):
        model.predict([TEST[0], "one sentence"])


def test_export_saved_model_exports_it_and_load_serves_the_export(
        run, tmp_path):
    output_dir, _ = run
    export_dir = tmp_path / "saved_model"
    run_in_process(export_saved_model, "--task_name=pair_regression",
                   f"--init_checkpoint={output_dir}",
                   f"--vocab_file={output_dir / 'vocab.txt'}",
                   f"--bert_config_file={output_dir / 'bert_config.json'}",
                   "--do_lower_case=False",
                   f"--max_seq_length={MAX_SEQ_LENGTH}",
                   f"--export_dir={export_dir}")
    exported = bert_tf.load(export_dir)
    # Recognized by its signature's names (the spec's `serves`).
    assert exported.task == "pair_regression"
    np.testing.assert_allclose(
        [p["score"] for p in exported.predict(TEST)],
        [p["score"] for p in bert_tf.load(output_dir).predict(TEST)],
        rtol=1e-5, atol=1e-6)


def test_finetune_names_a_bad_example_of_the_new_task(spec, tmp_path,
                                                      cased_tiny_dir):
    with pytest.raises(ValueError, match=r"^finetune: train\[1\]: expected "
                       r"\(sentence1, sentence2, score\), got \('a', 'b'\)"):
        bert_tf.finetune("pair_regression", cased_tiny_dir, tmp_path / "run",
                         train=[("a", "b", 1.0), ("a", "b")], verbose=False)


def test_register_refuses_a_taken_name_and_unregister_removes_it(spec, run):
    assert registry.get("pair_regression") is spec
    with pytest.raises(ValueError, match="'pair_regression' is already "
                       "registered"):
        registry.register(spec)
    with pytest.raises(ValueError, match="'squad' is already registered"):
        registry.register(registry.get("squad"))
    registry.unregister("pair_regression")
    try:
        assert "pair_regression" not in registry.names()
        with pytest.raises(ValueError, match=r"^finetune: "
                           r"task='pair_regression' is none of"):
            bert_tf.finetune("pair_regression", "unused", "unused",
                             train=TRAIN)
        # Its runs are no known task's any more.
        with pytest.raises(ValueError, match=r"bert_tf_run.json: no 'task' "
                           r"among classification, multi_label, .*"
                           r"multiple_choice$"):
            bert_tf.load(run[0])
    finally:
        registry.register(spec)
