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

On the JAX backend (`KERAS_BACKEND=jax`) `multi_worker_mirrored` builds no
TensorFlow strategy: `get_distribution_strategy` joins the processes of one
`jax.distributed` job instead, configured from the same `TF_CONFIG` (the
coordinator is the chief, else worker 0; every chief and worker is a
process), and returns a `JaxProcesses` that stands where the strategy
stands (`num_replicas_in_sync`, `is_chief`).
"""

import os
import socket
import time
import urllib.parse

from absl import logging

from bert_tf import file_io

STRATEGY_NAMES = (
    "default", "one_device", "mirrored", "multi_worker_mirrored", "tpu")


class DistributionError(ValueError):
    """A strategy cannot be built from the given flags or environment."""


class JaxProcesses:
    """`multi_worker_mirrored` on the JAX backend: the processes of one
    `jax.distributed` job, data parallel over the devices of all of them.

    What the trainer and the runners ask a `tf.distribute.Strategy`, it
    answers: how many replicas a global batch is split over, and whether
    this process writes checkpoints and files (`is_chief`). The JAX engine
    runs the steps (`bert_tf.training.engines.jax_engine`).

    Attributes:
      process_index: this process's number, 0 (the chief) to
        `num_processes - 1`.
      num_processes: the processes of the job.
      num_replicas_in_sync: the devices of every process together.
    """

    def __init__(self, process_index, num_processes, num_replicas_in_sync):
        """Args: see the class's attributes."""
        self.process_index = process_index
        self.num_processes = num_processes
        self.num_replicas_in_sync = num_replicas_in_sync

    def __repr__(self):
        return (f"JaxProcesses(process {self.process_index} of "
                f"{self.num_processes}, {self.num_replicas_in_sync} devices)")


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
      A `tf.distribute.Strategy`; on the JAX backend, for
      `multi_worker_mirrored`, a `JaxProcesses` (`join_jax_processes`).

    Raises:
      DistributionError: naming the flag (or `TF_CONFIG`) that cannot work.
    """
    name = resolve_strategy_name(distribution_strategy, use_tpu)
    if name == "multi_worker_mirrored":
        from bert_tf import backend  # Imports keras: not for --help.
        if backend.name() == backend.JAX:
            return join_jax_processes()
    import tensorflow as tf
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


def _read_tf_config():
    """The parsed `TF_CONFIG` environment variable; None when unset.

    Raises:
      DistributionError: it is not JSON, or has no `cluster` entry.
    """
    tf_config = os.environ.get("TF_CONFIG")
    if not tf_config:
        return None
    parsed = file_io.parse_json(
        tf_config, "--distribution_strategy=multi_worker_mirrored: the "
        "TF_CONFIG environment variable", DistributionError)
    if not isinstance(parsed, dict) or "cluster" not in parsed:
        raise DistributionError(
            "--distribution_strategy=multi_worker_mirrored: TF_CONFIG has "
            "no 'cluster' entry listing the workers")
    return parsed


def _multi_worker_mirrored_strategy():
    import tensorflow as tf
    if _read_tf_config() is None:
        logging.warning(
            "--distribution_strategy=multi_worker_mirrored without TF_CONFIG: "
            "running as a single worker")
    return tf.distribute.MultiWorkerMirroredStrategy()


# The jobs of a TF_CONFIG cluster whose tasks train, in process order: the
# chief (at most one) is process 0, then the workers.
_TRAINING_JOBS = ("chief", "worker")
_JAX_PROBLEM = ("--distribution_strategy=multi_worker_mirrored on "
                "KERAS_BACKEND=jax")


def _check_address(job, index, address):
    """Refuses a cluster address that is not `host:port`."""
    host, _, port = str(address).rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise DistributionError(
            f"{_JAX_PROBLEM}: TF_CONFIG cluster {job}[{index}] is "
            f"{address!r}, not host:port")


def jax_cluster(tf_config):
    """Where a process of a `jax.distributed` job finds the others.

    The cluster is `TF_CONFIG`'s, as TensorFlow's multi-worker strategy reads
    it: every `chief` and `worker` task is a process; process 0, the chief
    (the `chief` task, else `worker` 0), runs the coordinator at its own
    address; the workers follow in their order.

    Args:
      tf_config: the parsed `TF_CONFIG` (a dict with `cluster` and `task`).

    Returns:
      `(coordinator_address, num_processes, process_id)`, the arguments of
      `jax.distributed.initialize`.

    Raises:
      DistributionError: one line naming what in `TF_CONFIG` cannot work.
    """
    cluster = tf_config.get("cluster")
    if not isinstance(cluster, dict):
        raise DistributionError(
            f"{_JAX_PROBLEM}: TF_CONFIG's 'cluster' must map job names "
            f"(chief, worker) to lists of host:port addresses, not "
            f"{cluster!r:.80}")
    for job, addresses in cluster.items():
        if job not in _TRAINING_JOBS:
            raise DistributionError(
                f"{_JAX_PROBLEM}: TF_CONFIG's cluster lists the job {job!r}; "
                "on JAX every process trains: list them under 'chief' and "
                "'worker'")
        if not isinstance(addresses, list):
            raise DistributionError(
                f"{_JAX_PROBLEM}: TF_CONFIG cluster {job} must be a list of "
                f"host:port addresses, not {addresses!r:.80}")
        for index, address in enumerate(addresses):
            _check_address(job, index, address)
    if len(cluster.get("chief", [])) > 1:
        raise DistributionError(
            f"{_JAX_PROBLEM}: TF_CONFIG's cluster lists "
            f"{len(cluster['chief'])} chiefs; there is at most one")
    processes = [(job, index) for job in _TRAINING_JOBS
                 for index in range(len(cluster.get(job, [])))]
    if not processes:
        raise DistributionError(
            f"{_JAX_PROBLEM}: TF_CONFIG's cluster lists no chief or worker")
    task = tf_config.get("task")
    if not isinstance(task, dict) or "type" not in task:
        raise DistributionError(
            f"{_JAX_PROBLEM}: TF_CONFIG has no 'task' entry saying which "
            'process this is, e.g. "task": {"type": "worker", "index": 0}')
    job, index = task["type"], task.get("index", 0)
    if (job, index) not in processes:
        raise DistributionError(
            f"{_JAX_PROBLEM}: TF_CONFIG's task {job}[{index!r}] is not in "
            f"its cluster ({', '.join(f'{j}[{i}]' for j, i in processes)})")
    first_job, _ = processes[0]
    return (cluster[first_job][0], len(processes),
            processes.index((job, index)))


# How long a process waits for the job's coordinator (and the coordinator
# for the others): jax.distributed's own default.
JAX_JOIN_TIMEOUT_SECONDS = 300


def join_jax_processes(timeout_seconds=JAX_JOIN_TIMEOUT_SECONDS):
    """`multi_worker_mirrored` on JAX: joins this process to the job.

    Calls `jax.distributed.initialize` with `jax_cluster(TF_CONFIG)`; it
    must come before any JAX computation (a runner asks for its strategy
    first). Without `TF_CONFIG`, JAX's own detection of the cluster is used
    (Cloud TPU pod slices, SLURM, Open MPI, Kubernetes); with none found,
    this process runs alone on its devices, as TensorFlow's strategy runs
    a single worker. The processes then agree on Keras' random seed (the
    one they draw from without `--seed`), so that every process starts
    from the same weights and reads its input in the same order.

    Args:
      timeout_seconds: how long a process other than the coordinator waits
        for the coordinator's address to answer (the processes of a job
        may start in any order), and the coordinator for the others.

    Returns:
      A `JaxProcesses`.

    Raises:
      DistributionError: one line naming what in `TF_CONFIG` cannot work, or
        why this process could not join the job (a coordinator that does
        not answer, a port in use, JAX already computing).
    """
    import jax
    tf_config = _read_tf_config()
    if tf_config is None:
        arguments = {}
    else:
        coordinator, num_processes, process_id = jax_cluster(tf_config)
        arguments = {"coordinator_address": coordinator,
                     "num_processes": num_processes,
                     "process_id": process_id,
                     "initialization_timeout": timeout_seconds}
    if jax.distributed.is_initialized():
        # A second run in this Python process (bert_tf.finetune): the job
        # is joined once.
        if arguments and (jax.process_count(), jax.process_index()) != (
                arguments["num_processes"], arguments["process_id"]):
            raise DistributionError(
                f"{_JAX_PROBLEM}: this Python process already runs as "
                f"process {jax.process_index()} of {jax.process_count()}, "
                f"TF_CONFIG now says {arguments['process_id']} of "
                f"{arguments['num_processes']}")
    else:
        where = ""
        if arguments:
            where = (f"process {arguments['process_id']} of "
                     f"{arguments['num_processes']}, coordinator "
                     f"{arguments['coordinator_address']}")
            logging.info("Joining the JAX job as %s.", where)
            if arguments["process_id"]:
                # JAX ends the process (no exception) when the coordinator
                # does not answer in time: wait for it here, where a clear
                # error can be raised.
                _wait_for_coordinator(arguments["coordinator_address"],
                                      timeout_seconds, where)
        try:
            jax.distributed.initialize(**arguments)
        except ValueError as error:
            if arguments:
                raise DistributionError(
                    f"{_JAX_PROBLEM}: {_first_line(error)}") from error
            # No TF_CONFIG and no cluster JAX knows of.
            logging.warning(
                "--distribution_strategy=multi_worker_mirrored without "
                "TF_CONFIG: running as a single process")
        except Exception as error:  # JaxRuntimeError, RuntimeError, ...
            hint = ""
            if arguments and not arguments["process_id"]:
                hint = (" (process 0 runs the coordinator at its TF_CONFIG "
                        "address: is that port free on this machine?)")
            raise DistributionError(
                f"{_JAX_PROBLEM}: could not join the job"
                f"{f' ({where})' if where else ''}: {type(error).__name__}: "
                f"{_first_line(error)}{hint}") from error
        if jax.process_count() > 1:
            _agree_on_random_seed()
    logging.info("JAX process %d of %d; %d devices in all, %d here",
                 jax.process_index(), jax.process_count(),
                 jax.device_count(), jax.local_device_count())
    return JaxProcesses(jax.process_index(), jax.process_count(),
                        jax.device_count())


def _wait_for_coordinator(address, timeout_seconds, where):
    """Returns once `address` (host:port) accepts a connection.

    Raises:
      DistributionError: it did not within `timeout_seconds`.
    """
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    deadline = time.monotonic() + timeout_seconds
    while True:
        try:
            with socket.create_connection(
                    (host, int(port)),
                    timeout=max(0.1, min(5.0, deadline - time.monotonic()))):
                return
        except OSError as error:
            if time.monotonic() >= deadline:
                raise DistributionError(
                    f"{_JAX_PROBLEM}: the coordinator {address} (TF_CONFIG's "
                    f"chief, else worker 0) did not answer within "
                    f"{timeout_seconds:g} s ({where}): "
                    f"{error.strerror or error}") from error
        time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))


def _first_line(error):
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


def _agree_on_random_seed():
    """Seeds Keras (and Python, NumPy, TensorFlow) alike in every process:
    process 0's draw. `--seed` (set after the strategy) replaces it."""
    import random

    import keras
    import numpy as np
    from jax.experimental import multihost_utils
    seed = multihost_utils.broadcast_one_to_all(
        np.uint32(random.SystemRandom().randrange(2 ** 31)))
    keras.utils.set_random_seed(int(seed))


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


def wait_for_every_process(strategy, name):
    """Returns once every process of a JAX job has called it with `name`.

    A barrier for what one process must finish before the others go on;
    nothing to wait for with one process or a `tf.distribute.Strategy`.

    Args:
      strategy: a `tf.distribute.Strategy` or a `JaxProcesses`.
      name: the barrier's name, the same in every process.
    """
    if isinstance(strategy, JaxProcesses) and strategy.num_processes > 1:
        from jax.experimental import multihost_utils
        multihost_utils.sync_global_devices(name)


def is_chief(strategy):
    """Whether this process writes checkpoints, summaries and results.

    Args:
      strategy: a `tf.distribute.Strategy` or a `JaxProcesses`.
    """
    if isinstance(strategy, JaxProcesses):
        return strategy.process_index == 0
    return bool(getattr(strategy.extended, "should_checkpoint", True))
