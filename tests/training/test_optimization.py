"""Google's AdamWeightDecay, LAMB, the learning-rate schedule, clipping,
checkpoint names of the optimizer state, and gradient accumulation.

Every expected number is re-derived here in float64 numpy from the
algorithms' definitions (Google's optimization.py, the LAMB paper), written
out literally, or produced by an independent implementation (TensorFlow's
`polynomial_decay`, Model Garden's LAMB).
"""

import contextlib
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf
import keras

from bert_tf.training.adam_weight_decay import AdamWeightDecay
from bert_tf.training.lamb import Lamb
from bert_tf.training.learning_rate import GoogleLearningRateSchedule
from bert_tf.training.learning_rate import google_learning_rate
from bert_tf.training.optimization import create_optimizer
from bert_tf.training.optimization import optimizer_slot_variables
from runner_harness import REPO_ROOT

KERNEL = "bert/encoder/layer_0/output/dense/kernel"
GAMMA = "bert/encoder/layer_0/attention/output/LayerNorm/gamma"
BIAS = "bert/encoder/layer_0/output/dense/bias"
EXCLUDED = ("LayerNorm", "layer_norm", "bias")


def google_variable(path, value):
    """A Keras variable whose `.path` is the Google name `path`."""
    *scopes, name = path.split("/")
    with contextlib.ExitStack() as stack:
        for scope in scopes:
            stack.enter_context(keras.name_scope(scope))
        return keras.Variable(np.asarray(value, np.float32), name=name)


# --- float64 references, written from the algorithms' definitions ----------

def reference_clip(grads, clip_norm):
    """tf.clip_by_global_norm: g * clip / max(||all g||, clip)."""
    if not clip_norm:
        return [np.asarray(g, np.float64) for g in grads]
    norm = np.sqrt(sum(np.sum(np.square(np.float64(g))) for g in grads))
    return [np.float64(g) * clip_norm / max(norm, clip_norm) for g in grads]


def reference_adamw(params, grads, ms, vs, lr, decays, wd=0.01, clip_norm=1.0,
                    beta_1=0.9, beta_2=0.999, eps=1e-6):
    """Google's AdamWeightDecayOptimizer, one step, no bias correction."""
    grads = reference_clip(grads, clip_norm)
    out_p, out_m, out_v = [], [], []
    for p, g, m, v, decay in zip(params, grads, ms, vs, decays):
        p, m, v = np.float64(p), np.float64(m), np.float64(v)
        m = beta_1 * m + (1 - beta_1) * g
        v = beta_2 * v + (1 - beta_2) * g * g
        update = m / (np.sqrt(v) + eps)
        if decay:
            update = update + wd * p
        out_p.append(p - lr * update)
        out_m.append(m)
        out_v.append(v)
    return out_p, out_m, out_v


def reference_lamb(params, grads, ms, vs, lr, step, decays, adapts, wd=0.01,
                   clip_norm=1.0, beta_1=0.9, beta_2=0.999, eps=1e-6):
    """LAMB (You et al. 2019, Algorithm 2, phi = identity), one step.

    `step` is the 1-based update number used in the bias correction.
    """
    grads = reference_clip(grads, clip_norm)
    out_p, out_m, out_v = [], [], []
    for p, g, m, v, decay, adapt in zip(params, grads, ms, vs, decays, adapts):
        p, m, v = np.float64(p), np.float64(m), np.float64(v)
        m = beta_1 * m + (1 - beta_1) * g
        v = beta_2 * v + (1 - beta_2) * g * g
        m_hat = m / (1 - beta_1 ** step)
        v_hat = v / (1 - beta_2 ** step)
        r = m_hat / (np.sqrt(v_hat) + eps)
        if decay:
            r = r + wd * p
        ratio = 1.0
        if adapt:
            p_norm, r_norm = np.linalg.norm(p), np.linalg.norm(r)
            if p_norm > 0 and r_norm > 0:
                ratio = p_norm / r_norm
        out_p.append(p - lr * ratio * r)
        out_m.append(m)
        out_v.append(v)
    return out_p, out_m, out_v


def reference_lr(step, init_lr, num_train_steps, num_warmup_steps):
    """Linear warmup to init_lr, linear decay from step 0 to 0 at the end."""
    if step < num_warmup_steps:
        return init_lr * step / num_warmup_steps
    return init_lr * (1 - min(step, num_train_steps) / num_train_steps)


