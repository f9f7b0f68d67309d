"""Distribution strategies: flag handling, and mirrored == one device.

The mirrored check needs two logical CPU devices, which must be configured
before TensorFlow initializes; it runs this file as a script in a fresh
process (`python tests/training/test_distribution.py mirrored OUT.json`).
"""

import importlib.util
import json
import os
import socket
import sys

import pytest

from bert_tf.training import distribution

from runner_harness import run_test_file_as_script



# -- flag handling (in-process, no devices involved) -------------------------

def test_use_tpu_implies_tpu_and_names_are_checked():
    assert distribution.resolve_strategy_name("default", use_tpu=True) == "tpu"
    assert distribution.resolve_strategy_name("tpu") == "tpu"
    assert distribution.resolve_strategy_name(None) == "default"
    with pytest.raises(distribution.DistributionError,
                       match="--distribution_strategy='gpus' is not one of"):
        distribution.resolve_strategy_name("gpus")
    with pytest.raises(distribution.DistributionError,
                       match="--use_tpu=True contradicts "
                             "--distribution_strategy=mirrored"):
        distribution.resolve_strategy_name("mirrored", use_tpu=True)


def test_tpu_without_a_name_asks_for_tpu_name():
    with pytest.raises(distribution.DistributionError,
                       match="needs --tpu_name"):
        distribution.get_distribution_strategy("default", use_tpu=True)


def test_tpu_name_that_cannot_be_resolved_is_named():
    # Without GCP credentials/metadata the Cloud TPU API lookup fails fast.
    with pytest.raises(distribution.DistributionError,
                       match=r"cannot find the TPU --tpu_name='no-such-tpu' "
                             r"\(--tpu_zone='us-central1-b'"):
        distribution.get_distribution_strategy(
            "tpu", tpu_name="no-such-tpu", tpu_zone="us-central1-b",
            gcp_project="some-project")


def test_unreachable_tpu_address_fails_fast():
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    address = f"grpc://127.0.0.1:{port}"
    with pytest.raises(distribution.DistributionError,
                       match=f"no TPU is reachable at {address} "
                             r"\(--tpu_name/--master\)"):
        distribution.get_distribution_strategy("tpu", tpu_name=address)


