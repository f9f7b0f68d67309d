"""Left-to-right fine-tuning (`causal_attention`) and the BiLSTM (span and
tagging heads).

The BERT paper fine-tuned its left-to-right model with the left-only
constraint kept and, for SQuAD, a randomly initialized BiLSTM on top
(section 5.1). Checked here against independent references: a float64
numpy BERT (`modeling_harness.np_bert_forward`, Google's formulas) for the
last-token pooling, a numpy LSTM run on each unpadded example for the
BiLSTM, and the definition of causality (changing token j leaves every
output before j unchanged) for every task model.
"""

import keras
import numpy as np
import pytest

from bert_tf import checkpoints
from bert_tf.modeling import BiLSTM
from bert_tf.modeling.bert_model import last_token_positions
from bert_tf.tasks.base import ArraysDataConfig
from bert_tf.tasks.classification.task import ClassificationModel
from bert_tf.tasks.multiple_choice.task import MultipleChoiceModel
from bert_tf.tasks.squad.task import SquadModel
from bert_tf.tasks.tagging.task import TaggingModel
from tests.modeling_harness import np_bert_forward
from tests.modeling_harness import random_batch
from tests.modeling_harness import randomize
from tests.modeling_harness import tiny_bert_config
from tests.modeling_harness import weights_by_path

pytestmark = pytest.mark.extended(reason=(
    "the left-to-right ablation's task models against numpy references; the "
    "default run checks that the runners' --causal_attention and BiLSTM "
    "flags reach those models (test_causal_runners)"))

TOLERANCE = 2e-5


def _features(input_ids, input_mask, segment_ids, **extra):
    return {"input_ids": input_ids, "input_mask": input_mask,
            "segment_ids": segment_ids, **extra}


def _changed_from(input_ids, segment_ids, position, config):
    """The batch with every token from `position` on replaced."""
    changed_ids = input_ids.copy()
    changed_ids[:, position:] = (changed_ids[:, position:] + 7) % (
        config.vocab_size)
    changed_types = segment_ids.copy()
    changed_types[:, position:] = 1 - changed_types[:, position:]
    return changed_ids, changed_types


# --- the encoder inside every task model is causal -----------------------

def _tagging_extra(batch, seq):
    positions = np.tile(np.arange(seq, dtype=np.int32), (batch, 1))
    return {"word_positions": positions,
            "word_mask": np.ones((batch, seq), np.int32),
            "label_ids": np.zeros((batch, seq), np.int32)}


TASK_MODELS = {
    "classification": lambda config, causal: ClassificationModel(
        config, 3, causal_attention=causal),
    "squad": lambda config, causal: SquadModel(
        config, causal_attention=causal),
    "squad_bilstm": lambda config, causal: SquadModel(
        config, causal_attention=causal, bilstm_units=8),
    "tagging": lambda config, causal: TaggingModel(
        config, 4, causal_attention=causal),
    "tagging_crf": lambda config, causal: TaggingModel(
        config, 4, use_crf=True, causal_attention=causal),
    "tagging_bilstm": lambda config, causal: TaggingModel(
        config, 4, causal_attention=causal, bilstm_units=8),
    "multiple_choice": lambda config, causal: MultipleChoiceModel(
        config, causal_attention=causal),
}


@pytest.mark.parametrize("kind", sorted(TASK_MODELS))
def test_task_encoder_ignores_later_tokens(kind):
    config = tiny_bert_config()
    model = TASK_MODELS[kind](config, True)
    randomize(model, seed=31)
    input_ids, input_mask, segment_ids = random_batch(
        config, 2, 10, seed=32, pad_from=[None, 8])
    j = 5
    changed_ids, changed_types = _changed_from(input_ids, segment_ids, j,
                                               config)
    before = model.bert(input_ids, input_mask, segment_ids)
    after = model.bert(changed_ids, input_mask, changed_types)
    for name in ("sequence_output", "embedding_output"):
        np.testing.assert_allclose(after[name][:, :j], before[name][:, :j],
                                   rtol=0, atol=1e-6)
    # The comparison can fail: the later positions did change.
    assert np.abs(after["sequence_output"][:, j:]
                  - before["sequence_output"][:, j:]).max() > 1e-3
    # The same weights in the bidirectional model see the change early on.
    bidirectional = TASK_MODELS[kind](config, False)
    for target, source in zip(bidirectional.weights, model.weights):
        assert target.path == source.path
        target.assign(source)
    assert np.abs(
        bidirectional.bert(changed_ids, input_mask, changed_types)[
            "sequence_output"][:, :j]
        - bidirectional.bert(input_ids, input_mask, segment_ids)[
            "sequence_output"][:, :j]).max() > 1e-3


