"""The generic Trainer on the pretraining task, with tiny models, in-process.

References are independent of the code under test: an uninterrupted run for
the resumed one, a one-batch run for gradient accumulation, numpy for the
evaluation metrics, the checkpoint files themselves for names and steps.
"""

import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import checkpoints
from bert_tf.training import checkpoint_manager as checkpoint_manager_lib
from bert_tf.training import optimization
from bert_tf.training import run_lock
from bert_tf.training import trainer as trainer_lib

from pretraining_harness import ArrayPretrainingTask
from pretraining_harness import make_pretraining_arrays
from pretraining_harness import numpy_log_softmax
from modeling_harness import tiny_bert_config


def adamw_factory(learning_rate=1e-3, num_train_steps=100, num_warmup_steps=2):
    return lambda: optimization.create_optimizer(
        "adamw", learning_rate, num_train_steps, num_warmup_steps)


def make_trainer(output_dir, arrays, *, optimizer_factory=None,
                 config=None, **trainer_options):
    options = dict(output_dir=str(output_dir), train_batch_size=8,
                   eval_batch_size=8, num_train_steps=4,
                   save_checkpoints_steps=100, iterations_per_loop=100,
                   log_steps=100, max_eval_steps=None)
    options.update(trainer_options)
    task = ArrayPretrainingTask(config or tiny_bert_config(), arrays,
                                init_checkpoint=options.pop(
                                    "init_checkpoint", None))
    return trainer_lib.Trainer(task, trainer_lib.TrainerConfig(**options),
                               optimizer_factory=optimizer_factory)


def model_values(trainer):
    return {name: np.array(variable.numpy()) for name, variable
            in trainer.checkpoint_tensors().items()}


@pytest.fixture(scope="module")
def initial_checkpoint(tmp_path_factory):
    """Fixed random weights that every comparison run starts from."""
    directory = tmp_path_factory.mktemp("initial")
    trainer = make_trainer(directory / "unused", make_pretraining_arrays(8))
    tensors = {name: variable.numpy() for name, variable
               in trainer.task.checkpoint_variables(trainer.model).items()}
    return checkpoints.save_checkpoint(tensors, str(directory / "init.ckpt"))


# -- a short run: loss, checkpoints, eval_results.txt ------------------------

@pytest.fixture(scope="module")
def trained_run(tmp_path_factory, initial_checkpoint):
    output_dir = tmp_path_factory.mktemp("trained")
    arrays = make_pretraining_arrays(32, seed=1)
    trainer = make_trainer(
        output_dir, arrays, optimizer_factory=adamw_factory(3e-3, 30, 3),
        num_train_steps=30, save_checkpoints_steps=10, iterations_per_loop=4,
        log_steps=5, keep_checkpoint_max=2, init_checkpoint=initial_checkpoint)
    before = trainer.evaluate()
    last_log = trainer.train()
    after = trainer.evaluate()
    return dict(trainer=trainer, output_dir=output_dir, arrays=arrays,
                before=before, after=after, last_log=last_log)


def test_training_lowers_the_loss(trained_run):
    before, after = trained_run["before"], trained_run["after"]
    assert before["global_step"] == 0 and after["global_step"] == 30
    assert after["loss"] < before["loss"] - 0.5, (before, after)
    assert after["masked_lm_loss"] < before["masked_lm_loss"]
    assert trained_run["last_log"]["global_step"] == 30
    assert np.isfinite(trained_run["last_log"]["examples_per_second"])


