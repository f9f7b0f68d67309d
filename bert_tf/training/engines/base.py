"""The interface between `Trainer` and a backend: what an engine does.

`bert_tf.training.trainer.Trainer` keeps the loop (when to call a step,
progress, logs, summaries, checkpoints, signals); everything that runs on
the device goes through one `Engine` per Keras backend:

- **set-up**: `build` makes the task's model, the optimizer (Google's
  `AdamWeightDecay` or LAMB, loss scaling where the dtype needs it) and the
  dropout random generator, on the engine's devices;
- **state in/out**: `optimizer_state`, `optional_state` and
  `checkpoint_values` say what a checkpoint holds besides the model
  (optimizer slots, `global_step`, loss scale, dropout generator) under
  Google's names; `step_variable` is the step of an evaluation-only run;
- **the steps**: `train_iterator` and `train_steps` (micro-batches with
  summed gradients, global-norm clipping and the update, several steps per
  call), `eval_input` and `eval_step` (summed loss and metrics, the task's
  kept outputs), `predict` (the task's outputs of every example, in input
  order);
- **description**: `compilation_in_words` for the trainer's
  "Training ... from step ..." line.

`bert_tf.training.engines.create` picks the engine of `bert_tf.backend`.
"""

import abc
import contextlib

import keras

from bert_tf.modeling import transformer
from bert_tf.training import distribution
from bert_tf.training import optimization
from bert_tf.training import precision


