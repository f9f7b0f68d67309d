"""The SQuAD task: Google's loss, checkpoint initialization, prediction.

References: a numpy cross-entropy, Google's own checkpoint (read with
TensorFlow's reader), and the model called directly on all features.
"""

import json
import os
import sys

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import checkpoints
from bert_tf.config import BertConfig
from bert_tf.tasks import base
from bert_tf.tasks.squad import features as squad_features
from bert_tf.tasks.squad import task as squad
from bert_tf.training import trainer as trainer_lib

from runner_harness import run_test_file_as_script

SEQ = 16


def _random_features(rng, count, vocab_size, first_unique_id=1000000000):
    lengths = rng.integers(4, SEQ + 1, count)
    mask = (np.arange(SEQ)[None, :] < lengths[:, None]).astype(np.int32)
    return [squad_features.SquadFeatures(
        unique_id=first_unique_id + i, example_index=i, doc_span_index=0,
        tokens=[], token_to_orig_map={}, token_is_max_context={},
        input_ids=(rng.integers(1, vocab_size, SEQ) * mask[i]).tolist(),
        input_mask=mask[i].tolist(),
        segment_ids=((np.arange(SEQ) >= 3) * mask[i]).tolist(),
        start_position=int(rng.integers(0, lengths[i])),
        end_position=int(rng.integers(0, lengths[i])),
        is_impossible=False) for i in range(count)]


def _numpy_cross_entropy(logits, positions):
    logits = logits.astype(np.float64)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return -log_probs[np.arange(len(positions)), positions]


def test_loss_is_the_mean_of_start_and_end_cross_entropies(tiny_config):
    rng = np.random.default_rng(0)
    features = squad_features.features_to_arrays(
        _random_features(rng, 6, tiny_config.vocab_size), is_training=True)
    task = squad.SquadTask(tiny_config, squad.SquadDataConfig(
        max_seq_length=SEQ))
    outputs = {squad.START_LOGITS: rng.normal(0, 3, [6, SEQ]),
               squad.END_LOGITS: rng.normal(0, 3, [6, SEQ])}
    outputs = {k: tf.constant(v, tf.float32) for k, v in outputs.items()}
    # This replica holds 6 of a global batch of 8 examples.
    loss, metrics = task.compute_loss(features, outputs,
                                      {"num_examples": tf.constant(8.0)})
    start = _numpy_cross_entropy(outputs[squad.START_LOGITS].numpy(),
                                 features["start_positions"])
    end = _numpy_cross_entropy(outputs[squad.END_LOGITS].numpy(),
                               features["end_positions"])
    np.testing.assert_allclose(float(loss), ((start + end) / 2).sum() / 8,
                               rtol=1e-5)
    np.testing.assert_allclose(float(metrics["loss_sum"]),
                               ((start + end) / 2).sum(), rtol=1e-5)
    expected_start_correct = np.sum(
        outputs[squad.START_LOGITS].numpy().argmax(-1)
        == features["start_positions"])
    assert float(metrics["start_correct"]) == expected_start_correct
    assert float(metrics["num_examples"]) == 6
    assert task.aggregate_metrics({"start_correct": 3.0, "end_correct": 6.0,
                                   "num_examples": 6.0, "loss_sum": 1.0}) == {
        "start_accuracy": 0.5, "end_accuracy": 1.0}


def test_sequence_too_long_for_the_model(tiny_config):
    with pytest.raises(ValueError, match="Cannot use sequence length 128 .* "
                                         "up to sequence length 64"):
        squad.SquadTask(tiny_config, squad.SquadDataConfig(max_seq_length=128))


