"""MultiWorkerMirroredStrategy: two worker processes on 127.0.0.1.

Each worker runs this file as a script with its own TF_CONFIG, trains a tiny
model for a few steps and evaluates it. The test checks that both end with
identical weights and optimizer state, and that only the chief wrote
checkpoints, summaries and eval_results.txt (each worker is given its own
output directory here, so a write by the other worker would be visible).
"""

import json
import os
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS_DIR = os.path.dirname(HERE)
REPO_ROOT = os.path.dirname(TESTS_DIR)
NUM_STEPS = 4


def _free_ports(count):
    sockets = []
    try:
        for _ in range(count):
            probe = socket.socket()
            probe.bind(("127.0.0.1", 0))
            sockets.append(probe)
        return [probe.getsockname()[1] for probe in sockets]
    finally:
        for probe in sockets:
            probe.close()


@pytest.mark.extended(reason=(
    "two worker processes; the default run checks 2 mirrored replicas in one "
    "process"))
def test_two_workers_train_in_lockstep(tmp_path):
    ports = _free_ports(2)
    workers = [f"127.0.0.1:{port}" for port in ports]
    processes, logs = [], []
    for index in range(2):
        tf_config = {"cluster": {"worker": workers},
                     "task": {"type": "worker", "index": index}}
        log = open(tmp_path / f"worker{index}.log", "w")
        logs.append(log)
        processes.append(subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), str(index),
             str(tmp_path)],
            cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, "TF_CONFIG": json.dumps(tf_config),
                 "PYTHONPATH": os.pathsep.join(
                     [REPO_ROOT, HERE, TESTS_DIR,
                      os.environ.get("PYTHONPATH", "")])}))
    deadline = time.time() + 900
    try:
        for process in processes:
            process.wait(timeout=max(1, deadline - time.time()))
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
        for log in logs:
            log.close()
    for index, process in enumerate(processes):
        assert process.returncode == 0, (
            tmp_path / f"worker{index}.log").read_text()[-5000:]

    chief = np.load(tmp_path / "weights0.npz")
    other = np.load(tmp_path / "weights1.npz")
    assert sorted(chief.files) == sorted(other.files)
    assert "global_step" in chief.files
    assert "bert/pooler/dense/kernel/adam_v" in chief.files
    for name in chief.files:
        np.testing.assert_array_equal(chief[name], other[name], err_msg=name)
    assert int(chief["global_step"]) == NUM_STEPS
    # Training moved the weights away from their (common) start.
    initial = np.load(tmp_path / "initial0.npz")
    assert not np.array_equal(initial["bert/pooler/dense/kernel"],
                              chief["bert/pooler/dense/kernel"])

    chief_dir = tmp_path / "worker0"
    written = sorted(os.listdir(chief_dir))
    assert "model.ckpt-2.index" in written
    assert f"model.ckpt-{NUM_STEPS}.index" in written
    assert "checkpoint" in written and "eval_results.txt" in written
    other_dir = tmp_path / "worker1"
    assert not other_dir.exists() or not os.listdir(other_dir)
    results = json.loads((tmp_path / "results0.json").read_text())
    assert results == json.loads((tmp_path / "results1.json").read_text())
    assert results["global_step"] == NUM_STEPS


def _worker(index, work_dir):
    from bert_tf.training import distribution
    # The strategy first: it configures the runtime from TF_CONFIG.
    strategy = distribution.get_distribution_strategy("multi_worker_mirrored")
    from bert_tf.training import optimization
    from bert_tf.training import trainer as trainer_lib
    from pretraining_harness import ArrayPretrainingTask
    from pretraining_harness import make_pretraining_arrays
    from modeling_harness import tiny_bert_config

    assert strategy.num_replicas_in_sync == 2
    task = ArrayPretrainingTask(tiny_bert_config(),
                                make_pretraining_arrays(32, seed=21))
    trainer = trainer_lib.Trainer(
        task,
        trainer_lib.TrainerConfig(
            output_dir=os.path.join(work_dir, f"worker{index}"),
            train_batch_size=8, eval_batch_size=8, num_train_steps=NUM_STEPS,
            save_checkpoints_steps=2, iterations_per_loop=2, log_steps=2,
            max_eval_steps=2),
        strategy,
        optimizer_factory=lambda: optimization.create_optimizer(
            "adamw", 1e-2, NUM_STEPS, 1))
    np.savez(os.path.join(work_dir, f"initial{index}.npz"),
             **{k: v.numpy() for k, v in trainer.checkpoint_tensors().items()})
    trainer.train()
    results = trainer.evaluate()
    np.savez(os.path.join(work_dir, f"weights{index}.npz"),
             **{k: v.numpy() for k, v in trainer.checkpoint_tensors().items()})
    with open(os.path.join(work_dir, f"results{index}.json"), "w") as writer:
        json.dump({k: float(v) for k, v in results.items()}, writer)


if __name__ == "__main__":
    _worker(int(sys.argv[1]), sys.argv[2])