@pytest.mark.parametrize("kind", ["squad", "tagging"])
def test_per_position_task_outputs_ignore_later_tokens(kind):
    """End to end: the span and tag logits before j do not move."""
    config = tiny_bert_config()
    model = TASK_MODELS[kind](config, True)
    randomize(model, seed=33)
    input_ids, input_mask, segment_ids = random_batch(config, 2, 10, seed=34)
    j = 6
    changed_ids, changed_types = _changed_from(input_ids, segment_ids, j,
                                               config)
    extra = _tagging_extra(2, 10) if kind == "tagging" else {}
    before = model(_features(input_ids, input_mask, segment_ids, **extra))
    after = model(_features(changed_ids, input_mask, changed_types, **extra))
    names = ["logits"] if kind == "tagging" else ["start_logits",
                                                  "end_logits"]
    for name in names:
        np.testing.assert_allclose(after[name][:, :j], before[name][:, :j],
                                   rtol=0, atol=1e-5)
        assert np.abs(after[name][:, j:] - before[name][:, j:]
                      ).max() > 1e-4


@pytest.mark.parametrize("kind, output", [("squad_bilstm", "start_logits"),
                                          ("tagging_bilstm", "logits")])
def test_bilstm_gives_the_left_to_right_model_right_context(kind, output):
    """With the BiLSTM the span / tag logits before j do depend on token
    j."""
    config = tiny_bert_config()
    model = TASK_MODELS[kind](config, True)
    randomize(model, seed=35)
    input_ids, input_mask, segment_ids = random_batch(config, 2, 10, seed=36)
    changed_ids, changed_types = _changed_from(input_ids, segment_ids, 6,
                                               config)
    extra = _tagging_extra(2, 10) if kind.startswith("tagging") else {}
    before = model(_features(input_ids, input_mask, segment_ids, **extra))
    after = model(_features(changed_ids, input_mask, changed_types, **extra))
    assert np.abs(after[output][:, :6] - before[output][:, :6]).max() > 1e-4


# --- classification pools the last real token ----------------------------

def test_last_token_positions():
    mask = np.array([[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0],
                     [0, 0, 0, 0]], np.int32)
    np.testing.assert_array_equal(last_token_positions(mask), [3, 1, 0, 0])


def _np_last_token_logits(weights, config, input_ids, input_mask,
                          segment_ids):
    """Google's formulas in numpy: the one-layer causal encoder's output at
    the last real token is the bidirectional output of the real tokens
    there (it sees all of them); pooled with `bert/pooler/dense` + tanh,
    classified with `output_weights`, `output_bias`."""
    logits = []
    for example in range(input_ids.shape[0]):
        length = int(input_mask[example].sum())
        real = slice(example, example + 1), slice(0, length)
        sequence = np_bert_forward(weights, config, input_ids[real],
                                   input_mask[real], segment_ids[real])[
            "sequence_output"]
        pooled = np.tanh(sequence[0, length - 1]
                         @ weights["bert/pooler/dense/kernel"]
                         + weights["bert/pooler/dense/bias"])
        logits.append(pooled @ weights["output_weights"].T
                      + weights["output_bias"])
    return np.array(logits)


def test_causal_classifier_classifies_the_last_real_token():
    config = tiny_bert_config(num_hidden_layers=1)
    model = ClassificationModel(config, 3, causal_attention=True)
    randomize(model, seed=37)
    input_ids, input_mask, segment_ids = random_batch(
        config, 3, 9, seed=38, pad_from=[None, 6, 2])
    logits = model(_features(input_ids, input_mask, segment_ids))["logits"]
    expected = _np_last_token_logits(weights_by_path(model), config,
                                     input_ids, input_mask, segment_ids)
    np.testing.assert_allclose(np.asarray(logits, np.float64), expected,
                               rtol=0, atol=TOLERANCE)
    # [CLS] pooling (the bidirectional model's) gives something else.
    bidirectional = ClassificationModel(config, 3)
    for target, source in zip(bidirectional.weights, model.weights):
        target.assign(source)
    cls_logits = bidirectional(_features(input_ids, input_mask,
                                         segment_ids))["logits"]
    assert np.abs(np.asarray(cls_logits) - expected).max() > 1e-3


def test_causal_multiple_choice_scores_each_choices_last_token():
    config = tiny_bert_config(num_hidden_layers=1)
    model = MultipleChoiceModel(config, causal_attention=True)
    randomize(model, seed=39)
    input_ids, input_mask, segment_ids = random_batch(
        config, 4, 8, seed=40, pad_from=[None, 5, 3, 7])
    logits = model(_features(input_ids.reshape(2, 2, 8),
                             input_mask.reshape(2, 2, 8),
                             segment_ids.reshape(2, 2, 8)))["logits"]
    expected = _np_last_token_logits(weights_by_path(model), config,
                                     input_ids, input_mask, segment_ids)
    np.testing.assert_allclose(np.asarray(logits, np.float64),
                               expected.reshape(2, 2), rtol=0,
                               atol=TOLERANCE)


