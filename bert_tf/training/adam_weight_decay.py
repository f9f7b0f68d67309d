"""Google's `AdamWeightDecayOptimizer` as a Keras 3 optimizer.

One update of Google's optimizer (`optimization.py` in google-research/bert),
for a gradient `g` of parameter `w` and learning rate `lr`:

    m  <- beta_1 * m + (1 - beta_1) * g
    v  <- beta_2 * v + (1 - beta_2) * g**2
    u  =  m / (sqrt(v) + epsilon)
    u  += weight_decay_rate * w        (unless w's name matches an exclusion)
    w  <- w - lr * u

with NO bias correction of `m` and `v` (unlike Adam), and weight decay added
to the update *before* the learning rate multiplies it (so it is scaled by
the schedule, unlike Keras' `AdamW`). Before any of this, the gradients of all
variables are clipped together to global norm `clip_norm` (Google's
`tf.clip_by_global_norm(grads, clip_norm=1.0)` in `create_optimizer`).

Checkpoint compatibility: the moments are the `<variable>/adam_m` and
`<variable>/adam_v` tensors of Google's checkpoints and `iterations` is
`global_step`; `optimizer_slot_variables` (in `optimization.py`) maps those
names to this optimizer's variables.

Speed: written op by op, the update is a dozen elementwise TensorFlow ops per
variable, each a full pass over memory into a newly allocated tensor; for
BERT-Base (110M parameters) that cost more than the forward and backward
pass of a small model on a CPU. So the whole update of one variable
(clipping factor, moments, decay, new value) is one XLA-compiled function,
`fused_adam_weight_decay_update`, that reads the parameter, the moments and
the gradient once and writes the results into the variables' own buffers
(XLA updates a resource variable in place when nothing else holds its
buffer): no temporaries, no fresh allocations of embedding-table size. The
function takes the variables' resource handles, plain tensors, and is
called inside the strategy's `extended.update` with the handles of the copy
being updated, so it works the same in a `tf.function`, in an XLA-compiled
train step (where it is inlined) and for each device of a MirroredStrategy.

On the other Keras backends (JAX) the same arithmetic, written once in
`keras.ops` (`adam_weight_decay_values`), runs inside the engine's jitted
step, which XLA fuses as a whole. This module imports TensorFlow only where
the TensorFlow update needs it, so that the optimizer is importable (and
runs) where TensorFlow is not installed.
"""

import functools
import re

import keras
from keras import ops

from bert_tf import backend

# Google's `exclude_from_weight_decay` in `create_optimizer`.
GOOGLE_WEIGHT_DECAY_EXCLUSIONS = ("LayerNorm", "layer_norm", "bias")
# Google's `create_optimizer`'s decay coefficient.
GOOGLE_WEIGHT_DECAY_RATE = 0.01

# Keras' own mechanisms that would duplicate or contradict ours, with the
# argument that replaces each.
_REPLACED_KERAS_ARGUMENTS = {
    "weight_decay": "weight_decay_rate (Google's decay, added to the update)",
    "clipnorm": "clip_norm (Google's clipping by global norm)",
    "global_clipnorm": "clip_norm (applied after the cross-replica sum)",
    "clipvalue": "clip_norm (Google's clipping by global norm)",
    "gradient_accumulation_steps": (
        "TrainerConfig.num_accumulation_steps (--num_accumulation_steps)"),
}


def google_variable_name(variable):
    """The checkpoint name of `variable`, as Google's optimizer sees it.

    Keras variables of bert_tf carry Google's name in `.path`; a plain
    `tf.Variable` has it in `.name` with the `:0` output suffix, which Google's
    `_get_variable_name` strips.

    Args:
      variable: a `keras.Variable` or `tf.Variable`.

    Returns:
      The name as a string, e.g. `bert/encoder/layer_0/output/dense/kernel`.
    """
    path = getattr(variable, "path", None)
    if path:
        return path
    return re.sub(r":\d+$", "", variable.name)


def _check_probability(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
            0.0 <= value < 1.0):
        raise ValueError(f"{name} must be a number in [0, 1), got {value!r}")