def three_variables(seed=0):
    rng = np.random.default_rng(seed)
    values = [rng.normal(size=(3, 2)), 1 + 0.1 * rng.normal(size=(2,)),
              rng.normal(size=(2,))]
    variables = [google_variable(name, value)
                 for name, value in zip((KERNEL, GAMMA, BIAS), values)]
    return variables, [v.numpy() for v in variables]


def random_grads(rng, params, scale=0.05):
    return [np.float32(scale * rng.normal(size=p.shape)) for p in params]


def run_steps(optimizer, variables, grad_list, jit_compile=True):
    """Applies each list of gradients in `grad_list`, in a compiled step."""
    @tf.function(jit_compile=jit_compile)
    def step(grads):
        optimizer.apply_gradients(zip(grads, variables))

    for grads in grad_list:
        step([tf.constant(g) for g in grads])


# --- the schedule ---------------------------------------------------------

def test_learning_rate_hand_values():
    # init 1e-4, 100 steps, 10 warmup: warmup rises by 1e-5 per step, the
    # decay line falls by 1e-6 per step from 1e-4 at step 0.
    expected = {0: 0.0, 1: 1e-5, 9: 9e-5, 10: 9e-5, 11: 8.9e-5, 55: 4.5e-5,
                99: 1e-6, 100: 0.0, 150: 0.0}
    schedule = GoogleLearningRateSchedule(1e-4, 100, 10)
    for step, lr in expected.items():
        assert schedule(step).dtype == tf.float32
        np.testing.assert_allclose(
            schedule(tf.constant(step, tf.int64)).numpy(), lr,
            rtol=1e-6, atol=1e-12, err_msg=f"step {step}")


def test_learning_rate_without_warmup_starts_at_peak():
    for step, lr in {0: 2e-5, 50: 1e-5, 100: 0.0, 120: 0.0}.items():
        np.testing.assert_allclose(
            google_learning_rate(step, 2e-5, 100, 0).numpy(), lr,
            rtol=1e-6, atol=1e-12)


def test_learning_rate_is_bitwise_googles_graph():
    """Google's create_optimizer lines, with TF's polynomial_decay."""
    init_lr, num_train_steps, num_warmup_steps = 5e-5, 1000, 100

    def google(global_step):
        learning_rate = tf.constant(value=init_lr, shape=[], dtype=tf.float32)
        learning_rate = tf.compat.v1.train.polynomial_decay(
            learning_rate, global_step, num_train_steps,
            end_learning_rate=0.0, power=1.0, cycle=False)()
        global_steps_int = tf.cast(global_step, tf.int32)
        warmup_steps_int = tf.constant(num_warmup_steps, dtype=tf.int32)
        global_steps_float = tf.cast(global_steps_int, tf.float32)
        warmup_steps_float = tf.cast(warmup_steps_int, tf.float32)
        warmup_percent_done = global_steps_float / warmup_steps_float
        warmup_learning_rate = init_lr * warmup_percent_done
        is_warmup = tf.cast(global_steps_int < warmup_steps_int, tf.float32)
        return ((1.0 - is_warmup) * learning_rate
                + is_warmup * warmup_learning_rate)

    steps = [0, 1, 3, 7, 33, 99, 100, 101, 337, 555, 999, 1000, 1234]
    ours = [google_learning_rate(tf.constant(s, tf.int64), init_lr,
                                 num_train_steps, num_warmup_steps).numpy()
            for s in steps]
    theirs = [google(tf.constant(s, tf.int64)).numpy() for s in steps]
    np.testing.assert_array_equal(ours, theirs)
    # Near the end `1 - p` loses digits in float32 (Google's too): an
    # absolute error of about init_lr * 2**-24.
    np.testing.assert_allclose(
        ours, [reference_lr(s, init_lr, num_train_steps, num_warmup_steps)
               for s in steps], rtol=1e-6, atol=init_lr * 2e-7)


def test_learning_rate_config_round_trip():
    schedule = GoogleLearningRateSchedule(3e-4, 500, 50)
    restored = keras.optimizers.schedules.deserialize(
        keras.optimizers.schedules.serialize(schedule))
    assert isinstance(restored, GoogleLearningRateSchedule)
    assert restored.get_config() == {
        "init_lr": 3e-4, "num_train_steps": 500, "num_warmup_steps": 50}


@pytest.mark.parametrize("args, message", [
    ((1e-4, 0, 0), "num_train_steps must be a positive integer"),
    ((1e-4, 10.5, 0), "num_train_steps must be a positive integer"),
    ((1e-4, 10, -1), "num_warmup_steps must be a non-negative integer"),
    ((-1e-4, 10, 0), "learning rate must be non-negative"),
    (("big", 10, 0), "learning rate must be a number"),
])
def test_learning_rate_bad_arguments(args, message):
    with pytest.raises(ValueError, match=message):
        GoogleLearningRateSchedule(*args)