def test_checkpoints_have_google_names_and_rotate(trained_run):
    output_dir = trained_run["output_dir"]
    # Saved at 10, 20, 30; --keep_checkpoint_max=2 keeps the last two.
    indexes = sorted(f for f in os.listdir(output_dir) if f.endswith(".index"))
    assert indexes == ["model.ckpt-20.index", "model.ckpt-30.index"]
    assert tf.train.latest_checkpoint(str(output_dir)) == str(
        output_dir / "model.ckpt-30")
    # Relative names, so the directory can be moved.
    assert (output_dir / "checkpoint").read_text() == (
        'model_checkpoint_path: "model.ckpt-30"\n'
        'all_model_checkpoint_paths: "model.ckpt-20"\n'
        'all_model_checkpoint_paths: "model.ckpt-30"\n')
    shapes = checkpoints.checkpoint_shapes(str(output_dir / "model.ckpt-30"))
    for name in ["bert/embeddings/word_embeddings",
                 "bert/embeddings/word_embeddings/adam_m",
                 "bert/embeddings/word_embeddings/adam_v",
                 "bert/encoder/layer_0/attention/self/query/kernel/adam_m",
                 "cls/predictions/output_bias/adam_v",
                 "cls/seq_relationship/output_weights",
                 "cls/seq_relationship/output_weights/adam_m"]:
        assert name in shapes, name
    assert shapes["cls/seq_relationship/output_weights/adam_m"] == (2, 32)
    reader = tf.train.load_checkpoint(str(output_dir / "model.ckpt-30"))
    assert reader.get_tensor("global_step") == 30
    assert reader.get_variable_to_dtype_map()["global_step"] == tf.int64
    # Nothing but Google's names (and no Keras seed state).
    trainer = trained_run["trainer"]
    model_names = set(trainer.task.checkpoint_variables(trainer.model))
    slot_names = {f"{n}/{s}" for n in model_names for s in ("adam_m", "adam_v")}
    assert set(shapes) == model_names | slot_names | {"global_step"}


def test_eval_results_file_as_google_writes_it(trained_run):
    text = (trained_run["output_dir"] / "eval_results.txt").read_text()
    lines = text.splitlines()
    keys = [line.split(" = ")[0] for line in lines]
    assert keys == ["global_step", "loss", "masked_lm_accuracy",
                    "masked_lm_loss", "next_sentence_accuracy",
                    "next_sentence_loss"]
    values = dict(line.split(" = ") for line in lines)
    assert values["global_step"] == "30"
    after = trained_run["after"]
    assert values["loss"] == str(np.float32(after["loss"]))
    # No temporary file; the run's lock lives as long as its process (this
    # one).
    assert not any(name.startswith(".") or "tmp" in name
                   for name in os.listdir(trained_run["output_dir"])
                   if name != run_lock.LOCK_FILE)


def test_eval_metrics_match_numpy(trained_run):
    """Recomputes the final evaluation from the model's outputs in numpy."""
    trainer, arrays = trained_run["trainer"], trained_run["arrays"]
    batch_losses, correct, weights_sum, loss_sum = [], 0.0, 0.0, 0.0
    nsp_correct, nsp_loss = 0.0, 0.0
    for start in range(0, 32, 8):
        batch = {k: v[start:start + 8] for k, v in arrays.items()}
        outputs = trainer.model(batch, training=False)
        mlm_log_probs = numpy_log_softmax(outputs["masked_lm_logits"].numpy())
        nsp_log_probs = numpy_log_softmax(
            outputs["next_sentence_logits"].numpy())
        ids, weights = batch["masked_lm_ids"], batch["masked_lm_weights"]
        labels = batch["next_sentence_labels"].reshape(-1)
        per_prediction = -np.take_along_axis(mlm_log_probs, ids[..., None],
                                             axis=-1)[..., 0]
        per_example = -nsp_log_probs[np.arange(8), labels]
        batch_losses.append((weights * per_prediction).sum()
                            / (weights.sum() + 1e-5) + per_example.mean())
        correct += (weights * (mlm_log_probs.argmax(-1) == ids)).sum()
        weights_sum += weights.sum()
        loss_sum += (weights * per_prediction).sum()
        nsp_correct += (nsp_log_probs.argmax(-1) == labels).sum()
        nsp_loss += per_example.sum()
    after = trained_run["after"]
    np.testing.assert_allclose(after["loss"], np.mean(batch_losses), rtol=1e-5)
    np.testing.assert_allclose(after["masked_lm_accuracy"],
                               correct / weights_sum, rtol=1e-6)
    np.testing.assert_allclose(after["masked_lm_loss"], loss_sum / weights_sum,
                               rtol=1e-5)
    np.testing.assert_allclose(after["next_sentence_accuracy"],
                               nsp_correct / 32, rtol=1e-6)
    np.testing.assert_allclose(after["next_sentence_loss"], nsp_loss / 32,
                               rtol=1e-5)


