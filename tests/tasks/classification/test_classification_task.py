"""ClassificationTask: Google's names, losses, checkpoints, prediction order."""

import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import checkpoints
from bert_tf.tasks import base
from bert_tf.tasks.classification import features as cf
from bert_tf.tasks.classification import task as classification

HERE = pathlib.Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[2]
SEQ_LENGTH = 12


def random_features(count, num_labels, seed=0, num_padding=0,
                    regression=False):
    rng = np.random.default_rng(seed)
    features = []
    for i in range(count):
        length = int(rng.integers(3, SEQ_LENGTH + 1))
        ids = rng.integers(5, 100, length).tolist()
        pad = [0] * (SEQ_LENGTH - length)
        label = (float(rng.uniform(0, 5)) if regression
                 else int(rng.integers(0, num_labels)))
        features.append(cf.ClassifierFeatures(
            input_ids=ids + pad, input_mask=[1] * length + pad,
            segment_ids=[0] * (length // 2) + [1] * (length - length // 2)
            + pad, label_id=label, is_real_example=i < count - num_padding))
    return features


def make_task(tiny_config, num_labels=3, regression=False, **files):
    return classification.ClassificationTask(
        tiny_config, num_labels,
        classification.ClassificationDataConfig(max_seq_length=SEQ_LENGTH,
                                                **files),
        is_regression=regression)


def test_variables_have_googles_names(tiny_config):
    model = make_task(tiny_config, num_labels=3).build_model()
    shapes = {checkpoints.variable_name(v): tuple(v.shape)
              for v in model.weights}
    assert shapes["output_weights"] == (3, 32)
    assert shapes["output_bias"] == (3,)
    assert all(name.startswith("bert/") for name in shapes
               if name not in ("output_weights", "output_bias"))
    assert "bert/encoder/layer_1/output/LayerNorm/gamma" in shapes
    regression = make_task(tiny_config, regression=True).build_model()
    shapes = {checkpoints.variable_name(v): tuple(v.shape)
              for v in regression.weights}
    assert shapes["output_weights"] == (1, 32)


def test_classification_loss_is_mean_cross_entropy_of_real_examples(
        tiny_config):
    task = make_task(tiny_config, num_labels=3)
    model = task.build_model()
    batch = {k: tf.constant(v) for k, v in cf.features_to_arrays(
        random_features(6, 3, num_padding=2)).items()}
    outputs = task.forward(model, batch, training=False)
    loss, metrics = task.compute_loss(batch, outputs,
                                      task.loss_denominators(batch))
    # Independent: numpy log-softmax over the four real rows.
    logits = outputs["logits"].numpy().astype(np.float64)[:4]
    labels = batch["label_ids"].numpy()[:4]
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    expected = -log_probs[np.arange(4), labels]
    np.testing.assert_allclose(float(loss), expected.mean(), rtol=1e-5)
    assert float(metrics["num_examples"]) == 4
    assert float(metrics["correct"]) == np.sum(logits.argmax(-1) == labels)
    results = task.aggregate_metrics({k: float(v) for k, v in
                                      metrics.items()})
    assert set(results) == {"eval_accuracy", "eval_loss"}
    np.testing.assert_allclose(results["eval_loss"], expected.mean(),
                               rtol=1e-5)


def test_regression_loss_is_mean_squared_error(tiny_config):
    task = make_task(tiny_config, regression=True)
    model = task.build_model()
    batch = {k: tf.constant(v) for k, v in cf.features_to_arrays(
        random_features(5, 1, regression=True), is_regression=True).items()}
    outputs = task.forward(model, batch, training=False)
    loss, metrics = task.compute_loss(batch, outputs,
                                      task.loss_denominators(batch))
    predictions = outputs["logits"].numpy()[:, 0]
    expected = np.mean((predictions - batch["label_ids"].numpy()) ** 2)
    np.testing.assert_allclose(float(loss), expected, rtol=1e-5)
    assert set(task.aggregate_metrics(
        {k: float(v) for k, v in metrics.items()})) == {"eval_loss"}


def save_model(model, prefix, drop=()):
    tensors = {checkpoints.variable_name(v): v.numpy() for v in model.weights
               if checkpoints.variable_name(v) not in drop}
    checkpoints.save_checkpoint(tensors, str(prefix))


def test_init_checkpoint_with_and_without_classifier(tiny_config, tmp_path):
    source = make_task(tiny_config, num_labels=3).build_model()
    fine_tuned = tmp_path / "fine_tuned" / "model.ckpt-7"
    pretrained = tmp_path / "pretrained" / "bert_model.ckpt"
    save_model(source, fine_tuned)
    save_model(source, pretrained, drop=("output_weights", "output_bias"))

    task = make_task(tiny_config, num_labels=3)
    model = task.build_model()
    task.initialize_from_checkpoint(model, str(fine_tuned))
    np.testing.assert_array_equal(model.classifier.output_weights.numpy(),
                                  source.classifier.output_weights.numpy())

    model = task.build_model()
    head_before = model.classifier.output_weights.numpy()
    task.initialize_from_checkpoint(model, str(pretrained))
    np.testing.assert_array_equal(
        model.bert.embeddings.word_embeddings.numpy(),
        source.bert.embeddings.word_embeddings.numpy())
    np.testing.assert_array_equal(model.classifier.output_weights.numpy(),
                                  head_before)

    two_labels = make_task(tiny_config, num_labels=2)
    with pytest.raises(checkpoints.CheckpointError,
                       match=r"output_weights: model \[2, 32\] vs "
                             r"checkpoint \[3, 32\]"):
        two_labels.initialize_from_checkpoint(two_labels.build_model(),
                                              str(fine_tuned))


def predict_all(trainer, batch_size, num_examples):
    """`Trainer.predict` over the test records, batches concatenated."""
    batches = list(trainer.predict(
        trainer.task.prediction_inputs(base.PREDICT), batch_size,
        num_examples=num_examples))
    return {key: np.concatenate([batch[key] for batch in batches])
            for key in batches[0]}


def write_predict_file(tmp_path, features):
    path = tmp_path / "predict.tf_record"
    cf.write_tfrecord(features, path)
    return str(path)


def test_predict_returns_rows_in_input_order(tiny_config, tmp_path):
    from bert_tf.training.trainer import Trainer, TrainerConfig
    features = random_features(11, 3, seed=4, num_padding=1)
    task = make_task(tiny_config, num_labels=3,
                     predict_file=write_predict_file(tmp_path, features))
    trainer = Trainer(task, TrainerConfig(output_dir=str(tmp_path / "out")))
    outputs = predict_all(trainer, 4, len(features))
    # Independent: the model on all rows at once, in file order.
    arrays = cf.features_to_arrays(features)
    expected = trainer.model(
        {k: tf.constant(v) for k, v in arrays.items()},
        training=False)["logits"].numpy()
    np.testing.assert_allclose(outputs["logits"], expected, atol=1e-5)
    np.testing.assert_array_equal(outputs["label_ids"], arrays["label_ids"])
    np.testing.assert_array_equal(outputs["is_real_example"],
                                  [1] * 10 + [0])
    with pytest.raises(RuntimeError, match="returned 11 distinct"):
        predict_all(trainer, 4, 12)


def test_evaluation_reports_the_glue_metrics_of_all_predictions(
        tiny_config, tmp_path):
    from sklearn.metrics import f1_score
    from bert_tf.training.trainer import Trainer, TrainerConfig
    # 13 rows (one padding) in batches of 4: the last batch is partial.
    features = random_features(13, 2, seed=6, num_padding=1)
    eval_file = write_predict_file(tmp_path, features)
    task = classification.ClassificationTask(
        tiny_config, 2, classification.ClassificationDataConfig(
            max_seq_length=SEQ_LENGTH, eval_file=eval_file),
        glue_task_name="mrpc")
    output_dir = tmp_path / "out"
    trainer = Trainer(task, TrainerConfig(output_dir=str(output_dir),
                                          eval_batch_size=4,
                                          max_eval_steps=None))
    results = trainer.evaluate()
    # Independent: the model on all rows at once, scikit-learn's F1 over
    # the real ones.
    arrays = cf.features_to_arrays(features)
    logits = trainer.model({k: tf.constant(v) for k, v in arrays.items()},
                           training=False)["logits"].numpy()
    expected = f1_score(arrays["label_ids"][:12], logits[:12].argmax(-1))
    np.testing.assert_allclose(results["eval_f1"], expected, rtol=1e-6)
    text = (output_dir / "eval_results.txt").read_text()
    assert f"eval_f1 = {str(np.float32(expected))}" in text
    assert "eval_accuracy = " in text


def test_prediction_writes_googles_test_results(tiny_config, tmp_path):
    from bert_tf.training.trainer import Trainer, TrainerConfig
    features = random_features(7, 3, seed=7, num_padding=2)
    task = make_task(tiny_config, num_labels=3,
                     predict_file=write_predict_file(tmp_path, features))
    output_dir = tmp_path / "out"
    trainer = Trainer(task, TrainerConfig(output_dir=str(output_dir)))
    trainer.run_predictions(base.PREDICT, 3, num_examples=7)
    arrays = cf.features_to_arrays(features)
    logits = trainer.model({k: tf.constant(v) for k, v in arrays.items()},
                           training=False)["logits"].numpy()[:5]
    # Independent: numpy softmax of the real rows, one line each.
    expected = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    lines = (output_dir / "test_results.tsv").read_text().splitlines()
    assert len(lines) == 5
    np.testing.assert_allclose(
        [[float(v) for v in line.split("\t")] for line in lines], expected,
        atol=1e-6)
    assert not (output_dir / "eval_results.txt").exists()


def test_probabilities_from_logits():
    logits = np.array([[1.0, 2.0, 3.0], [1000.0, 0.0, -1000.0]])
    probabilities = classification.probabilities_from_logits(logits, False)
    expected = np.exp(logits[0]) / np.exp(logits[0]).sum()
    np.testing.assert_allclose(probabilities[0], expected, rtol=1e-6)
    np.testing.assert_allclose(probabilities[1], [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(
        classification.probabilities_from_logits([[2.5]], True), [[2.5]])


def test_task_rejects_bad_settings(tiny_config):
    with pytest.raises(ValueError, match="exceeds the model's "
                                         "max_position_embeddings"):
        classification.ClassificationTask(
            tiny_config, 2,
            classification.ClassificationDataConfig(max_seq_length=65))
    with pytest.raises(ValueError, match="at least 2 labels"):
        classification.ClassificationTask(
            tiny_config, 1,
            classification.ClassificationDataConfig(max_seq_length=8))
    task = make_task(tiny_config)
    with pytest.raises(ValueError, match="no predict data"):
        task.build_inputs(base.PREDICT, 2)


MIRRORED_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    sys.path.insert(0, sys.argv[1])
    from test_classification_task import (make_task, predict_all,
                                          random_features, write_predict_file)
    from bert_tf.config import BertConfig
    from bert_tf.tasks import base
    from bert_tf.tasks.classification import features as cf
    from bert_tf.tasks.classification import task as classification
    from bert_tf.training.trainer import Trainer, TrainerConfig
    import pathlib
    tmp = pathlib.Path(sys.argv[2])
    config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64,
                        max_position_embeddings=64, type_vocab_size=2)
    features = random_features(13, 3, seed=5)
    task = make_task(config, predict_file=write_predict_file(tmp, features))
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    trainer = Trainer(task, TrainerConfig(output_dir=str(tmp / "out")),
                      strategy)
    outputs = predict_all(trainer, 4, 13)
    arrays = cf.features_to_arrays(features)
    expected = trainer.model({k: tf.constant(v) for k, v in arrays.items()},
                             training=False)["logits"].numpy()
    np.testing.assert_allclose(outputs["logits"], expected, atol=1e-5)
    np.testing.assert_array_equal(outputs["label_ids"], arrays["label_ids"])
    print("REPLICAS", strategy.num_replicas_in_sync)
""")


def test_predict_order_under_two_replicas(tmp_path):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="",
               PYTHONPATH=str(REPO_ROOT))
    process = subprocess.run(
        [sys.executable, "-c", MIRRORED_SCRIPT, str(HERE),
         str(tmp_path)], env=env, capture_output=True, text=True,
        timeout=600)
    assert process.returncode == 0, process.stderr[-4000:]
    assert "REPLICAS 2" in process.stdout
