"""Which Keras backend bert_tf runs on, and which devices it computes on.

The backend is Keras' (`KERAS_BACKEND`, TensorFlow by default), chosen
before `keras` is first imported. Every part of the package that behaves
differently per backend asks here, so that there is one answer:

    from bert_tf import backend
    if backend.name() == backend.TENSORFLOW:
        ...

The trainer does not ask at all: it runs its steps through the engine of
the backend (`bert_tf.training.engines.create`).
"""

import keras

TENSORFLOW = "tensorflow"
JAX = "jax"


def name():
    """The Keras backend this process runs on.

    Returns:
      Its name as Keras spells it: `TENSORFLOW`, `JAX`, or another Keras
      backend's name ("torch", "numpy").
    """
    return keras.backend.backend()


def devices():
    """The devices the backend computes on.

    Returns:
      Keras' names of them (`keras.distribution.list_devices`), e.g.
      `["gpu:0", "gpu:1"]`, or `["cpu:0"]` on a machine without
      accelerators: the accelerators when there are any, else the CPUs
      (with `XLA_FLAGS=--xla_force_host_platform_device_count=N`, N CPUs on
      JAX). Those of this process, or, on JAX in a `jax.distributed` job
      (`--distribution_strategy=multi_worker_mirrored`), those of every
      process of the job.
    """
    return list(keras.distribution.list_devices())
