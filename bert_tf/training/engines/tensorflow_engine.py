"""The TensorFlow engine: `tf.function` steps under a `tf.distribute` strategy.

Training step (inside `strategy.run`, in every replica):

1. the task's loss denominators (e.g. the number of masked tokens) of the
   replica's share of the global batch are summed over replicas, so every
   replica normalizes by the global count (see `bert_tf.tasks.base`);
2. the share is split into `num_accumulation_steps` micro-batches; their
   gradients are summed in a `tf.while_loop` (loop-carried tensors, no
   accumulator variables, nothing communicated per micro-batch);
3. the optimizer sums the gradients over replicas, clips their global norm
   and updates (one update per global batch: `global_step` counts updates).

`iterations_per_loop` steps run inside one `tf.function` call (a
`tf.while_loop` over the distributed iterator), so the host is involved only
between loops. A loop also ends at the first non-finite loss.
"""

import tensorflow as tf

from bert_tf.data import sequence_lengths
from bert_tf.modeling import layers as modeling_layers
from bert_tf.training import distribution
from bert_tf.training import precision
from bert_tf.training import prediction
from bert_tf.training.engines import base

# The dropout generator's position, saved with each checkpoint of a seeded
# run (Google's code ignores it: no variable of theirs has this name).
DROPOUT_RANDOM_STATE = "training/dropout_random_state"


