"""LAMB (You et al., 2019, "Large Batch Optimization for Deep Learning:
Training BERT in 76 minutes"), with Google's slots and weight-decay rule.

One update of parameter `w` (a whole variable: LAMB's "layer") at step
`t = iterations + 1`:

    m  <- beta_1 * m + (1 - beta_1) * g
    v  <- beta_2 * v + (1 - beta_2) * g**2
    m_hat = m / (1 - beta_1**t),   v_hat = v / (1 - beta_2**t)
    r  =  m_hat / (sqrt(v_hat) + epsilon) + weight_decay_rate * w
    trust_ratio = ||w|| / ||r||    if ||w|| > 0 and ||r|| > 0 else 1
    w  <- w - lr * trust_ratio * r

This is the paper's Algorithm 2 (with the identity scaling function), and
the same algorithm as Model Garden's `official.modeling.optimization.lamb`
(TensorFlow Addons' LAMB), which NVIDIA's BERT recipe also follows:

- bias correction is on (`bias_correction=True`), as in the paper and Model
  Garden — unlike Google's AdamWeightDecay, which has none;
- weight decay skips variables matching `LayerNorm`, `layer_norm`, `bias`,
  and so does the layer adaptation: by default an excluded variable gets
  `trust_ratio = 1` (Model Garden's `exclude_from_layer_adaptation` defaults
  to the weight-decay exclusions), i.e. a plain bias-corrected Adam step.

The moments are stored as `<variable>/adam_m` and `<variable>/adam_v` like
AdamWeightDecay's, so the two optimizers share checkpoint names.

The arithmetic (`lamb_values`) is `keras.ops`: one XLA program per variable
on TensorFlow (`fused_lamb_update`), part of the engine's jitted step on
JAX.
"""

import re

import keras
from keras import ops

from bert_tf.training.adam_weight_decay import AdamWeightDecay
from bert_tf.training.adam_weight_decay import GOOGLE_WEIGHT_DECAY_EXCLUSIONS
from bert_tf.training.adam_weight_decay import assign_resource
from bert_tf.training.adam_weight_decay import google_adam_moments
from bert_tf.training.adam_weight_decay import read_resource
from bert_tf.training.adam_weight_decay import xla_compiled_tf_function


def lamb_values(param, first_moment, second_moment, gradient, learning_rate,
                gradient_scale, step, *, beta_1, beta_2, epsilon,
                weight_decay_rate, bias_correction, layer_adaptation):
    """The new parameter and moments of one LAMB update of one variable.

    Args:
      param: the variable's current value (any float dtype).
      first_moment: `m`, float32, shaped like `param`.
      second_moment: `v`, float32, shaped like `param`.
      gradient: the dense gradient, before clipping (any float dtype).
      learning_rate: scalar float32 rate of this step.
      gradient_scale: scalar float32 factor of global-norm clipping (1.0 for
        none).
      step: scalar float32 `t`, the 1-based number of this update (used by
        the bias correction only).
      beta_1: decay of the first moment (Python float).
      beta_2: decay of the second moment (Python float).
      epsilon: added to `sqrt(v_hat)` (Python float).
      weight_decay_rate: decay coefficient, 0.0 for an excluded variable.
      bias_correction: whether to divide the moments by `1 - beta**t`.
      layer_adaptation: whether to scale the step by the trust ratio
        (`False`: trust ratio 1, for excluded variables).

    Returns:
      `(param, m, v)`: the new float32 values; the stored moments are the
      uncorrected ones, as AdamWeightDecay's.
    """
    gradient = ops.cast(gradient, "float32") * gradient_scale
    param = ops.cast(param, "float32")
    next_m, next_v = google_adam_moments(first_moment, second_moment,
                                         gradient, beta_1, beta_2)
    m_hat, v_hat = next_m, next_v
    if bias_correction:
        step = ops.cast(step, "float32")
        m_hat = next_m / (1.0 - ops.power(
            ops.convert_to_tensor(beta_1, "float32"), step))
        v_hat = next_v / (1.0 - ops.power(
            ops.convert_to_tensor(beta_2, "float32"), step))
    update = m_hat / (ops.sqrt(v_hat) + epsilon)
    if weight_decay_rate:
        update += weight_decay_rate * param

    trust_ratio = 1.0
    if layer_adaptation:
        # The Euclidean norm of the whole variable (`tf.norm(x, ord=2)`).
        param_norm = ops.sqrt(ops.sum(ops.square(param)))
        update_norm = ops.sqrt(ops.sum(ops.square(update)))
        # A zero norm (a zero-initialized variable, a zero update) keeps the
        # plain step instead of dividing by, or multiplying with, 0.
        both_positive = ops.logical_and(param_norm > 0.0, update_norm > 0.0)
        trust_ratio = ops.where(
            both_positive,
            param_norm / ops.where(both_positive, update_norm, 1.0),
            1.0)
    next_param = param - learning_rate * trust_ratio * update
    return next_param, next_m, next_v