# --- AdamWeightDecay --------------------------------------------------------

def test_adamw_first_step_hand_numbers():
    """w=2, g=0.5, lr=0.1, wd=0.01 worked by hand.

    m = 0.1*0.5 = 0.05; v = 0.001*0.25 = 0.00025; sqrt(v) = 0.0158113883;
    u = 0.05/(0.0158113883 + 1e-6) = 3.1620777; with decay u += 0.02.
    kernel: 2 - 0.1*3.1820777 = 1.68179223; gamma/bias: 2 - 0.31620777.
    """
    variables = [google_variable(name, [2.0]) for name in (KERNEL, GAMMA, BIAS)]
    optimizer = AdamWeightDecay(learning_rate=0.1, weight_decay_rate=0.01,
                                clip_norm=None)
    run_steps(optimizer, variables, [[np.float32([0.5])] * 3])
    np.testing.assert_allclose(
        [v.numpy()[0] for v in variables],
        [1.68179223, 1.68379223, 1.68379223], rtol=1e-6)
    slots = optimizer_slot_variables(optimizer)
    np.testing.assert_allclose(slots[KERNEL + "/adam_m"].numpy(), [0.05],
                               rtol=1e-6)
    np.testing.assert_allclose(slots[KERNEL + "/adam_v"].numpy(), [0.00025],
                               rtol=1e-6)
    assert int(optimizer.iterations.numpy()) == 1


