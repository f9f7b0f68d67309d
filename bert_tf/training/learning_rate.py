"""Google's BERT learning rate: linear warmup, then linear decay to zero.

Google's `optimization.create_optimizer` builds the rate from `global_step`:

    decayed(t) = polynomial_decay(init_lr, t, num_train_steps,
                                  end_learning_rate=0.0, power=1.0,
                                  cycle=False)
               = (init_lr - 0) * (1 - min(t, N) / N) ** 1 + 0
    warmup(t)  = init_lr * (t / num_warmup_steps)
    lr(t)      = warmup(t) if t < num_warmup_steps else decayed(t)

with `N = num_train_steps`. Both pieces count from step 0 (the decay does not
restart after warmup), and the warmup branch only exists when
`num_warmup_steps` is non-zero. The arithmetic below is Google's, operation
for operation, in float32, so the rates are bit-identical: in particular the
warmup rate is `init_lr * (t / W)`, not `(init_lr * t) / W`, and
`x ** 1.0` and `+ 0.0` are exact so they are left out of the decay.
"""

import keras
from keras import ops

from bert_tf import backend


def _check_schedule_arguments(init_lr, num_train_steps, num_warmup_steps):
    """Raises `ValueError` for arguments that cannot make a schedule."""
    if isinstance(init_lr, bool) or not isinstance(init_lr, (int, float)):
        raise ValueError(
            f"learning rate must be a number, got {init_lr!r}")
    if init_lr < 0:
        raise ValueError(
            f"learning rate must be non-negative, got {init_lr}")
    if (isinstance(num_train_steps, bool)
            or not isinstance(num_train_steps, int) or num_train_steps <= 0):
        raise ValueError(
            "num_train_steps must be a positive integer (the learning rate "
            f"decays to 0 over it), got {num_train_steps!r}")
    if (isinstance(num_warmup_steps, bool)
            or not isinstance(num_warmup_steps, int) or num_warmup_steps < 0):
        raise ValueError(
            "num_warmup_steps must be a non-negative integer, got "
            f"{num_warmup_steps!r}")


def google_learning_rate(step, init_lr, num_train_steps, num_warmup_steps):
    """The learning rate Google's BERT uses at `step`.

    Args:
      step: the global step (number of updates already applied), an integer
        scalar tensor, variable or Python int, of the backend in use.
      init_lr: the peak learning rate (`--learning_rate`).
      num_train_steps: steps over which the rate decays linearly to 0.
      num_warmup_steps: steps of linear warmup from 0; 0 means no warmup.

    Returns:
      A float32 scalar tensor: `init_lr * (step / num_warmup_steps)` while
      `step < num_warmup_steps`, else
      `init_lr * (1 - min(step, num_train_steps) / num_train_steps)`.

    Raises:
      ValueError: a non-positive `num_train_steps`, a negative
        `num_warmup_steps` or a negative `init_lr`.
    """
    _check_schedule_arguments(init_lr, num_train_steps, num_warmup_steps)
    # keras.ops, so the schedule runs on every backend; on TensorFlow each
    # op is the TensorFlow op Google's graph has, in the same order.
    step = ops.cast(step, "int64" if _has_int64() else "int32")
    step_float = ops.cast(step, "float32")
    init_lr = ops.convert_to_tensor(init_lr, dtype="float32")

    # polynomial_decay(power=1, end=0, cycle=False): the step is capped at
    # num_train_steps, so the rate stays 0 beyond the end of training.
    train_steps_float = ops.convert_to_tensor(num_train_steps,
                                              dtype="float32")
    fraction_done = ops.divide(ops.minimum(step_float, train_steps_float),
                               train_steps_float)
    decayed_lr = ops.multiply(init_lr, ops.subtract(1.0, fraction_done))
    if not num_warmup_steps:
        return decayed_lr

    warmup_steps_float = ops.convert_to_tensor(num_warmup_steps,
                                               dtype="float32")
    warmup_lr = ops.multiply(init_lr,
                             ops.divide(step_float, warmup_steps_float))
    # Google blends with `(1 - is_warmup) * decayed + is_warmup * warmup`,
    # which for a 0/1 `is_warmup` and finite rates is exactly this select.
    is_warmup = ops.less(step, num_warmup_steps)
    return ops.where(is_warmup, warmup_lr, decayed_lr)


def _has_int64():
    """Whether the backend computes in int64 (JAX does only with x64 on)."""
    if backend.name() != backend.JAX:
        return True
    import jax  # pylint: disable=import-outside-toplevel
    return bool(jax.config.jax_enable_x64)


@keras.saving.register_keras_serializable(package="bert_tf")
class GoogleLearningRateSchedule(
        keras.optimizers.schedules.LearningRateSchedule):
    """`google_learning_rate` as a Keras schedule for an optimizer.

    A Keras optimizer calls its schedule with `optimizer.iterations` before
    incrementing it, so update number `t` (counting from 0) uses `lr(t)`,
    as Google's graph does with `global_step` (see `AdamWeightDecay`).
    """

    def __init__(self, init_lr, num_train_steps, num_warmup_steps):
        """Validates and stores the schedule's parameters.

        Args:
          init_lr: the peak learning rate.
          num_train_steps: steps over which the rate decays linearly to 0.
          num_warmup_steps: steps of linear warmup; 0 means none.

        Raises:
          ValueError: see `google_learning_rate`.
        """
        _check_schedule_arguments(init_lr, num_train_steps, num_warmup_steps)
        self.init_lr = float(init_lr)
        self.num_train_steps = num_train_steps
        self.num_warmup_steps = num_warmup_steps

    def __call__(self, step):
        """Returns the float32 learning rate at `step`."""
        return google_learning_rate(step, self.init_lr, self.num_train_steps,
                                    self.num_warmup_steps)

    def get_config(self):
        """The constructor arguments, for Keras serialization."""
        return {
            "init_lr": self.init_lr,
            "num_train_steps": self.num_train_steps,
            "num_warmup_steps": self.num_warmup_steps,
        }
