"""A training run's hold on its `--output_dir`
(`bert_tf.training.run_lock`)."""

import functools
import os

from bert_tf.training import distribution


def lock_output_dir(config, strategy):
    """Takes `--output_dir`'s lock for a training run (chief only), before
    the runner writes anything there; removes stale temporary files (the
    other processes of a JAX job wait for that).

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
    # The other processes of a JAX job write their records only after that:
    # in a directory several machines share, the chief cannot tell their
    # temporary files from a dead run's.
    distribution.wait_for_every_process(strategy, "output_dir cleaned")


def releases_output_dir(recipe_run):
    """Decorates a task recipe's `run(config, ...)`: the lock on
    `config.output_dir` that the run takes (`start`, the `Trainer`) is
    released when it returns or fails, not when the Python process exits
    (a notebook's failed call would keep a command-line run out). A lock the
    caller held before stays held.
    """
    @functools.wraps(recipe_run)
    def run(config, *args, **kwargs):
        from bert_tf.training import run_lock
        output_dir = getattr(config, "output_dir", None)
        held = (not isinstance(output_dir, (str, os.PathLike))
                or run_lock.holds_output_dir(output_dir))
        try:
            return recipe_run(config, *args, **kwargs)
        finally:
            if not held:
                run_lock.release_output_dir(output_dir)
    return run