# --- configs: the flag is part of each task model -------------------------

@pytest.mark.parametrize("kind", sorted(TASK_MODELS))
def test_task_model_config_keeps_causal_attention(kind):
    config = tiny_bert_config()
    model = TASK_MODELS[kind](config, True)
    keras_config = model.get_config()
    assert keras_config["causal_attention"] is True
    restored = type(model).from_config(keras_config)
    assert restored.bert.causal_attention is True
    assert restored.get_config() == keras_config
    plain = TASK_MODELS[kind](config, False)
    assert plain.get_config()["causal_attention"] is False
    assert plain.bert.causal_attention is False


def test_tasks_build_causal_models():
    from bert_tf.tasks.classification import (
        task as classification,
        multi_label_task as multi_label,
    )
    from bert_tf.tasks.multiple_choice import task as multiple_choice
    from bert_tf.tasks.squad import task as squad
    from bert_tf.tasks.tagging import task as tagging
    config = tiny_bert_config()
    tasks = [
        classification.ClassificationTask(
            config, 2, classification.ClassificationDataConfig(
                max_seq_length=16), causal_attention=True),
        multi_label.MultiLabelTask(
            config, ["a", "b"], ArraysDataConfig(
                max_seq_length=16), causal_attention=True),
        multiple_choice.MultipleChoiceTask(
            config, ArraysDataConfig(
                max_seq_length=16), causal_attention=True),
        squad.SquadTask(config, squad.SquadDataConfig(max_seq_length=16),
                        causal_attention=True, bilstm_units=4),
        tagging.TaggingTask(config, ["O", "B-X"], tagging.TaggingDataConfig(
            max_seq_length=16), causal_attention=True),
    ]
    for task in tasks:
        model = task.build_model()
        assert model.bert.causal_attention is True, task.name
    assert tasks[3].build_model().bilstm.units == 4


# --- the BiLSTM ------------------------------------------------------------

def _np_sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _np_lstm(inputs, kernel, recurrent_kernel, bias):
    """An LSTM over [time, input] in float64: gates i, f, c, o (Keras'
    order), tanh cell activation, sigmoid gates; the state after each
    step."""
    units = recurrent_kernel.shape[0]
    h = np.zeros(units)
    c = np.zeros(units)
    states = []
    for x in inputs:
        z = x @ kernel + h @ recurrent_kernel + bias
        i, f, g, o = (z[k * units:(k + 1) * units] for k in range(4))
        c = _np_sigmoid(f) * c + _np_sigmoid(i) * np.tanh(g)
        h = _np_sigmoid(o) * np.tanh(c)
        states.append(h)
    return np.array(states)


def test_bilstm_matches_numpy_on_each_unpadded_example():
    layer = BiLSTM(5)
    rng = np.random.default_rng(41)
    sequence = rng.normal(size=(3, 7, 6)).astype(np.float32)
    input_mask = np.ones((3, 7), np.int32)
    input_mask[1, 4:] = 0
    input_mask[2, 1:] = 0
    outputs = np.asarray(layer(sequence, input_mask=input_mask), np.float64)
    assert outputs.shape == (3, 7, 10)
    w = weights_by_path(layer)
    for example in range(3):
        length = int(input_mask[example].sum())
        real = sequence[example, :length].astype(np.float64)
        forward = _np_lstm(real, w["bilstm/fw/lstm_cell/kernel"],
                           w["bilstm/fw/lstm_cell/recurrent_kernel"],
                           w["bilstm/fw/lstm_cell/bias"])
        backward = _np_lstm(real[::-1], w["bilstm/bw/lstm_cell/kernel"],
                            w["bilstm/bw/lstm_cell/recurrent_kernel"],
                            w["bilstm/bw/lstm_cell/bias"])[::-1]
        np.testing.assert_allclose(
            outputs[example, :length],
            np.concatenate([forward, backward], axis=-1), rtol=0,
            atol=1e-5, err_msg=f"example {example}")


def test_bilstm_variables_and_config():
    layer = BiLSTM(4)
    layer.build((None, None, 6))
    assert [(v.path, tuple(v.shape)) for v in layer.weights] == [
        ("bilstm/fw/lstm_cell/kernel", (6, 16)),
        ("bilstm/fw/lstm_cell/recurrent_kernel", (4, 16)),
        ("bilstm/fw/lstm_cell/bias", (16,)),
        ("bilstm/bw/lstm_cell/kernel", (6, 16)),
        ("bilstm/bw/lstm_cell/recurrent_kernel", (4, 16)),
        ("bilstm/bw/lstm_cell/bias", (16,)),
    ]
    assert BiLSTM.from_config(layer.get_config()).units == 4
    with pytest.raises(ValueError, match="BiLSTM units must be a positive "
                                         "integer, got 0"):
        BiLSTM(0)