def test_evaluation_only_trainer_restores_the_latest_checkpoint(trained_run):
    trained = trained_run["trainer"]
    evaluator = make_trainer(trained_run["output_dir"], trained_run["arrays"],
                             max_eval_steps=2)
    assert evaluator.restored_checkpoint.endswith("model.ckpt-30")
    assert evaluator.global_step == 30
    for name, variable in trained.task.checkpoint_variables(
            trained.model).items():
        np.testing.assert_array_equal(
            evaluator.task.checkpoint_variables(evaluator.model)[name].numpy(),
            variable.numpy(), err_msg=name)
    results = evaluator.evaluate()
    assert results["global_step"] == 30
    with pytest.raises(ValueError, match="can only evaluate"):
        evaluator.train()


# -- resume ------------------------------------------------------------------

@pytest.mark.extended(reason=(
    "resuming in process; the default run resumes a SIGKILLed run_pretraining.py "
    "(test_fault_injection)"))
def test_resumed_run_equals_uninterrupted_run(tmp_path, initial_checkpoint):
    """Stop at step 3 of 6, restart: same weights, slots and step as 6 at once.

    Every batch is the same, so the input position (which is not restored)
    cannot matter; everything else (model, adam_m/adam_v, global_step and so
    the learning rate) must come back from the checkpoint.
    """
    arrays = make_pretraining_arrays(8, seed=2)
    factory = adamw_factory(2e-3, num_train_steps=6, num_warmup_steps=2)
    uninterrupted = make_trainer(
        tmp_path / "uninterrupted", arrays, optimizer_factory=factory,
        num_train_steps=6, init_checkpoint=initial_checkpoint)
    uninterrupted.train()

    first = make_trainer(tmp_path / "resumed", arrays,
                         optimizer_factory=factory, num_train_steps=3,
                         init_checkpoint=initial_checkpoint)
    first.train()
    assert first.global_step == 3
    # --init_checkpoint is ignored now: the output directory has a checkpoint.
    second = make_trainer(tmp_path / "resumed", arrays,
                          optimizer_factory=factory, num_train_steps=6,
                          init_checkpoint=initial_checkpoint)
    assert second.restored_checkpoint.endswith("model.ckpt-3")
    assert second.global_step == 3
    second.train()
    assert second.global_step == 6

    expected = model_values(uninterrupted)
    actual = model_values(second)
    assert set(actual) == set(expected)
    for name in expected:
        np.testing.assert_allclose(actual[name], expected[name], rtol=1e-6,
                                   atol=1e-7, err_msg=name)
    # A finished run restarted does nothing and rewrites nothing.
    finished = tmp_path / "resumed" / "model.ckpt-6.index"
    mtime = finished.stat().st_mtime_ns
    third = make_trainer(tmp_path / "resumed", arrays,
                         optimizer_factory=factory, num_train_steps=6)
    assert third.train() == {"global_step": 6}
    assert finished.stat().st_mtime_ns == mtime


def test_resuming_from_an_incompatible_checkpoint_names_it(tmp_path):
    arrays = make_pretraining_arrays(8)
    make_trainer(tmp_path, arrays, optimizer_factory=adamw_factory(),
                 num_train_steps=1).train()
    with pytest.raises(checkpoints.CheckpointError,
                       match=r"(?s)model\.ckpt-1 in --output_dir.*"
                             r"bert/pooler/dense/kernel"):
        make_trainer(tmp_path, arrays, optimizer_factory=adamw_factory(),
                     config=tiny_bert_config(hidden_size=16,
                                             intermediate_size=32))


# -- gradient accumulation ---------------------------------------------------

def test_gradient_accumulation_equals_the_whole_batch(tmp_path,
                                                      initial_checkpoint):
    arrays = make_pretraining_arrays(16, seed=4)
    results = {}
    for steps in (1, 2):
        trainer = make_trainer(
            tmp_path / f"accumulate_{steps}", arrays,
            optimizer_factory=adamw_factory(1e-3, 10, 0), num_train_steps=2,
            num_accumulation_steps=steps, init_checkpoint=initial_checkpoint)
        log = trainer.train()
        results[steps] = (model_values(trainer), log["loss"])
    whole, whole_loss = results[1]
    accumulated, accumulated_loss = results[2]
    np.testing.assert_allclose(accumulated_loss, whole_loss, rtol=1e-5)
    for name in whole:
        np.testing.assert_allclose(accumulated[name], whole[name], rtol=2e-4,
                                   atol=1e-6, err_msg=name)