class Engine(abc.ABC):
    """What runs on the device for one `Trainer`; see the module docstring.

    Class attribute:
      step_dtype: the dtype the optimizer counts steps in.

    Attributes (set by the constructor):
      task: the trainer's `Task`.
      config: its `TrainerConfig`.
      strategy: the `tf.distribute.Strategy`, on JAX a
        `distribution.JaxProcesses`, or None (an engine of one device
        without `tf.distribute`: the JAX engine outside a `Trainer`).
      num_replicas: model replicas a global batch is split over.
      is_chief: whether this process writes checkpoints and files.
      one_process: whether one process runs the whole step, so that a call
        may be sized by the clock and stopped by SIGTERM (workers must run
        the same steps in every call and stop together).
      length_policy: the `sequence_lengths.LengthPolicy` batches run at.

    Attributes (set by `build`):
      model, trainable_variables, optimizer (None: evaluation and
      prediction only), dropout_generator (None: dropout draws from the
      backend's stateful op), per_replica_train_batch_size (None without an
      optimizer).
    """

    step_dtype = "int64"

    def __init__(self, task, config, strategy):
        """Args:
          task: a `bert_tf.tasks.base.Task`.
          config: a validated `TrainerConfig`.
          strategy: the `tf.distribute.Strategy` to run under (on JAX, or
            a `distribution.JaxProcesses`); None: one device, one process.

        Raises:
          ValueError: a setting this backend cannot run, named as its flag.
        """
        self.task = task
        self.config = config
        self.strategy = strategy
        if strategy is None:
            self.num_replicas, self.is_chief = 1, True
        else:
            self.num_replicas = strategy.num_replicas_in_sync
            self.is_chief = distribution.is_chief(strategy)
        self.one_process = True
        self.length_policy = config.length_policy()
        self.model = None
        self.trainable_variables = None
        self.optimizer = None
        self.dropout_generator = None
        self.per_replica_train_batch_size = None

    # -- set-up ----------------------------------------------------------

    def scope(self):
        """The context variables are created in (the strategy's scope)."""
        return contextlib.nullcontext()

    @abc.abstractmethod
    def _dropout_generator(self, seed):
        """The generator training's dropout draws from (None: the
        backend's stateful op); `seed` is `TrainerConfig.seed`."""

    def build(self, optimizer_factory=None):
        """Builds the model and, to train, the optimizer and generator.

        Args:
          optimizer_factory: a callable returning a bert_tf optimizer; None
            for an engine that only evaluates and predicts.

        Raises:
          ValueError: a batch size that does not split over the replicas
            (the message names the flag).
        """
        config = self.config
        if optimizer_factory is not None:
            self.per_replica_train_batch_size = (
                distribution.per_replica_batch_size(
                    config.train_batch_size, self.num_replicas,
                    "train_batch_size", config.num_accumulation_steps))
        with self.scope():
            with precision.dtype_policy_scope(config.dtype):
                self.model = self.task.build_model()
            # `--attention`: before any step is traced.
            transformer.set_attention(
                self.model, config.attention,
                training=optimizer_factory is not None)
            self.trainable_variables = self.task.trainable_variables(
                self.model)
            if optimizer_factory is not None:
                self.dropout_generator = self._dropout_generator(config.seed)
                self.optimizer = precision.wrap_optimizer(
                    optimizer_factory(), config.dtype)
                self.optimizer.build(self.trainable_variables)

    # -- state in/out ------------------------------------------------------

    def optimizer_state(self):
        """`{Google name: variable}` a training checkpoint must hold besides
        the model: the optimizer's slots and `global_step`."""
        if self.optimizer is None:
            return {}
        return optimization.optimizer_slot_variables(self.optimizer)

    def optional_state(self):
        """`{name: variable}` a checkpoint holds when it was written so: the
        loss scale (float16) and the dropout generator's position."""
        state = dict(precision.loss_scale_variables(self.optimizer))
        state.update(self.random_state())
        return state

    @abc.abstractmethod
    def random_state(self):
        """`{name: variable}` of the dropout generator's position, when a
        checkpoint keeps it (seeded runs); part of `optional_state`."""

    def checkpoint_values(self, tensors):
        """The `{name: variable or value}` to write for `tensors` (the
        model's, `optimizer_state`'s and `optional_state`'s)."""
        return tensors

    def check_same_start(self, global_step):
        """Fails unless every process of a multi-process run resumes from
        the checkpoint of `global_step` (0: none): processes that found
        different checkpoints in their --output_dir would load and run
        different things. A TensorFlow strategy's workers read the chief's
        checkpoint; the JAX engine's processes check.

        Raises:
          ValueError: the processes would start from different steps.
        """
        del global_step

    def step_variable(self):
        """A fresh variable an evaluation-only run reads `global_step` into
        (of the dtype the backend counts steps in, `step_dtype`)."""
        return keras.Variable(0, dtype=self.step_dtype, trainable=False,
                              name="global_step")

    # -- the steps ---------------------------------------------------------

    @abc.abstractmethod
    def train_iterator(self, dataset_fn):
        """The training input, from `dataset_fn(tf.distribute.InputContext)`
        (one pipeline's batches of `per_replica_train_batch_size`)."""

    @abc.abstractmethod
    def train_steps(self, iterator, num_steps, stop_request):
        """Runs up to `num_steps` training steps.

        Args:
          iterator: from `train_iterator`.
          num_steps: steps to run.
          stop_request: the trainer's `preemption.StopRequest`; once it is
            requested, the call ends at the next step boundary.

        Returns:
          `(totals, steps_run, last_loss)`: the sums over the steps run of
          the global loss and of the task's metric sums (a dict of floats),
          the number of steps run, and the last step's loss (a float). The
          call returns early after a step whose loss is not finite.
        """

    @abc.abstractmethod
    def eval_input(self, dataset_fn, per_replica_batch_size):
        """The evaluation batches, an iterable.

        Args:
          dataset_fn: `(batch_size, tf.distribute.InputContext)` -> the
            task's evaluation `tf.data.Dataset`.
          per_replica_batch_size: examples per replica and batch.
        """

    @abc.abstractmethod
    def eval_step(self, features, keep):
        """Evaluates one batch of `eval_input`.

        Args:
          features: the batch.
          keep: `(features, outputs)` -> the dict of the model's outputs
            the task aggregates (the same callable on every call).

        Returns:
          `(sums, kept)`: the global loss and metric sums (a dict of
          scalars) and `keep`'s outputs of every replica's examples.
        """

    @abc.abstractmethod
    def predict(self, predict_batch, examples, global_batch_size,
                pad_to_full_batches=False, num_examples=None,
                description="records"):
        """`predict_batch(features)` of every example, in input order.

        Args:
          predict_batch: the model's outputs to keep of a batch; the same
            function object for every call of one mode (its compiled step is
            reused).
          examples: an unbatched `tf.data.Dataset` of feature dicts.
          global_batch_size: examples per step, over all replicas.
          pad_to_full_batches: fill the last batch with rows that are
            dropped again (TPUs need full batches).
          num_examples: when given, the count the set must have.
          description: what the examples are, for messages.

        Yields:
          Dicts of numpy arrays, one row per example, in input order.
        """

    # -- description -------------------------------------------------------

    @abc.abstractmethod
    def compilation_in_words(self):
        """What is compiled, for the trainer's set-up line."""