def test_multi_worker_with_malformed_tf_config(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", "{not json")
    with pytest.raises(distribution.DistributionError,
                       match="TF_CONFIG environment variable: not valid JSON "
                             r"\(line 1, column 2\)"):
        distribution.get_distribution_strategy("multi_worker_mirrored")
    monkeypatch.setenv("TF_CONFIG", json.dumps({"task": {"index": 0}}))
    with pytest.raises(distribution.DistributionError,
                       match="TF_CONFIG has no 'cluster' entry"):
        distribution.get_distribution_strategy("multi_worker_mirrored")


# -- multi_worker_mirrored on JAX: TF_CONFIG -> jax.distributed ---------------

def test_jax_cluster_takes_tf_configs_chief_and_workers():
    workers = ["10.0.0.2:2222", "10.0.0.3:2222"]
    # Without a chief, worker 0 is process 0 and runs the coordinator.
    for index in range(2):
        assert distribution.jax_cluster({
            "cluster": {"worker": workers},
            "task": {"type": "worker", "index": index}}) == (
                "10.0.0.2:2222", 2, index)
    # With one, the chief is process 0; the workers follow in their order.
    cluster = {"worker": workers, "chief": ["chief.example.com:5000"]}
    assert distribution.jax_cluster({
        "cluster": cluster, "task": {"type": "chief", "index": 0}}) == (
            "chief.example.com:5000", 3, 0)
    assert distribution.jax_cluster({
        "cluster": cluster, "task": {"type": "worker", "index": 1}}) == (
            "chief.example.com:5000", 3, 2)
    # IPv6 addresses keep their brackets.
    assert distribution.jax_cluster({
        "cluster": {"worker": ["[::1]:2222"]},
        "task": {"type": "worker", "index": 0}}) == ("[::1]:2222", 1, 0)


@pytest.mark.parametrize("tf_config, message", [
    ({"cluster": {"worker": ["a:1"], "ps": ["b:2"]},
      "task": {"type": "worker", "index": 0}},
     "TF_CONFIG's cluster lists the job 'ps'; on JAX every process trains: "
     "list them under 'chief' and 'worker'"),
    ({"cluster": {"worker": ["a:1", "b"]},
      "task": {"type": "worker", "index": 0}},
     "TF_CONFIG cluster worker[1] is 'b', not host:port"),
    ({"cluster": {"worker": ["a:1", "b:port"]},
      "task": {"type": "worker", "index": 0}},
     "TF_CONFIG cluster worker[1] is 'b:port', not host:port"),
    ({"cluster": {"worker": "a:1"}, "task": {"type": "worker", "index": 0}},
     "TF_CONFIG cluster worker must be a list of host:port addresses, not "
     "'a:1'"),
    ({"cluster": ["a:1"], "task": {"type": "worker", "index": 0}},
     "TF_CONFIG's 'cluster' must map job names (chief, worker) to lists of "
     "host:port addresses, not ['a:1']"),
    ({"cluster": {"chief": ["a:1", "b:1"]},
      "task": {"type": "chief", "index": 0}},
     "TF_CONFIG's cluster lists 2 chiefs; there is at most one"),
    ({"cluster": {"worker": []}, "task": {"type": "worker", "index": 0}},
     "TF_CONFIG's cluster lists no chief or worker"),
    ({"cluster": {"worker": ["a:1"]}},
     "TF_CONFIG has no 'task' entry saying which process this is, e.g. "
     '"task": {"type": "worker", "index": 0}'),
    ({"cluster": {"worker": ["a:1", "b:1"]},
      "task": {"type": "worker", "index": 2}},
     "TF_CONFIG's task worker[2] is not in its cluster (worker[0], "
     "worker[1])"),
    ({"cluster": {"worker": ["a:1"]}, "task": {"type": "chief", "index": 0}},
     "TF_CONFIG's task chief[0] is not in its cluster (worker[0])"),
])
def test_jax_cluster_refuses_a_bad_cluster_in_one_line(tf_config, message):
    with pytest.raises(distribution.DistributionError) as error:
        distribution.jax_cluster(tf_config)
    assert str(error.value) == (
        "--distribution_strategy=multi_worker_mirrored on KERAS_BACKEND=jax: "
        + message)


@pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                    reason="jax is not installed (pip install -e .[test])")
def test_jax_process_waits_for_its_coordinator_then_says_so(monkeypatch):
    # JAX itself would end the process (no exception) when the coordinator
    # does not answer; it is waited for first.
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("TF_CONFIG", json.dumps({
        "cluster": {"worker": [f"127.0.0.1:{port}", "127.0.0.1:1"]},
        "task": {"type": "worker", "index": 1}}))
    with pytest.raises(distribution.DistributionError) as error:
        distribution.join_jax_processes(timeout_seconds=1.5)
    assert str(error.value).startswith(
        "--distribution_strategy=multi_worker_mirrored on KERAS_BACKEND=jax: "
        f"the coordinator 127.0.0.1:{port} (TF_CONFIG's chief, else worker "
        "0) did not answer within 1.5 s (process 1 of 2, coordinator "
        f"127.0.0.1:{port}): "), str(error.value)
    assert "\n" not in str(error.value)


def test_jax_processes_chief_is_process_0():
    assert distribution.is_chief(distribution.JaxProcesses(0, 2, 4))
    assert not distribution.is_chief(distribution.JaxProcesses(1, 2, 4))


def test_batch_must_split_over_replicas():
    assert distribution.per_replica_batch_size(32, 4, "train_batch_size") == 8
    with pytest.raises(ValueError, match=r"--train_batch_size=30 is not "
                                         r"divisible by the 4 replicas; use a "
                                         r"multiple of 4"):
        distribution.per_replica_batch_size(30, 4, "train_batch_size")
    with pytest.raises(ValueError, match=r"--eval_batch_size=0 must be "
                                         r"positive"):
        distribution.per_replica_batch_size(0, 1, "eval_batch_size")


# -- mirrored over 2 logical CPUs == one device -----------------------------

@pytest.mark.extended(reason=(
    "the trainer on 2 mirrored replicas; the default run checks the "
    "optimizer (test_optimization) and prediction (test_classification_task, "
    "test_squad_task) on 2 replicas"))
def test_mirrored_equals_one_device(tmp_path):
    result = run_test_file_as_script(__file__, "mirrored", tmp_path)
    assert result["num_replicas"] == 2
    assert result["batch_error"].startswith(
        "--train_batch_size=6 is not divisible by the 2 replicas x 2 "
        "accumulation steps")
    # Same losses at every logged step and the same weights and slots.
    for run in ("mirrored", "mirrored_accumulated"):
        assert result[run]["global_step"] == 3
        assert result[run]["loss"] == pytest.approx(
            result["one_device"]["loss"], rel=1e-5)
        assert result[run]["max_relative_difference"] < 1e-4, result[run]
        assert result[run]["compared_tensors"] > 100
    assert result["eval"]["mirrored"] == pytest.approx(
        result["eval"]["one_device"], rel=1e-5)
    assert result["poisoned"] == [True, True]
    assert result["mixed_float16"] == {"global_step": 2,
                                       "loss_scale": 2.0 ** 15}


def _mirrored_check(out_path, work_dir):
    """Trains 3 steps on one device, then on 2 mirrored replicas; compares."""
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

    import numpy as np
    from bert_tf import checkpoints
    from bert_tf.training import optimization
    from bert_tf.training import trainer as trainer_lib
    from pretraining_harness import ArrayPretrainingTask
    from pretraining_harness import make_pretraining_arrays
    from modeling_harness import tiny_bert_config

    arrays = make_pretraining_arrays(24, seed=11)
    config = tiny_bert_config()

    def make(name, strategy, **options):
        trainer_options = dict(
            output_dir=os.path.join(work_dir, name), train_batch_size=8,
            eval_batch_size=8, num_train_steps=3, save_checkpoints_steps=100,
            iterations_per_loop=100, log_steps=100, max_eval_steps=None)
        trainer_options.update(options)
        return trainer_lib.Trainer(
            ArrayPretrainingTask(config, arrays, init_checkpoint=(
                trainer_options.pop("init_checkpoint", None))),
            trainer_lib.TrainerConfig(**trainer_options), strategy,
            optimizer_factory=lambda: optimization.create_optimizer(
                "adamw", 1e-2, 10, 1))

    one_device = make("one_device", tf.distribute.OneDeviceStrategy("/cpu:0"))
    initial = os.path.join(work_dir, "init.ckpt")
    checkpoints.save_checkpoint(
        {name: variable.numpy() for name, variable
         in one_device.task.checkpoint_variables(one_device.model).items()},
        initial)
    mirrored_strategy = distribution.get_distribution_strategy("mirrored")
    result = {"num_replicas": mirrored_strategy.num_replicas_in_sync}
    try:
        make("bad_batch", mirrored_strategy, train_batch_size=6,
             num_accumulation_steps=2)
    except ValueError as error:
        result["batch_error"] = str(error)

    runs = {"one_device": one_device}
    runs["mirrored"] = make("mirrored", mirrored_strategy,
                            init_checkpoint=initial)
    runs["mirrored_accumulated"] = make(
        "mirrored_accumulated", mirrored_strategy, init_checkpoint=initial,
        num_accumulation_steps=2)
    values = {}
    result["eval"] = {}
    for name, trainer in runs.items():
        log = trainer.train()
        values[name] = {k: np.array(v.numpy()) for k, v
                        in trainer.checkpoint_tensors().items()}
        result[name] = {"global_step": trainer.global_step,
                        "loss": log["loss"]}
        if name != "mirrored_accumulated":
            result["eval"][name] = float(trainer.evaluate()["loss"])
    for name in ("mirrored", "mirrored_accumulated"):
        worst = 0.0
        for key, expected in values["one_device"].items():
            actual = values[name][key]
            scale = max(float(np.abs(expected).max()), 1e-3)
            worst = max(worst, float(np.abs(actual - expected).max()) / scale)
        result[name]["max_relative_difference"] = worst
        result[name]["compared_tensors"] = len(values["one_device"])
    # mixed_float16 on 2 replicas: runs, and a step whose gradients overflow
    # on one replica only is skipped by both (the loss scale halves once).
    from bert_tf.training import precision
    poisoned = mirrored_strategy.run(
        lambda: precision.agree_on_finite_gradients([tf.where(
            tf.distribute.get_replica_context().replica_id_in_sync_group == 1,
            float("inf"), 1.0) * tf.ones([2])]))
    result["poisoned"] = [
        bool(np.isnan(t[0].numpy()).all())
        for t in mirrored_strategy.experimental_local_results(poisoned)]
    mixed = make("mixed_float16", mirrored_strategy, num_train_steps=2,
                 dtype="mixed_float16")
    mixed.train()
    result["mixed_float16"] = {
        "global_step": mixed.global_step,
        "loss_scale": float(mixed.optimizer.dynamic_scale.numpy())}
    with open(out_path, "w") as writer:
        json.dump(result, writer)


if __name__ == "__main__":
    if sys.argv[1] == "mirrored":
        _mirrored_check(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(f"unknown check {sys.argv[1]!r}")