def test_accumulation_steps_must_divide_the_batch(tmp_path):
    with pytest.raises(ValueError, match=r"--train_batch_size=8 is not "
                                         r"divisible by the 1 replicas x 3 "
                                         r"accumulation steps"):
        make_trainer(tmp_path, make_pretraining_arrays(8),
                     optimizer_factory=adamw_factory(),
                     num_accumulation_steps=3)


# -- non-finite loss ---------------------------------------------------------

def test_nan_loss_stops_the_run_and_keeps_the_last_good_checkpoint(tmp_path):
    arrays = make_pretraining_arrays(20, seed=5)
    # Batch 5 of 4 examples (step 5) has NaN prediction weights.
    arrays["masked_lm_weights"][16:] = np.nan
    with pytest.raises(trainer_lib.NonFiniteLossError) as raised:
        make_trainer(tmp_path, arrays, optimizer_factory=adamw_factory(),
                     train_batch_size=4, num_train_steps=10,
                     save_checkpoints_steps=2).train()
    message = str(raised.value)
    assert "loss is nan at step 5" in message
    assert "model.ckpt-4" in message
    indexes = sorted(f for f in os.listdir(tmp_path) if f.endswith(".index"))
    assert indexes == ["model.ckpt-2.index", "model.ckpt-4.index"]
    reader = tf.train.load_checkpoint(str(tmp_path / "model.ckpt-4"))
    assert np.isfinite(reader.get_tensor("bert/pooler/dense/kernel")).all()


# -- precision and XLA -------------------------------------------------------

@pytest.mark.parametrize("dtype", [
    "mixed_float16",
    # bfloat16 matmuls are slow on most CPUs.
    pytest.param("mixed_bfloat16", marks=pytest.mark.slow)])
def test_mixed_precision_trains_with_float32_variables(tmp_path, dtype):
    trainer = make_trainer(tmp_path, make_pretraining_arrays(8),
                           optimizer_factory=adamw_factory(),
                           num_train_steps=2, dtype=dtype)
    log = trainer.train()
    assert np.isfinite(log["loss"])
    assert trainer.global_step == 2
    assert all(v.dtype == "float32" for v in trainer.model.trainable_variables)
    shapes = checkpoints.checkpoint_shapes(str(tmp_path / "model.ckpt-2"))
    assert ("loss_scale/current_loss_scale" in shapes) == (
        dtype == "mixed_float16")


@pytest.mark.slow  # XLA compilation takes a minute on a small CPU.
def test_xla_gives_the_same_step(tmp_path, initial_checkpoint):
    arrays = make_pretraining_arrays(8, seed=6)
    values = []
    for enable_xla in (False, True):
        trainer = make_trainer(
            tmp_path / str(enable_xla), arrays,
            optimizer_factory=adamw_factory(1e-3, 10, 0), num_train_steps=1,
            enable_xla=enable_xla, init_checkpoint=initial_checkpoint)
        trainer.train()
        values.append(model_values(trainer))
    for name in values[0]:
        np.testing.assert_allclose(values[1][name], values[0][name],
                                   rtol=1e-4, atol=1e-6, err_msg=name)


# -- configuration errors ----------------------------------------------------

@pytest.mark.parametrize("field, value, message", [
    ("output_dir", "", "--output_dir is required"),
    ("train_batch_size", 0, "--train_batch_size=0 must be a positive integer"),
    ("iterations_per_loop", -1, "--iterations_per_loop=-1"),
    ("save_checkpoints_steps", 0, "--save_checkpoints_steps=0"),
    ("num_accumulation_steps", 0, "--num_accumulation_steps=0"),
    ("log_steps", 0, "--log_steps=0"),
    ("keep_checkpoint_max", -1, "--keep_checkpoint_max=-1"),
    ("max_eval_steps", 0, "--max_eval_steps=0"),
    ("dtype", "float16", "--dtype='float16' is not one of"),
])
def test_trainer_config_errors_name_the_flag(field, value, message):
    config = trainer_lib.TrainerConfig(output_dir="/tmp/x")
    setattr(config, field, value)
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        config.validate()


# -- checkpoint manager and eval_results.txt ---------------------------------

def _tensors(step):
    return {"w": np.full([2], step, np.float32),
            "global_step": np.int64(step)}


