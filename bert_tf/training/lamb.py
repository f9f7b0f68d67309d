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
"""

import re

import keras
import tensorflow as tf

from bert_tf.training.adam_weight_decay import AdamWeightDecay
from bert_tf.training.adam_weight_decay import GOOGLE_WEIGHT_DECAY_EXCLUSIONS


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

    def update_step(self, gradient, variable, learning_rate):
        """One LAMB update of `variable`.

        Args:
          gradient: the (summed, clipped) gradient of `variable`.
          variable: the variable (a replica's component under a strategy).
          learning_rate: the rate at the current `iterations`.
        """
        index = self._get_variable_index(variable)
        next_m, next_v = self._adam_moments(gradient, index)
        if self.bias_correction:
            # t counts updates from 1: `iterations` is incremented after.
            t = tf.cast(self.iterations + 1, tf.float32)
            next_m = next_m / (1.0 - tf.pow(tf.constant(self.beta_1), t))
            next_v = next_v / (1.0 - tf.pow(tf.constant(self.beta_2), t))
        param = tf.cast(tf.convert_to_tensor(variable), tf.float32)
        update = next_m / (tf.sqrt(next_v) + self.epsilon)
        update = self._decayed_update(update, param, index)

        trust_ratio = tf.constant(1.0)
        if self._uses_layer_adaptation[index]:
            param_norm = tf.norm(param, ord=2)
            update_norm = tf.norm(update, ord=2)
            # A zero norm (a zero-initialized variable, a zero update) keeps
            # the plain step instead of dividing by, or multiplying with, 0.
            both_positive = tf.logical_and(param_norm > 0.0, update_norm > 0.0)
            trust_ratio = tf.where(
                both_positive,
                param_norm / tf.where(both_positive, update_norm, 1.0),
                1.0)
        learning_rate = tf.cast(learning_rate, tf.float32)
        self.assign(variable, param - learning_rate * trust_ratio * update)

    def get_config(self):
        """The constructor arguments, for Keras serialization."""
        config = super().get_config()
        config.update({
            "exclude_from_layer_adaptation": list(
                self.exclude_from_layer_adaptation),
            "bias_correction": self.bias_correction,
        })
        return config
