"""The pretraining task: Google's losses against numpy, metrics, init_checkpoint.

The small-data helpers the pretraining tests share live in
`pretraining_harness.py`.
"""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import checkpoints
from bert_tf.config import BertConfig
from bert_tf.pretraining import task as pretraining


from modeling_harness import tiny_bert_config
from pretraining_harness import make_pretraining_arrays
from pretraining_harness import numpy_log_softmax
from pretraining_harness import numpy_pretraining_losses


def _random_outputs(batch, predictions, vocab, seed=0):
    rng = np.random.RandomState(seed)
    return (rng.randn(batch, predictions, vocab).astype(np.float32) * 3,
            rng.randn(batch, 2).astype(np.float32) * 2)


# -- losses ------------------------------------------------------------------

def _whole_batch_loss(objective, arrays, mlm_logits, nsp_logits):
    """The task's training loss on one device (denominators of the batch)."""
    task = pretraining.PretrainingTask(
        tiny_bert_config(), pretraining.PretrainingDataConfig(
            input_patterns=("unused",), max_seq_length=16,
            max_predictions_per_seq=mlm_logits.shape[1]),
        objective=objective)
    features = {k: tf.constant(v) for k, v in arrays.items()}
    outputs = {"masked_lm_logits": tf.constant(mlm_logits),
               "next_sentence_logits": tf.constant(nsp_logits)}
    loss, _ = task.compute_loss(features, outputs,
                                task.loss_denominators(features))
    return float(loss)


def test_masked_lm_and_next_sentence_losses_match_numpy():
    arrays = make_pretraining_arrays(6, max_predictions_per_seq=5)
    mlm_logits, nsp_logits = _random_outputs(6, 5, 100)
    expected_mlm, expected_nsp = numpy_pretraining_losses(
        mlm_logits, arrays["masked_lm_ids"], arrays["masked_lm_weights"],
        nsp_logits, arrays["next_sentence_labels"])
    np.testing.assert_allclose(
        _whole_batch_loss(pretraining.MLM, arrays, mlm_logits, nsp_logits),
        expected_mlm, rtol=1e-6)
    np.testing.assert_allclose(
        _whole_batch_loss(pretraining.MLM_NSP, arrays, mlm_logits,
                          nsp_logits),
        expected_mlm + expected_nsp, rtol=1e-6)


def test_masked_lm_loss_ignores_zero_weight_predictions():
    mlm_logits, nsp_logits = _random_outputs(2, 3, 10, seed=1)
    arrays = make_pretraining_arrays(2, max_predictions_per_seq=3)
    weights = np.array([[1, 1, 0], [1, 0, 0]], np.float32)
    ids = np.array([[1, 2, 3], [4, 5, 6]], arrays["masked_lm_ids"].dtype)
    changed_ids = ids.copy()
    changed_ids[weights == 0] = 9  # padding predictions' ids do not matter

    def loss(ids, weights):
        return _whole_batch_loss(
            pretraining.MLM, {**arrays, "masked_lm_ids": ids,
                              "masked_lm_weights": weights},
            mlm_logits, nsp_logits)

    assert loss(ids, weights) == loss(changed_ids, weights)
    # All weights zero: 0 / (0 + 1e-5) = 0, not NaN (Google's epsilon).
    assert loss(ids, np.zeros_like(weights)) == 0.0


