"""The JAX engine: the steps of `Trainer` as `jax.jit`-compiled functions.

On TensorFlow the trainer's steps are `tf.function`s under a `tf.distribute`
strategy that update `tf.Variable`s in place. On the JAX backend
(`KERAS_BACKEND=jax`) a step is a pure function of the variables' values,
compiled once with `jax.jit`:

    (trainable, other model values, optimizer values, dropout seed state),
    features  ->  the new values, the loss, the task's metric sums

The Keras variables stay the truth between calls: `JaxSteps.train_steps`
reads them, runs its steps on the values and writes them back, so the
trainer's checkpoints (Google's names and layout, `bert_tf.checkpoints`),
evaluation and prediction see the trained weights. The training step is
given its state as donated (`donate_argnums`): the new values are written
into the memory of the ones they replace, so a device holds the weights
and the optimizer's slots once. The host reads each step's loss and
metric sums one step behind, once the next step is queued
(`JaxSteps.train_steps`), so the device does not wait for the host
between the steps of a call.

What a step does is the TensorFlow step's contract (`bert_tf.tasks.base`):
the task's loss denominators of the whole batch; gradients summed over
`num_accumulation_steps` micro-batches; the optimizer's global-norm clipping
and update (`AdamWeightDecay`'s `keras.ops` path). A variable the loss does
not depend on (the pooler under SQuAD or tagging) gets no update, as
Google's optimizer skips a `None` gradient -- a zero gradient would still
decay its weights -- found once from the step's jaxpr.

What differs from TensorFlow: one device, or with `mirrored` every local
device, with `multi_worker_mirrored` the devices of every process of a
`jax.distributed` job, under a `keras.distribution` mesh (no
`tf.distribute`; see `JaxEngine`); the input is the task's `tf.data`
pipeline read as numpy; every batch runs at the
records' full length (cutting batches to their real length would compile a
program per length); dropout masks come from a `keras.random.SeedGenerator`
whose state is part of the step's state (and of a seeded run's
checkpoints).

TensorFlow is imported only where a `tf.distribute` strategy or a `tf.data`
input is handed in: the engine, built without a strategy and fed batches
of arrays, runs where TensorFlow is not installed (the GPU benchmark,
`benchmarks/gpu_suite_jax.py`, times its training step so).
"""

import contextlib
import math
import zlib

import jax
import jax.extend.core
import jax.numpy as jnp
import keras
from keras import ops
import numpy as np

from bert_tf import backend
from bert_tf.modeling import layers as modeling_layers
from bert_tf.training import distribution
from bert_tf.training.engines import base

# A dropout `keras.random.SeedGenerator`'s state, saved with each checkpoint
# of a seeded run: another shape than TensorFlow's generator's, so another
# name than `tensorflow_engine.DROPOUT_RANDOM_STATE`.
KERAS_DROPOUT_SEED_STATE = "training/keras_dropout_seed_state"


def _used_inputs(closed_jaxpr):
    """Which inputs of a jaxpr its outputs depend on (a list of bools).

    Walks the equations backwards from the outputs; an equation with a
    sub-program (a `jit`, a `cond`) counts all its inputs as used, which
    errs on the side of updating.
    """
    jaxpr = closed_jaxpr.jaxpr
    variable_type = jax.extend.core.Var
    needed = {id(v) for v in jaxpr.outvars if isinstance(v, variable_type)}
    for equation in reversed(jaxpr.eqns):
        if any(id(v) in needed for v in equation.outvars):
            needed.update(id(v) for v in equation.invars
                          if isinstance(v, variable_type))
    return [id(v) in needed for v in jaxpr.invars]


def _values(variables):
    return [variable.value for variable in variables]


def _assign(variables, values):
    for variable, value in zip(variables, values):
        variable.assign(value)


def _split(features, num_pieces):
    """`features` cut along the batch into `num_pieces` equal parts."""
    size = next(iter(features.values())).shape[0] // num_pieces
    return [{key: value[index * size:(index + 1) * size]
             for key, value in features.items()}
            for index in range(num_pieces)]


def _float32(value):
    return ops.cast(value, "float32")


