"""`--dtype`: Keras dtype policies and dynamic loss scaling.

`float32` is the original's arithmetic. `mixed_float16` and `mixed_bfloat16`
compute in 16 bits and keep variables (and, in the model, LayerNorm and
softmax) in float32. float16's narrow range needs dynamic loss scaling:
the loss is multiplied by a scale before differentiation, gradients are
divided by it, and a step whose gradients overflow is skipped while the scale
halves (`keras.optimizers.LossScaleOptimizer`). bfloat16 has float32's range
and needs none.

`bfloat16` (`export_saved_model.py --serving_dtype`) is for serving only:
variables are *stored* in bfloat16 as well (half the weight bytes each call
reads), matmuls and activations compute in bfloat16, and LayerNorm (its
statistics and parameters), softmax and the logits stay in float32, as
under the mixed policies. Nothing trains under it.
"""

import contextlib


DTYPES = ("float32", "mixed_float16", "mixed_bfloat16")
# `export_saved_model.py --serving_dtype`: the Keras policy a served model is
# built under (variables converted from the float32 checkpoint as it loads).
SERVING_DTYPES = ("float32", "bfloat16")

# Names under which the loss-scale state is saved next to Google's names, so a
# resumed mixed_float16 run does not restart from the initial scale. Google's
# code ignores names it does not ask for.
LOSS_SCALE_NAME = "loss_scale/current_loss_scale"
LOSS_SCALE_GOOD_STEPS_NAME = "loss_scale/good_steps"


def validate_dtype(dtype):
    """Returns `dtype` or raises a ValueError naming `--dtype`."""
    if dtype not in DTYPES:
        raise ValueError(
            f"--dtype={dtype!r} is not one of {', '.join(DTYPES)}")
    return dtype


def validate_serving_dtype(serving_dtype):
    """Returns `serving_dtype` or raises a ValueError naming
    `--serving_dtype`."""
    if serving_dtype not in SERVING_DTYPES:
        raise ValueError(
            f"--serving_dtype={serving_dtype!r} is not one of "
            f"{', '.join(SERVING_DTYPES)}")
    return serving_dtype


@contextlib.contextmanager
def _global_policy(policy):
    import keras
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(policy)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


def dtype_policy_scope(dtype):
    """Makes `dtype` Keras' global dtype policy while the block runs.

    Layers read the global policy when they are created, so building the model
    inside this block gives it the policy; the previous policy comes back
    afterwards, so one process can build float32 and mixed models side by side.
    """
    return _global_policy(validate_dtype(dtype))


def serving_dtype_scope(serving_dtype):
    """`dtype_policy_scope` for a served model: `float32` or `bfloat16`
    (`SERVING_DTYPES`), whose variables are stored in bfloat16."""
    return _global_policy(validate_serving_dtype(serving_dtype))


def set_tensor_float_32(allow):
    """Allows or forbids TF32 matmuls and convolutions, process-wide.

    On NVIDIA GPUs from Ampere on, TensorFlow by default computes float32
    matmuls in TF32 (10-bit mantissa inputs), which can move BERT's outputs
    by more than the 1e-5 that separates two correct float32
    implementations. The runners forbid it unless `--allow_tf32`: float32
    means float32. No effect on CPUs, nor on 16-bit compute.

    Args:
      allow: whether float32 matmuls may run in TF32.
    """
    import tensorflow as tf
    tf.config.experimental.enable_tensor_float_32_execution(bool(allow))


def uses_loss_scaling(dtype):
    return dtype == "mixed_float16"


def wrap_optimizer(optimizer, dtype):
    """Adds dynamic loss scaling for `mixed_float16`; otherwise a no-op."""
    import keras
    if not uses_loss_scaling(dtype):
        return optimizer
    return keras.optimizers.LossScaleOptimizer(optimizer)


def inner_optimizer(optimizer):
    """The optimizer that owns the slots (unwraps a LossScaleOptimizer)."""
    import keras
    if isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
        return optimizer.inner_optimizer
    return optimizer


def loss_scale_variables(optimizer):
    """`{checkpoint name: variable}` of the loss-scale state (may be empty)."""
    import keras
    if not isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
        return {}
    return {LOSS_SCALE_NAME: optimizer.dynamic_scale,
            LOSS_SCALE_GOOD_STEPS_NAME: optimizer.step_counter}


def scale_loss(optimizer, loss):
    """The loss to differentiate: scaled when the optimizer scales losses."""
    import keras
    if isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
        return optimizer.scale_loss(loss)
    return loss


def agree_on_finite_gradients(gradients):
    """Makes every replica see non-finite gradients if any replica does.

    Keras' LossScaleOptimizer decides whether to skip a step from the first
    replica's local gradients, but applies the all-reduced ones: if only
    another replica overflowed, it would apply inf/nan. All-reducing one
    flag and poisoning every replica's gradients with it keeps the decision
    global. (Multiplying by 1.0 leaves finite gradients bit-identical.)
    """
    import tensorflow as tf
    replica_context = tf.distribute.get_replica_context()
    if replica_context is None or replica_context.num_replicas_in_sync == 1:
        return gradients
    local_finite = tf.reduce_all(
        [tf.reduce_all(tf.math.is_finite(g)) for g in gradients
         if g is not None])
    # ReduceOp has no MIN: count the replicas that overflowed instead.
    replicas_not_finite = replica_context.all_reduce(
        tf.distribute.ReduceOp.SUM,
        1.0 - tf.cast(local_finite, tf.float32))
    factor = tf.where(replicas_not_finite < 0.5, 1.0, float("nan"))
    return [None if g is None else g * tf.cast(factor, g.dtype)
            for g in gradients]