def google_adam_moments(first_moment, second_moment, gradient, beta_1,
                        beta_2):
    """Google's (bias-uncorrected) moments; a piece of the fused updates.

    Args:
      first_moment: `m`, float32.
      second_moment: `v`, float32.
      gradient: the clipped float32 gradient.
      beta_1: decay of the first moment (Python float).
      beta_2: decay of the second moment (Python float).

    Returns:
      `(m, v)`: the new moments, float32 tensors.
    """
    # `1 - beta` is computed in Python (double) and then rounded to
    # float32, as Google's `tf.multiply(1.0 - self.beta_1, grad)`.
    next_m = (ops.multiply(beta_1, first_moment)
              + ops.multiply(1.0 - beta_1, gradient))
    next_v = (ops.multiply(beta_2, second_moment)
              + ops.multiply(1.0 - beta_2, ops.square(gradient)))
    return next_m, next_v


def adam_weight_decay_values(param, first_moment, second_moment, gradient,
                             learning_rate, gradient_scale, *, beta_1,
                             beta_2, epsilon, weight_decay_rate):
    """The new parameter and moments of one AdamWeightDecay update.

    Google's arithmetic, op for op, in float32: the same constants, the same
    order of operations (`fused_adam_weight_decay_update` compiles it).

    Args:
      param: the variable's current value (any float dtype).
      first_moment: `m`, float32, shaped like `param`.
      second_moment: `v`, float32, shaped like `param`.
      gradient: the dense gradient, before clipping (any float dtype).
      learning_rate: scalar float32 rate of this step.
      gradient_scale: scalar float32 factor of global-norm clipping
        (`tf.clip_by_global_norm`'s `clip_norm / max(norm, clip_norm)`);
        1.0 when the gradient is already clipped or clipping is off.
      beta_1: decay of the first moment (Python float).
      beta_2: decay of the second moment (Python float).
      epsilon: added to `sqrt(v)` (Python float).
      weight_decay_rate: decay coefficient, 0.0 for an excluded variable
        (Python float; 0.0 leaves the update untouched, as Google's
        `_do_use_weight_decay` does).

    Returns:
      `(param, m, v)`: the new float32 values.
    """
    # Google's `t * scale` of tf.clip_by_global_norm, then its update.
    gradient = ops.cast(gradient, "float32") * gradient_scale
    param = ops.cast(param, "float32")
    next_m, next_v = google_adam_moments(first_moment, second_moment,
                                         gradient, beta_1, beta_2)
    update = next_m / (ops.sqrt(next_v) + epsilon)
    if weight_decay_rate:
        update += weight_decay_rate * param
    next_param = param - learning_rate * update
    return next_param, next_m, next_v


def read_resource(handle, dtype):
    """The value of the resource variable behind `handle` (TensorFlow)."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    return tf.raw_ops.ReadVariableOp(resource=handle, dtype=dtype)


def assign_resource(handle, value):
    """Assigns `value` to the resource variable behind `handle`
    (TensorFlow)."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    return tf.raw_ops.AssignVariableOp(resource=handle, value=value)


def xla_compiled_tf_function(fn):
    """`fn` as an XLA-compiled `tf.function`, made on its first call.

    The fused updates are TensorFlow programs; making them when first called
    (not when this module is imported) keeps TensorFlow out of a process
    that runs on another backend.

    Args:
      fn: straight-line tensor code (`autograph=False`).

    Returns:
      A callable with `fn`'s signature.
    """
    compiled = []

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if not compiled:
            import tensorflow as tf  # pylint: disable=import-outside-toplevel
            compiled.append(tf.function(fn, jit_compile=True,
                                        autograph=False))
        return compiled[0](*args, **kwargs)

    return call


# The fused functions take variables by their resource handles (plain
# tensors), not as `tf.Variable` objects: a traced function then never holds
# on to a particular variable, and one trace serves every variable of a
# shape and dtype on every device (XLA compiles per device and shape when
# called). `autograph=False`: the body is straight-line tensor code. Python
# floats and dtypes among the arguments are constants of the trace.
@xla_compiled_tf_function
def fused_adam_weight_decay_update(variable_handle, first_moment_handle,
                                   second_moment_handle, gradient,
                                   learning_rate, gradient_scale, *,
                                   variable_dtype, **hyperparameters):
    """Updates one variable and its moments in place, as one XLA program.

    XLA writes the results into the variables' own buffers when nothing else
    holds them, so the update allocates no temporaries.

    Args:
      variable_handle: the variable's resource handle (under a strategy: of
        the copy on the device being updated).
      first_moment_handle: the handle of its float32 `m` variable.
      second_moment_handle: the handle of its float32 `v` variable.
      gradient: the dense gradient, before clipping.
      learning_rate: scalar float32 rate of this step.
      gradient_scale: scalar float32 factor of global-norm clipping.
      variable_dtype: the variable's `tf.DType`.
      **hyperparameters: `beta_1`, `beta_2`, `epsilon`, `weight_decay_rate`
        of `adam_weight_decay_values`.
    """
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    next_param, next_m, next_v = adam_weight_decay_values(
        read_resource(variable_handle, variable_dtype),
        read_resource(first_moment_handle, tf.float32),
        read_resource(second_moment_handle, tf.float32),
        gradient, learning_rate, gradient_scale, **hyperparameters)
    assign_resource(first_moment_handle, next_m)
    assign_resource(second_moment_handle, next_v)
    assign_resource(variable_handle, tf.cast(next_param, variable_dtype))