def test_checkpoint_manager_rotation_state_file_and_no_rewrite(tmp_path):
    manager = checkpoint_manager_lib.CheckpointManager(tmp_path, max_to_keep=2)
    assert manager.latest_checkpoint is None
    for step in (1, 2, 3):
        manager.save(_tensors(step), step)
    assert sorted(os.listdir(tmp_path)) == [
        "checkpoint", "model.ckpt-2.data-00000-of-00001",
        "model.ckpt-2.index", "model.ckpt-3.data-00000-of-00001",
        "model.ckpt-3.index"]
    assert manager.latest_checkpoint == str(tmp_path / "model.ckpt-3")
    # An existing checkpoint is never rewritten, whatever the values.
    assert manager.save(_tensors(99), 3) == str(tmp_path / "model.ckpt-3")
    assert checkpoints.read_checkpoint(str(tmp_path / "model.ckpt-3"))[
        "w"].tolist() == [3.0, 3.0]
    # A new manager (a restarted run) rotates the checkpoints it finds.
    again = checkpoint_manager_lib.CheckpointManager(tmp_path, max_to_keep=2)
    again.save(_tensors(4), 4)
    assert not (tmp_path / "model.ckpt-2.index").exists()
    assert tf.train.latest_checkpoint(str(tmp_path)) == str(
        tmp_path / "model.ckpt-4")
    # Without the state file, the newest index file is found.
    (tmp_path / "checkpoint").unlink()
    assert again.latest_checkpoint == str(tmp_path / "model.ckpt-4")


def test_checkpoint_manager_non_chief_writes_nothing(tmp_path):
    manager = checkpoint_manager_lib.CheckpointManager(
        tmp_path / "out", is_chief=False)
    assert manager.save(_tensors(1), 1) is None
    assert not (tmp_path / "out").exists()


def test_write_eval_results_sorted_str_values(tmp_path):
    path = tmp_path / "eval_results.txt"
    trainer_lib.write_eval_results(str(path), {
        "loss": np.float32(0.37572256), "global_step": np.int64(7),
        "masked_lm_accuracy": np.float32(0.5)})
    assert path.read_text() == ("global_step = 7\nloss = 0.37572256\n"
                                "masked_lm_accuracy = 0.5\n")


def _scalar_events(directory, whole_metadata=False):
    """(tag, value, plugin name, step) of every summary value under directory.

    whole_metadata: the serialized metadata instead of the plugin name.
    """
    events = []
    for path in sorted(tf.io.gfile.glob(os.path.join(directory, "*"))):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                metadata = (value.metadata.SerializeToString()
                            if whole_metadata
                            else value.metadata.plugin_data.plugin_name)
                events.append((value.tag,
                               float(tf.make_ndarray(value.tensor)),
                               value.tensor.dtype, metadata, event.step))
    return events


def test_scalar_summaries_need_no_tensorboard(tmp_path):
    # Written as TensorBoard reads a scalar (hand-written expectation): the
    # tag, a float32 scalar tensor, the "scalars" plugin, the step. The
    # trainer writes its summaries this way because TensorFlow 2.21 no
    # longer installs TensorBoard, whose tf.summary.scalar would raise.
    from bert_tf.training import summaries
    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default(step=7):
        summaries.scalar("loss", 0.25)
        summaries.scalar("global_step/sec", np.float32(3.5), step=9)
    writer.flush()
    assert _scalar_events(tmp_path) == [
        ("loss", 0.25, tf.float32.as_datatype_enum, "scalars", 7),
        ("global_step/sec", 3.5, tf.float32.as_datatype_enum, "scalars", 9)]


def test_scalar_summaries_equal_tensorboards(tmp_path):
    pytest.importorskip(
        "tensorboard", reason="TensorBoard is not installed (TensorFlow 2.21 "
        "no longer depends on it): nothing to compare with")
    from bert_tf.training import summaries
    for name, write in (("ours", summaries.scalar),
                        ("tensorboard", tf.summary.scalar)):
        writer = tf.summary.create_file_writer(str(tmp_path / name))
        with writer.as_default(step=3):
            write("learning_rate", 1e-4)
            write("eval/accuracy", 0.5)
        writer.flush()
    assert (_scalar_events(tmp_path / "ours", whole_metadata=True)
            == _scalar_events(tmp_path / "tensorboard", whole_metadata=True))