def test_replica_shares_sum_to_the_single_device_loss():
    """The global-batch contract: shares over uneven splits add up exactly."""
    task = pretraining.PretrainingTask(
        tiny_bert_config(), pretraining.PretrainingDataConfig(
            input_patterns=("unused",), max_seq_length=16,
            max_predictions_per_seq=4))
    arrays = make_pretraining_arrays(8, seed=3)
    mlm_logits, nsp_logits = _random_outputs(8, 4, 100, seed=3)
    expected_mlm, expected_nsp = numpy_pretraining_losses(
        mlm_logits, arrays["masked_lm_ids"], arrays["masked_lm_weights"],
        nsp_logits, arrays["next_sentence_labels"])

    def split(start, stop):
        features = {k: tf.constant(v[start:stop]) for k, v in arrays.items()}
        outputs = {"masked_lm_logits": tf.constant(mlm_logits[start:stop]),
                   "next_sentence_logits": tf.constant(nsp_logits[start:stop])}
        return features, outputs

    whole_features, _ = split(0, 8)
    # Uneven shares: the replicas' masked-token counts differ, which is where
    # averaging per-replica losses would go wrong.
    shares = [split(0, 3), split(3, 8)]
    denominators = {k: sum(float(task.loss_denominators(f)[k])
                           for f, _ in shares)
                    for k in task.loss_denominators(whole_features)}
    total = 0.0
    metric_totals = {k: 0.0 for k in task.metric_names}
    for features, outputs in shares:
        loss, metrics = task.compute_loss(features, outputs, denominators)
        total += float(loss)
        assert set(metrics) == set(task.metric_names)
        for k in metrics:
            metric_totals[k] += float(metrics[k])
    np.testing.assert_allclose(total, expected_mlm + expected_nsp, rtol=1e-5)

    reported = task.aggregate_metrics(metric_totals)
    weights = arrays["masked_lm_weights"]
    mlm_correct = (mlm_logits.argmax(-1) == arrays["masked_lm_ids"])
    nsp_correct = (nsp_logits.argmax(-1)
                   == arrays["next_sentence_labels"].reshape(-1))
    per_prediction = -np.take_along_axis(
        numpy_log_softmax(mlm_logits), arrays["masked_lm_ids"][..., None],
        axis=-1)[..., 0]
    np.testing.assert_allclose(reported["masked_lm_accuracy"],
                               (weights * mlm_correct).sum() / weights.sum(),
                               rtol=1e-6)
    np.testing.assert_allclose(reported["masked_lm_loss"],
                               (weights * per_prediction).sum() / weights.sum(),
                               rtol=1e-5)
    np.testing.assert_allclose(reported["next_sentence_accuracy"],
                               nsp_correct.mean(), rtol=1e-6)
    np.testing.assert_allclose(reported["next_sentence_loss"], expected_nsp,
                               rtol=1e-5)


def test_aggregate_metrics_with_nothing_counted_reports_zero():
    task = pretraining.PretrainingTask(
        tiny_bert_config(),
        pretraining.PretrainingDataConfig(input_patterns=("x",),
                                          max_seq_length=16,
                                          max_predictions_per_seq=4))
    reported = task.aggregate_metrics({k: 0.0 for k in task.metric_names})
    assert reported == {"masked_lm_accuracy": 0.0, "masked_lm_loss": 0.0,
                        "next_sentence_accuracy": 0.0,
                        "next_sentence_loss": 0.0}


# -- configuration errors ----------------------------------------------------

def test_data_config_errors_name_the_flag():
    with pytest.raises(ValueError, match="--max_predictions_per_seq=0"):
        pretraining.PretrainingDataConfig(input_patterns=("a",),
                                          max_predictions_per_seq=0)
    with pytest.raises(ValueError, match="--dynamic_masking .*--vocab_file"):
        pretraining.PretrainingDataConfig(input_patterns=("a",),
                                          dynamic_masking=True)
    with pytest.raises(ValueError, match="--input_file"):
        pretraining.PretrainingDataConfig(input_patterns=())
    with pytest.raises(ValueError, match="max_position_embeddings"):
        pretraining.PretrainingTask(
            tiny_bert_config(),
            pretraining.PretrainingDataConfig(input_patterns=("a",),
                                              max_seq_length=128))


# -- the model and --init_checkpoint -----------------------------------------

def _task_for(config, max_seq_length=16):
    return pretraining.PretrainingTask(
        config, pretraining.PretrainingDataConfig(
            input_patterns=("unused",), max_seq_length=max_seq_length,
            max_predictions_per_seq=4))


def test_model_variables_have_google_names():
    task = _task_for(tiny_bert_config())
    model = task.build_model()
    names = task.checkpoint_variables(model)
    for expected, shape in [
            ("bert/embeddings/word_embeddings", (100, 32)),
            ("bert/encoder/layer_1/output/LayerNorm/gamma", (32,)),
            ("bert/pooler/dense/kernel", (32, 32)),
            ("cls/predictions/output_bias", (100,)),
            ("cls/predictions/transform/dense/kernel", (32, 32)),
            ("cls/predictions/transform/LayerNorm/beta", (32,)),
            ("cls/seq_relationship/output_weights", (2, 32)),
            ("cls/seq_relationship/output_bias", (2,))]:
        assert tuple(names[expected].shape) == shape, expected
    assert not any("seed_generator" in name for name in names)
    outputs = model(make_pretraining_arrays(2), training=False)
    assert outputs["masked_lm_logits"].shape == (2, 4, 100)
    assert outputs["next_sentence_logits"].shape == (2, 2)