class TensorFlowEngine(base.Engine):
    """The steps of `Trainer` on TensorFlow; see `base.Engine`."""

    step_dtype = "int64"

    def __init__(self, task, config, strategy):
        super().__init__(task, config, strategy)
        # TPUs compile every step, so they get static lengths (buckets) as
        # XLA does.
        if isinstance(strategy, tf.distribute.TPUStrategy):
            self.length_policy = sequence_lengths.static_policy(
                self.length_policy)
        self.one_process = not isinstance(
            strategy, tf.distribute.MultiWorkerMirroredStrategy)
        self._train_loop = None
        self._eval_step = None
        # predict_batch -> the function `prediction.predict` runs: kept, so
        # that the prediction loop's traced step is reused.
        self._predict_fns = {}

    # -- set-up ----------------------------------------------------------

    def scope(self):
        return self.strategy.scope()

    def _dropout_generator(self, seed):
        # Unseeded: TensorFlow's stateful dropout op, as Google's code.
        if seed is None:
            return None
        return tf.random.Generator.from_seed(seed)

    # -- state in/out ------------------------------------------------------

    def random_state(self):
        if self.dropout_generator is None:
            return {}
        return {DROPOUT_RANDOM_STATE: self.dropout_generator.state}

    # -- training ----------------------------------------------------------

    def _compiles_whole_step(self):
        """Whether XLA compiles the optimizer update too, not just gradients.

        On one device the whole replica step (gradients and update) is one
        XLA program, which fuses the optimizer's elementwise work (several
        times faster than op by op). With several replicas the update runs in
        the strategy's cross-replica merge, which XLA cannot compile here, so
        only the forward and backward pass is compiled.
        """
        return (self.config.enable_xla
                and distribution.is_single_device(self.strategy))

    def _metric_keys(self):
        return ("loss",) + tuple(self.task.metric_names)

    def _gradients_fn(self):
        """Loss, metric sums and gradients of one (micro-)batch."""
        task, model, optimizer = self.task, self.model, self.optimizer
        variables = self.trainable_variables
        metric_names = tuple(task.metric_names)
        missing_gradients = []

        policy = self.length_policy
        sequence_features = tuple(task.sequence_features)

        def gradients(features, denominators):
            # Cut to the batch's length (a bucket's static branch under
            # XLA); the gradients have the variables' shapes either way.
            # Seeded dropout numbers positions as at the records' length, so
            # that the cut batch drops what the full-length batch drops.
            mask = features.get(sequence_lengths.INPUT_MASK)
            full_length = None if mask is None else tf.shape(mask)[-1]
            with modeling_layers.full_length_dropout_scope(full_length):
                return sequence_lengths.call_at_length(
                    lambda cut: full_length_gradients(cut, denominators),
                    features, policy, sequence_features)

        def full_length_gradients(features, denominators):
            with tf.GradientTape() as tape:
                outputs = task.forward(model, features, training=True)
                loss, metrics = task.compute_loss(features, outputs,
                                                  denominators)
                loss = tf.cast(loss, tf.float32)
                scaled_loss = precision.scale_loss(optimizer, loss)
            grads = tape.gradient(scaled_loss, variables)
            missing_gradients[:] = [g is None for g in grads]
            # Dense float32: sparse embedding gradients cannot be summed in a
            # loop, and Google's optimizer densifies them anyway.
            grads = [tf.zeros(v.shape, tf.float32) if g is None
                     else tf.cast(tf.convert_to_tensor(g), tf.float32)
                     for g, v in zip(grads, variables)]
            metrics = {name: tf.cast(metrics[name], tf.float32)
                       for name in metric_names}
            return grads, loss, metrics

        if self.config.enable_xla and not self._compiles_whole_step():
            gradients = tf.function(gradients, jit_compile=True)
        return gradients, missing_gradients

    def _build_train_loop(self, stop_variable):
        strategy, task, optimizer = self.strategy, self.task, self.optimizer
        variables = self.trainable_variables
        metric_names = tuple(task.metric_names)
        metric_keys = self._metric_keys()
        num_micro_batches = self.config.num_accumulation_steps
        micro_batch_size = (self.per_replica_train_batch_size
                            // num_micro_batches)
        gradients_fn, missing_gradients = self._gradients_fn()
        loss_scaling = precision.uses_loss_scaling(self.config.dtype)

        def accumulated_gradients(features, denominators):
            def micro_batch(index):
                start = index * micro_batch_size
                return tf.nest.map_structure(
                    lambda t: t[start:start + micro_batch_size], features)

            def body(index, grad_sums, loss_sum, metric_sums):
                grads, loss, metrics = gradients_fn(micro_batch(index),
                                                    denominators)
                return (index + 1,
                        [total + g for total, g in zip(grad_sums, grads)],
                        loss_sum + loss,
                        {k: metric_sums[k] + metrics[k] for k in metric_names})

            initial = (tf.constant(0),
                       [tf.zeros(v.shape, tf.float32) for v in variables],
                       tf.constant(0.0),
                       {k: tf.constant(0.0) for k in metric_names})
            _, grads, loss, metrics = tf.while_loop(
                lambda index, *_: index < num_micro_batches, body, initial)
            return grads, loss, metrics

        # Not converted by AutoGraph (nor is anything it calls): the step is
        # straight-line tensor code (its loops are `tf.while_loop`s, its
        # branches `tf.cond`s or Python values), and converting the model's,
        # the task's and the optimizer's functions took about 3 s of every
        # run's first step.
        @tf.autograph.experimental.do_not_convert
        def replica_step(features):
            denominators = _global_loss_denominators(task, features)
            if num_micro_batches == 1:
                grads, loss, metrics = gradients_fn(features, denominators)
            else:
                grads, loss, metrics = accumulated_gradients(features,
                                                             denominators)
            # Variables the loss does not depend on (the next-sentence head
            # under --pretraining_objective=mlm) get no update, as in
            # Google's optimizer, not a zero-gradient one.
            updated = [(g, v) for g, v, missing
                       in zip(grads, variables, missing_gradients)
                       if not missing]
            grads = [g for g, _ in updated]
            if loss_scaling:
                grads = precision.agree_on_finite_gradients(grads)
            optimizer.apply(grads, [v for _, v in updated])
            # One packed all-reduce of a few scalars: the global loss and
            # metric sums, identical on every replica and worker.
            return tf.distribute.get_replica_context().all_reduce(
                tf.distribute.ReduceOp.SUM, {"loss": loss, **metrics})

        if self._compiles_whole_step():
            replica_step = tf.function(replica_step, jit_compile=True)

        @tf.function
        def train_loop(iterator, num_steps):
            totals = {k: tf.constant(0.0) for k in metric_keys}
            last_loss = tf.constant(0.0)
            steps = tf.constant(0)
            # Read before every step: SIGTERM ends the call at the next
            # step boundary (see `preemption`).
            while tf.logical_and(
                    tf.logical_and(steps < num_steps,
                                   tf.math.is_finite(last_loss)),
                    tf.logical_not(stop_variable.read_value())):
                per_replica = strategy.run(replica_step,
                                           args=(next(iterator),))
                outputs = {k: strategy.experimental_local_results(v)[0]
                           for k, v in per_replica.items()}
                totals = {k: totals[k] + outputs[k] for k in metric_keys}
                last_loss = outputs["loss"]
                steps += 1
            return totals, steps, last_loss

        return train_loop

    def train_iterator(self, dataset_fn):
        dataset = self.strategy.distribute_datasets_from_function(dataset_fn)
        return iter(dataset)

    def train_steps(self, iterator, num_steps, stop_request):
        if self._train_loop is None:
            self._train_loop = self._build_train_loop(stop_request.variable)
        # The generator is read when the loop is traced (its first call).
        with modeling_layers.random_generator_scope(self.dropout_generator):
            totals, steps_run, last_loss = self._train_loop(
                iterator, tf.constant(num_steps, tf.int32))
        return ({k: float(v) for k, v in totals.items()}, int(steps_run),
                float(last_loss))

    # -- evaluation and prediction -----------------------------------------

    def _at_length(self, fn, features):
        """`fn(features)` on the batch cut to its length; the task's
        sequence outputs padded back to the records' length."""
        return sequence_lengths.call_at_length(
            fn, features, self.length_policy,
            tuple(self.task.sequence_features),
            self.task.sequence_outputs)

    def _build_eval_step(self, keep):
        """The eval step: summed loss and metrics, and gathered outputs."""
        strategy, task, model = self.strategy, self.task, self.model
        metric_names = tuple(task.metric_names)

        # Not converted by AutoGraph, as the training step.
        @tf.autograph.experimental.do_not_convert
        def replica_step(features):
            denominators = _global_loss_denominators(task, features)

            def evaluate_batch(features):
                outputs = task.forward(model, features, training=False)
                loss, metrics = task.compute_loss(features, outputs,
                                                  denominators)
                values = {"loss": tf.cast(loss, tf.float32)}
                values.update({k: tf.cast(metrics[k], tf.float32)
                               for k in metric_names})
                return values, keep(features, outputs)

            values, kept = self._at_length(evaluate_batch, features)
            sums = tf.distribute.get_replica_context().all_reduce(
                tf.distribute.ReduceOp.SUM, values)
            return sums, kept

        # The last batch may be partial: retrace for it only once.
        @tf.function(reduce_retracing=True)
        def eval_step(features):
            sums, kept = strategy.run(replica_step, args=(features,))
            sums = {k: strategy.experimental_local_results(v)[0]
                    for k, v in sums.items()}
            # Every replica's (and worker's) examples, for metrics that need
            # all predictions; their order does not matter.
            kept = {k: strategy.gather(v, axis=0) for k, v in kept.items()}
            return sums, kept

        return eval_step

    def eval_input(self, dataset_fn, per_replica_batch_size):
        return self.strategy.distribute_datasets_from_function(
            lambda context: dataset_fn(per_replica_batch_size, context))

    def eval_step(self, features, keep):
        if self._eval_step is None:
            self._eval_step = self._build_eval_step(keep)
        return self._eval_step(features)

    def predict(self, predict_batch, examples, global_batch_size,
                pad_to_full_batches=False, num_examples=None,
                description="records"):
        predict_fn = self._predict_fns.get(predict_batch)
        if predict_fn is None:
            def predict_fn(features):
                return self._at_length(predict_batch, features)

            self._predict_fns[predict_batch] = predict_fn
        return prediction.predict(
            self.strategy, predict_fn, examples, global_batch_size,
            pad_to_full_batches=pad_to_full_batches,
            num_examples=num_examples, description=description,
            length_policy=self.length_policy)

    # -- description -------------------------------------------------------

    def compilation_in_words(self):
        if self._compiles_whole_step():
            return "XLA on (the whole training step)"
        if self.config.enable_xla:
            return "XLA on (the forward and backward pass)"
        # Our optimizers' per-variable update is always one XLA program
        # (TensorFlow says "Compiled cluster using XLA!" for it).
        return "XLA off (except the fused optimizer update)"


def _global_loss_denominators(task, features):
    """The task's loss denominators of `features`, summed over every replica
    and worker (in a replica context): the global batch's, so that each
    replica's loss is its share of the global mean.

    Returns:
      A dict of float32 scalars (empty when the task has none).
    """
    denominators = {k: tf.cast(v, tf.float32) for k, v
                    in task.loss_denominators(features).items()}
    if denominators:
        denominators = tf.distribute.get_replica_context().all_reduce(
            tf.distribute.ReduceOp.SUM, denominators)
    return denominators
