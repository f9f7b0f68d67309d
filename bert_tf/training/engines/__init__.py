"""One engine per Keras backend runs the trainer's steps (see `base.Engine`).

`create` gives the engine of the backend this process runs on
(`bert_tf.backend.name()`): `tensorflow_engine.TensorFlowEngine` (the
default) or `jax_engine.JaxEngine`, which train, evaluate and predict; on
other Keras backends (PyTorch) `eager_engine.EagerEngine`, which evaluates
and predicts.
"""

from bert_tf import backend


def create(task, config, strategy):
    """The engine of this process's backend for one `Trainer`.

    Args:
      task: a `bert_tf.tasks.base.Task`.
      config: a validated `TrainerConfig`.
      strategy: the `tf.distribute.Strategy` to run under (on JAX, or a
        `bert_tf.training.distribution.JaxProcesses`).

    Returns:
      An unbuilt `base.Engine` (call its `build`).

    Raises:
      ValueError: a setting the backend's engine cannot run (the message
        names the flag).
    """
    name = backend.name()
    # Imported here: the JAX engine imports jax, which a TensorFlow run
    # does not need.
    # pylint: disable=import-outside-toplevel
    if name == backend.TENSORFLOW:
        from bert_tf.training.engines import tensorflow_engine
        return tensorflow_engine.TensorFlowEngine(task, config, strategy)
    if name == backend.JAX:
        from bert_tf.training.engines import jax_engine
        return jax_engine.JaxEngine(task, config, strategy)
    from bert_tf.training.engines import eager_engine
    return eager_engine.EagerEngine(task, config, strategy)
