"""`Task`: what the generic `Trainer` needs to know about one kind of training.

A task owns everything specific to one problem (pretraining, GLUE
classification, SQuAD, ...): the model with its heads, the input pipeline,
the loss, the metrics, the outputs it predicts, the files it writes and how
an `--init_checkpoint` is applied. The `Trainer` (`bert_tf.training.trainer`)
owns everything generic: devices and replicas, the step loop, gradient
accumulation, mixed precision, checkpoints, logging, summaries, the one
in-order prediction loop (`bert_tf.training.prediction`) and writing
`eval_results.txt`.

How a new task plugs in
-----------------------
A new fine-tuning task is one folder (in `bert_tf/tasks/`, or in your own
package) whose `task.py` holds its model, data config and a `Task`
subclass, and whose `spec.py` declares it to `bert_tf.tasks.registry` (its
recipe, export and Python conversions; docs/adding-a-task.md). The
`Task` part:

1. Training: implement `build_model`, `build_inputs`, `compute_loss`,
   `metric_names` and `aggregate_metrics` (below). `Trainer.train` needs
   nothing else.
2. Evaluation: `Trainer.evaluate` reports the mean loss and
   `aggregate_metrics` of the summed metrics. A metric that needs every
   prediction at once (F1, a correlation, span F1) comes from the
   prediction hooks: return the per-example tensors it needs from
   `prediction_outputs(features, outputs, EVAL)`, fold each batch of them
   (numpy) into a state in `aggregate_predictions`, and turn the state into
   metrics in `reduce_predictions`. They are written to `eval_results.txt`
   with the others.
3. Prediction: implement `prediction_inputs(mode)` (the set's examples,
   unbatched, in file order) and the same three hooks for `PREDICT`, plus
   `write_predictions` for the task's output files (`test_results.tsv`,
   `predictions.json`, ...). `Trainer.run_predictions(PREDICT, batch_size)`
   then predicts in input order under any strategy, aggregates, reduces
   (metrics, if any, go to `eval_results.txt`) and writes the files on the
   chief. When aggregation needs host-side data that is not in the records
   (SQuAD's examples and features, tagging's words), the task's recipe
   passes it as the `initial_state`.
4. `initialize_from_checkpoint`: the default loads the encoder strictly and
   the task's head when the checkpoint has it (a fine-tuned checkpoint
   predicts as that model); override only for something else.

The hooks, in the spirit of Model Garden's `aggregate_logs` /
`reduce_aggregated_logs`::

    # in each replica, per batch:
    outputs = task.forward(model, features, training=False)
    kept = task.prediction_outputs(features, outputs, mode)
    # on the host, per batch (rows in input order when predicting):
    state = task.aggregate_predictions(state, kept_numpy, mode)
    # once, after the last batch:
    metrics = task.reduce_predictions(state, mode)
    paths = task.write_predictions(state, output_dir, mode)  # chief only

Notes: in `PREDICT` the trainer numbers the examples and drops the rows it
added to fill a TPU batch, so the task sees each example once, in order. In
`EVAL` the rows are the evaluation input's (`build_inputs(EVAL)`), in no
particular order, padding records of the data set (`is_real_example = 0`)
included: filter them in `aggregate_predictions`. Worked examples:
`ClassificationTask` (GLUE metrics in evaluation, `test_results.tsv`) and
`SquadTask` (logits by feature id, answers, official scores).

A task's recipe (`bert_tf/tasks/<task>/recipe.py`) only builds the task
from its config and calls `Trainer.train`, `Trainer.evaluate` and
`Trainer.run_predictions` (`bert_tf.finetuning.run_phases`).

Training
--------
The trainer calls the training hooks like this, in each replica, for every
global batch of `train_batch_size` examples::

    features = <one per-replica batch from build_inputs(...)>
    denominators = all_reduce_sum(task.loss_denominators(features))
    outputs = model(features, training=True)        # task.forward
    loss, metrics = task.compute_loss(features, outputs, denominators)
    # gradients of `loss` are summed over replicas (and micro-batches)

The global-batch contract
-------------------------
`compute_loss` returns *this replica's share* of the loss of the whole global
batch, so that summing the shares over replicas (and over accumulation
micro-batches) gives exactly the loss one device computes on the whole batch.
A mean over examples becomes `sum over this replica's examples / global
count`; the global counts are the `denominators`, which the trainer sums over
all replicas (and which are computed on a replica's whole share of the batch,
before it is split into micro-batches). With this, N replicas and one device
take the same step for the same global batch; no `1 / num_replicas` factor is
needed anywhere.

Metrics
-------
`compute_loss` also returns `metrics`: a dict of float32 scalars that are
*sums* over this replica's examples (correct predictions, weights, loss
sums), keyed by `metric_names`. The trainer adds them over replicas and steps
(a log window, or the whole evaluation) and `aggregate_metrics` turns the
totals into the reported values (ratios). The trainer itself adds `loss` (the
mean over batches of the global-batch loss) and `global_step`.

Backends
--------
`forward`, `loss_denominators`, `compute_loss` and `prediction_outputs` run
inside the trainer's step: a `tf.function` on TensorFlow, a `jax.jit`
function on Keras' JAX backend (the engines of `bert_tf.training.engines`).
They are written in `keras.ops`, so that one task runs on both; the input
pipeline (`build_inputs`, `prediction_inputs`) stays `tf.data` on every
backend.

Variables and checkpoints
-------------------------
`build_model` runs inside `strategy.scope()` and the dtype-policy scope, and
must create every variable (call the model once on dummy inputs) so that the
optimizer can be built and checkpoints restored before the first step. Each
variable's `.path` is its name in Google's checkpoints.
"""