def test_span_model_with_bilstm_names_and_checkpoint_round_trip(tmp_path):
    config = tiny_bert_config()
    model = SquadModel(config, causal_attention=True, bilstm_units=8)
    randomize(model, seed=42)
    names = {v.path: tuple(v.shape) for v in model.weights}
    assert names["bilstm/fw/lstm_cell/kernel"] == (32, 32)
    assert names["bilstm/bw/lstm_cell/recurrent_kernel"] == (8, 32)
    # The span head reads the BiLSTM's 2 x 8 states.
    assert names["cls/squad/output_weights"] == (2, 16)
    input_ids, input_mask, segment_ids = random_batch(
        config, 2, 10, seed=43, pad_from=[None, 7])
    features = _features(input_ids, input_mask, segment_ids)
    expected = model(features)

    # A Google-format (name-based) checkpoint restores the predictions.
    prefix = str(tmp_path / "model.ckpt")
    checkpoints.save_checkpoint(
        {v.path: v for v in model.weights}, prefix)
    reloaded = SquadModel(config, causal_attention=True, bilstm_units=8)
    checkpoints.load_checkpoint(reloaded.weights, prefix)
    actual = reloaded(features)
    for name in expected:
        np.testing.assert_array_equal(actual[name], expected[name])

    # And so does a .keras file.
    model.save(tmp_path / "model.keras")
    loaded = keras.models.load_model(tmp_path / "model.keras")
    assert loaded.get_config() == model.get_config()
    assert loaded.get_config()["bilstm_units"] == 8
    for name in expected:
        np.testing.assert_array_equal(loaded(features)[name],
                                      expected[name])


def test_tagging_model_with_bilstm_matches_numpy_and_round_trips(tmp_path):
    """Tag logits = numpy BiLSTM over the encoder's output (each example
    unpadded), read at the word positions, times output_weights^T + bias;
    the names are run_squad.py --span_bilstm's, and a name-based
    checkpoint and a .keras file restore the predictions."""
    config = tiny_bert_config()
    model = TaggingModel(config, 4, causal_attention=True, bilstm_units=5)
    randomize(model, seed=44)
    names = {v.path: tuple(v.shape) for v in model.weights}
    assert names["bilstm/fw/lstm_cell/kernel"] == (32, 20)
    assert names["bilstm/bw/lstm_cell/recurrent_kernel"] == (5, 20)
    # The classifier reads the BiLSTM's 2 x 5 states.
    assert names["output_weights"] == (4, 10)
    input_ids, input_mask, segment_ids = random_batch(
        config, 2, 9, seed=45, pad_from=[None, 6])
    word_positions = np.array([[1, 2, 4, 7, 0], [1, 3, 4, 5, 0]], np.int32)
    features = _features(input_ids, input_mask, segment_ids,
                         word_positions=word_positions,
                         word_mask=np.array([[1, 1, 1, 1, 0],
                                             [1, 1, 1, 1, 0]], np.int32))
    expected = model(features)
    sequence = np.asarray(model.bert(input_ids, input_mask, segment_ids)[
        "sequence_output"], np.float64)
    w = weights_by_path(model)
    for example in range(2):
        length = int(input_mask[example].sum())
        real = sequence[example, :length]
        forward = _np_lstm(real, w["bilstm/fw/lstm_cell/kernel"],
                           w["bilstm/fw/lstm_cell/recurrent_kernel"],
                           w["bilstm/fw/lstm_cell/bias"])
        backward = _np_lstm(real[::-1], w["bilstm/bw/lstm_cell/kernel"],
                            w["bilstm/bw/lstm_cell/recurrent_kernel"],
                            w["bilstm/bw/lstm_cell/bias"])[::-1]
        states = np.concatenate([forward, backward], axis=-1)
        for slot in range(4):
            logits = (states[word_positions[example, slot]]
                      @ w["output_weights"].T + w["output_bias"])
            np.testing.assert_allclose(expected["logits"][example, slot],
                                       logits, rtol=0, atol=1e-4)

    prefix = str(tmp_path / "model.ckpt")
    checkpoints.save_checkpoint({v.path: v for v in model.weights}, prefix)
    reloaded = TaggingModel(config, 4, causal_attention=True, bilstm_units=5)
    checkpoints.load_checkpoint(reloaded.weights, prefix)
    np.testing.assert_array_equal(reloaded(features)["logits"],
                                  expected["logits"])
    model.save(tmp_path / "model.keras")
    loaded = keras.models.load_model(tmp_path / "model.keras")
    assert loaded.get_config()["bilstm_units"] == 5
    np.testing.assert_array_equal(loaded(features)["logits"],
                                  expected["logits"])
