"""The optimizer factory and Google's checkpoint names for optimizer state.

`create_optimizer` is Google's `optimization.create_optimizer` for a Keras 3
custom loop: the learning rate schedule of `learning_rate.py`, clipping by
global norm, and AdamWeightDecay (Google's) or LAMB.

A training step under a `tf.distribute` strategy looks like:

    with strategy.scope():
        optimizer = create_optimizer("adamw", 5e-5, num_train_steps,
                                     num_warmup_steps)
        optimizer.build(model.trainable_variables)

    def replica_step(batch):                  # inside strategy.run
        with tf.GradientTape() as tape:
            # This replica's share of the global batch's loss (see
            # bert_tf.tasks.base: sum over its examples / global count).
            loss = replica_share_of_loss(batch)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))

`apply_gradients` sums the gradients across replicas, clips the sum to global
norm `clip_norm`, then updates. (Gradient accumulation over micro-batches is
the trainer's: it sums them in a `tf.while_loop` before this call.)
`optimizer.iterations` is Google's `global_step`, and
`optimizer_slot_variables` gives the checkpoint names of the whole optimizer
state.
"""

from bert_tf.training.adam_weight_decay import AdamWeightDecay
from bert_tf.training.adam_weight_decay import GOOGLE_WEIGHT_DECAY_EXCLUSIONS
from bert_tf.training.adam_weight_decay import GOOGLE_WEIGHT_DECAY_RATE
from bert_tf.training.lamb import Lamb
from bert_tf.training.learning_rate import GoogleLearningRateSchedule

OPTIMIZER_NAMES = ("adamw", "lamb")

__all__ = [
    "OPTIMIZER_NAMES",
    "create_optimizer",
    "optimizer_slot_variables",
]


def create_optimizer(name, learning_rate, num_train_steps, num_warmup_steps,
                     *, weight_decay_rate=GOOGLE_WEIGHT_DECAY_RATE,
                     clip_norm=1.0):
    """Google's BERT optimizer (or LAMB) with Google's schedule.

    Call it inside `strategy.scope()`: the optimizer binds to the strategy
    that is current when it is created.

    Args:
      name: "adamw" (Google's AdamWeightDecay, the original) or "lamb".
      learning_rate: the peak learning rate (`--learning_rate`).
      num_train_steps: steps over which the rate decays linearly to 0.
      num_warmup_steps: steps of linear warmup from 0; 0 means none.
      weight_decay_rate: decay coefficient; variables named like `LayerNorm`,
        `layer_norm` or `bias` get none.
      clip_norm: global norm the (cross-replica summed) gradients are clipped
        to before the update; Google's is 1.0. `None` or 0 disables it.

    Returns:
      An `AdamWeightDecay` or `Lamb` (`keras.optimizers.Optimizer`) whose
      learning rate is a `GoogleLearningRateSchedule`, with beta_1 0.9,
      beta_2 0.999, epsilon 1e-6.

    Raises:
      ValueError: an unknown `name` or an invalid schedule argument.
    """
    key = name.lower() if isinstance(name, str) else name
    if key not in OPTIMIZER_NAMES:
        raise ValueError(
            f"unknown optimizer {name!r}; choose one of "
            f"{', '.join(OPTIMIZER_NAMES)}")
    schedule = GoogleLearningRateSchedule(
        learning_rate, num_train_steps, num_warmup_steps)
    optimizer_class = AdamWeightDecay if key == "adamw" else Lamb
    return optimizer_class(
        learning_rate=schedule,
        weight_decay_rate=weight_decay_rate,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-6,
        exclude_from_weight_decay=GOOGLE_WEIGHT_DECAY_EXCLUSIONS,
        clip_norm=clip_norm)


def optimizer_slot_variables(optimizer):
    """The optimizer's state under the names of Google's checkpoints.

    Google's run_pretraining.py checkpoints hold, besides the model,
    `<variable>/adam_m` and `<variable>/adam_v` (float32) for every trainable
    variable and `global_step` (int64). Saving these variables under these
    names, and assigning them back from such a checkpoint, moves the whole
    optimizer state between Google's original and bert_tf in both directions.

    Args:
      optimizer: a built `AdamWeightDecay` or `Lamb`, or a Keras
        `LossScaleOptimizer` wrapping one (its `global_step` is then the inner
        optimizer's count of applied updates).

    Returns:
      A dict from Google name to variable: `f"{v.path}/adam_m"` and
      `f"{v.path}/adam_v"` (float32, shaped like `v`) for every variable `v`
      the optimizer was built with, and `"global_step"` to the int64
      `optimizer.iterations`.

    Raises:
      TypeError: not one of bert_tf's optimizers.
      ValueError: the optimizer is not built, or two variables share a name.
    """
    inner = getattr(optimizer, "inner_optimizer", optimizer)
    if not isinstance(inner, AdamWeightDecay):
        raise TypeError(
            "optimizer_slot_variables needs a bert_tf AdamWeightDecay or Lamb "
            f"optimizer (see create_optimizer), got {type(optimizer).__name__}")
    slots = {}
    for variable_name, first_moment, second_moment in inner.slot_variables():
        for slot_name, slot in (("adam_m", first_moment),
                                ("adam_v", second_moment)):
            key = f"{variable_name}/{slot_name}"
            if key in slots:
                raise ValueError(
                    f"two trainable variables are both named {variable_name!r}"
                    "; checkpoint names must be unique")
            slots[key] = slot
    slots["global_step"] = inner.iterations
    return slots