def test_adamw_two_steps_match_numpy_reference():
    rng = np.random.default_rng(1)
    variables, params = three_variables()
    optimizer = create_optimizer("adamw", 0.01, num_train_steps=10,
                                 num_warmup_steps=0)
    grad_list = [random_grads(rng, params) for _ in range(2)]
    run_steps(optimizer, variables, grad_list)

    ms = [np.zeros_like(p) for p in params]
    vs = [np.zeros_like(p) for p in params]
    for step, grads in enumerate(grad_list):
        params, ms, vs = reference_adamw(
            params, grads, ms, vs, lr=reference_lr(step, 0.01, 10, 0),
            decays=[True, False, False])
    for variable, expected in zip(variables, params):
        np.testing.assert_allclose(variable.numpy(), expected, rtol=2e-6,
                                   atol=1e-7, err_msg=variable.path)
    slots = optimizer_slot_variables(optimizer)
    for name, m, v in zip((KERNEL, GAMMA, BIAS), ms, vs):
        np.testing.assert_allclose(slots[name + "/adam_m"].numpy(), m,
                                   rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(slots[name + "/adam_v"].numpy(), v,
                                   rtol=1e-6, atol=1e-12)


def test_adamw_first_step_uses_lr_of_step_zero():
    """With warmup, lr(0) = 0: the first update moves only the moments."""
    rng = np.random.default_rng(2)
    variables, params = three_variables()
    optimizer = create_optimizer("adamw", 0.01, num_train_steps=10,
                                 num_warmup_steps=4)
    grads_1, grads_2 = random_grads(rng, params), random_grads(rng, params)
    run_steps(optimizer, variables, [grads_1])
    for variable, before in zip(variables, params):
        np.testing.assert_array_equal(variable.numpy(), before)
    assert np.all(optimizer_slot_variables(optimizer)[KERNEL + "/adam_m"]
                  .numpy() != 0)

    run_steps(optimizer, variables, [grads_2])
    zeros = [np.zeros_like(p) for p in params]
    params_1, ms, vs = reference_adamw(params, grads_1, zeros, zeros, 0.0,
                                       [True, False, False])
    params_2, _, _ = reference_adamw(params_1, grads_2, ms, vs,
                                     0.01 * 1 / 4, [True, False, False])
    for variable, expected in zip(variables, params_2):
        np.testing.assert_allclose(variable.numpy(), expected, rtol=2e-6,
                                   atol=1e-7)


def numpy_adamw_float32(params, grads, ms, vs, lr, decays, wd=0.01,
                        clip_norm=1.0):
    """Google's AdamWeightDecay written in plain float32 numpy, one step.

    The same formulas as `reference_adamw`, but in float32 like the
    optimizer, so that several steps can be compared tightly without the
    float32/float64 gap growing; clipping as `tf.clip_by_global_norm`
    (`g * clip / max(norm, clip)`).
    """
    f32 = np.float32
    norm = np.sqrt(sum(np.sum(np.square(g, dtype=np.float64)) for g in grads))
    scale = f32(clip_norm / max(norm, clip_norm))
    out_p, out_m, out_v = [], [], []
    for p, g, m, v, decay in zip(params, grads, ms, vs, decays):
        g = g * scale
        m = f32(0.9) * m + f32(0.1) * g
        v = f32(0.999) * v + f32(0.001) * g * g
        update = m / (np.sqrt(v) + f32(1e-6))
        if decay:
            update = update + f32(wd) * p
        out_p.append(p - f32(lr) * update)
        out_m.append(m)
        out_v.append(v)
    return out_p, out_m, out_v


@pytest.mark.parametrize("jit_compile", [False, True])
def test_adamw_fused_update_matches_numpy_over_several_steps(jit_compile):
    """Six steps of the fused per-variable update, in a plain and in an
    XLA-compiled step, against float32 numpy: a decayed kernel, excluded
    LayerNorm and bias variables, and two same-shaped kernels (one excluded
    by name, one not) that must each keep their own values and moments.
    Clipping is active (gradients of global norm > 1)."""
    rng = np.random.default_rng(11)
    names = (KERNEL, GAMMA, BIAS, "bert/pooler/dense/kernel",
             "bert/encoder/layer_0/output/layer_norm/kernel")
    shapes = ((3, 2), (2,), (2,), (4, 5), (4, 5))
    params = [np.float32(rng.normal(size=s)) for s in shapes]
    variables = [google_variable(n, p) for n, p in zip(names, params)]
    decays = [True, False, False, True, False]
    optimizer = create_optimizer("adamw", 0.05, num_train_steps=8,
                                 num_warmup_steps=2)
    grad_list = [random_grads(rng, params, scale=0.5) for _ in range(6)]
    run_steps(optimizer, variables, grad_list, jit_compile=jit_compile)

    ms = [np.zeros_like(p) for p in params]
    vs = [np.zeros_like(p) for p in params]
    for step, grads in enumerate(grad_list):
        assert np.sqrt(sum(np.sum(np.square(g)) for g in grads)) > 1.0
        params, ms, vs = numpy_adamw_float32(
            params, grads, ms, vs, lr=reference_lr(step, 0.05, 8, 2),
            decays=decays)
    slots = optimizer_slot_variables(optimizer)
    for variable, name, p, m, v in zip(variables, names, params, ms, vs):
        np.testing.assert_allclose(variable.numpy(), p, rtol=1e-6, atol=1e-7,
                                   err_msg=name)
        np.testing.assert_allclose(slots[name + "/adam_m"].numpy(), m,
                                   rtol=1e-6, atol=1e-9, err_msg=name)
        np.testing.assert_allclose(slots[name + "/adam_v"].numpy(), v,
                                   rtol=1e-6, atol=1e-12, err_msg=name)
    assert int(optimizer.iterations.numpy()) == 6
    # The excluded layer_norm kernel would differ with decay: the exclusion
    # is what the comparison above checked, not a no-op.
    decayed, _, _ = numpy_adamw_float32(
        [params[4]], [grad_list[0][4]], [ms[4]], [vs[4]], 0.05, [True])
    undecayed, _, _ = numpy_adamw_float32(
        [params[4]], [grad_list[0][4]], [ms[4]], [vs[4]], 0.05, [False])
    assert not np.allclose(decayed[0], undecayed[0], rtol=1e-6, atol=1e-7)


def test_clipping_by_global_norm():
    """Gradients [3] and [4] (global norm 5) are clipped to [0.6], [0.8];
    m = 0.1 * clipped gradient. Below the norm, gradients pass unchanged."""
    variables = [google_variable(KERNEL, [1.0]), google_variable(BIAS, [1.0])]
    optimizer = create_optimizer("adamw", 1e-3, 100, 0)
    run_steps(optimizer, variables, [[np.float32([3.0]), np.float32([4.0])]])
    slots = optimizer_slot_variables(optimizer)
    np.testing.assert_allclose(slots[KERNEL + "/adam_m"].numpy(), [0.06],
                               rtol=1e-6)
    np.testing.assert_allclose(slots[BIAS + "/adam_m"].numpy(), [0.08],
                               rtol=1e-6)

    variables = [google_variable(KERNEL, [1.0]), google_variable(BIAS, [1.0])]
    optimizer = create_optimizer("adamw", 1e-3, 100, 0, clip_norm=10.0)
    run_steps(optimizer, variables, [[np.float32([3.0]), np.float32([4.0])]])
    slots = optimizer_slot_variables(optimizer)
    np.testing.assert_allclose(slots[KERNEL + "/adam_m"].numpy(), [0.3],
                               rtol=1e-6)
    np.testing.assert_allclose(slots[BIAS + "/adam_m"].numpy(), [0.4],
                               rtol=1e-6)


def test_adamw_densifies_indexed_slices_gradients():
    """An embedding lookup's IndexedSlices gradient (rows 0 and 2, row 2
    twice) acts as the dense gradient it stands for."""
    table = google_variable("bert/embeddings/word_embeddings",
                            np.ones((3, 2)))
    optimizer = AdamWeightDecay(learning_rate=0.1, weight_decay_rate=0.01,
                                clip_norm=1.0)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.gather(table.value, [0, 2, 2]) * 0.1)
    gradient = tape.gradient(loss, table.value)
    assert isinstance(gradient, tf.IndexedSlices)
    optimizer.apply_gradients([(gradient, table)])
    dense = np.float32([[0.1, 0.1], [0, 0], [0.2, 0.2]])
    expected, _, _ = reference_adamw([np.ones((3, 2))], [dense],
                                     [np.zeros((3, 2))], [np.zeros((3, 2))],
                                     0.1, [True])
    np.testing.assert_allclose(table.numpy(), expected[0], rtol=2e-6)