class JaxSteps:
    """The jitted steps of one `Trainer` (model, task, optimizer)."""

    def __init__(self, task, model, trainable_variables, optimizer=None,
                 seed_generator=None, num_micro_batches=1,
                 output_sharding=None):
        """Builds nothing yet: each step compiles on its first call.

        Args:
          task: the trainer's `Task`.
          model: its built model.
          trainable_variables: the variables the optimizer updates.
          optimizer: the built `AdamWeightDecay`, or None (no training).
          seed_generator: the `keras.random.SeedGenerator` dropout draws
            from (training only).
          num_micro_batches: micro-batches per step, their gradients summed.
          output_sharding: where the evaluation and prediction steps'
            outputs go (a `jax.sharding.Sharding`), or None to leave it to
            XLA. Over several processes, replicated: each process then
            holds all of every output (the loss, every example's
            prediction) and reads it without talking to the others. The
            training step's new values go where the variables live
            (replicated over a mesh; `_train_output_shardings`).
        """
        self.task = task
        self.model = model
        self.trainable = list(trainable_variables)
        trainable_ids = {id(v) for v in self.trainable}
        # Non-trainable weights and trainable ones the task freezes.
        self.others = [v for v in model.variables
                       if id(v) not in trainable_ids]
        self.optimizer = optimizer
        self.seed_generator = seed_generator
        self.num_micro_batches = num_micro_batches
        self.metric_names = tuple(task.metric_names)
        self.output_sharding = output_sharding
        self._train_step = None
        # A batch taken from an iterator but not trained on, and the
        # iterator (`train_steps`).
        self._held_back = None
        self._no_previous_step = None
        self._used = None
        self._eval_step = None
        self._predict_steps = {}

    # -- training ------------------------------------------------------------

    def _loss_and_updates(self, trainable_values, other_values, seed_state,
                          features, denominators):
        """The loss of one (micro-)batch, with the metric sums and the
        model's other values and dropout state after it."""
        seed_variable = self.seed_generator.state
        mapping = (list(zip(self.trainable, trainable_values))
                   + list(zip(self.others, other_values))
                   + [(seed_variable, seed_state)])
        with keras.StatelessScope(state_mapping=mapping) as scope:
            with modeling_layers.random_generator_scope(self.seed_generator):
                outputs = self.task.forward(self.model, features,
                                            training=True)
            loss, metrics = self.task.compute_loss(features, outputs,
                                                   denominators)
            other_values = [scope.get_current_value(v) for v in self.others]
            seed_state = scope.get_current_value(seed_variable)
        metrics = {name: _float32(metrics[name]) for name in self.metric_names}
        return _float32(loss), (metrics, other_values, seed_state)

    def _gradients(self, trainable_values, other_values, seed_state,
                   features, denominators):
        """Loss, metric sums and gradients, summed over micro-batches."""
        gradient_fn = jax.value_and_grad(self._loss_and_updates,
                                         has_aux=True)
        grads, loss = None, 0.0
        metrics = {name: 0.0 for name in self.metric_names}
        for piece in _split(features, self.num_micro_batches):
            (piece_loss, (piece_metrics, other_values, seed_state)), \
                piece_grads = gradient_fn(trainable_values, other_values,
                                          seed_state, piece, denominators)
            grads = piece_grads if grads is None else [
                total + grad for total, grad in zip(grads, piece_grads)]
            loss = loss + piece_loss
            metrics = {name: metrics[name] + piece_metrics[name]
                       for name in self.metric_names}
        return grads, loss, metrics, other_values, seed_state

    def _denominators(self, features):
        return {key: _float32(value) for key, value
                in self.task.loss_denominators(features).items()}

    def _find_used_variables(self, state, features):
        """Which trainable variables the loss depends on (once)."""
        trainable_values, other_values, _, seed_state = state

        def loss_only(values):
            return self._loss_and_updates(
                values, other_values, seed_state, features,
                self._denominators(features))[0]

        used = _used_inputs(jax.make_jaxpr(loss_only)(trainable_values))
        unused = [v.path for v, is_used in zip(self.trainable, used)
                  if not is_used]
        if unused:
            from absl import logging  # pylint: disable=import-outside-toplevel
            logging.info("The loss does not depend on %d variables (%s); "
                         "they get no update, as in Google's optimizer.",
                         len(unused), ", ".join(unused[:4])
                         + (", ..." if len(unused) > 4 else ""))
        return used

    def _build_train_step(self, used, state):
        optimizer = self.optimizer
        trainable = self.trainable
        metric_names = self.metric_names

        def train_step(state, features, previous_scalars):
            trainable_values, other_values, optimizer_values, seed_state = (
                state)
            denominators = self._denominators(features)
            grads, loss, metrics, other_values, seed_state = self._gradients(
                trainable_values, other_values, seed_state, features,
                denominators)
            mapping = (list(zip(trainable, trainable_values))
                       + list(zip(optimizer.variables, optimizer_values)))
            with keras.StatelessScope(state_mapping=mapping) as scope:
                optimizer.apply(
                    [g for g, is_used in zip(grads, used) if is_used],
                    [v for v, is_used in zip(trainable, used) if is_used])
                trainable_values = [scope.get_current_value(v)
                                    for v in trainable]
                optimizer_values = [scope.get_current_value(v)
                                    for v in optimizer.variables]
            new_state = (trainable_values, other_values, optimizer_values,
                         seed_state)
            # `train_steps` reads a step's loss only after it has started
            # the next step. A step that follows a non-finite loss is not
            # taken: it gives back the state it was given (which it cannot
            # leave to the caller, having been handed it as donated), so
            # the call ends with the non-finite step's state. One select
            # per value, which XLA fuses into the update that writes it.
            keep = jnp.isfinite(previous_scalars[0])
            new_state = jax.tree.map(
                lambda new, old: jnp.where(keep, new, old), new_state, state)
            # The loss and the metric sums in one array: one transfer to
            # the host per step.
            scalars = jnp.stack(
                [loss] + [metrics[name] for name in metric_names])
            return new_state, scalars

        # The state is donated: XLA writes the new values into the buffers
        # of the ones they replace, so a device holds the weights and the
        # optimizer's slots once, not twice. The arrays passed in are
        # deleted by the call; `train_steps` keeps only the returned ones
        # and writes them to the variables (`_write_state`).
        shardings = self._train_output_shardings(state)
        step = jax.jit(train_step, donate_argnums=(0,),
                       out_shardings=shardings)
        # What a call's first step is given as its predecessor's scalars:
        # a finite loss, where the step's own scalars live (so that every
        # step of a call runs the same compiled program).
        zeros = np.zeros([1 + len(metric_names)], np.float32)
        if shardings is None:
            self._no_previous_step = jnp.asarray(zeros)
        else:
            self._no_previous_step = jax.make_array_from_callback(
                zeros.shape, shardings[1], lambda index: zeros[index])
        return step

    def _train_output_shardings(self, state):
        """Where the training step puts its outputs: on a device mesh,
        each new value where the variable it replaces lives (the layout
        Keras gave it: replicated), the loss and metric sums replicated;
        None (XLA's choice) on one device.

        The same shardings in as out: a donated buffer is reused only by
        an output of its sharding, and the first step of a call (the
        variables' values) and the next ones (the previous step's outputs)
        then run one compiled program.
        """
        seed_state = state[-1]  # any value: all live on the same devices
        if not isinstance(seed_state.sharding, jax.sharding.NamedSharding):
            return None
        replicated = jax.sharding.NamedSharding(
            seed_state.sharding.mesh, jax.sharding.PartitionSpec())
        return (jax.tree.map(lambda value: value.sharding, state),
                replicated)

    def _jit(self, function):
        """`function` jit-compiled, its outputs at `output_sharding`."""
        if self.output_sharding is None:
            return jax.jit(function)
        return jax.jit(function, out_shardings=self.output_sharding)

    def _read_state(self):
        return (_values(self.trainable), _values(self.others),
                _values(self.optimizer.variables),
                self.seed_generator.state.value)

    def _write_state(self, state):
        trainable_values, other_values, optimizer_values, seed_state = state
        _assign(self.trainable, trainable_values)
        _assign(self.others, other_values)
        _assign(self.optimizer.variables, optimizer_values)
        self.seed_generator.state.assign(seed_state)

    def train_steps(self, iterator, num_steps, stop_requested):
        """Runs up to `num_steps` steps (the TensorFlow loop's contract).

        Args:
          iterator: yields the training batches, dicts of numpy arrays.
          num_steps: steps to run.
          stop_requested: called before each step; True ends the call.

        Returns:
          `(totals, steps_run, last_loss)` as `Trainer.train_steps`: the
          call returns early after a step whose loss is not finite.

        The host never waits for a step before it has started the next
        one: it reads step k's loss and metric sums (to add them up and to
        see whether the loss is finite) once step k + 1 is queued behind
        it, so the device goes from step to step without idling while the
        host fetches the next batch. What a caller sees is what reading
        each step's loss before starting the next gives: after a step
        whose loss is not finite the call ends with that step's state and
        `steps_run`, because the step queued behind it is not taken (it
        sees its predecessor's loss on the device and gives back the state
        unchanged, dropout generator and step count included) and is not
        counted; its batch, already taken from `iterator`, is given to the
        next call on the same iterator first. The one difference:
        `stop_requested` may be asked once after a step whose loss turns
        out not to be finite.

        The steps take the variables' values and give back new ones in the
        same device memory (the state is donated): during the call the
        variables' old arrays are gone, and at its end (or on an error
        between steps) the variables get the last step's values. A step
        that fails on the device after its inputs were donated leaves the
        variables without values; the run has failed then anyway.
        """
        names = ("loss",) + self.metric_names
        totals = {name: 0.0 for name in names}
        steps_run, last_loss = 0, 0.0

        def count(scalars):
            """Adds a step's scalars (waiting for the step to end); returns
            whether its loss is finite."""
            nonlocal steps_run, last_loss
            values = jax.device_get(scalars)
            for name, value in zip(names, values):
                totals[name] += float(value)
            last_loss = float(values[0])
            steps_run += 1
            return math.isfinite(last_loss)

        state = self._read_state()
        # The scalars of the step started last, not yet read.
        unread = None
        try:
            while (steps_run + (unread is not None) < num_steps
                   and not stop_requested()):
                try:
                    features = self._next_batch(iterator)
                except StopIteration:
                    # The input ended; a non-finite loss just before would
                    # have ended the call without asking for more.
                    if unread is not None and not count(unread):
                        unread = None
                        break
                    raise
                if self._train_step is None:
                    self._used = self._find_used_variables(state, features)
                    self._train_step = self._build_train_step(self._used,
                                                              state)
                state, scalars = self._train_step(
                    state, features,
                    self._no_previous_step if unread is None else unread)
                if unread is not None and not count(unread):
                    # The step just started is not taken (see above).
                    self._held_back = (iterator, features)
                    unread = None
                    break
                unread = scalars
            if unread is not None:
                count(unread)
        finally:
            self._write_state(state)
        return totals, steps_run, last_loss

    def _next_batch(self, iterator):
        """The next batch of `iterator`: first the one a call that ended at
        a non-finite loss took but did not train on."""
        held_back, self._held_back = self._held_back, None
        if held_back is not None and held_back[0] is iterator:
            return held_back[1]
        return next(iterator)

    # -- evaluation and prediction -------------------------------------------

    def _model_mapping(self, values):
        return list(zip(self.model.variables, values))

    def eval_step(self, features, prediction_outputs):
        """Loss and metric sums of one evaluation batch, and what the task
        keeps of its outputs (`prediction_outputs(features, outputs)`).

        Returns:
          `(sums, kept)`: dicts of arrays.
        """
        if self._eval_step is None:
            def eval_step(values, features):
                with keras.StatelessScope(
                        state_mapping=self._model_mapping(values)):
                    denominators = self._denominators(features)
                    outputs = self.task.forward(self.model, features,
                                                training=False)
                    loss, metrics = self.task.compute_loss(
                        features, outputs, denominators)
                    sums = {"loss": _float32(loss)}
                    sums.update({name: _float32(metrics[name])
                                 for name in self.metric_names})
                    return sums, prediction_outputs(features, outputs)

            self._eval_step = self._jit(eval_step)
        return self._eval_step(_values(self.model.variables), features)

    def predict_step(self, predict_fn):
        """`predict_fn(features)` (the model's outputs to keep) as a jitted
        function of a batch, on the model's current values."""
        step = self._predict_steps.get(predict_fn)
        if step is None:
            def run(values, features):
                with keras.StatelessScope(
                        state_mapping=self._model_mapping(values)):
                    return predict_fn(features)

            step = self._jit(run)
            self._predict_steps[predict_fn] = step
        return lambda features: step(_values(self.model.variables), features)