def test_init_checkpoint_loads_encoder_and_heads(cased_tiny_dir):
    config = BertConfig.from_json_file(cased_tiny_dir / "bert_config.json")
    task = _task_for(config)
    model = task.build_model()
    prefix = str(cased_tiny_dir / "bert_model.ckpt")
    task.initialize_from_checkpoint(model, prefix)
    expected = checkpoints.read_checkpoint(prefix)
    for name, variable in task.checkpoint_variables(model).items():
        np.testing.assert_array_equal(variable.numpy(), expected[name],
                                      err_msg=name)


def test_init_checkpoint_with_encoder_only_keeps_fresh_heads(tmp_path):
    config = tiny_bert_config()
    source_task = _task_for(config)
    source = source_task.build_model()
    encoder_only = {name: variable.numpy() for name, variable
                    in source_task.checkpoint_variables(source).items()
                    if name.startswith("bert/")}
    prefix = checkpoints.save_checkpoint(encoder_only,
                                         str(tmp_path / "encoder.ckpt"))
    task = _task_for(config)
    model = task.build_model()
    heads_before = {name: variable.numpy() for name, variable
                    in task.checkpoint_variables(model).items()
                    if name.startswith("cls/")}
    task.initialize_from_checkpoint(model, prefix)
    for name, variable in task.checkpoint_variables(model).items():
        if name.startswith("bert/"):
            np.testing.assert_array_equal(variable.numpy(), encoder_only[name])
        else:
            np.testing.assert_array_equal(variable.numpy(),
                                          heads_before[name])


def test_init_checkpoint_missing_encoder_variable_is_an_error(tmp_path):
    config = tiny_bert_config()
    task = _task_for(config)
    model = task.build_model()
    tensors = {name: variable.numpy() for name, variable
               in task.checkpoint_variables(model).items()
               if name != "bert/pooler/dense/kernel"}
    prefix = checkpoints.save_checkpoint(tensors, str(tmp_path / "partial"))
    with pytest.raises(checkpoints.CheckpointError,
                       match="bert/pooler/dense/kernel"):
        task.initialize_from_checkpoint(model, prefix)


def test_init_checkpoint_with_wrong_head_shape_is_an_error(tmp_path):
    config = tiny_bert_config()
    task = _task_for(config)
    model = task.build_model()
    tensors = {name: variable.numpy() for name, variable
               in task.checkpoint_variables(model).items()}
    tensors["cls/seq_relationship/output_weights"] = np.zeros([3, 32],
                                                              np.float32)
    prefix = checkpoints.save_checkpoint(tensors, str(tmp_path / "bad_head"))
    with pytest.raises(checkpoints.CheckpointError,
                       match="cls/seq_relationship/output_weights"):
        task.initialize_from_checkpoint(model, prefix)


# -- the ablation objectives: mlm ("No NSP") and ltr ("LTR & No NSP") --------

def _task_with(objective, max_seq_length=16, config=None):
    return pretraining.PretrainingTask(
        config or tiny_bert_config(), pretraining.PretrainingDataConfig(
            input_patterns=("unused",), max_seq_length=max_seq_length,
            max_predictions_per_seq=4), objective=objective)


def test_unknown_objective_is_rejected_with_the_choices():
    with pytest.raises(ValueError, match=(
            r"--pretraining_objective='nsp' is not one of mlm_nsp, mlm, "
            r"ltr, mlm_sop")):
        _task_with("nsp")
    with pytest.raises(ValueError, match="--pretraining_objective='MLM'"):
        pretraining.BertPretrainingModel(tiny_bert_config(), objective="MLM")


