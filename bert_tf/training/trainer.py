"""The one generic training/evaluation loop, for every `Task`.

What runs on the device -- the training step (the task's loss denominators
of the global batch, gradients summed over `num_accumulation_steps`
micro-batches, the optimizer's global-norm clipping and update), the
evaluation and prediction steps, and the optimizer and random state -- is
the engine's of the Keras backend (`bert_tf.training.engines`: `tf.function`
under a `tf.distribute` strategy on TensorFlow, `jax.jit` on JAX). This
module keeps the loop around it: when to call the device, progress, logs,
summaries, checkpoints and signals, the same on every backend.

`iterations_per_loop` steps run in one call into the device, so the host is
involved only between calls: to log, write summaries and save checkpoints.
A call also ends at the first non-finite loss, which stops the run
(`NonFiniteLossError`) without saving, so the last checkpoint on disk is the
last good state.

Restarting with the same `output_dir` resumes from the newest
`model.ckpt-<step>`: model, optimizer slots, `global_step` (hence the
learning rate) and the loss scale. The run then finishes at
`num_train_steps`: steps after the last checkpoint are recomputed, none are
skipped. With `--seed` (`TrainerConfig.seed`) the resumed run is exact:
its input continues where the checkpoint's step left it and its dropout
masks are the uninterrupted run's, so it ends with the same weights.
Without, the input pipeline restarts from its beginning, reshuffled.
"""

import contextlib
import math
import os
import time

from absl import logging
import keras
import numpy as np
import tensorflow as tf

from bert_tf import checkpoints
from bert_tf import file_io
from bert_tf import modes
from bert_tf import progress as progress_lib
from bert_tf.config import GOOGLE_ATTENTION
from bert_tf.data import sequence_lengths
from bert_tf.training import checkpoint_manager as checkpoint_manager_lib
from bert_tf.training import distribution
from bert_tf.training import engines
from bert_tf.training import precision
from bert_tf.training import preemption
from bert_tf.training import run_lock
from bert_tf.training import summaries
# The run's settings live in a TensorFlow-free module (the JAX engine is
# built from them without TensorFlow); `trainer.TrainerConfig` stays their
# name here.
from bert_tf.training.trainer_config import TrainerConfig  # noqa: F401

EVAL_RESULTS_FILE = "eval_results.txt"


class NonFiniteLossError(RuntimeError):
    """The training loss became NaN or infinite; the run stopped."""


class TrainingInterrupted(RuntimeError):
    """A signal (SIGTERM) stopped training; a checkpoint was saved.

    Attributes:
      signal_number: the signal that stopped the run.
    """

    def __init__(self, message, signal_number):
        super().__init__(message)
        self.signal_number = signal_number


def write_eval_results(path, results):
    """Writes `key = value` lines, keys sorted, as Google's runners do.

    The file is written under a temporary name and renamed, so a reader never
    sees half of it.

    Args:
      path: the file to write, e.g. `<output_dir>/eval_results.txt`.
      results: dict from name to value; each value is written with `str`.
    """
    # `str`, as Google's `"%s = %s\n" % (key, str(value))`: a float32 prints
    # as 0.37572256, not with float64 digits.
    text = "".join(f"{key} = {str(results[key])}\n" for key in sorted(results))
    with file_io.atomic_write(path) as writer:
        writer.write(text)


