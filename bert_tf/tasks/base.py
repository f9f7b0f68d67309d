"""`Task`: what the generic `Trainer` needs to know about one kind of training.

A task owns everything specific to one problem (pretraining, GLUE
classification, SQuAD): the model with its heads, the input pipeline, the
loss, the metrics and how an `--init_checkpoint` is applied. The `Trainer`
(`bert_tf.training.trainer`) owns everything generic: devices and replicas,
the step loop, gradient accumulation, mixed precision, checkpoints, logging,
summaries and writing `eval_results.txt`.

Writing a task
--------------
Subclass `Task` and implement `build_model`, `build_inputs`, `compute_loss`,
`metric_names` and `aggregate_metrics`; override the others when the default
does not fit. The trainer calls them like this, in each replica, for every
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

Variables and checkpoints
-------------------------
`build_model` runs inside `strategy.scope()` and the dtype-policy scope, and
must create every variable (call the model once on dummy inputs) so that the
optimizer can be built and checkpoints restored before the first step. Each
variable's `.path` is its name in Google's checkpoints.
"""

import abc

import tensorflow as tf

from bert_tf import checkpoints

# Modes passed to `Task.build_inputs`.
TRAIN = "train"
EVAL = "eval"
PREDICT = "predict"
MODES = (TRAIN, EVAL, PREDICT)


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
        first = tf.nest.flatten(features)[0]
        return {"num_examples": tf.cast(tf.shape(first)[0], tf.float32)}

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

    def trainable_variables(self, model):
        """The variables the optimizer updates (default: all trainable ones)."""
        return list(model.trainable_variables)

    def checkpoint_variables(self, model):
        """`{Google name: variable}` of the model's state in a checkpoint.

        The default is every weight of the model by its `.path`; Keras'
        random-seed state is not a weight and is left out.
        """
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
        from. The default requires every model variable in the checkpoint.

        Args:
          model: the model from `build_model`.
          init_checkpoint: anything `bert_tf.checkpoints.resolve_checkpoint`
            accepts.
        """
        checkpoints.load_checkpoint(model, init_checkpoint, strict=True)
