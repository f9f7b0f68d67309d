"""Distribution strategies: one flag picks how training is spread over devices.

`--distribution_strategy` names one of `STRATEGY_NAMES`; Google's TPU flags
(`--use_tpu`, `--tpu_name`, `--tpu_zone`, `--gcp_project`, `--master`,
`--num_tpu_cores`) keep their meaning and `--use_tpu` implies `tpu`.

| name                    | devices                                                |
|-------------------------|--------------------------------------------------------|
| `default`               | TensorFlow's default placement, no replication (the    |
|                         | original's single-device behaviour)                    |
| `one_device`            | exactly one device: the first GPU, else the CPU        |
| `mirrored`              | every local GPU (or, with no GPU, every logical CPU     |
|                         | device) holds a replica; gradients are all-reduced     |
| `multi_worker_mirrored` | the same across the machines that `TF_CONFIG` lists    |
| `tpu`                   | the Cloud TPU `--tpu_name` names (TPUStrategy)         |
"""

import os
import socket
import urllib.parse

from absl import logging

from bert_tf import file_io

STRATEGY_NAMES = (
    "default", "one_device", "mirrored", "multi_worker_mirrored", "tpu")


class DistributionError(ValueError):
    """A strategy cannot be built from the given flags or environment."""


def resolve_strategy_name(distribution_strategy, use_tpu=False):
    """The strategy to build, taking Google's `--use_tpu` into account.

    Args:
      distribution_strategy: one of `STRATEGY_NAMES`.
      use_tpu: Google's flag; implies `tpu`.

    Returns:
      One of `STRATEGY_NAMES`.

    Raises:
      DistributionError: an unknown name, or `--use_tpu` together with a
        strategy other than `default`/`tpu`.
    """
    name = (distribution_strategy or "default").lower()
    if name not in STRATEGY_NAMES:
        raise DistributionError(
            f"--distribution_strategy={distribution_strategy!r} is not one of "
            f"{', '.join(STRATEGY_NAMES)}")
    if use_tpu:
        if name not in ("default", "tpu"):
            raise DistributionError(
                f"--use_tpu=True contradicts --distribution_strategy={name}; "
                "drop one of them (--use_tpu implies "
                "--distribution_strategy=tpu)")
        return "tpu"
    return name


def get_distribution_strategy(distribution_strategy="default", *,
                              use_tpu=False, tpu_name=None, tpu_zone=None,
                              gcp_project=None, master=None,
                              num_tpu_cores=None):
    """Builds the `tf.distribute.Strategy` the flags ask for.

    Call this first thing in a program: `multi_worker_mirrored` and `tpu` must
    be set up before TensorFlow initializes its devices.

    Args:
      distribution_strategy: one of `STRATEGY_NAMES`.
      use_tpu: Google's flag; implies `tpu`.
      tpu_name: Cloud TPU name or `grpc://host:port` address (Google's
        `--tpu_name`). Required for `tpu` unless `master` is given.
      tpu_zone: GCE zone of the Cloud TPU (only used to look a name up).
      gcp_project: GCP project of the Cloud TPU (only used to look a name up).
      master: Google's `--master`: a `grpc://` TPU address, used when
        `tpu_name` is empty.
      num_tpu_cores: replicas to use on the TPU (Google's `--num_tpu_cores`);
        None or 0 uses every core, and so does a number larger than the TPU
        has (with a warning).

    Returns:
      A `tf.distribute.Strategy`.

    Raises:
      DistributionError: naming the flag (or `TF_CONFIG`) that cannot work.
    """
    import tensorflow as tf
    name = resolve_strategy_name(distribution_strategy, use_tpu)
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "one_device":
        gpus = tf.config.list_logical_devices("GPU")
        device = gpus[0].name if gpus else "/cpu:0"
        return tf.distribute.OneDeviceStrategy(device)
    if name == "mirrored":
        return _mirrored_strategy()
    if name == "multi_worker_mirrored":
        return _multi_worker_mirrored_strategy()
    return _tpu_strategy(tpu_name, tpu_zone, gcp_project, master,
                         num_tpu_cores)


def _mirrored_strategy():
    # With GPUs, MirroredStrategy's default (all GPUs) is what users want.
    # Without, it would fall back to one CPU; spreading over the logical CPU
    # devices instead is what makes `mirrored` testable on a CPU-only host
    # (tf.config.set_logical_device_configuration splits the CPU).
    import tensorflow as tf
    if tf.config.list_logical_devices("GPU"):
        return tf.distribute.MirroredStrategy()
    cpus = [device.name for device in tf.config.list_logical_devices("CPU")]
    return tf.distribute.MirroredStrategy(devices=cpus)