def _next_multiple(step, every):
    return (step // every + 1) * every


def training_metric_name(name):
    """How a training log names a task metric: `eval_accuracy` is
    `train_accuracy` there (the classifier's names are Google's eval keys)."""
    if name.startswith("eval_"):
        return "train_" + name[len("eval_"):]
    return name


class Trainer:
    """Trains and evaluates a `Task` under a `tf.distribute` strategy.

    The steps run on the engine of the Keras backend
    (`bert_tf.training.engines`); on the JAX backend (`KERAS_BACKEND=jax`)
    as `jax.jit`-compiled functions on one device, every local device
    (`mirrored`) or the devices of several processes
    (`multi_worker_mirrored`), with the same checkpoints, logs, evaluation
    results and prediction files.

    Example (what `run_pretraining.py` does)::

        strategy = distribution.get_distribution_strategy("mirrored")
        task = PretrainingTask(bert_config, data_config)
        trainer = Trainer(task, TrainerConfig(output_dir=...), strategy,
                          optimizer_factory=lambda: create_optimizer(
                              "adamw", 1e-4, num_train_steps, 10000))
        trainer.train()
        results = trainer.evaluate()
    """

    def __init__(self, task, config, strategy=None, optimizer_factory=None):
        """Builds the model (and optimizer) and restores or initializes them.

        If `config.output_dir` holds a checkpoint, the model (and, when
        training, the optimizer state and step) are restored from the newest;
        otherwise `task.init_checkpoint`, if set, initializes the model via
        `task.initialize_from_checkpoint`.

        Args:
          task: a `bert_tf.tasks.base.Task` (any object with its methods).
          config: a `TrainerConfig`.
          strategy: a `tf.distribute.Strategy`; the default strategy if None.
            On JAX, `multi_worker_mirrored`'s `distribution.JaxProcesses`
            (`get_distribution_strategy` gives the one to use).
          optimizer_factory: a callable returning a bert_tf optimizer
            (`bert_tf.training.optimization.create_optimizer(...)`); called
            inside the strategy's scope. None for an evaluation-only trainer.

        Raises:
          ValueError: a config value, or a batch size that does not split over
            the replicas (the message names the flag).
          bert_tf.checkpoints.CheckpointError: the checkpoint to resume from
            does not fit the model or optimizer.
        """
        self._finished_train_input = None  # See `train`.
        config.validate()
        self.task = task
        self.config = config
        self.strategy = strategy or tf.distribute.get_strategy()
        # What runs on the device: the backend's engine.
        self.engine = engines.create(task, config, self.strategy)
        self.num_replicas = self.engine.num_replicas
        self.is_chief = self.engine.is_chief
        # At which length each batch runs.
        self.length_policy = self.engine.length_policy
        # Workers must run the same steps in every call and stop together:
        # calls sized by the clock and stops on SIGTERM are for one process.
        self._one_process = self.engine.one_process
        # The model, and to train the optimizer and the generator dropout
        # masks come from (whose position a seeded run checkpoints).
        self.engine.build(optimizer_factory)
        self.per_replica_train_batch_size = (
            self.engine.per_replica_train_batch_size)
        self.model = self.engine.model
        self.trainable_variables = self.engine.trainable_variables
        self.optimizer = self.engine.optimizer

        if self.optimizer is not None:
            # One training run per output_dir; the temporary files of one
            # that was killed are removed (see run_lock).
            run_lock.lock_output_dir(config.output_dir, self.is_chief)
            if self.is_chief:
                run_lock.remove_stale_temporary_files(config.output_dir)
        self.checkpoint_manager = checkpoint_manager_lib.CheckpointManager(
            config.output_dir, max_to_keep=config.keep_checkpoint_max,
            is_chief=self.is_chief)
        self._checkpoint_step = 0
        # SIGTERM during `train` stops at the next step boundary.
        self._stop_request = preemption.StopRequest()
        self.restored_checkpoint = None
        # mode -> the function `predict` runs: kept, so that the prediction
        # loop's compiled step is reused by every `predict` of that mode.
        self._predict_fns = {}
        self._initialize_variables()

    # -- state -------------------------------------------------------------

    @property
    def global_step(self):
        """Optimizer updates so far (restored on resume)."""
        if self.optimizer is not None:
            return int(np.asarray(self.optimizer.iterations))
        return self._checkpoint_step

    def checkpoint_tensors(self):
        """Everything a training checkpoint holds, by Google name."""
        tensors = dict(self.task.checkpoint_variables(self.model))
        tensors.update(self.engine.optimizer_state())
        tensors.update(self.engine.optional_state())
        return self.engine.checkpoint_values(tensors)

    def _restore_newest_readable(self):
        """Restores the newest checkpoint that reads; returns its prefix.

        A damaged checkpoint (truncated or corrupt files, e.g. a disk that
        filled up) is skipped with a warning naming it, and set aside
        (`CheckpointManager.set_aside`, never deleted) so that this run can
        write a good checkpoint of that step again.

        Raises:
          bert_tf.checkpoints.DamagedCheckpointError: no checkpoint reads.
        """
        candidates = self.checkpoint_manager.existing_checkpoints()
        damaged = []
        for prefix in reversed(candidates):
            try:
                self._restore(prefix)
            except checkpoints.DamagedCheckpointError as error:
                damaged.append(prefix)
                logging.warning("Checkpoint %s cannot be read; trying an "
                                "older one. %s", prefix, error)
                continue
            for bad in damaged:
                # Only a training run (which holds the output_dir's lock)
                # renames files there.
                kept_as = (self.checkpoint_manager.set_aside(bad)
                           if self.optimizer is not None else bad)
                logging.warning(
                    "Resuming from %s instead of the damaged %s (kept as "
                    "%s, not deleted).", prefix, bad, kept_as)
            return prefix
        if damaged:
            raise checkpoints.DamagedCheckpointError(
                f"no checkpoint in --output_dir={self.config.output_dir} "
                f"can be read (damaged: {', '.join(damaged)}); move them "
                f"away to start afresh")
        return None

    def _initialize_variables(self):
        self.engine.check_same_start(self.checkpoint_manager.newest_step())
        latest = self._restore_newest_readable()
        if latest:
            self.restored_checkpoint = latest
            logging.info("Resuming from %s (global step %d).", latest,
                         self.global_step)
        elif self.task.init_checkpoint:
            logging.info("Initializing the model from --init_checkpoint %s.",
                         self.task.init_checkpoint)
            # One line however many passes the task makes (encoder, heads).
            with checkpoints.load_summary():
                self.task.initialize_from_checkpoint(
                    self.model, self.task.init_checkpoint)
        else:
            logging.info("No checkpoint in %s and no --init_checkpoint: "
                         "starting from random weights.",
                         self.config.output_dir)

    def _restore(self, prefix):
        """Assigns model and optimizer state from one of our checkpoints.

        Every model variable and (when training) every optimizer slot and
        `global_step` must be present with the right shape: resuming from a
        partial state would silently change the run. The loss scale is
        optional (a float32 checkpoint has none). The check and the reads
        are `load_checkpoint`'s (one pass over the checkpoint).
        """
        required = dict(self.task.checkpoint_variables(self.model))
        required.update(self.engine.optimizer_state())
        optional = self.engine.optional_state()
        if "global_step" not in required:
            # Evaluation only: the step is read for the results, if there.
            optional["global_step"] = self.engine.step_variable()
        try:
            report = checkpoints.load_checkpoint(
                {**required, **optional}, prefix, strict=True,
                optional=list(optional))
        except checkpoints.DamagedCheckpointError:
            raise  # `_restore_newest_readable` falls back to an older one.
        except checkpoints.CheckpointError as error:
            raise checkpoints.CheckpointError(
                f"cannot resume from {prefix} in --output_dir: it does not "
                f"fit this model/optimizer: {error}\nUse a new "
                "--output_dir, or move the checkpoints away (to start from "
                "them, pass --init_checkpoint).") from error
        if "global_step" in report.loaded:
            step = (required["global_step"] if "global_step" in required
                    else optional["global_step"])
            self._checkpoint_step = int(np.asarray(step))
        random_state = self.engine.random_state()
        if random_state and not set(random_state) & set(report.loaded):
            logging.warning(
                "%s holds no dropout random state (written without "
                "--seed): the resumed run draws other dropout masks "
                "than an uninterrupted one would have.", prefix)

    def save_checkpoint(self):
        """Writes `model.ckpt-<global_step>` (chief only); returns the prefix."""
        return self.checkpoint_manager.save(self.checkpoint_tensors(),
                                            self.global_step)

    # -- the step functions --------------------------------------------------

    def _metric_keys(self):
        return ("loss",) + tuple(self.task.metric_names)

    def _prediction_outputs(self, features, outputs, mode):
        """The task's `prediction_outputs`, floating tensors as float32."""
        kept = self.task.prediction_outputs(features, outputs, mode)
        return {key: keras.ops.cast(value, "float32")
                if keras.backend.is_float_dtype(value.dtype) else value
                for key, value in kept.items()}

    def _keep_in_eval(self, features, outputs):
        """What evaluation keeps of a batch's outputs for the task."""
        return self._prediction_outputs(features, outputs, modes.EVAL)

    # -- training ------------------------------------------------------------

    def _summary_writer(self, subdirectory=None):
        if not self.is_chief:
            return tf.summary.create_noop_writer()
        directory = self.config.output_dir
        if subdirectory:
            directory = os.path.join(directory, subdirectory)
        return tf.summary.create_file_writer(directory)

    def _learning_rate(self):
        optimizer = precision.inner_optimizer(self.optimizer)
        try:
            return float(np.asarray(optimizer.learning_rate))
        except (TypeError, ValueError):
            return float("nan")

    def make_train_iterator(self):
        """An iterator over the distributed training input of the task."""
        if self.optimizer is None:
            raise ValueError("this Trainer was built without an "
                             "optimizer_factory and can only evaluate")
        per_replica_batch_size = self.per_replica_train_batch_size
        # With a seed the input is the same sequence in every run: a resumed
        # run skips the batches the steps before its checkpoint consumed, so
        # that it reads what the uninterrupted run reads next.
        steps_done = (self.global_step if self.config.seed is not None
                      else 0)

        policy = self.length_policy

        def dataset_fn(context):
            dataset = self.task.build_inputs(modes.TRAIN,
                                             per_replica_batch_size, context)
            if policy.group_by_length:
                dataset = sequence_lengths.regroup_training_batches(
                    dataset, per_replica_batch_size, seed=self.config.seed)
            if not steps_done:
                return dataset
            # Each step takes one batch per replica; a pipeline feeds
            # num_replicas_in_sync / num_input_pipelines replicas.
            per_step = context.num_replicas_in_sync // max(
                context.num_input_pipelines, 1)
            logging.info("Resuming the input at step %d: skipping %d "
                         "batches.", steps_done, steps_done * per_step)
            return dataset.skip(steps_done * per_step)

        return self.engine.train_iterator(dataset_fn)

    def train_steps(self, iterator, num_steps):
        """Runs up to `num_steps` training steps in one call into the engine.

        The building block of `train` (which adds checkpoints, logging and
        summaries); also what benchmarks time.

        Args:
          iterator: from `make_train_iterator`.
          num_steps: steps to run; the call returns early after a step whose
            loss is not finite.

        Returns:
          `(totals, steps_run, last_loss)`: the sums over the steps run of the
          global loss and of the task's metric sums (a dict of floats), the
          number of steps run, and the last step's loss (a float).
        """
        return self.engine.train_steps(iterator, num_steps,
                                       self._stop_request)

    def train(self):
        """Trains until `num_train_steps`, saving and logging on the way.

        Returns:
          A dict: `global_step`, and the last logged window's `loss`,
          `learning_rate`, `examples_per_second` and task metrics (named
          by `training_metric_name`; empty apart from `global_step` when
          there was nothing left to train).

        Raises:
          NonFiniteLossError: the loss became NaN/Inf; the message names the
            step and the last checkpoint written.
          TrainingInterrupted: SIGTERM arrived (in the main thread's run);
            a checkpoint of the step reached was saved, which the message
            names.
        """
        if self.optimizer is None:
            raise ValueError("this Trainer was built without an "
                             "optimizer_factory and can only evaluate")
        config = self.config
        step = self.global_step
        if step >= config.num_train_steps:
            logging.info("Global step %d >= --num_train_steps=%d: nothing "
                         "to train.", step, config.num_train_steps)
            if step > 0:
                self.save_checkpoint()
            return {"global_step": step}

        iterator = self.make_train_iterator()
        logging.info("Training %s from step %d to %d: %s.", self.task.name,
                     step, config.num_train_steps, self._describe_setup())
        progress = progress_lib.Progress(
            f"train {self.task.name}", total=config.num_train_steps,
            unit="step", initial=step,
            every_seconds=config.log_every_seconds if self.is_chief else 0,
            first_interval_note="tracing included")
        with (self._stop_request if self._one_process
              else contextlib.nullcontext()):
            progress.start("tracing and compiling the training step (the "
                           "first step includes it)")
            try:
                last_logged = self._train_until_done(iterator, progress)
            finally:
                progress.close()
        # Destroying the iterator waits for its pipeline to wind down
        # (seconds; tens of seconds with a large input), which used to be
        # a silence between the last training line and the first
        # evaluation line. It is kept until the next phase has said what
        # it does (`release_train_input`).
        self._finished_train_input = iterator
        return last_logged

    def release_train_input(self):
        """Drops the input iterator of a finished `train`.

        Evaluation and prediction call it once they have logged their start
        (the wind-down then happens under their "tracing" line); a program
        calls it after its last phase.
        """
        self._finished_train_input = None

    def _describe_setup(self):
        """Replicas, batch, precision, attention (when not Google's) and
        what XLA compiles, in words."""
        config = self.config
        xla = self.engine.compilation_in_words()
        accumulation = (f" in {config.num_accumulation_steps} micro-batches"
                        if config.num_accumulation_steps > 1 else "")
        attention = ("" if config.attention == GOOGLE_ATTENTION else
                     f", {config.attention} attention")
        return (f"{self.num_replicas} replicas, global batch "
                f"{config.train_batch_size} "
                f"({self.per_replica_train_batch_size} per replica"
                f"{accumulation}), {config.dtype}{attention}, {xla}")

    def _steps_until_report(self, progress, seconds_per_step):
        """Steps that fit before the next time-based report is due."""
        seconds = progress.seconds_until_due()
        if not math.isfinite(seconds) or seconds_per_step is None:
            return None
        return max(1, int(seconds / seconds_per_step))

    def _train_until_done(self, iterator, progress):
        """The loop of `train`: calls, logs, checkpoints, stop requests."""
        config = self.config
        step = self.global_step
        next_log = _next_multiple(step, config.log_steps)
        next_save = _next_multiple(step, config.save_checkpoints_steps)
        window_totals = {k: 0.0 for k in self._metric_keys()}
        window_steps = 0
        # Throughput leaves out the first call, which traces (and with XLA
        # compiles) the loop, unless there is nothing else to measure.
        timed_steps, timed_seconds = 0, 0.0
        first_call_steps, first_call_seconds = 0, 0.0
        seconds_per_step = None
        last_logged = {"global_step": step}
        writer = self._summary_writer()
        while step < config.num_train_steps:
            # The first call runs one step: its end shows how long tracing
            # took, and progress is reported right after it.
            num_steps = 1 if seconds_per_step is None else min(
                config.iterations_per_loop, next_log - step,
                next_save - step, config.num_train_steps - step)
            fitting = self._steps_until_report(progress, seconds_per_step)
            if fitting is not None and self._one_process:
                num_steps = min(num_steps, fitting)
            call_start = time.time()
            totals, steps_run, last_loss = self.train_steps(iterator,
                                                            num_steps)
            call_seconds = time.time() - call_start
            if self._stop_request.requested:
                self._stop_request.reached_boundary()
            if not math.isfinite(last_loss):
                latest = self.checkpoint_manager.latest_checkpoint
                raise NonFiniteLossError(
                    f"training loss is {last_loss} at step "
                    f"{step + steps_run}; stopping without saving. The last "
                    f"good checkpoint is "
                    f"{latest or '(none: no checkpoint was written yet)'}. "
                    "Lower --learning_rate, or check the input data.")
            if seconds_per_step is None:
                if steps_run:
                    logging.info("First %d step%s, including tracing, took "
                                 "%.1f s.", steps_run,
                                 "" if steps_run == 1 else "s", call_seconds)
                first_call_steps, first_call_seconds = (steps_run,
                                                        call_seconds)
            else:
                timed_steps += steps_run
                timed_seconds += call_seconds
            if steps_run:
                seconds_per_step = call_seconds / steps_run
            for key, value in totals.items():
                window_totals[key] += float(value)
            window_steps += steps_run
            step = self.global_step
            finished = step >= config.num_train_steps
            stopping = self._stop_request.requested
            if step >= next_log or finished:
                if not timed_steps:
                    timed_steps, timed_seconds = (first_call_steps,
                                                  first_call_seconds)
                last_logged = self._log_window(
                    step, window_totals, window_steps, timed_steps,
                    timed_seconds, writer)
                progress.update(step)
                progress.reported_elsewhere()
                window_totals = {k: 0.0 for k in window_totals}
                window_steps = 0
                timed_steps, timed_seconds = 0, 0.0
                first_call_steps, first_call_seconds = 0, 0.0
                next_log = _next_multiple(step, config.log_steps)
            elif window_steps:
                progress.update(step, note=(
                    f"loss {window_totals['loss'] / window_steps:.4f}"))
            if step >= next_save or finished or stopping:
                self.save_checkpoint()
                next_save = _next_multiple(step, config.save_checkpoints_steps)
            if stopping:
                writer.flush()
                latest = self.checkpoint_manager.latest_checkpoint
                raise TrainingInterrupted(
                    f"received {self._stop_request.signal_name} at step "
                    f"{step}/{config.num_train_steps}: saved {latest}; run "
                    "the same command to resume from it.",
                    self._stop_request.signal_number)
        writer.flush()
        return last_logged

    def _log_window(self, step, totals, num_steps, timed_steps,
                    timed_seconds, writer):
        config = self.config
        metrics = self.task.aggregate_metrics(
            {k: totals[k] for k in self.task.metric_names})
        metrics = {training_metric_name(k): v for k, v in metrics.items()}
        loss = totals["loss"] / max(num_steps, 1)
        learning_rate = self._learning_rate()
        steps_per_second = (timed_steps / timed_seconds
                            if timed_seconds > 0 else float("nan"))
        examples_per_second = steps_per_second * config.train_batch_size
        remaining = config.num_train_steps - step
        eta = (remaining / steps_per_second
               if steps_per_second > 0 else float("nan"))
        metric_text = "".join(f", {k} = {v:.4f}"
                              for k, v in sorted(metrics.items()))
        logging.info(
            "step %d/%d: loss = %.4f%s, learning_rate = %.4g, "
            "examples/s = %.1f, ETA %s", step, config.num_train_steps, loss,
            metric_text, learning_rate, examples_per_second,
            progress_lib.format_duration(eta))
        with writer.as_default(step=step):
            summaries.scalar("loss", loss)
            summaries.scalar("learning_rate", learning_rate)
            if math.isfinite(steps_per_second):
                summaries.scalar("examples_per_second", examples_per_second)
                summaries.scalar("global_step/sec", steps_per_second)
            for name, value in metrics.items():
                summaries.scalar(name, value)
        return {"global_step": step, "loss": loss,
                "learning_rate": learning_rate,
                "examples_per_second": examples_per_second, **metrics}

    # -- evaluation ----------------------------------------------------------

    def evaluate(self):
        """Evaluates on up to `max_eval_steps` batches of the task's eval input.

        Writes `<output_dir>/eval_results.txt` (chief only) and eval
        summaries under `<output_dir>/eval`.

        Returns:
          Google's result dict: `global_step` (np.int64), `loss` (the mean
          over batches of the batch loss) and the task's metrics
          (np.float32).
        """
        config = self.config
        per_replica_batch_size = distribution.per_replica_batch_size(
            config.eval_batch_size, self.num_replicas, "eval_batch_size")
        # The total is --max_eval_steps when set: the input may be shorter.
        progress = progress_lib.Progress(
            f"evaluate {self.task.name}", total=config.max_eval_steps,
            unit="batch",
            every_seconds=config.log_every_seconds if self.is_chief else 0,
            first_interval_note="tracing included")
        progress.start("preparing the input and tracing the evaluation step "
                       "(the first batch includes it)")
        self.release_train_input()
        dataset = self.engine.eval_input(
            lambda batch_size, context: self.task.build_inputs(
                modes.EVAL, batch_size, context), per_replica_batch_size)
        totals = {k: 0.0 for k in self._metric_keys()}
        num_batches = 0
        state = None
        iterator = iter(dataset)
        while (config.max_eval_steps is None
               or num_batches < config.max_eval_steps):
            try:
                features = next(iterator)
            except StopIteration:
                break
            sums, kept = self.engine.eval_step(features, self._keep_in_eval)
            for key, value in sums.items():
                totals[key] += float(value)
            if kept:
                state = self.task.aggregate_predictions(
                    state, {k: np.asarray(v) for k, v in kept.items()},
                    modes.EVAL)
            num_batches += 1
            progress.update(num_batches)
        progress.total = num_batches  # the input may end before the limit
        progress.close()
        if not num_batches:
            raise ValueError(
                f"the {self.task.name} evaluation input yielded no batch "
                f"(fewer examples than --eval_batch_size="
                f"{config.eval_batch_size}?)")
        step = self.global_step
        results = {"global_step": np.int64(step),
                   "loss": np.float32(totals["loss"] / num_batches)}
        metrics = self.task.aggregate_metrics(
            {k: totals[k] for k in self.task.metric_names})
        metrics.update(self.task.reduce_predictions(state, modes.EVAL))
        results.update({k: np.float32(v) for k, v in metrics.items()})
        self._report_eval_results(results, f"{num_batches} batches")
        if self.is_chief:
            writer = self._summary_writer("eval")
            with writer.as_default(step=step):
                for key, value in results.items():
                    if key != "global_step":
                        summaries.scalar(key, float(value))
            writer.flush()
        return results

    def _report_eval_results(self, results, description):
        """Logs the results and writes `eval_results.txt` (chief only)."""
        logging.info("***** Eval results (%s) *****", description)
        for key in sorted(results):
            logging.info("  %s = %s", key, results[key])
        if self.is_chief:
            tf.io.gfile.makedirs(self.config.output_dir)
            write_eval_results(
                os.path.join(self.config.output_dir, EVAL_RESULTS_FILE),
                results)

    # -- prediction ----------------------------------------------------------

    def predict(self, examples, global_batch_size, pad_to_full_batches=False,
                num_examples=None, mode=modes.PREDICT):
        """The task's `prediction_outputs` of every example, in input order.

        The one prediction loop (`bert_tf.training.prediction`) run by the
        engine on this trainer's model: correct under one device, mirrored
        replicas, several workers and TPUs, streaming batch by batch.

        Args:
          examples: an unbatched `tf.data.Dataset` of feature dicts, e.g.
            `task.prediction_inputs(mode)`.
          global_batch_size: examples per step, over all replicas.
          pad_to_full_batches: fill the last batch with rows that are
            dropped again (TPUs need full batches).
          num_examples: when given, the count the set must have.
          mode: passed to `prediction_outputs`.

        Yields:
          Dicts of numpy arrays, one row per example, in input order.
        """
        return self.engine.predict(
            self._predict_fn(mode), examples, global_batch_size,
            pad_to_full_batches=pad_to_full_batches,
            num_examples=num_examples, description=f"{mode} records")

    def _predict_fn(self, mode):
        """The function `predict` runs in `mode`: the task's
        `prediction_outputs` of a batch. One function object per mode, so
        the engine's compiled step is reused across calls."""
        predict_fn = self._predict_fns.get(mode)
        if predict_fn is None:
            task, model = self.task, self.model

            def predict_fn(features):
                outputs = task.forward(model, features, training=False)
                return self._prediction_outputs(features, outputs, mode)

            self._predict_fns[mode] = predict_fn
        return predict_fn

    def run_predictions(self, mode, global_batch_size, initial_state=None,
                        pad_to_full_batches=False, num_examples=None):
        """Predicts a set, then lets the task aggregate, score and write it.

        `predict` over `task.prediction_inputs(mode)`; every batch is folded
        into the task's state (`aggregate_predictions`), which is reduced
        to metrics (`reduce_predictions`) and written to the task's files
        (`write_predictions`, chief only). Metrics, if there are any, are
        logged and written to `eval_results.txt` (chief only).

        Args:
          mode: `modes.EVAL` or `modes.PREDICT`.
          global_batch_size: examples per step, over all replicas.
          initial_state: the state `aggregate_predictions` starts from.
          pad_to_full_batches: see `predict`.
          num_examples: see `predict`.

        Returns:
          `(state, metrics)`: the aggregated state and the metrics dict.
        """
        task = self.task
        state = initial_state
        for outputs in self.predict(
                task.prediction_inputs(mode), global_batch_size,
                pad_to_full_batches=pad_to_full_batches,
                num_examples=num_examples, mode=mode):
            self.release_train_input()  # Its start is logged: see `train`.
            state = task.aggregate_predictions(state, outputs, mode)
        metrics = task.reduce_predictions(state, mode)
        if self.is_chief:
            tf.io.gfile.makedirs(self.config.output_dir)
            for path in task.write_predictions(state, self.config.output_dir,
                                               mode):
                logging.info("Wrote %s", path)
        if metrics:
            self._report_eval_results(metrics, f"{task.name} {mode}")
        return state, metrics