# --- LAMB -----------------------------------------------------------------

def test_lamb_matches_numpy_reference():
    rng = np.random.default_rng(3)
    variables, params = three_variables()
    # A zero-initialized decayed kernel: ||w|| = 0 at the first step, so the
    # trust ratio falls back to 1.
    zero_kernel = google_variable("cls/predictions/transform/dense/kernel",
                                  np.zeros((2, 2)))
    variables.append(zero_kernel)
    params.append(np.zeros((2, 2), np.float32))
    optimizer = create_optimizer("lamb", 0.01, num_train_steps=20,
                                 num_warmup_steps=0)
    grad_list = [random_grads(rng, params, scale=1.0) for _ in range(3)]
    run_steps(optimizer, variables, grad_list)

    ms = [np.zeros_like(p) for p in params]
    vs = [np.zeros_like(p) for p in params]
    decays = [True, False, False, True]
    for step, grads in enumerate(grad_list):
        params, ms, vs = reference_lamb(
            params, grads, ms, vs, lr=reference_lr(step, 0.01, 20, 0),
            step=step + 1, decays=decays, adapts=decays)
    for variable, expected in zip(variables, params):
        np.testing.assert_allclose(variable.numpy(), expected, rtol=2e-6,
                                   atol=1e-7, err_msg=variable.path)
    assert set(optimizer_slot_variables(optimizer)) == {
        f"{name}/{slot}" for name in (KERNEL, GAMMA, BIAS,
                                      "cls/predictions/transform/dense/kernel")
        for slot in ("adam_m", "adam_v")} | {"global_step"}


def test_lamb_matches_model_garden():
    """Model Garden's (TF Addons') LAMB on the same inputs, 3 steps."""
    mg_lamb = pytest.importorskip("official.modeling.optimization.lamb")
    rng = np.random.default_rng(4)
    variables, params = three_variables()
    theirs = [tf.Variable(p, name=name)
              for p, name in zip(params, (KERNEL, GAMMA, BIAS))]
    grad_list = [random_grads(rng, params, scale=1.0) for _ in range(3)]

    ours = Lamb(learning_rate=0.01, weight_decay_rate=0.01, clip_norm=None)
    reference = mg_lamb.LAMB(learning_rate=0.01, weight_decay_rate=0.01,
                             exclude_from_weight_decay=list(EXCLUDED))
    run_steps(ours, variables, grad_list)
    for grads in grad_list:
        reference.apply_gradients(
            zip([tf.constant(g) for g in grads], theirs))
    for mine, model_garden, start in zip(variables, theirs, params):
        np.testing.assert_allclose(mine.numpy(), model_garden.numpy(),
                                   rtol=1e-5, atol=1e-6, err_msg=mine.path)
        # And both moved: the comparison is not of two unchanged copies.
        assert not np.allclose(mine.numpy(), start)


# --- checkpoint names and resume -------------------------------------------