def test_initialization_from_googles_pretrained_checkpoint(cased_tiny_dir):
    config = BertConfig.from_json_file(
        str(cased_tiny_dir / "bert_config.json"))
    task = squad.SquadTask(config, squad.SquadDataConfig(max_seq_length=SEQ))
    model = task.build_model()
    head_before = model.span_head.output_weights.numpy().copy()
    prefix = str(cased_tiny_dir / "bert_model.ckpt")
    task.initialize_from_checkpoint(model, prefix)
    reader = tf.train.load_checkpoint(prefix)
    variables = task.checkpoint_variables(model)
    for name in ("bert/embeddings/word_embeddings",
                 "bert/encoder/layer_1/output/dense/kernel",
                 "bert/pooler/dense/bias"):
        np.testing.assert_array_equal(variables[name].numpy(),
                                      reader.get_tensor(name))
    # Google's pretrained checkpoint has no SQuAD head: it keeps its
    # initial values.
    np.testing.assert_array_equal(model.span_head.output_weights.numpy(),
                                  head_before)
    assert set(variables) >= {"cls/squad/output_weights",
                              "cls/squad/output_bias"}
    # The pooler is not trained (no gradient reaches it).
    trainable = {checkpoints.variable_name(v)
                 for v in task.trainable_variables(model)}
    assert "cls/squad/output_weights" in trainable
    assert not any(name.startswith("bert/pooler/") for name in trainable)


def test_head_of_the_wrong_shape_is_named(cased_tiny_dir, tmp_path):
    prefix = str(cased_tiny_dir / "bert_model.ckpt")
    reader = tf.train.load_checkpoint(prefix)
    tensors = {name: reader.get_tensor(name)
               for name in reader.get_variable_to_shape_map()}
    tensors["cls/squad/output_weights"] = np.zeros([3, 32], np.float32)
    tensors["cls/squad/output_bias"] = np.zeros([3], np.float32)
    bad = checkpoints.save_checkpoint(tensors, str(tmp_path / "bad.ckpt"))
    config = BertConfig.from_json_file(
        str(cased_tiny_dir / "bert_config.json"))
    task = squad.SquadTask(config, squad.SquadDataConfig(max_seq_length=SEQ))
    with pytest.raises(checkpoints.CheckpointError,
                       match=r"does not fit the model(.|\n)*"
                             r"cls/squad/output_weights: model \[2, 32\] vs "
                             r"checkpoint \[3, 32\]"):
        task.initialize_from_checkpoint(task.build_model(), bad)


def predict_logits(trainer, batch_size, num_features,
                   pad_to_full_batches=False):
    """The start and end logits `Trainer.run_predictions` collects."""
    state, metrics = trainer.run_predictions(
        base.PREDICT, batch_size,
        initial_state=squad.SpanPredictions(num_features, SEQ),
        pad_to_full_batches=pad_to_full_batches)
    assert metrics == {}
    return state.start_logits, state.end_logits


@pytest.mark.parametrize("batch_size, pad", [(3, False), (4, True)])
def test_predict_logits_by_unique_id(tiny_config, tmp_path, batch_size, pad):
    rng = np.random.default_rng(1)
    features = _random_features(rng, 10, tiny_config.vocab_size)
    record_file = tmp_path / "eval.tf_record"
    with squad_features.FeatureWriter(record_file, is_training=False) as w:
        for feature in features:
            w.process_feature(feature)
    task = squad.SquadTask(tiny_config, squad.SquadDataConfig(
        predict_file=str(record_file), max_seq_length=SEQ))
    trainer = trainer_lib.Trainer(task, trainer_lib.TrainerConfig(
        output_dir=str(tmp_path / "out")))
    start, end = predict_logits(trainer, batch_size, len(features),
                                pad_to_full_batches=pad)
    assert start.shape == end.shape == (10, SEQ)
    assert start.dtype == np.float32
    # The model on all features at once, in file order.
    arrays = squad_features.features_to_arrays(features, is_training=False)
    direct = trainer.model({k: tf.constant(v) for k, v in arrays.items()},
                           training=False)
    # The trainer's default runs each batch at its real length: the real
    # tokens' logits are the full-length model's, the padding's
    # PADDING_LOGIT (run_squad.py's default is the full length).
    real = arrays["input_mask"] == 1
    for ours, name in ((start, squad.START_LOGITS), (end, squad.END_LOGITS)):
        np.testing.assert_allclose(ours[real], direct[name].numpy()[real],
                                   atol=1e-5)
        assert np.all(ours[~real] == np.float32(squad.PADDING_LOGIT))