def _asks_for_every_local_device(strategy):
    """Whether `strategy` is `--distribution_strategy=mirrored`'s."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    return (isinstance(strategy, tf.distribute.MirroredStrategy)
            and not isinstance(
                strategy, tf.distribute.MultiWorkerMirroredStrategy))


class JaxEngine(base.Engine):
    """The steps of `Trainer` on JAX; see `base.Engine`.

    With the default strategy the steps run on one device. With
    `--distribution_strategy=mirrored` (a `tf.distribute.MirroredStrategy`)
    they run data parallel over every local device
    (`bert_tf.backend.devices()`): the variables are replicated over a
    `keras.distribution.DataParallel` mesh, each global batch is split
    along the batch over the devices, and `jax.jit` partitions the step
    (the gradients are summed over devices by XLA). The input is still one
    pipeline, the step the same function of the global batch, so the
    numbers are the one-device run's up to the order of the sums.

    With `multi_worker_mirrored` (a `distribution.JaxProcesses`: the
    processes of a `jax.distributed` job) the mesh holds the devices of
    every process, and so does each step; each process feeds its own
    devices. Every process reads the whole input, as a one-process run
    reads it, and keeps its devices' rows of each global batch: a global
    batch holds the examples the one-process run's holds, and the run is
    that run, step for step (the processes check on the first batch that
    they read the same input). Each step's outputs are replicated, so every
    process holds the trained weights; the chief writes them.

    Without a strategy (`strategy=None`) the engine runs on one device and
    imports no TensorFlow: `train_steps` then takes an iterator of feature
    dicts of arrays (numpy or JAX), as `JaxSteps.train_steps` does.
    """

    # Without x64, JAX counts in int32.
    step_dtype = "int32"

    def __init__(self, task, config, strategy=None):
        super().__init__(task, config, strategy)
        processes = isinstance(strategy, distribution.JaxProcesses)
        data_parallel = processes
        strategy_is_default = True
        if strategy is not None and not processes:
            import tensorflow as tf  # pylint: disable=import-outside-toplevel
            data_parallel = _asks_for_every_local_device(strategy)
            strategy_is_default = (
                strategy is tf.distribute.get_strategy() or data_parallel)
        problem = unsupported_settings(config, strategy_is_default)
        if problem:
            raise ValueError(problem)
        self._steps = None
        # The device mesh of a data parallel run; None on one device.
        self._distribution = None
        self._num_processes = strategy.num_processes if processes else 1
        # Whether the processes have compared their first training batch.
        self._input_checked = self._num_processes == 1
        # Workers run the same steps in every call and stop together.
        self.one_process = self._num_processes == 1
        if data_parallel:
            # Every process's devices (in a jax.distributed job).
            self._distribution = keras.distribution.DataParallel(
                devices=backend.devices())
            # The TensorFlow strategy's replicas are TensorFlow's devices;
            # the batch is split over JAX's.
            self.num_replicas = len(backend.devices())

    def scope(self):
        # Variables created here are replicated over the mesh.
        if self._distribution is None:
            return contextlib.nullcontext()
        return self._distribution.scope()

    def _sharding(self, spec):
        return jax.sharding.NamedSharding(
            self._distribution.device_mesh.backend_mesh, spec)

    def _place(self, features):
        """`features` (numpy, the whole batch) on the mesh: split along the
        batch when it splits evenly over the devices, else (a last partial
        evaluation or prediction batch) replicated. Each process puts its
        own devices' part there."""
        if self._distribution is None:
            return features
        size = next(iter(features.values())).shape[0]
        if size % self.num_replicas:
            spec = jax.sharding.PartitionSpec()
        else:
            spec = jax.sharding.PartitionSpec(
                self._distribution.batch_dim_name)
        sharding = self._sharding(spec)
        return {key: jax.make_array_from_callback(
            value.shape, sharding, lambda index, value=value: value[index])
            for key, value in features.items()}

    def _dropout_generator(self, seed):
        # Every jitted step needs a generator to draw from.
        return keras.random.SeedGenerator(seed)

    def build(self, optimizer_factory=None):
        super().build(optimizer_factory)
        output_sharding = None
        if self._num_processes > 1:
            output_sharding = self._sharding(jax.sharding.PartitionSpec())
        self._steps = JaxSteps(
            self.task, self.model, self.trainable_variables, self.optimizer,
            self.dropout_generator, self.config.num_accumulation_steps,
            output_sharding)

    # -- state in/out ------------------------------------------------------

    def random_state(self):
        # Unseeded, the state is a random start: not worth keeping.
        if self.dropout_generator is None or self.config.seed is None:
            return {}
        return {KERAS_DROPOUT_SEED_STATE: self.dropout_generator.state}

    def checkpoint_values(self, tensors):
        if "global_step" in tensors:
            # JAX counts in int32 (without x64); Google's step is int64.
            tensors = dict(tensors)
            tensors["global_step"] = np.asarray(tensors["global_step"],
                                                np.int64)
        return tensors

    # -- the steps ---------------------------------------------------------

    def check_same_start(self, global_step):
        if self._num_processes == 1:
            return
        from jax.experimental import multihost_utils
        try:
            multihost_utils.assert_equal(np.int64(global_step))
        except AssertionError:
            raise ValueError(
                "--distribution_strategy=multi_worker_mirrored: the "
                f"processes found different checkpoints (this one of step "
                f"{global_step}) in their --output_dir: give every process "
                "the same --output_dir, a directory they share") from None

    def train_iterator(self, dataset_fn):
        # One pipeline, read as numpy. Over several devices it yields one
        # replica's batch per device and step (and a resumed run skips as
        # many): concatenated, they are the global batch, the examples the
        # one-device run's global batch holds, in its order.
        import tensorflow as tf  # pylint: disable=import-outside-toplevel
        replicas = self.num_replicas
        batches = dataset_fn(tf.distribute.InputContext(
            num_replicas_in_sync=replicas)).as_numpy_iterator()
        if replicas == 1:
            return batches
        return self._global_batches(batches, replicas)

    def _global_batches(self, batches, replicas):
        while True:
            pieces = []
            for _ in range(replicas):
                try:
                    pieces.append(next(batches))
                except StopIteration:
                    return
            features = {key: np.concatenate([piece[key] for piece in pieces])
                        for key in pieces[0]}
            if not self._input_checked:
                _check_same_input(features)
                self._input_checked = True
            yield self._place(features)

    def train_steps(self, iterator, num_steps, stop_request):
        return self._steps.train_steps(iterator, num_steps,
                                       lambda: stop_request.requested)

    def eval_input(self, dataset_fn, per_replica_batch_size):
        import tensorflow as tf  # pylint: disable=import-outside-toplevel
        # The global batch; the step sums over it (nothing to gather).
        return dataset_fn(per_replica_batch_size * self.num_replicas,
                          tf.distribute.InputContext()).as_numpy_iterator()

    def eval_step(self, features, keep):
        return self._steps.eval_step(self._place(features), keep)

    def predict(self, predict_batch, examples, global_batch_size,
                pad_to_full_batches=False, num_examples=None,
                description="records"):
        # Full length, one compiled program; a partial batch runs
        # replicated, so nothing is padded.
        # pylint: disable-next=import-outside-toplevel
        from bert_tf.training import prediction
        del pad_to_full_batches
        step = self._steps.predict_step(predict_batch)
        return prediction.predict_one_device(
            lambda features: step(self._place(features)), examples,
            global_batch_size, num_examples=num_examples,
            description=description)

    def compilation_in_words(self):
        if self._distribution is None or self.num_replicas == 1:
            return "JAX (the whole step jit-compiled, one device)"
        processes = (f" of {self._num_processes} processes"
                     if self._num_processes > 1 else "")
        return (f"JAX (the whole step jit-compiled, data parallel over "
                f"{self.num_replicas} devices{processes})")


