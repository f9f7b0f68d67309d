"""`TrainerConfig`: everything about a training run that is not the task.

Its own module, without TensorFlow: the engines read it, and the JAX engine
runs where TensorFlow is not installed (`benchmarks/gpu_suite_jax.py`).
`bert_tf.training.trainer.TrainerConfig` is the same class.
"""

import dataclasses
from typing import Optional, Tuple

from bert_tf import config as bert_config_lib
from bert_tf.data import sequence_lengths
from bert_tf.training import precision


@dataclasses.dataclass
class TrainerConfig:
    """Everything about a run that is not the task (field = flag of its name).

    Attributes:
      output_dir: checkpoints, summaries and `eval_results.txt` go here.
      train_batch_size: global examples per optimizer update.
      eval_batch_size: global examples per evaluation batch.
      num_train_steps: optimizer updates to train for (in total, counting
        those of a resumed run).
      save_checkpoints_steps: a checkpoint every this many steps (and at the
        end).
      iterations_per_loop: steps per host call (per `tf.function` call).
      max_eval_steps: evaluation batches at most; None for the whole input.
      num_accumulation_steps: micro-batches per update; each replica runs
        `train_batch_size / replicas / num_accumulation_steps` examples at a
        time and sums the gradients.
      keep_checkpoint_max: checkpoints to keep (0 keeps all).
      log_steps: log and write summaries every this many steps.
      log_every_seconds: also report progress (step, speed, ETA, running
        loss) when this many seconds passed without a log line; 0 reports
        on `log_steps` only. Calls into the device are kept short enough
        for it.
      dtype: one of `precision.DTYPES`.
      enable_xla: compile with XLA: the whole step on one device, the
        forward and backward pass with several replicas.
      seed: with a seed (`--seed`), a resumed run is exact: it continues
        the input where the checkpoint's step left it (the seeded input
        pipeline skips what was consumed) and draws the dropout masks the
        uninterrupted run draws (the generator's state is in the
        checkpoint).
        The task's input pipeline must be seeded with the same seed.
      pad_to_multiple_of: every batch (training, evaluation, prediction)
        runs at its longest real sequence rounded up to a multiple of this
        (`bert_tf.data.sequence_lengths`); `max_seq_length` or more runs every
        batch at the full length, as Google's code does.
      length_buckets: the lengths batches may run at (sorted); empty: any
        multiple of `pad_to_multiple_of`. Under `enable_xla` and on TPUs
        batches always run at buckets (`sequence_lengths.default_buckets`
        when none are given), one compiled program per bucket.
      group_by_length: training batches of examples of similar lengths
        (the shuffle regrouped in windows of 50 batches): faster, but other
        batches than the plain shuffle's.
      attention: how the model's self-attention is computed, one of
        `bert_tf.config.ATTENTION_CHOICES`: "google" (Google's), or
        "fused" (one `keras.ops.dot_product_attention` call, a fused
        kernel where the backend has one; no attention-probability
        dropout, so a model with that dropout is refused for training).

    The initial weights (`--init_checkpoint`) are the task's
    (`Task.init_checkpoint`).
    """
    output_dir: str
    train_batch_size: int = 32
    eval_batch_size: int = 8
    num_train_steps: int = 100000
    save_checkpoints_steps: int = 1000
    iterations_per_loop: int = 1000
    max_eval_steps: Optional[int] = 100
    num_accumulation_steps: int = 1
    keep_checkpoint_max: int = 5
    log_steps: int = 100
    log_every_seconds: float = 30.0
    dtype: str = "float32"
    enable_xla: bool = False
    seed: Optional[int] = None
    pad_to_multiple_of: int = sequence_lengths.DEFAULT_PAD_TO_MULTIPLE_OF
    length_buckets: Tuple[int, ...] = ()
    group_by_length: bool = False
    attention: str = bert_config_lib.GOOGLE_ATTENTION

    def length_policy(self):
        """The `sequence_lengths.LengthPolicy` of these settings."""
        return sequence_lengths.LengthPolicy(
            pad_to_multiple_of=self.pad_to_multiple_of,
            buckets=tuple(self.length_buckets),
            group_by_length=self.group_by_length,
            static_shapes=self.enable_xla)

    def validate(self):
        """Raises ValueError naming the first flag whose value cannot work."""
        if not self.output_dir:
            raise ValueError("--output_dir is required")
        for name in ("train_batch_size", "eval_batch_size",
                     "save_checkpoints_steps", "iterations_per_loop",
                     "num_accumulation_steps", "log_steps"):
            value = getattr(self, name)
            if (isinstance(value, bool) or not isinstance(value, int)
                    or value <= 0):
                raise ValueError(
                    f"--{name}={value!r} must be a positive integer")
        if self.num_train_steps < 0:
            raise ValueError(
                f"--num_train_steps={self.num_train_steps} must be >= 0")
        if self.max_eval_steps is not None and self.max_eval_steps <= 0:
            raise ValueError(
                f"--max_eval_steps={self.max_eval_steps} must be positive")
        if (isinstance(self.log_every_seconds, bool)
                or not isinstance(self.log_every_seconds, (int, float))
                or not self.log_every_seconds >= 0):
            raise ValueError(f"--log_every_seconds={self.log_every_seconds!r}"
                             " must be >= 0")
        if self.keep_checkpoint_max < 0:
            raise ValueError(
                f"--keep_checkpoint_max={self.keep_checkpoint_max} must be "
                ">= 0")
        precision.validate_dtype(self.dtype)
        if self.attention not in bert_config_lib.ATTENTION_CHOICES:
            raise ValueError(
                f"--attention={self.attention!r} must be one of "
                f"{', '.join(bert_config_lib.ATTENTION_CHOICES)}")
        self.length_policy().validate()