import abc
import dataclasses
from typing import Dict, Optional

from absl import logging
import keras
from keras import ops
import numpy as np

from bert_tf import modes

# TensorFlow (`tf.data`, checkpoint files) is imported where a method needs
# it: a task's model and loss are `keras.ops`, and a TensorFlow-free process
# (the JAX GPU benchmark) builds them from this module.

# Modes passed to `Task.build_inputs` and the prediction hooks (defined in
# `bert_tf.modes`, below the training layer).
TRAIN = modes.TRAIN
EVAL = modes.EVAL
PREDICT = modes.PREDICT
MODES = modes.MODES
# The model inputs every task has (`bert_tf.data.encoded_input`'s names).
INPUT_IDS = "input_ids"
INPUT_MASK = "input_mask"
SEGMENT_IDS = "segment_ids"
# The checkpoint scope of the encoder (`BertModel`): every task loads it
# strictly from `--init_checkpoint`; the variables outside it are the task's
# heads.
ENCODER_SCOPE = "bert/"


def safe_ratio(numerator, denominator):
    """`numerator / denominator` as a float, 0.0 when nothing was counted."""
    numerator = float(numerator)
    denominator = float(denominator)
    return numerator / denominator if denominator else 0.0


class Task(abc.ABC):
    """One kind of training: model, inputs, loss, metrics, initialization.

    Subclasses keep their configuration (model config, data files, sequence
    lengths) as attributes set in `__init__`; the trainer passes only what
    depends on the run (mode, per-replica batch size, input context).
    """

    #: A short name, used in log lines.
    name = "task"
    #: The checkpoint (prefix or directory) `initialize_from_checkpoint`
    #: starts a new run from (`--init_checkpoint`); None: random weights.
    #: Set by the subclass's constructor: it is part of the task's config.
    init_checkpoint = None
    #: The features whose last axis is the sequence: the trainer cuts them
    #: to each batch's real length (`bert_tf.data.sequence_lengths`) before
    #: `forward` and `compute_loss`. Every other feature must not depend on
    #: the sequence length (positions into it are fine).
    sequence_features = (INPUT_IDS, INPUT_MASK, SEGMENT_IDS)
    #: The `prediction_outputs` (and model outputs) whose axis 1 is the
    #: sequence: padded back with zeros to the records' length, so that
    #: aggregation sees the full-length shape whatever a batch ran at.
    sequence_outputs = ()

    @abc.abstractmethod
    def build_model(self):
        """Builds the model with all its variables created.

        Called by the trainer inside `strategy.scope()` and the `--dtype`
        policy scope.

        Returns:
          A `keras.Model` called as `model(features, training=...)` (see
          `forward`) that returns a dict of output tensors. Every variable
          exists already and its `.path` is its Google checkpoint name.
        """

    @abc.abstractmethod
    def build_inputs(self, mode, per_replica_batch_size, input_context=None):
        """The input pipeline of one replica (or one input worker).

        Args:
          mode: `TRAIN` (repeat, shuffle, drop the remainder), `EVAL` or
            `PREDICT` (one pass, in file order).
          per_replica_batch_size: examples per batch this dataset yields (the
            global batch divided by the number of replicas).
          input_context: a `tf.distribute.InputContext` when called by
            `strategy.distribute_datasets_from_function`: shard the input by
            `input_context.input_pipeline_id` over
            `input_context.num_input_pipelines`.

        Returns:
          A `tf.data.Dataset` of feature dicts, batched.
        """

    def forward(self, model, features, training):
        """Runs the model; override if it takes something other than `features`.

        Returns:
          The model's output dict.
        """
        return model(features, training=training)

    def loss_denominators(self, features):
        """Per-batch counts that losses are divided by, before summing.

        Args:
          features: one replica's batch.

        Returns:
          A dict of float32 scalars (e.g. the number of examples, the sum of
          prediction weights) that the trainer sums over replicas and hands to
          `compute_loss`. The default is the number of examples, under
          `"num_examples"`.
        """
        first = keras.tree.flatten(features)[0]
        return {"num_examples": ops.cast(ops.shape(first)[0], "float32")}

    @abc.abstractmethod
    def compute_loss(self, features, outputs, denominators):
        """This replica's share of the global-batch loss, and metric sums.

        Args:
          features: a batch (a replica's share, or one micro-batch of it).
          outputs: `forward(model, features, training)`.
          denominators: `loss_denominators` of the whole global batch (summed
            over replicas, computed before micro-batching).

        Returns:
          `(loss, metrics)`: `loss` a float32 scalar, such that the sum over
          replicas and micro-batches is the loss of the global batch;
          `metrics` a dict from each of `metric_names` to a float32 scalar
          sum over `features`' examples.
        """

    @property
    @abc.abstractmethod
    def metric_names(self):
        """The keys of `compute_loss`'s metrics dict, a tuple of strings."""

    @abc.abstractmethod
    def aggregate_metrics(self, totals):
        """Turns summed metrics into the values that are reported.

        Args:
          totals: dict from each of `metric_names` to its sum (a float) over
            replicas and batches.

        Returns:
          A dict from metric name (as in Google's `eval_results.txt`) to a
          float.
        """

    # -- prediction: what a task predicts, aggregates, reduces and writes ----

    def prediction_inputs(self, mode):
        """The examples of the evaluation or prediction set, in file order.

        Used by `Trainer.run_predictions`, which numbers, batches (and on
        TPUs pads) them itself.

        Args:
          mode: `EVAL` or `PREDICT`.

        Returns:
          An unbatched `tf.data.Dataset` of feature dicts.
        """
        raise NotImplementedError(
            f"the {self.name} task does not predict ({mode})")

    def prediction_outputs(self, features, outputs, mode):
        """What to keep of each example's outputs (runs in each replica).

        Args:
          features: one replica's batch.
          outputs: `forward(model, features, training=False)`.
          mode: `EVAL` (inside `Trainer.evaluate`) or `PREDICT`.

        Returns:
          A dict of tensors whose first dimension is the batch; floating
          ones are cast to float32. An empty dict (the default in `EVAL`)
          gathers nothing: evaluation then reports only `aggregate_metrics`.
          The default in `PREDICT` keeps every model output.
        """
        if mode == EVAL:
            return {}
        return dict(outputs)

    def aggregate_predictions(self, state, outputs, mode):
        """Folds one batch of `prediction_outputs` into the state.

        Model Garden's `aggregate_logs`. In `PREDICT` the batches come in
        input order, each example exactly once; in `EVAL` (when
        `prediction_outputs` is not empty) they come in no particular order.

        Args:
          state: what the previous call returned; for the first batch, the
            `initial_state` given to `Trainer.run_predictions` (None by
            default).
          outputs: dict of numpy arrays, one row per example.
          mode: `EVAL` or `PREDICT`.

        Returns:
          The new state. The default collects the batches in a list.
        """
        del mode  # The default treats both modes alike.
        state = [] if state is None else state
        state.append(outputs)
        return state

    def reduce_predictions(self, state, mode):
        """Metrics of the whole set (Model Garden's `reduce_aggregated_logs`).

        Args:
          state: the last `aggregate_predictions` result (None when no batch
            was gathered).
          mode: `EVAL` or `PREDICT`.

        Returns:
          A dict from metric name (as in `eval_results.txt`) to value;
          empty (the default) when the set has no metrics of this kind.
        """
        del state, mode
        return {}

    def write_predictions(self, state, output_dir, mode):
        """Writes the task's output files (called on the chief only).

        Use `bert_tf.file_io.atomic_write` (or an atomic writer built on it)
        so that a reader never sees a half-written file.

        Args:
          state: the last `aggregate_predictions` result.
          output_dir: the run's `--output_dir`.
          mode: `EVAL` or `PREDICT`.

        Returns:
          The paths written (default: none).
        """
        del state, output_dir, mode
        return []

    # -- variables and checkpoints --------------------------------------------

    def trainable_variables(self, model):
        """The variables the optimizer updates (default: all trainable ones)."""
        return list(model.trainable_variables)

    def checkpoint_variables(self, model):
        """`{Google name: variable}` of the model's state in a checkpoint.

        The default is every weight of the model by its `.path`; Keras'
        random-seed state is not a weight and is left out.
        """
        from bert_tf import checkpoints  # pylint: disable=import-outside-toplevel
        variables = {}
        for variable in model.weights:
            name = checkpoints.variable_name(variable)
            if name in variables and variables[name] is not variable:
                raise ValueError(
                    f"two model variables share the checkpoint name {name!r}")
            variables[name] = variable
        return variables

    def initialize_from_checkpoint(self, model, init_checkpoint):
        """Applies `--init_checkpoint` to a freshly built model.

        Called only when the output directory holds no checkpoint to resume
        from. The encoder (`ENCODER_SCOPE`) must be in the checkpoint; the
        task's heads (every other variable) are loaded when the checkpoint
        has them -- a fine-tuned checkpoint then predicts as that model, as
        Google's `init_from_checkpoint` does -- and otherwise keep their
        initial values. A variable of another shape is an error either way
        (e.g. a classifier with another number of labels). The checkpoint
        is read once.

        Args:
          model: the model from `build_model`.
          init_checkpoint: anything `bert_tf.checkpoints.resolve_checkpoint`
            accepts.
        """
        from bert_tf import checkpoints  # pylint: disable=import-outside-toplevel
        variables = self.checkpoint_variables(model)
        heads = [name for name in variables
                 if not name.startswith(ENCODER_SCOPE)]
        report = checkpoints.load_checkpoint(
            list(variables.values()), init_checkpoint, strict=True,
            optional=heads)
        if report.missing:
            logging.info(
                "--init_checkpoint %s has no %s head (%s); it starts from "
                "random values", report.checkpoint, self.name,
                ", ".join(report.missing))


