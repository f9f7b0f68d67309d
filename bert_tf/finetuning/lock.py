"""A training run's hold on its `--output_dir`
(`bert_tf.training.run_lock`)."""

from bert_tf.training import distribution


def lock_output_dir(config, strategy):
    """Takes `--output_dir`'s lock for a training run (chief only), before
    the runner writes anything there; removes stale temporary files.

    See `bert_tf.training.run_lock`. The `Trainer` takes the same lock (the
    lock is reentrant within a process); runners take it earlier because
    they write feature files first.

    Raises:
      run_lock.OutputDirLockedError (a ValueError): another run holds it.
    """
    from bert_tf.training import run_lock
    is_chief = distribution.is_chief(strategy)
    run_lock.lock_output_dir(config.output_dir, is_chief)
    if is_chief:
        run_lock.remove_stale_temporary_files(config.output_dir)
