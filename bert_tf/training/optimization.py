"""The optimizer factory, Google's checkpoint names for optimizer state, and
gradient accumulation.

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
            loss = per_replica_mean_loss(batch) / strategy.num_replicas_in_sync
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))

`apply_gradients` sums the gradients across replicas, clips the sum to global
norm `clip_norm`, then updates; `optimizer.iterations` is Google's
`global_step`, and `optimizer_slot_variables` gives the checkpoint names of
the whole optimizer state.
"""

import keras
import tensorflow as tf

from bert_tf.training.adam_weight_decay import AdamWeightDecay
from bert_tf.training.adam_weight_decay import GOOGLE_WEIGHT_DECAY_EXCLUSIONS
from bert_tf.training.adam_weight_decay import google_variable_name
from bert_tf.training.lamb import Lamb
from bert_tf.training.learning_rate import GoogleLearningRateSchedule

OPTIMIZER_NAMES = ("adamw", "lamb")

__all__ = [
    "OPTIMIZER_NAMES",
    "GradientAccumulator",
    "create_optimizer",
    "optimizer_slot_variables",
]


def create_optimizer(name, learning_rate, num_train_steps, num_warmup_steps,
                     *, weight_decay_rate=0.01, clip_norm=1.0):
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


class GradientAccumulator:
    """Sums gradients over micro-batches, per replica, for one update.

    With `k` micro-batches of `b` examples per update, applying
    `mean_gradients` (the sum divided by the number of micro-batches) is the
    update of one batch of `k * b` examples, because each micro-batch loss is
    a mean over its examples: mean over k of (mean over b) = mean over k*b.
    The trainer should therefore apply `mean_gradients`; `gradients` is the
    raw sum, for callers who scaled their losses themselves.

    Under a `tf.distribute` strategy each replica accumulates its own
    gradients locally (ON_READ variables: no communication per micro-batch);
    the optimizer's `apply_gradients` then sums them across replicas once
    per update, and clips that sum, exactly as for an unaccumulated step:

        accumulator = GradientAccumulator(model.trainable_variables)  # scope
        # k times, inside strategy.run:
        accumulator.accumulate(tape.gradient(loss, variables))
        # then, inside strategy.run:
        optimizer.apply_gradients(zip(accumulator.mean_gradients, variables))
        accumulator.reset()

    Read in cross-replica context, `gradients` is the sum over replicas.
    """

    def __init__(self, variables, name="gradient_accumulator"):
        """Creates float32 zero accumulators shaped like `variables`.

        Create it inside `strategy.scope()`.

        Args:
          variables: the trainable variables whose gradients will be summed.
          name: prefix of the accumulators' names.
        """
        strategy = tf.distribute.get_strategy()
        self._variable_names = []
        self._accumulators = []
        for variable in variables:
            variable_name = google_variable_name(variable)
            self._variable_names.append(variable_name)
            colocate_with = (variable.value
                             if isinstance(variable, keras.Variable)
                             else variable)
            with strategy.extended.colocate_vars_with(colocate_with):
                self._accumulators.append(tf.Variable(
                    tf.zeros(variable.shape, tf.float32),
                    trainable=False,
                    name=f"{name}/{variable_name}",
                    synchronization=tf.VariableSynchronization.ON_READ,
                    aggregation=tf.VariableAggregation.SUM))
        self._num_accumulated = tf.Variable(
            tf.constant(0, tf.int64),
            trainable=False,
            name=f"{name}/num_accumulated",
            synchronization=tf.VariableSynchronization.ON_READ,
            aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)

    def accumulate(self, gradients):
        """Adds one micro-batch's gradients (call inside `strategy.run`).

        Args:
          gradients: one gradient (tensor, `IndexedSlices` or `None` for no
            gradient) per variable, in the constructor's order.

        Raises:
          ValueError: a different number of gradients than variables.
        """
        gradients = list(gradients)
        if len(gradients) != len(self._accumulators):
            raise ValueError(
                f"GradientAccumulator holds {len(self._accumulators)} "
                f"variables but accumulate() got {len(gradients)} gradients")
        for accumulator, gradient in zip(self._accumulators, gradients):
            if gradient is not None:
                accumulator.assign_add(
                    tf.cast(tf.convert_to_tensor(gradient), tf.float32))
        self._num_accumulated.assign_add(1)

    @property
    def gradients(self):
        """The sum of the gradients accumulated since the last `reset`."""
        return [accumulator.read_value() for accumulator in self._accumulators]

    @property
    def mean_gradients(self):
        """The sum divided by the number of `accumulate` calls.

        The gradient of one large batch made of the micro-batches; all zeros
        if nothing was accumulated.
        """
        count = tf.cast(tf.maximum(self._num_accumulated.read_value(), 1),
                        tf.float32)
        return [accumulator.read_value() / count
                for accumulator in self._accumulators]

    @property
    def num_accumulated(self):
        """The int64 variable counting `accumulate` calls since `reset`."""
        return self._num_accumulated

    @property
    def variables(self):
        """The accumulator variables, in the constructor's order."""
        return list(self._accumulators)

    def reset(self):
        """Sets the sums and the count to zero (in either context)."""
        for accumulator in self._accumulators:
            accumulator.assign(tf.zeros(accumulator.shape, tf.float32))
        self._num_accumulated.assign(tf.constant(0, tf.int64))