def test_original_input_ids_puts_masked_tokens_back():
    # 103 is [MASK]; 2 is [CLS], 3 is [SEP]. Example 1's position 4 held 8
    # and was replaced by the random word 7; its position 2 kept its token.
    input_ids = np.array([[2, 103, 4, 103, 6, 3, 0, 0],
                          [2, 5, 12, 3, 7, 3, 0, 0]])
    positions = np.array([[1, 3, 0, 0], [2, 4, 0, 0]])
    ids = np.array([[11, 13, 0, 0], [12, 8, 0, 0]])
    weights = np.array([[1, 1, 0, 0], [1, 1, 0, 0]], np.float32)
    restored = pretraining.original_input_ids(input_ids, positions, ids,
                                              weights)
    assert restored.dtype == tf.int32
    # Token 0 stays [CLS]: the padding predictions (position 0, id 0, weight
    # 0) do not overwrite it.
    np.testing.assert_array_equal(restored, [[2, 11, 4, 13, 6, 3, 0, 0],
                                             [2, 5, 12, 3, 8, 3, 0, 0]])
    # Nor does a padding prediction whose id is not 0.
    ids_with_junk = ids.copy()
    ids_with_junk[:, 3] = 55
    np.testing.assert_array_equal(
        pretraining.original_input_ids(input_ids, positions, ids_with_junk,
                                       weights), restored)


def test_original_input_ids_matches_a_numpy_loop_on_random_records():
    arrays = make_pretraining_arrays(6, max_seq_length=16,
                                     max_predictions_per_seq=5, seed=4)
    expected = arrays["input_ids"].copy()
    for b in range(6):
        for p in range(5):
            if arrays["masked_lm_weights"][b, p] > 0:
                expected[b, arrays["masked_lm_positions"][b, p]] = (
                    arrays["masked_lm_ids"][b, p])
    restored = pretraining.original_input_ids(
        arrays["input_ids"], arrays["masked_lm_positions"],
        arrays["masked_lm_ids"], arrays["masked_lm_weights"])
    np.testing.assert_array_equal(restored, expected)
    assert (np.asarray(restored) != arrays["input_ids"]).any()


def test_next_token_targets_shift_by_one_and_skip_padding():
    token_ids = np.array([[2, 11, 12, 3, 0], [2, 21, 3, 22, 3]])
    input_mask = np.array([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]])
    target_ids, target_weights = pretraining.next_token_targets(token_ids,
                                                                input_mask)
    np.testing.assert_array_equal(target_ids, [[11, 12, 3, 0],
                                               [21, 3, 22, 3]])
    np.testing.assert_array_equal(target_weights, [[1, 1, 1, 0],
                                                   [1, 1, 1, 1]])


def _numpy_left_to_right(logits, token_ids, input_mask):
    """Mean next-token cross-entropy and accuracy, written out in numpy."""
    log_probs = numpy_log_softmax(logits)  # [batch, seq - 1, vocab]
    total, correct, count = 0.0, 0.0, 0.0
    batch, seq = token_ids.shape
    for b in range(batch):
        for t in range(seq - 1):
            if input_mask[b, t + 1]:
                total -= log_probs[b, t, token_ids[b, t + 1]]
                correct += logits[b, t].argmax() == token_ids[b, t + 1]
                count += 1
    return total / count, correct / count


def test_left_to_right_task_shares_and_metrics_match_numpy():
    """The ltr task: targets are the recovered originals; global-batch sums."""
    task = _task_with(pretraining.LTR, max_seq_length=12)
    arrays = make_pretraining_arrays(6, max_seq_length=12, seed=7)
    original = pretraining.original_input_ids(
        arrays["input_ids"], arrays["masked_lm_positions"],
        arrays["masked_lm_ids"], arrays["masked_lm_weights"]).numpy()
    rng = np.random.RandomState(7)
    logits = rng.randn(6, 11, 100).astype(np.float32) * 3
    # Make some predictions right, so that accuracy is not trivially 0.
    logits[np.arange(6), 2, original[:, 3]] += 20.0
    expected_loss, expected_accuracy = _numpy_left_to_right(
        logits, original, arrays["input_mask"])
    assert expected_accuracy > 0

    def split(start, stop):
        return ({k: tf.constant(v[start:stop]) for k, v in arrays.items()},
                {"lm_logits": tf.constant(logits[start:stop])})

    shares = [split(0, 2), split(2, 6)]
    denominators = {"lm_target_count": sum(
        float(task.loss_denominators(f)["lm_target_count"])
        for f, _ in shares)}
    assert denominators["lm_target_count"] == arrays["input_mask"][:, 1:].sum()
    total = 0.0
    totals = {k: 0.0 for k in task.metric_names}
    for features, outputs in shares:
        loss, metrics = task.compute_loss(features, outputs, denominators)
        total += float(loss)
        for k in metrics:
            totals[k] += float(metrics[k])
    np.testing.assert_allclose(total, expected_loss, rtol=1e-5)
    reported = task.aggregate_metrics(totals)
    assert sorted(reported) == ["lm_accuracy", "lm_loss"]
    np.testing.assert_allclose(reported["lm_loss"], expected_loss, rtol=1e-5)
    np.testing.assert_allclose(reported["lm_accuracy"], expected_accuracy,
                               rtol=1e-6)