def global_norm_clip_scale(gradients, clip_norm):
    """The factor `tf.clip_by_global_norm` multiplies every gradient by.

    Asks TensorFlow's own op, by clipping the scalar 1.0 with the gradients'
    global norm: `1.0 * scale` is `scale` exactly, so multiplying a gradient
    by the result equals `tf.clip_by_global_norm(gradients, clip_norm)`
    bit for bit (NaN for a non-finite norm included), without writing a
    clipped copy of every gradient first.

    On the other Keras backends the same arithmetic in `keras.ops` (the
    norm summed in another order: equal to float32 rounding).

    Args:
      gradients: tensors or `IndexedSlices` (`None` entries are ignored);
        an `IndexedSlices` counts its values, as in `tf.linalg.global_norm`.
      clip_norm: the positive norm to clip to.

    Returns:
      A scalar float32 tensor.
    """
    gradients = [gradient for gradient in gradients if gradient is not None]
    if backend.name() == backend.TENSORFLOW:
        import tensorflow as tf  # pylint: disable=import-outside-toplevel
        global_norm = tf.linalg.global_norm(gradients)
        (scale,), _ = tf.clip_by_global_norm(
            [tf.constant(1.0, tf.float32)], clip_norm, use_norm=global_norm)
        return scale
    # The other backends: tf.clip_by_global_norm's arithmetic in keras.ops,
    # `clip * min(1 / norm, 1 / clip)`, NaN for a non-finite norm.
    global_norm = ops.sqrt(ops.sum(ops.stack(
        [ops.sum(ops.square(ops.cast(gradient, "float32")))
         for gradient in gradients])))
    clip = ops.convert_to_tensor(clip_norm, dtype="float32")
    scale = clip * ops.minimum(1.0 / global_norm, 1.0 / clip)
    return scale + (global_norm - global_norm)


