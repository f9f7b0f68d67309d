"""A run's settings turned into the library's objects: the distribution
strategy, the seed, the `TrainerConfig` and the optimizer."""

from bert_tf.finetuning import checks
from bert_tf.finetuning import fields
from bert_tf.training import distribution
from bert_tf.training import precision


def make_strategy(config):
    """The `tf.distribute.Strategy` of `--distribution_strategy`/TPU flags.

    Also sets the process's TF32 mode from `--allow_tf32` (off by default):
    every runner asks for its strategy before it builds a model.
    """
    precision.set_tensor_float_32(config.allow_tf32)
    return distribution.get_distribution_strategy(
        config.distribution_strategy, **fields.values(config, (
            "use_tpu", "tpu_name", "tpu_zone", "gcp_project", "master",
            "num_tpu_cores")))


def set_seed(config):
    """With `--seed`: a reproducible run (`make_deterministic`)."""
    if config.seed is not None:
        make_deterministic(config.seed)


def make_deterministic(seed):
    """Makes this process give the same numbers every time for `seed`.

    Seeds Python, NumPy, TensorFlow and Keras, and turns on TensorFlow's op
    determinism: without it, a seeded run still differs from run to run
    (parallel reductions on GPUs and in `tf.data`'s parallel map, whose
    order depends on what else the machine runs). Thread counts need no
    setting: TensorFlow's CPU kernels split their work by the size of the
    thread pool, which depends on the machine, not on its load; so the
    guarantee is "same machine, same numbers", not across machines.
    The cost, measured by benchmarks/determinism.py, is small on CPU;
    GPU kernels without a deterministic version raise an error naming the
    op instead of running nondeterministically.

    Args:
      seed: the `--seed`.
    """
    import keras
    import tensorflow as tf
    keras.utils.set_random_seed(seed)
    tf.config.experimental.enable_op_determinism()


# The `TrainerConfig` fields a run's config sets as they are.
_TRAINER_SETTINGS = (
    "group_by_length", "output_dir", "train_batch_size", "eval_batch_size",
    "save_checkpoints_steps", "iterations_per_loop",
    "num_accumulation_steps", "keep_checkpoint_max", "log_steps",
    "log_every_seconds", "dtype", "enable_xla", "seed", "attention")


def make_trainer_config(config, *, num_train_steps, max_eval_steps=None):
    """A `TrainerConfig` from the shared settings.

    Args:
      config: a `RunConfig` (or parsed flags of the same names).
      num_train_steps: optimizer updates (a runner computes it, e.g. from
        epochs for fine-tuning).
      max_eval_steps: evaluation batches at most; None for all.
    """
    from bert_tf.training.trainer import TrainerConfig
    pad_to_multiple_of, length_buckets = checks.length_settings(
        config)
    config = TrainerConfig(
        pad_to_multiple_of=pad_to_multiple_of,
        length_buckets=length_buckets,
        num_train_steps=num_train_steps,
        max_eval_steps=max_eval_steps,
        **fields.values(config, _TRAINER_SETTINGS))
    config.validate()
    return config


def make_optimizer_factory(config, *, num_train_steps, num_warmup_steps):
    """A zero-argument callable building `--optimizer` with Google's schedule.

    The trainer calls it inside the strategy's scope.
    """
    if num_warmup_steps < 0:
        raise ValueError(f"--num_warmup_steps={num_warmup_steps} must be >= 0")
    if config.learning_rate <= 0:
        raise ValueError(
            f"--learning_rate={config.learning_rate} must be positive")
    name = config.optimizer
    learning_rate = config.learning_rate

    def create():
        from bert_tf.training import optimization
        return optimization.create_optimizer(
            name, learning_rate, num_train_steps, num_warmup_steps)

    return create