def test_mlm_only_loss_is_the_masked_lm_part():
    arrays = make_pretraining_arrays(8, max_predictions_per_seq=4, seed=8)
    mlm_logits, nsp_logits = _random_outputs(8, 4, 100, seed=8)
    expected_mlm, expected_nsp = numpy_pretraining_losses(
        mlm_logits, arrays["masked_lm_ids"], arrays["masked_lm_weights"],
        nsp_logits, arrays["next_sentence_labels"])
    features = {k: tf.constant(v) for k, v in arrays.items()}
    losses, reported = {}, {}
    for objective in (pretraining.MLM, pretraining.MLM_NSP):
        task = _task_with(objective)
        outputs = {"masked_lm_logits": tf.constant(mlm_logits)}
        if objective == pretraining.MLM_NSP:
            outputs["next_sentence_logits"] = tf.constant(nsp_logits)
        loss, metrics = task.compute_loss(
            features, outputs, task.loss_denominators(features))
        assert sorted(metrics) == sorted(task.metric_names)
        losses[objective] = float(loss)
        reported[objective] = task.aggregate_metrics(
            {k: float(v) for k, v in metrics.items()})
    np.testing.assert_allclose(losses[pretraining.MLM], expected_mlm,
                               rtol=1e-6)
    np.testing.assert_allclose(losses[pretraining.MLM_NSP],
                               expected_mlm + expected_nsp, rtol=1e-6)
    # "No NSP" reports the masked-LM metrics only, with the same values.
    assert reported[pretraining.MLM] == {
        k: reported[pretraining.MLM_NSP][k]
        for k in ("masked_lm_accuracy", "masked_lm_loss")}
    assert sorted(reported[pretraining.MLM_NSP]) == [
        "masked_lm_accuracy", "masked_lm_loss", "next_sentence_accuracy",
        "next_sentence_loss"]


def test_sentence_order_loss_is_the_pair_loss_under_its_own_names():
    """mlm_sop: Google's masked-LM + pair loss (numpy reference) on the
    records' labels (1: swapped), reported as sentence_order_*; the pair
    head is trained, the model's variables are Google's."""
    arrays = make_pretraining_arrays(8, max_predictions_per_seq=4, seed=10)
    mlm_logits, nsp_logits = _random_outputs(8, 4, 100, seed=10)
    expected_mlm, expected_pair = numpy_pretraining_losses(
        mlm_logits, arrays["masked_lm_ids"], arrays["masked_lm_weights"],
        nsp_logits, arrays["next_sentence_labels"])
    features = {k: tf.constant(v) for k, v in arrays.items()}
    task = _task_with(pretraining.MLM_SOP)
    loss, metrics = task.compute_loss(
        features, {"masked_lm_logits": tf.constant(mlm_logits),
                   "next_sentence_logits": tf.constant(nsp_logits)},
        task.loss_denominators(features))
    np.testing.assert_allclose(float(loss), expected_mlm + expected_pair,
                               rtol=1e-6)
    reported = task.aggregate_metrics({k: float(v)
                                       for k, v in metrics.items()})
    assert sorted(reported) == [
        "masked_lm_accuracy", "masked_lm_loss", "sentence_order_accuracy",
        "sentence_order_loss"]
    np.testing.assert_allclose(reported["sentence_order_loss"],
                               expected_pair, rtol=1e-6)
    model = task.build_model()
    reference = _task_with(pretraining.MLM_NSP)
    assert _checkpoint_shapes(task, model) == _checkpoint_shapes(
        reference, reference.build_model())
    assert "next_sentence_logits" in model(features)
    assert not model.bert.causal_attention