def test_slot_variable_names_dtypes_and_shapes():
    class Pooler(keras.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = keras.layers.Dense(3, name="dense")

        def call(self, x):
            return self.dense(x)

    class Tiny(keras.Model):
        def __init__(self):
            super().__init__(name="bert")
            self.pooler = Pooler(name="pooler")

        def call(self, x):
            return self.pooler(x)

    model = Tiny()
    model(np.zeros((1, 2), np.float32))
    paths = sorted(v.path for v in model.trainable_variables)
    assert paths == ["bert/pooler/dense/bias", "bert/pooler/dense/kernel"]

    optimizer = create_optimizer("adamw", 1e-4, 10, 1)
    optimizer.build(model.trainable_variables)
    slots = optimizer_slot_variables(optimizer)
    assert sorted(slots) == [
        "bert/pooler/dense/bias/adam_m", "bert/pooler/dense/bias/adam_v",
        "bert/pooler/dense/kernel/adam_m", "bert/pooler/dense/kernel/adam_v",
        "global_step"]
    assert slots["global_step"] is optimizer.iterations
    assert slots["global_step"].dtype == "int64"
    assert slots["bert/pooler/dense/kernel/adam_v"].shape == (2, 3)
    assert all(slot.dtype == "float32"
               for name, slot in slots.items() if name != "global_step")


def test_resume_from_a_google_tf1_checkpoint(tmp_path):
    """A TF1 checkpoint laid out as Google's run_pretraining.py writes it
    (variables, `<var>/adam_m`, `<var>/adam_v`, int64 `global_step` = 7) is
    loaded by name; the next update equals the numpy continuation at lr(7)."""
    rng = np.random.default_rng(5)
    names = (KERNEL, GAMMA, BIAS)
    params = [np.float32(rng.normal(size=s)) for s in ((3, 2), (2,), (2,))]
    ms = [np.float32(0.01 * rng.normal(size=p.shape)) for p in params]
    vs = [np.float32(1e-4 * rng.uniform(0.5, 1.5, size=p.shape))
          for p in params]
    prefix = str(tmp_path / "model.ckpt-7")
    graph = tf.Graph()
    with graph.as_default():
        saved = {}
        for name, p, m, v in zip(names, params, ms, vs):
            saved[name] = tf.compat.v1.Variable(p, name=name)
            for slot_name, value in (("adam_m", m), ("adam_v", v)):
                saved[f"{name}/{slot_name}"] = tf.compat.v1.Variable(
                    value, name=f"{name}/{slot_name}")
        saved["global_step"] = tf.compat.v1.Variable(
            np.int64(7), name="global_step", dtype=tf.int64)
        saver = tf.compat.v1.train.Saver(saved)
        with tf.compat.v1.Session(graph=graph) as session:
            session.run(tf.compat.v1.global_variables_initializer())
            saver.save(session, prefix)

    reader = tf.train.load_checkpoint(prefix)
    variables = [google_variable(name, np.zeros_like(p))
                 for name, p in zip(names, params)]
    optimizer = create_optimizer("adamw", 1e-3, num_train_steps=20,
                                 num_warmup_steps=10)
    optimizer.build(variables)
    for variable in variables:
        variable.assign(reader.get_tensor(variable.path))
    for name, slot in optimizer_slot_variables(optimizer).items():
        slot.assign(reader.get_tensor(name))
    assert int(optimizer.iterations.numpy()) == 7

    grads = random_grads(rng, params, scale=0.5)
    run_steps(optimizer, variables, [grads])
    expected, expected_m, _ = reference_adamw(
        params, grads, ms, vs, lr=reference_lr(7, 1e-3, 20, 10),
        decays=[True, False, False])
    for variable, value in zip(variables, expected):
        np.testing.assert_allclose(variable.numpy(), value, rtol=1e-6,
                                   atol=1e-8)
    np.testing.assert_allclose(
        optimizer_slot_variables(optimizer)[KERNEL + "/adam_m"].numpy(),
        expected_m[0], rtol=1e-6, atol=1e-9)
    assert int(optimizer.iterations.numpy()) == 8


def test_optimizer_config_round_trip():
    optimizer = create_optimizer("lamb", 2e-4, 100, 10, weight_decay_rate=0.02,
                                 clip_norm=0.5)
    restored = keras.optimizers.deserialize(
        keras.optimizers.serialize(optimizer))
    assert isinstance(restored, Lamb)
    assert restored.get_config() == optimizer.get_config()
    assert restored.weight_decay_rate == 0.02 and restored.clip_norm == 0.5
    assert restored.epsilon == 1e-6 and restored.beta_2 == 0.999


# --- bad inputs -------------------------------------------------------------

def test_unknown_optimizer_name():
    with pytest.raises(
            ValueError,
            match="unknown optimizer 'sgd'; choose one of adamw, lamb"):
        create_optimizer("sgd", 1e-4, 10, 1)


def test_keras_clipping_and_decay_arguments_are_rejected():
    with pytest.raises(ValueError, match="does not take Keras' "
                       "`global_clipnorm`; use clip_norm"):
        AdamWeightDecay(learning_rate=0.1, global_clipnorm=1.0)
    with pytest.raises(ValueError,
                       match="`weight_decay`; use weight_decay_rate"):
        Lamb(learning_rate=0.1, weight_decay=0.01)
    with pytest.raises(ValueError, match="`gradient_accumulation_steps`; use "
                       "TrainerConfig.num_accumulation_steps"):
        AdamWeightDecay(learning_rate=0.1, gradient_accumulation_steps=4)


def test_bad_hyperparameters():
    with pytest.raises(ValueError,
                       match=r"beta_1 must be a number in \[0, 1\)"):
        AdamWeightDecay(learning_rate=0.1, beta_1=1.0)
    with pytest.raises(ValueError, match="clip_norm must be None or a "
                       "non-negative number, got -1"):
        create_optimizer("adamw", 1e-4, 10, 1, clip_norm=-1)
    with pytest.raises(ValueError, match="exclude_from_weight_decay must be a "
                       "list of regular expressions"):
        AdamWeightDecay(learning_rate=0.1, exclude_from_weight_decay="bias")


def test_slot_variables_before_build():
    with pytest.raises(ValueError, match=r"has no slot variables yet: call "
                       r"optimizer.build\(model.trainable_variables\)"):
        optimizer_slot_variables(create_optimizer("adamw", 1e-4, 10, 1))
    with pytest.raises(TypeError, match="needs a bert_tf AdamWeightDecay or "
                       "Lamb optimizer"):
        optimizer_slot_variables(keras.optimizers.Adam())


# --- MirroredStrategy over 2 logical CPUs (in a subprocess) -----------------

_MIRRORED_SCRIPT = textwrap.dedent("""
    import contextlib, json, sys
    import numpy as np
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    import keras
    from bert_tf.training.optimization import (
        create_optimizer, optimizer_slot_variables)

    data = json.loads(sys.stdin.read())
    x, y = np.float32(data["x"]), np.float32(data["y"])
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    assert strategy.num_replicas_in_sync == 2

    def make_variables():
        out = []
        for path, value in zip(data["names"], data["params"]):
            *scopes, name = path.split("/")
            with contextlib.ExitStack() as stack:
                for scope in scopes:
                    stack.enter_context(keras.name_scope(scope))
                out.append(keras.Variable(np.float32(value), name=name))
        return out

    def loss_fn(variables, xs, ys):
        kernel, bias, gamma = [v.value for v in variables]
        prediction = (tf.matmul(xs, kernel) + bias) * gamma
        return tf.reduce_mean(tf.reduce_sum(tf.square(prediction - ys), -1))

    def per_replica(array, num_parts, part):
        return lambda ctx: array[
            (ctx.replica_id_in_sync_group * num_parts + part) * 2:
            (ctx.replica_id_in_sync_group * num_parts + part + 1) * 2]

    results = {}
    # 1. Two plain steps, batch of 4 = 2 per replica, clipped at 0.1.
    with strategy.scope():
        variables = make_variables()
        optimizer = create_optimizer("adamw", 0.1, 10, 0, clip_norm=0.1)
        optimizer.build(variables)

    @tf.function
    def train_step(xs, ys):
        def replica_fn(xs, ys):
            with tf.GradientTape() as tape:
                loss = loss_fn(variables, xs, ys) / 2
            grads = tape.gradient(loss, [v.value for v in variables])
            optimizer.apply_gradients(zip(grads, variables))
        strategy.run(replica_fn, args=(xs, ys))

    for step in range(2):
        xs = strategy.experimental_distribute_values_from_function(
            per_replica(x[4 * step:4 * step + 4], 1, 0))
        ys = strategy.experimental_distribute_values_from_function(
            per_replica(y[4 * step:4 * step + 4], 1, 0))
        train_step(xs, ys)
    results["steps"] = [v.numpy().tolist() for v in variables]
    results["global_step"] = int(optimizer.iterations.numpy())
    results["slot_names"] = sorted(optimizer_slot_variables(optimizer))

    # 2. LAMB with accumulation, as the trainer does it: 2 micro-batches of
    # 2 per replica = 8; each replica sums its micro-batches' gradients of
    # its share of the global-batch loss, the optimizer sums the replicas.
    with strategy.scope():
        variables = make_variables()
        optimizer = create_optimizer("lamb", 0.1, 10, 0, clip_norm=0.1)
        optimizer.build(variables)

    @tf.function
    def accumulated_step(xs, ys):
        def replica_fn(xs, ys):
            grads = [tf.zeros_like(v.value) for v in variables]
            for part in range(2):
                with tf.GradientTape() as tape:
                    loss = loss_fn(variables, xs[2 * part:2 * part + 2],
                                   ys[2 * part:2 * part + 2]) / 4
                grads = [total + g for total, g in zip(
                    grads, tape.gradient(loss, [v.value for v in variables]))]
            optimizer.apply_gradients(zip(grads, variables))
        strategy.run(replica_fn, args=(xs, ys))

    def replica_rows(array):
        return lambda ctx: array[ctx.replica_id_in_sync_group * 4:
                                 ctx.replica_id_in_sync_group * 4 + 4]

    for update in range(2):
        batch_x = x[8 * update:8 * update + 8]
        batch_y = y[8 * update:8 * update + 8]
        accumulated_step(
            strategy.experimental_distribute_values_from_function(
                replica_rows(batch_x)),
            strategy.experimental_distribute_values_from_function(
                replica_rows(batch_y)))
    results["accumulated"] = [v.numpy().tolist() for v in variables]
    print("RESULTS " + json.dumps(results))
""")


def _model_gradients(params, x, y):
    """Gradients of mean_i ||(x_i K + b) * gamma - y_i||^2 (float64)."""
    kernel, bias, gamma = [np.float64(p) for p in params]
    x, y = np.float64(x), np.float64(y)
    linear = x @ kernel + bias
    d_prediction = 2.0 / len(x) * (linear * gamma - y)
    d_linear = d_prediction * gamma
    return [x.T @ d_linear, d_linear.sum(0), (d_prediction * linear).sum(0)]


def test_mirrored_strategy_matches_one_big_batch():
    """2 replicas: the update is that of one device on the global batch, with
    clipping applied to the summed gradient (clipping each replica's half
    before the sum would give other numbers), for plain steps (AdamW) and
    accumulated steps (LAMB)."""
    rng = np.random.default_rng(7)
    names = ["bert/pooler/dense/kernel", "bert/pooler/dense/bias",
             "bert/embeddings/LayerNorm/gamma"]
    params = [np.float32(rng.normal(size=(3, 2))), np.float32([0.1, -0.2]),
              np.float32([1.0, 1.5])]
    x = np.float32(rng.normal(size=(16, 3)))
    # Different targets on each replica's half give per-replica gradients of
    # different norms, so per-replica clipping would change the result.
    y = np.float32(rng.normal(size=(16, 2)) * np.arange(1, 17)[:, None] / 4)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO_ROOT)]
        + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    process = subprocess.run(
        [sys.executable, "-c", _MIRRORED_SCRIPT], env=env, text=True,
        input=json.dumps({"names": names, "x": x.tolist(), "y": y.tolist(),
                          "params": [p.tolist() for p in params]}),
        capture_output=True, timeout=600)
    lines = [l for l in process.stdout.splitlines() if l.startswith("RESULTS ")]
    assert process.returncode == 0 and lines, process.stderr[-4000:]
    results = json.loads(lines[-1][len("RESULTS "):])

    decays = [True, False, False]
    expected = params
    ms = [np.zeros_like(p) for p in params]
    vs = [np.zeros_like(p) for p in params]
    for step in range(2):
        grads = _model_gradients(expected, x[4 * step:4 * step + 4],
                                 y[4 * step:4 * step + 4])
        assert np.sqrt(sum(np.sum(g * g) for g in grads)) > 0.1  # clipped
        expected, ms, vs = reference_adamw(
            expected, grads, ms, vs, lr=reference_lr(step, 0.1, 10, 0),
            decays=decays, clip_norm=0.1)
    for got, want, name in zip(results["steps"], expected, names):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6,
                                   err_msg=name)
    assert results["global_step"] == 2
    assert results["slot_names"] == sorted(
        [f"{n}/{s}" for n in names for s in ("adam_m", "adam_v")]
        + ["global_step"])

    expected = params
    ms = [np.zeros_like(p) for p in params]
    vs = [np.zeros_like(p) for p in params]
    for update in range(2):
        grads = _model_gradients(expected, x[8 * update:8 * update + 8],
                                 y[8 * update:8 * update + 8])
        expected, ms, vs = reference_lamb(
            expected, grads, ms, vs, lr=reference_lr(update, 0.1, 10, 0),
            step=update + 1, decays=decays, adapts=decays, clip_norm=0.1)
    for got, want, name in zip(results["accumulated"], expected, names):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6,
                                   err_msg=name)