@dataclasses.dataclass(frozen=True)
class ArraysDataConfig:
    """In-memory feature arrays of each set (multiple choice, multi-label).

    Attributes:
      train_arrays, eval_arrays, predict_arrays: dicts of numpy arrays, one
        row per example (the task's `examples_to_arrays`), or None.
      max_seq_length: sequence length of the arrays.
      seed: training shuffle seed.
      pad_to_full_batches: evaluation batches all full (TPUs), see
        `InMemoryArraysTask`.
    """
    train_arrays: Optional[Dict[str, np.ndarray]] = None
    eval_arrays: Optional[Dict[str, np.ndarray]] = None
    predict_arrays: Optional[Dict[str, np.ndarray]] = None
    max_seq_length: int = 128
    seed: Optional[int] = None
    pad_to_full_batches: bool = False


class InMemoryArraysTask(Task):
    """A task whose sets are feature arrays held in memory.

    The subclass's `data_config` (an `ArraysDataConfig`, or one with the
    same fields) has `train_arrays`, `eval_arrays` and
    `predict_arrays` (dicts of numpy arrays, one row per example, or None),
    `seed` (the training shuffle's) and `pad_to_full_batches` (evaluation
    batches all full, as TPUs need: the evaluation set is padded with
    weight-0 rows, `is_real_example = 0`, the classifier's rule); this class
    reads and batches them (tagging, multiple choice, multi-label). A
    subclass whose sets live elsewhere overrides `_arrays`. Losses and
    metrics weight each row by `in_memory.example_weights` (padding: 0).
    """

    def _arrays(self, mode):
        data = self.data_config
        arrays = {TRAIN: data.train_arrays, EVAL: data.eval_arrays,
                  PREDICT: data.predict_arrays}[mode]
        if arrays is None:
            raise ValueError(f"the {self.name} task has no {mode} data")
        return arrays

    def build_inputs(self, mode, per_replica_batch_size, input_context=None):
        from bert_tf.data import in_memory
        return in_memory.in_memory_dataset(
            self._arrays(mode), mode == TRAIN, per_replica_batch_size,
            input_context, seed=self.data_config.seed,
            pad_to_full_batches=(mode == EVAL
                                 and self.data_config.pad_to_full_batches))

    def loss_denominators(self, features):
        """The number of real examples (padding rows have weight 0)."""
        from bert_tf.data import in_memory
        return {"num_examples": ops.sum(in_memory.example_weights(features))}

    def prediction_inputs(self, mode):
        import tensorflow as tf  # pylint: disable=import-outside-toplevel
        # Unpadded: the prediction loop pads (and drops) rows itself.
        return tf.data.Dataset.from_tensor_slices(self._arrays(mode))