def _checkpoint_shapes(task, model):
    return {name: tuple(variable.shape) for name, variable
            in task.checkpoint_variables(model).items()}


@pytest.mark.parametrize("objective", [pretraining.MLM, pretraining.LTR])
def test_objectives_keep_googles_variables_and_train_no_nsp(objective):
    reference_task = _task_with(pretraining.MLM_NSP)
    task = _task_with(objective)
    model = task.build_model()
    assert _checkpoint_shapes(task, model) == _checkpoint_shapes(
        reference_task, reference_task.build_model())
    assert model.bert.causal_attention == (objective == pretraining.LTR)
    features = {k: tf.constant(v) for k, v in
                make_pretraining_arrays(4, seed=9).items()}
    with tf.GradientTape() as tape:
        outputs = model(features, training=True)
        loss, _ = task.compute_loss(features, outputs,
                                    task.loss_denominators(features))
    assert "next_sentence_logits" not in outputs
    variables = task.checkpoint_variables(model)
    gradients = dict(zip(variables, tape.gradient(
        loss, list(variables.values()))))
    # The next-sentence head (and, here, the unused pooler) get no gradient,
    # so the trainer leaves them as they are; the encoder and the LM head
    # learn.
    for name in ("cls/seq_relationship/output_weights",
                 "cls/seq_relationship/output_bias"):
        assert gradients[name] is None, name
    for name in ("bert/embeddings/word_embeddings",
                 "bert/encoder/layer_1/output/dense/kernel",
                 "cls/predictions/transform/dense/kernel",
                 "cls/predictions/output_bias"):
        assert gradients[name] is not None, name


def test_left_to_right_model_matches_numpy_and_reads_original_tokens():
    """One causal layer + the masked-LM head on every position, vs numpy.

    With one layer, causal position t is the bidirectional output at t of
    tokens 0..t, so the harness' numpy BERT on each prefix is the reference;
    the head is Google's `get_masked_lm_output` written out.
    """
    from modeling_harness import (NP_ACTIVATIONS, np_bert_forward,
                                  np_layer_norm, randomize)
    config = tiny_bert_config(num_hidden_layers=1)
    task = _task_with(pretraining.LTR, max_seq_length=10, config=config)
    model = task.build_model()
    randomize(model, seed=10)
    w = {name: np.asarray(variable.numpy(), np.float64) for name, variable
         in task.checkpoint_variables(model).items()}
    arrays = make_pretraining_arrays(2, max_seq_length=10, seed=10)
    original = np.asarray(pretraining.original_input_ids(
        arrays["input_ids"], arrays["masked_lm_positions"],
        arrays["masked_lm_ids"], arrays["masked_lm_weights"]))
    logits = model({k: tf.constant(v) for k, v in arrays.items()})[
        "lm_logits"].numpy()
    assert logits.shape == (2, 9, 100)
    act = NP_ACTIVATIONS[config.hidden_act]
    for b in range(2):
        length = int(arrays["input_mask"][b].sum())
        for t in range(length - 1):
            prefix = (slice(b, b + 1), slice(0, t + 1))
            hidden = np_bert_forward(
                w, config, original[prefix], arrays["input_mask"][prefix],
                arrays["segment_ids"][prefix])["sequence_output"][0, t]
            transformed = np_layer_norm(
                act(hidden @ w["cls/predictions/transform/dense/kernel"]
                    + w["cls/predictions/transform/dense/bias"]),
                w["cls/predictions/transform/LayerNorm/gamma"],
                w["cls/predictions/transform/LayerNorm/beta"])
            expected = (transformed @ w["bert/embeddings/word_embeddings"].T
                        + w["cls/predictions/output_bias"])
            np.testing.assert_allclose(logits[b, t], expected, rtol=0,
                                       atol=1e-4, err_msg=f"{b}, {t}")