def _check_same_input(features):
    """Fails unless every process of the job holds the same global batch.

    Each process puts only its own devices' rows of the batch on the mesh;
    processes that read their input in different orders (an unseeded
    shuffle that drew differently) would train on a mixture of batches.

    Raises:
      ValueError: the processes' batches differ.
    """
    from jax.experimental import multihost_utils
    checksum = 0
    for key in sorted(features):
        checksum = zlib.crc32(np.ascontiguousarray(features[key]).tobytes(),
                              checksum)
    try:
        multihost_utils.assert_equal(np.uint32(checksum))
    except AssertionError:
        raise ValueError(
            "--distribution_strategy=multi_worker_mirrored: the processes "
            "read different training batches (their first global batch "
            "differs): give every process the same data and flags") from None


def unsupported_settings(config, strategy_is_default):
    """What a `TrainerConfig` asks that the JAX engine cannot do, in words.

    Args:
      config: a `TrainerConfig`.
      strategy_is_default: whether the run's strategy is one the engine
        runs: TensorFlow's default (one device), `mirrored`'s (every
        local device) or `multi_worker_mirrored`'s (`JaxProcesses`).

    Returns:
      A message naming the first such setting, or None.
    """
    if not strategy_is_default:
        return ("--distribution_strategy: on KERAS_BACKEND=jax a run uses "
                "one device (default), every local device (mirrored) or "
                "the devices of every process (multi_worker_mirrored)")
    if config.dtype not in ("float32", "mixed_bfloat16"):
        return (f"--dtype={config.dtype}: on KERAS_BACKEND=jax training "
                "runs in float32 or mixed_bfloat16 (float16 needs the "
                "TensorFlow backend's loss scaling)")
    return None