# Like `fused_adam_weight_decay_update`: variables by resource handle, one
# trace per shape and setting, updated in place. The norms of the trust
# ratio need a pass of their own before the new value, so this is two passes
# over memory instead of one per elementwise op.
@xla_compiled_tf_function
def fused_lamb_update(variable_handle, first_moment_handle,
                      second_moment_handle, gradient, learning_rate,
                      gradient_scale, step, *, variable_dtype,
                      **hyperparameters):
    """Updates one variable and its moments in place, as one XLA program.

    Args:
      variable_handle: the variable's resource handle (under a strategy: of
        the copy being updated).
      first_moment_handle: the handle of its float32 `m` variable.
      second_moment_handle: the handle of its float32 `v` variable.
      gradient: the dense gradient, before clipping.
      learning_rate: scalar float32 rate of this step.
      gradient_scale: scalar float32 factor of global-norm clipping.
      step: scalar float32, the 1-based number of this update.
      variable_dtype: the variable's `tf.DType`.
      **hyperparameters: the keyword arguments of `lamb_values`.
    """
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    next_param, next_m, next_v = lamb_values(
        read_resource(variable_handle, variable_dtype),
        read_resource(first_moment_handle, tf.float32),
        read_resource(second_moment_handle, tf.float32),
        gradient, learning_rate, gradient_scale, step, **hyperparameters)
    assign_resource(first_moment_handle, next_m)
    assign_resource(second_moment_handle, next_v)
    assign_resource(variable_handle, tf.cast(next_param, variable_dtype))


@keras.saving.register_keras_serializable(package="bert_tf")
class Lamb(AdamWeightDecay):
    """LAMB: Adam moments, weight decay, and a per-variable trust ratio.

    Distribution, clipping (after the cross-replica sum), the step/learning
    rate convention and the slots are AdamWeightDecay's; see its docstring.
    """

    def __init__(self, learning_rate, weight_decay_rate=0.0, beta_1=0.9,
                 beta_2=0.999, epsilon=1e-6,
                 exclude_from_weight_decay=GOOGLE_WEIGHT_DECAY_EXCLUSIONS,
                 exclude_from_layer_adaptation=None, bias_correction=True,
                 clip_norm=1.0, name="Lamb", **kwargs):
        """Creates the optimizer (inside the strategy's scope, if any).

        Args:
          learning_rate: a float or a `LearningRateSchedule`.
          weight_decay_rate: decay coefficient added to the update `r`.
          beta_1: decay of the first moment.
          beta_2: decay of the second moment.
          epsilon: added to `sqrt(v_hat)`.
          exclude_from_weight_decay: regular expressions; matching variable
            names get no weight decay.
          exclude_from_layer_adaptation: regular expressions; matching
            variable names get `trust_ratio = 1`. `None` means the same list
            as `exclude_from_weight_decay` (Model Garden's default).
          bias_correction: divide the moments by `1 - beta**t` (the paper,
            Model Garden); `False` uses Google's uncorrected moments.
          clip_norm: global norm the summed gradients are clipped to;
            `None` or 0 disables clipping.
          name: the optimizer's name.
          **kwargs: see `AdamWeightDecay`.

        Raises:
          ValueError: see `AdamWeightDecay`.
        """
        super().__init__(
            learning_rate=learning_rate, weight_decay_rate=weight_decay_rate,
            beta_1=beta_1, beta_2=beta_2, epsilon=epsilon,
            exclude_from_weight_decay=exclude_from_weight_decay,
            clip_norm=clip_norm, name=name, **kwargs)
        if isinstance(exclude_from_layer_adaptation, str):
            raise ValueError(
                "exclude_from_layer_adaptation must be a list of regular "
                "expressions, got the string "
                f"{exclude_from_layer_adaptation!r}")
        if exclude_from_layer_adaptation is None:
            self.exclude_from_layer_adaptation = self.exclude_from_weight_decay
        else:
            self.exclude_from_layer_adaptation = tuple(
                exclude_from_layer_adaptation)
        self.bias_correction = bool(bias_correction)

    def build(self, var_list):
        """Creates the moments and decides layer adaptation per variable."""
        if self.built:
            return
        super().build(var_list)
        self._uses_layer_adaptation = [
            not any(re.search(pattern, name) is not None
                    for pattern in self.exclude_from_layer_adaptation)
            for name in self._variable_names]

    def _fused_update(self, index, variable, first_moment_handle,
                      second_moment_handle, gradient, learning_rate,
                      gradient_scale):
        """Updates variable `index` and its moments: `fused_lamb_update`.

        `update_step` (AdamWeightDecay's) prepares the arguments; see
        `AdamWeightDecay._fused_update`.
        """
        import tensorflow as tf  # pylint: disable=import-outside-toplevel
        # t counts updates from 1: `iterations` is incremented after.
        step = tf.cast(self.iterations + 1, tf.float32)
        fused_lamb_update(
            variable.handle, first_moment_handle, second_moment_handle,
            gradient, learning_rate, gradient_scale, step,
            variable_dtype=variable.dtype, beta_1=self.beta_1,
            beta_2=self.beta_2,
            epsilon=self.epsilon,
            weight_decay_rate=(self.weight_decay_rate
                               if self._uses_weight_decay[index] else 0.0),
            bias_correction=self.bias_correction,
            layer_adaptation=self._uses_layer_adaptation[index])

    def _new_values(self, index, param, first_moment, second_moment,
                    gradient, learning_rate, gradient_scale):
        """LAMB's update in `keras.ops` (the backends without TensorFlow's
        fused program); see `AdamWeightDecay._new_values`."""
        # t counts updates from 1: `iterations` is incremented after.
        return lamb_values(
            param, first_moment, second_moment, gradient, learning_rate,
            gradient_scale, ops.cast(self.iterations + 1, "float32"),
            beta_1=self.beta_1, beta_2=self.beta_2, epsilon=self.epsilon,
            weight_decay_rate=(self.weight_decay_rate
                               if self._uses_weight_decay[index] else 0.0),
            bias_correction=self.bias_correction,
            layer_adaptation=self._uses_layer_adaptation[index])

    def get_config(self):
        """The constructor arguments, for Keras serialization."""
        config = super().get_config()
        config.update({
            "exclude_from_layer_adaptation": list(
                self.exclude_from_layer_adaptation),
            "bias_correction": self.bias_correction,
        })
        return config