def test_predict_logits_detects_missing_features(tiny_config, tmp_path):
    rng = np.random.default_rng(2)
    features = _random_features(rng, 4, tiny_config.vocab_size)
    record_file = tmp_path / "eval.tf_record"
    with squad_features.FeatureWriter(record_file, is_training=False) as w:
        for feature in features[:3]:
            w.process_feature(feature)
    task = squad.SquadTask(tiny_config, squad.SquadDataConfig(
        predict_file=str(record_file), max_seq_length=SEQ))
    trainer = trainer_lib.Trainer(task, trainer_lib.TrainerConfig(
        output_dir=str(tmp_path / "out")))
    with pytest.raises(RuntimeError,
                       match="returned no output for 1 of them \\(first "
                             "unique id 1000000003\\)"):
        predict_logits(trainer, 2, 4)


# -- prediction over 2 mirrored replicas --------------------------------------
# Two logical CPUs must be configured before TensorFlow starts: the check
# runs this file as a script in a fresh process.

@pytest.mark.extended(reason=(
    "SQuAD's prediction on 2 replicas; the default run checks the order of "
    "predictions on 2 replicas (test_classification_task)"))
def test_mirrored_prediction_puts_every_feature_in_its_row(tmp_path):
    result = run_test_file_as_script(__file__, "mirrored", tmp_path)
    assert result["num_replicas"] == 2
    for run in ("odd_batches", "padded"):
        assert result[run] < 1e-5, result


def _mirrored_check(out_path, work_dir):
    """Predicts 11 features on 2 replicas; compares with the direct model."""
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    from bert_tf.training import distribution
    config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64,
                        max_position_embeddings=64, type_vocab_size=2)
    features = _random_features(np.random.default_rng(3), 11, 100)
    record_file = os.path.join(work_dir, "eval.tf_record")
    with squad_features.FeatureWriter(record_file, is_training=False) as w:
        for feature in features:
            w.process_feature(feature)
    strategy = distribution.get_distribution_strategy("mirrored")
    task = squad.SquadTask(config, squad.SquadDataConfig(
        predict_file=record_file, max_seq_length=SEQ))
    trainer = trainer_lib.Trainer(task, trainer_lib.TrainerConfig(
        output_dir=os.path.join(work_dir, "out")), strategy)
    arrays = squad_features.features_to_arrays(features, is_training=False)
    with strategy.scope():
        direct = trainer.model({k: tf.constant(v) for k, v in arrays.items()},
                               training=False)
    expected = np.stack([direct[squad.START_LOGITS].numpy(),
                         direct[squad.END_LOGITS].numpy()])
    result = {"num_replicas": strategy.num_replicas_in_sync}
    # Batches of 3 split unevenly over 2 replicas, the last one partial; and
    # batches of 4 padded to full (as on TPUs).
    for run, batch_size, pad in (("odd_batches", 3, False),
                                 ("padded", 4, True)):
        logits = np.stack(predict_logits(trainer, batch_size, 11,
                                         pad_to_full_batches=pad))
        # Each replica cuts its share to its own length: the real tokens'
        # logits are the full-length model's, the padding's PADDING_LOGIT.
        real = np.broadcast_to(arrays["input_mask"] == 1, logits.shape)
        assert np.all(logits[~real] == np.float32(squad.PADDING_LOGIT))
        result[run] = float(np.abs(logits - expected)[real].max())
    with open(out_path, "w") as writer:
        json.dump(result, writer)


if __name__ == "__main__":
    if sys.argv[1] == "mirrored":
        _mirrored_check(sys.argv[2], sys.argv[3])