@keras.saving.register_keras_serializable(package="bert_tf")
class AdamWeightDecay(keras.optimizers.Optimizer):
    """Google's AdamWeightDecayOptimizer: Adam without bias correction,
    decoupled weight decay scaled by the learning rate, global-norm clipping.

    Use in a custom `tf.distribute` loop: create and `build` the optimizer
    inside `strategy.scope()`, then call `apply_gradients` inside
    `strategy.run` with each replica's gradients of its share of the loss
    (the per-replica mean loss divided by `num_replicas_in_sync`, so that the
    cross-replica SUM is the gradient of the global-batch mean loss). The
    gradients are summed across replicas *first* and then clipped by their
    global norm, so N replicas give the same update as one device with the
    same global batch, and the clipping sees the gradient of the whole batch
    as in Google's single-device (CPU/GPU) run.

    Note: Google's TPU path differs: there `CrossShardOptimizer` sums the
    gradients across cores *after* `tf.clip_by_global_norm` clipped each
    core's gradient of its own mean loss, so the applied gradient is the sum
    of 8 separately clipped gradients. We follow the single-device semantics
    on every strategy (including TPUStrategy), which keeps results
    independent of the number of replicas.

    The step: Keras evaluates the learning-rate schedule at `iterations`
    *before* incrementing it, so update `t` (from 0) uses `lr(t)`, as
    Google's graph, which reads `global_step` for the rate and increments it
    (`global_step.assign(global_step + 1)`, grouped with the update) in the
    same step. With warmup, `lr(0) = 0`: Google's first step only fills the
    moments and leaves the weights unchanged, and so does this optimizer.
    """

    def __init__(self, learning_rate, weight_decay_rate=0.0, beta_1=0.9,
                 beta_2=0.999, epsilon=1e-6,
                 exclude_from_weight_decay=GOOGLE_WEIGHT_DECAY_EXCLUSIONS,
                 clip_norm=1.0, name="AdamWeightDecay", **kwargs):
        """Creates the optimizer (inside the strategy's scope, if any).

        Args:
          learning_rate: a float or a `LearningRateSchedule` (called with
            `iterations`), e.g. `GoogleLearningRateSchedule`.
          weight_decay_rate: the decay coefficient added to the update
            (Google's run_pretraining.py/run_classifier.py use 0.01).
          beta_1: decay of the first moment.
          beta_2: decay of the second moment.
          epsilon: added to `sqrt(v)` (Google's 1e-6, not Adam's 1e-7/1e-8).
          exclude_from_weight_decay: regular expressions; a variable whose
            checkpoint name `re.search`-matches any of them gets no decay.
          clip_norm: the global norm the summed gradients are clipped to, as
            `tf.clip_by_global_norm`; `None` or 0 disables clipping.
          name: the optimizer's name (a prefix of its variables' paths).
          **kwargs: other `keras.optimizers.Optimizer` arguments
            (e.g. `loss_scale_factor`); Keras' weight decay, clipping and
            gradient accumulation are rejected because they would apply a
            second, different mechanism.

        Raises:
          ValueError: an out-of-range hyperparameter, or a rejected Keras
            argument (the message names the replacement).
        """
        for keras_name, replacement in _REPLACED_KERAS_ARGUMENTS.items():
            if kwargs.get(keras_name) is not None:
                raise ValueError(
                    f"{type(self).__name__} does not take Keras' "
                    f"`{keras_name}`; use {replacement}")
            kwargs.pop(keras_name, None)
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        _check_probability("beta_1", beta_1)
        _check_probability("beta_2", beta_2)
        if isinstance(epsilon, bool) or not isinstance(
                epsilon, (int, float)) or epsilon < 0:
            raise ValueError(
                f"epsilon must be a non-negative number, got {epsilon!r}")
        if isinstance(weight_decay_rate, bool) or not isinstance(
                weight_decay_rate, (int, float)) or weight_decay_rate < 0:
            raise ValueError("weight_decay_rate must be a non-negative "
                             f"number, got {weight_decay_rate!r}")
        if clip_norm is not None and (
                isinstance(clip_norm, bool)
                or not isinstance(clip_norm, (int, float)) or clip_norm < 0):
            raise ValueError("clip_norm must be None or a non-negative "
                             f"number, got {clip_norm!r}")
        if isinstance(exclude_from_weight_decay, str):
            raise ValueError(
                "exclude_from_weight_decay must be a list of regular "
                f"expressions, got the string {exclude_from_weight_decay!r}")
        self.weight_decay_rate = float(weight_decay_rate)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = float(epsilon)
        self.exclude_from_weight_decay = tuple(exclude_from_weight_decay or ())
        self.clip_norm = float(clip_norm) if clip_norm else None

    # -- variables ---------------------------------------------------------

    def build(self, var_list):
        """Creates the float32 moments `m` and `v` of every variable.

        Must run inside the strategy's scope (the moments are mirrored like
        the variables). Idempotent.

        Args:
          var_list: the trainable variables the optimizer will update.
        """
        if self.built:
            return
        super().build(var_list)
        self._first_moments = []
        self._second_moments = []
        self._variable_names = []
        self._uses_weight_decay = []
        for variable in var_list:
            variable_name = google_variable_name(variable)
            self._variable_names.append(variable_name)
            self._uses_weight_decay.append(
                self._do_use_weight_decay(variable_name))
            self._first_moments.append(
                self._add_moment(variable, variable_name, "adam_m"))
            self._second_moments.append(
                self._add_moment(variable, variable_name, "adam_v"))

    def _add_moment(self, variable, variable_name, slot_name):
        """A zero float32 slot shaped like `variable`, placed with it.

        Google's slots are float32 whatever the training precision, so they
        are created float32 here rather than in the variable's dtype.
        """
        # Keras forbids "/" in variable names; the Google name of the slot
        # is given by `optimizer_slot_variables`, not by this name.
        add_moment = functools.partial(
            self.add_variable, shape=variable.shape, initializer="zeros",
            dtype="float32",
            name=f"{variable_name.replace('/', '_')}_{slot_name}")
        if backend.name() != backend.TENSORFLOW:
            return add_moment()
        colocate_with = (variable.value if isinstance(variable, keras.Variable)
                         else variable)
        with self._distribution_strategy.extended.colocate_vars_with(
                colocate_with):
            return add_moment()

    def _do_use_weight_decay(self, variable_name):
        """Google's rule: decay unless the rate is 0 or the name matches."""
        if not self.weight_decay_rate:
            return False
        return not any(re.search(pattern, variable_name) is not None
                       for pattern in self.exclude_from_weight_decay)

    def slot_variables(self):
        """`(google_name, m, v)` for every variable the optimizer updates.

        Returns:
          A list of triples, in the order of `build`'s `var_list`.

        Raises:
          ValueError: the optimizer has not been built.
        """
        if not self.built:
            raise ValueError(
                f"optimizer {self.name} has no slot variables yet: call "
                "optimizer.build(model.trainable_variables) (inside "
                "strategy.scope()) first")
        return list(zip(self._variable_names, self._first_moments,
                        self._second_moments))

    # -- the update --------------------------------------------------------

    def _backend_update_step(self, grads, trainable_variables, learning_rate):
        """Sums the gradients across replicas, clips them, then updates.

        Keras' TF backend clips (`global_clipnorm`) each replica's gradients
        before it sums them; Google clips the gradient of the whole batch.
        So the sum comes first here and the clipping factor of
        `tf.clip_by_global_norm` (Google's op, exactly) is computed from the
        summed gradients; each variable's update applies it inside its fused
        program. Outside a replica context (cross-replica `apply`), the
        gradients are taken as already summed.

        On the other Keras backends (one device, no replicas), the same
        clipping and update in `keras.ops`, assigned through `self.assign`,
        so `stateless_apply` and a `jax.jit`ted step work as with Keras'
        own optimizers.
        """
        if backend.name() != backend.TENSORFLOW:
            self._keras_ops_update_step(grads, trainable_variables,
                                        learning_rate)
            return
        import tensorflow as tf  # pylint: disable=import-outside-toplevel
        tf_variables = [
            variable.value if isinstance(variable, keras.Variable)
            else variable for variable in trainable_variables]
        grads_and_vars = self._all_reduce_sum_gradients(
            list(zip(grads, tf_variables)))
        grads = [grad for grad, _ in grads_and_vars]
        gradient_scale = (global_norm_clip_scale(grads, self.clip_norm)
                          if self.clip_norm else tf.constant(1.0, tf.float32))
        tf.__internal__.distribute.interim.maybe_merge_call(
            self._distributed_tf_update_step, self._distribution_strategy,
            list(zip(grads, tf_variables)), learning_rate, gradient_scale)

    def _keras_ops_update_step(self, grads, trainable_variables,
                               learning_rate):
        """Clips and updates every variable with `keras.ops` (not TF)."""
        gradient_scale = (global_norm_clip_scale(grads, self.clip_norm)
                          if self.clip_norm else 1.0)
        learning_rate = ops.cast(learning_rate, "float32")
        for grad, variable in zip(grads, trainable_variables):
            index = self._get_variable_index(variable)
            first_moment = self._first_moments[index]
            second_moment = self._second_moments[index]
            next_param, next_m, next_v = self._new_values(
                index, variable, first_moment, second_moment, grad,
                learning_rate, gradient_scale)
            self.assign(first_moment, next_m)
            self.assign(second_moment, next_v)
            self.assign(variable, ops.cast(next_param, variable.dtype))

    def _new_values(self, index, param, first_moment, second_moment,
                    gradient, learning_rate, gradient_scale):
        """One variable's new `(param, m, v)`, in `keras.ops` (the update
        of the backends without TensorFlow's fused program).

        Subclasses replace the arithmetic (LAMB), as `_fused_update` on
        TensorFlow.

        Args:
          index: the variable's position in `build`'s `var_list`.
          param: its current value.
          first_moment: its `m`.
          second_moment: its `v`.
          gradient: its gradient, before clipping.
          learning_rate: scalar float32 rate.
          gradient_scale: scalar float32 clipping factor.

        Returns:
          `(param, m, v)`: the new float32 values.
        """
        return adam_weight_decay_values(
            param, first_moment, second_moment, gradient, learning_rate,
            gradient_scale, beta_1=self.beta_1, beta_2=self.beta_2,
            epsilon=self.epsilon,
            weight_decay_rate=(self.weight_decay_rate
                               if self._uses_weight_decay[index] else 0.0))

    def _distributed_tf_update_step(self, distribution, grads_and_vars,
                                    learning_rate, gradient_scale=None):
        """Updates every variable on every device that holds a copy.

        Args:
          distribution: the strategy (Keras' merge-call convention).
          grads_and_vars: `(summed gradient, tf.Variable)` pairs.
          learning_rate: the rate at the current `iterations`.
          gradient_scale: the clipping factor (per replica), or `None` for
            gradients that are already clipped.
        """
        def update_copy(var, grad, learning_rate, gradient_scale):
            # `extended.update` passes the variable (copy) first.
            return self.update_step(grad, var, learning_rate, gradient_scale)

        for grad, var in grads_and_vars:
            distribution.extended.update(
                var, update_copy,
                args=(grad, learning_rate, gradient_scale), group=False)

    def update_step(self, gradient, variable, learning_rate,
                    gradient_scale=None):
        """One update of `variable` and its moments, fused and in place.

        Args:
          gradient: the summed gradient of `variable` (a tensor or
            `IndexedSlices`), clipped unless `gradient_scale` is given.
          variable: the variable (a replica's copy under a strategy).
          learning_rate: the rate at the current `iterations`.
          gradient_scale: the factor of global-norm clipping still to apply
            to `gradient`, or `None`.
        """
        import tensorflow as tf  # pylint: disable=import-outside-toplevel
        index = self._get_variable_index(variable)
        if gradient_scale is None:
            gradient_scale = tf.constant(1.0, tf.float32)
        gradient_scale = tf.cast(gradient_scale, tf.float32)
        if isinstance(gradient, tf.IndexedSlices):
            # tf.clip_by_global_norm scales an IndexedSlices' values and
            # Google's `tf.multiply` then densifies it (summing repeated
            # rows): the same order here, so the compiled program gets a
            # dense gradient that needs no more scaling.
            gradient = tf.convert_to_tensor(tf.IndexedSlices(
                tf.cast(gradient.values, tf.float32) * gradient_scale,
                gradient.indices, gradient.dense_shape))
            gradient_scale = tf.constant(1.0, tf.float32)
        if isinstance(variable, keras.Variable):
            variable = variable.value
        # The moments' `.value` is the distributed variable under a
        # strategy; inside `extended.update` its handle is that of the copy
        # on the device being updated, as for Keras' own `assign`.
        self._fused_update(
            index, variable, self._first_moments[index].value.handle,
            self._second_moments[index].value.handle, gradient,
            tf.cast(learning_rate, tf.float32), gradient_scale)

    def _fused_update(self, index, variable, first_moment_handle,
                      second_moment_handle, gradient, learning_rate,
                      gradient_scale):
        """Updates variable `index` and its moments in place.

        Subclasses replace the arithmetic (LAMB); `update_step` prepares
        the arguments.

        Args:
          index: the variable's position in `build`'s `var_list`.
          variable: the `tf.Variable` (copy) to update.
          first_moment_handle: the resource handle of its `m`.
          second_moment_handle: the resource handle of its `v`.
          gradient: its dense gradient.
          learning_rate: scalar float32 rate.
          gradient_scale: scalar float32 clipping factor.
        """
        fused_adam_weight_decay_update(
            variable.handle, first_moment_handle, second_moment_handle,
            gradient, learning_rate, gradient_scale,
            variable_dtype=variable.dtype, beta_1=self.beta_1,
            beta_2=self.beta_2,
            epsilon=self.epsilon,
            weight_decay_rate=(self.weight_decay_rate
                               if self._uses_weight_decay[index] else 0.0))

    def get_config(self):
        """The constructor arguments, for Keras serialization."""
        config = super().get_config()
        for keras_name in _REPLACED_KERAS_ARGUMENTS:
            config.pop(keras_name, None)
        config.update({
            "weight_decay_rate": self.weight_decay_rate,
            "beta_1": self.beta_1,
            "beta_2": self.beta_2,
            "epsilon": self.epsilon,
            "exclude_from_weight_decay": list(self.exclude_from_weight_decay),
            "clip_norm": self.clip_norm,
        })
        return config