def _multi_worker_mirrored_strategy():
    import tensorflow as tf
    tf_config = os.environ.get("TF_CONFIG")
    if tf_config:
        parsed = file_io.parse_json(
            tf_config, "--distribution_strategy=multi_worker_mirrored: the "
            "TF_CONFIG environment variable", DistributionError)
        if not isinstance(parsed, dict) or "cluster" not in parsed:
            raise DistributionError(
                "--distribution_strategy=multi_worker_mirrored: TF_CONFIG has "
                "no 'cluster' entry listing the workers")
    else:
        logging.warning(
            "--distribution_strategy=multi_worker_mirrored without TF_CONFIG: "
            "running as a single worker")
    return tf.distribute.MultiWorkerMirroredStrategy()


def _check_grpc_address_reachable(address, timeout_seconds=10.0):
    """Fails fast (not hanging in TPU initialization) on a dead address."""
    parsed = urllib.parse.urlparse(address)
    if parsed.scheme != "grpc" or not parsed.hostname or not parsed.port:
        return
    try:
        with socket.create_connection((parsed.hostname, parsed.port),
                                      timeout=timeout_seconds):
            pass
    except OSError as error:
        raise DistributionError(
            f"no TPU is reachable at {address} (--tpu_name/--master): "
            f"{error.strerror or error}") from error


def _tpu_strategy(tpu_name, tpu_zone, gcp_project, master, num_tpu_cores):
    import tensorflow as tf
    tpu = tpu_name or master
    if not tpu:
        raise DistributionError(
            "--use_tpu/--distribution_strategy=tpu needs --tpu_name (a Cloud "
            "TPU name or a grpc://host:port address)")
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
            tpu=tpu, zone=tpu_zone, project=gcp_project)
        # A Cloud TPU name is looked up (GCP API) here, at the latest.
        master_address = resolver.master()
    except Exception as error:  # The resolver raises many unrelated types.
        raise DistributionError(
            f"cannot find the TPU --tpu_name={tpu!r} (--tpu_zone={tpu_zone!r}, "
            f"--gcp_project={gcp_project!r}): {type(error).__name__}: "
            f"{error}") from error
    _check_grpc_address_reachable(master_address)
    try:
        tf.config.experimental_connect_to_cluster(resolver)
        topology = tf.tpu.experimental.initialize_tpu_system(resolver)
    except Exception as error:
        raise DistributionError(
            f"cannot connect to the TPU --tpu_name={tpu!r} at "
            f"{master_address}: {type(error).__name__}: {error}") from error
    device_assignment = None
    available_cores = topology.num_tasks * topology.num_tpus_per_task
    if num_tpu_cores and num_tpu_cores > available_cores:
        # Google's default of 8 predates TPUs with fewer cores per host; a
        # command line written for a v3-8 still runs, on every core.
        logging.warning(
            "--num_tpu_cores=%d but the TPU %r has %d cores: using all %d",
            num_tpu_cores, tpu, available_cores, available_cores)
    elif num_tpu_cores and num_tpu_cores < available_cores:
        device_assignment = tf.tpu.experimental.DeviceAssignment.build(
            topology, num_replicas=num_tpu_cores)
    return tf.distribute.TPUStrategy(
        resolver, experimental_device_assignment=device_assignment)


def per_replica_batch_size(global_batch_size, num_replicas, flag_name,
                           num_accumulation_steps=1):
    """Splits a global batch evenly over replicas (and accumulation steps).

    Args:
      global_batch_size: examples per optimizer update (or per eval step).
      num_replicas: `strategy.num_replicas_in_sync`.
      flag_name: the flag that set `global_batch_size`, named in errors.
      num_accumulation_steps: micro-batches each replica's share is split into.

    Returns:
      Examples per replica per update: `global_batch_size // num_replicas`.

    Raises:
      ValueError: the batch does not split evenly; the message names the flag.
    """
    if global_batch_size <= 0:
        raise ValueError(
            f"--{flag_name}={global_batch_size} must be positive")
    divisor = num_replicas * num_accumulation_steps
    if global_batch_size % divisor:
        parts = f"{num_replicas} replicas"
        if num_accumulation_steps > 1:
            parts += (f" x {num_accumulation_steps} accumulation steps "
                      "(--num_accumulation_steps)")
        raise ValueError(
            f"--{flag_name}={global_batch_size} is not divisible by the "
            f"{parts}; use a multiple of {divisor}")
    return global_batch_size // num_replicas


def is_single_device(strategy):
    """Whether `strategy` runs one replica on one device (no collectives)."""
    import tensorflow as tf
    return (isinstance(strategy, tf.distribute.OneDeviceStrategy)
            or type(strategy).__name__.startswith(
                "_DefaultDistributionStrategy"))


def is_chief(strategy):
    """Whether this process writes checkpoints, summaries and results."""
    return bool(getattr(strategy.extended, "should_checkpoint", True))
