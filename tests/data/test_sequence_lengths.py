"""Length-aware batches (`bert_tf.data.sequence_lengths`) against full-length ones.

The reference is always the full-length run, Google's behaviour (the
encoder's outputs there are checked against Google's code elsewhere): the
same model, the same batches, padded to `max_seq_length`. Cutting a batch to
its longest real sequence must give the same losses, weights, metrics and
predictions to float round-off; buckets must trace one program per bucket.
"""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import checkpoints
from bert_tf.data import sequence_lengths
from bert_tf.pretraining import records
from bert_tf.training import optimization
from bert_tf.training import trainer as trainer_lib

from modeling_harness import tiny_bert_config
from pretraining_harness import ArrayPretrainingTask
from pretraining_harness import make_pretraining_arrays
from runner_harness import error_line_in_process
import run_classifier

FULL_LENGTH = 64
SEQUENCE_NAMES = (records.INPUT_IDS, records.INPUT_MASK, records.SEGMENT_IDS)
FIXED = dict(pad_to_multiple_of=FULL_LENGTH)


def short_examples(num_examples, seed):
    """Pretraining arrays of 8..16 real tokens padded to FULL_LENGTH."""
    arrays = make_pretraining_arrays(num_examples, max_seq_length=16,
                                     seed=seed)
    for name in SEQUENCE_NAMES:
        arrays[name] = np.pad(arrays[name],
                              [[0, 0], [0, FULL_LENGTH - 16]])
    return arrays


class RecordingTask(ArrayPretrainingTask):
    """Records the static sequence length of every traced forward pass."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.traced_lengths = []

    def forward(self, model, features, training):
        self.traced_lengths.append(features[records.INPUT_IDS].shape[-1])
        return super().forward(model, features, training)


def make_trainer(output_dir, arrays, initial_checkpoint=None, train=True,
                 bert_config=None, **options):
    settings = dict(output_dir=str(output_dir), train_batch_size=8,
                    eval_batch_size=8, num_train_steps=3,
                    save_checkpoints_steps=100, iterations_per_loop=100,
                    log_steps=100, max_eval_steps=None, seed=3)
    settings.update(options)
    task = RecordingTask(bert_config or tiny_bert_config(), arrays,
                         init_checkpoint=initial_checkpoint)
    factory = None
    if train:
        factory = lambda: optimization.create_optimizer(  # noqa: E731
            "adamw", 1e-3, 10, 1)
    return trainer_lib.Trainer(task, trainer_lib.TrainerConfig(**settings),
                               optimizer_factory=factory)


@pytest.fixture(scope="module")
def initial_checkpoint(tmp_path_factory):
    directory = tmp_path_factory.mktemp("initial")
    trainer = make_trainer(directory / "unused", short_examples(8, 0),
                           train=False)
    tensors = {name: variable.numpy() for name, variable
               in trainer.task.checkpoint_variables(trainer.model).items()}
    return checkpoints.save_checkpoint(tensors, str(directory / "init.ckpt"))


# -- the policy ----------------------------------------------------------------

def test_real_lengths_count_up_to_the_last_real_token():
    mask = np.array([[1, 1, 0, 0], [1, 1, 1, 1], [1, 0, 1, 0], [0, 0, 0, 0]])
    np.testing.assert_array_equal(sequence_lengths.real_lengths(mask),
                                  [2, 4, 3, 0])
    choices = np.stack([mask[:2], mask[2:]])  # [2 examples, 2 choices, 4]
    np.testing.assert_array_equal(sequence_lengths.real_lengths(choices),
                                  [4, 3])


def test_run_lengths_round_up_and_pick_buckets():
    policy = sequence_lengths.LengthPolicy(pad_to_multiple_of=8)
    assert [policy.run_length(n, 128) for n in (1, 8, 9, 28, 127)] == [
        8, 8, 16, 32, 128]
    assert policy.run_length(97, 100) == 100
    assert not policy.is_fixed_length(128)
    assert sequence_lengths.LengthPolicy(128).is_fixed_length(128)
    bucketed = sequence_lengths.LengthPolicy(static_shapes=True)
    assert bucketed.buckets_for(128) == (16, 32, 64, 128)
    assert [bucketed.run_length(n, 128) for n in (3, 17, 64, 65)] == [
        16, 32, 64, 128]
    assert sequence_lengths.default_buckets(384) == (16, 32, 64, 128, 256,
                                                     384)


@pytest.mark.parametrize("text, expected", [
    ("", ()), ("auto", (16, 32, 64, 128)), ("64, 32", (32, 64, 128)),
    ("128", (128,))])
def test_length_buckets_flag_values(text, expected):
    assert sequence_lengths.parse_length_buckets(text, 128) == expected


@pytest.mark.parametrize("flag, message", [
    ("--length_buckets=32,x", "--length_buckets='32,x': 'x' is not a length"),
    ("--length_buckets=256", "--length_buckets='256': 256 is not in [1, "
                             "--max_seq_length=32]"),
    ("--pad_to_multiple_of=0", "--pad_to_multiple_of=0 must be a positive "
                               "integer"),
])
def test_bad_length_flags_are_named(tmp_path, flag, message):
    from tests.tasks.classification.test_run_classifier import (
        TINY_CONFIG, VOCAB)
    import json
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    (tmp_path / "bert_config.json").write_text(json.dumps(TINY_CONFIG))
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.tsv").write_text("sentence\tlabel\na b\t0\nc d\t1\n")
    error = error_line_in_process(
        run_classifier, "--task_name=sst-2", "--do_train=true",
        f"--data_dir={data}", f"--output_dir={tmp_path / 'out'}",
        "--max_seq_length=32", flag, workspace=tmp_path)
    assert message in error, error


def test_buckets_trace_one_branch_per_bucket():
    policy = sequence_lengths.LengthPolicy(static_shapes=True)
    traced = []

    def count_real(features):
        traced.append(features["input_ids"].shape[-1])
        return {"sum": tf.reduce_sum(features["input_ids"], axis=-1)}

    @tf.function
    def step(features):
        return sequence_lengths.call_at_length(
            count_real, features, policy, ("input_ids", "input_mask"))

    for longest in (3, 9, 17, 33, 64, 12):
        mask = np.zeros([2, 64], np.int32)
        mask[0, :longest] = 1
        ids = mask * 7
        out = step({"input_ids": ids, "input_mask": mask})
        assert out["sum"].numpy().tolist() == [7 * longest, 0]
    assert sorted(traced) == [16, 32, 64]  # one trace per bucket, once
    assert step.experimental_get_tracing_count() == 1


def test_prediction_groups_by_length_and_keeps_input_order():
    from bert_tf.training import prediction
    lengths = [5, 60, 2, 33, 17, 64, 1, 9, 40, 3, 28]
    mask = (np.arange(64)[None] < np.array(lengths)[:, None]).astype(np.int32)
    examples = tf.data.Dataset.from_tensor_slices(
        {"input_ids": mask * np.arange(1, len(lengths) + 1)[:, None],
         "input_mask": mask})
    batches = list(prediction.batch_examples(examples, 4,
                                             group_by_length=True))
    # Longest first within the window; every example once.
    seen = [list(indices.numpy()) for indices, _ in batches]
    assert seen == [[5, 1, 8, 3], [10, 4, 7, 0], [9, 2, 6]]
    policy = sequence_lengths.LengthPolicy()
    rows = list(prediction.predict(
        tf.distribute.get_strategy(),
        lambda f: sequence_lengths.call_at_length(
            lambda cut: {"total": tf.reduce_sum(cut["input_ids"], -1),
                         "ids": cut["input_ids"]},
            f, policy, ("input_ids", "input_mask"), ("ids",)),
        examples, 4, length_policy=policy))
    total = np.concatenate([r["total"] for r in rows])
    np.testing.assert_array_equal(total, np.array(lengths) * np.arange(
        1, len(lengths) + 1))
    ids = np.concatenate([r["ids"] for r in rows])
    assert ids.shape == (len(lengths), 64)
    np.testing.assert_array_equal(ids, mask * np.arange(
        1, len(lengths) + 1)[:, None])


# -- training, evaluation and prediction through the Trainer -----------------

@pytest.fixture(scope="module")
def fixed_and_cut_runs(tmp_path_factory, initial_checkpoint):
    """The same seeded run at the full length and cut to the batches'."""
    arrays = short_examples(24, seed=1)
    runs = {}
    for name, options in (("fixed", FIXED), ("cut", {})):
        trainer = make_trainer(tmp_path_factory.mktemp(name), arrays,
                               initial_checkpoint, **options)
        log = trainer.train()
        results = trainer.evaluate()
        examples = tf.data.Dataset.from_tensor_slices(
            {k: (v.astype(np.int32) if v.dtype.kind == "i" else v)
             for k, v in arrays.items()})
        predictions = list(trainer.predict(examples, 5))
        runs[name] = dict(trainer=trainer, log=log, results=results,
                          predictions=predictions)
    return runs


def test_training_cut_to_length_is_the_full_length_computation(
        fixed_and_cut_runs):
    fixed, cut = fixed_and_cut_runs["fixed"], fixed_and_cut_runs["cut"]
    assert set(fixed["trainer"].task.traced_lengths) == {FULL_LENGTH}
    # The cut run never ran the model at the full length: the data's
    # longest sequence is 16 tokens.
    assert FULL_LENGTH not in cut["trainer"].task.traced_lengths
    assert fixed["log"]["loss"] == pytest.approx(cut["log"]["loss"],
                                                 abs=1e-5)
    for name, variable in fixed["trainer"].checkpoint_tensors().items():
        np.testing.assert_allclose(
            cut["trainer"].checkpoint_tensors()[name].numpy(),
            variable.numpy(), rtol=1e-4, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("options", [{}, pytest.param(
    dict(length_buckets=(16, 32)), marks=pytest.mark.extended(reason=(
        "length buckets; the default run checks batches cut to their "
        "length")))], ids=["cut", "buckets"])
def test_seeded_dropout_drops_what_the_full_length_batch_drops(
        tmp_path, initial_checkpoint, options):
    # Dropout on every site the encoder has; the seeded masks of a cut batch
    # are those of the full-length batch at the real positions.
    config = tiny_bert_config(hidden_dropout_prob=0.3,
                              attention_probs_dropout_prob=0.3)
    arrays = short_examples(16, seed=5)
    runs = {}
    for name, run_options in (("fixed", FIXED), ("cut", options)):
        trainer = make_trainer(tmp_path / name, arrays, initial_checkpoint,
                               bert_config=config, num_train_steps=2,
                               **run_options)
        runs[name] = (trainer.train(), trainer)
    (fixed_log, fixed), (cut_log, cut) = runs["fixed"], runs["cut"]
    assert cut.task.traced_lengths != [FULL_LENGTH]  # it was cut
    assert cut_log["loss"] == pytest.approx(fixed_log["loss"], abs=1e-5)
    for name, variable in fixed.checkpoint_tensors().items():
        np.testing.assert_allclose(
            cut.checkpoint_tensors()[name].numpy(), variable.numpy(),
            rtol=1e-4, atol=1e-6, err_msg=name)


def test_evaluation_and_prediction_equal_the_full_length(fixed_and_cut_runs):
    fixed, cut = fixed_and_cut_runs["fixed"], fixed_and_cut_runs["cut"]
    assert fixed["results"].keys() == cut["results"].keys()
    for key, value in fixed["results"].items():
        assert float(cut["results"][key]) == pytest.approx(float(value),
                                                           abs=1e-5), key
    fixed_rows = {k: np.concatenate([r[k] for r in fixed["predictions"]])
                  for k in fixed["predictions"][0]}
    cut_rows = {k: np.concatenate([r[k] for r in cut["predictions"]])
                for k in cut["predictions"][0]}
    assert fixed_rows.keys() == cut_rows.keys()
    for key in fixed_rows:
        assert len(fixed_rows[key]) == 24
        np.testing.assert_allclose(cut_rows[key], fixed_rows[key],
                                   rtol=1e-4, atol=1e-5, err_msg=key)


def test_trainer_predicts_again_without_tracing_again(fixed_and_cut_runs):
    trainer = fixed_and_cut_runs["cut"]["trainer"]
    traced = trainer.task.traced_lengths
    count = len(traced)
    arrays = short_examples(13, seed=4)  # other lengths, another last batch
    examples = tf.data.Dataset.from_tensor_slices(
        {k: (v.astype(np.int32) if v.dtype.kind == "i" else v)
         for k, v in arrays.items()})
    rows = list(trainer.predict(examples, 5))
    assert sum(len(next(iter(r.values()))) for r in rows) == 13
    assert len(traced) == count, traced[count:]


def test_group_by_length_regroups_each_window():
    lengths = np.random.RandomState(0).randint(1, 65, size=64)
    mask = (np.arange(64)[None] < lengths[:, None]).astype(np.int32)
    dataset = tf.data.Dataset.from_tensor_slices(
        {"input_mask": mask, "index": np.arange(64)}).batch(4)
    grouped = list(sequence_lengths.regroup_training_batches(
        dataset, 4, seed=1, window_batches=8))
    assert len(grouped) == 16
    for window in (grouped[:8], grouped[8:]):
        indices = np.concatenate([b["index"].numpy() for b in window])
        start = indices.min()
        assert sorted(indices) == list(range(start, start + 32))
        # The longest batch first, then batches of similar lengths.
        batch_lengths = [sorted(lengths[b["index"].numpy()])
                         for b in window]
        assert max(batch_lengths[0]) == max(lengths[indices])
    spread = np.mean([np.ptp(lengths[b["index"].numpy()]) for b in grouped])
    plain = np.mean([np.ptp(lengths[b["index"].numpy()])
                     for b in dataset])
    assert spread < plain / 3


@pytest.mark.slow  # ~30 s on a loaded machine; the regrouping is tested above
def test_group_by_length_trains(tmp_path, initial_checkpoint):
    trainer = make_trainer(tmp_path, short_examples(64, seed=2),
                           initial_checkpoint, group_by_length=True,
                           num_train_steps=4)
    log = trainer.train()
    assert log["global_step"] == 4 and np.isfinite(log["loss"])


@pytest.mark.slow  # XLA compiles 4 programs; the branches are counted
                  # without XLA in test_buckets_trace_one_branch_per_bucket
def test_xla_runs_one_program_per_bucket(tmp_path, initial_checkpoint):
    enable_xla = True
    arrays = short_examples(16, seed=4)
    # Lengths of 8..16 and one of 40: buckets 16 and 64 run.
    arrays[records.INPUT_MASK][0, :40] = 1
    trainer = make_trainer(tmp_path, arrays, initial_checkpoint,
                           enable_xla=enable_xla, num_train_steps=4)
    trainer.train()
    traced = trainer.task.traced_lengths
    # Each bucket is one static branch, traced once.
    assert sorted(traced) == [16, 32, 64]
    fixed = make_trainer(tmp_path / "fixed", arrays, initial_checkpoint,
                         enable_xla=enable_xla, num_train_steps=4, **FIXED)
    fixed.train()
    assert fixed.task.traced_lengths == [FULL_LENGTH]
    for name, variable in fixed.checkpoint_tensors().items():
        np.testing.assert_allclose(
            trainer.checkpoint_tensors()[name].numpy(), variable.numpy(),
            rtol=1e-4, atol=1e-6, err_msg=name)


def test_serving_packs_a_request_to_its_longest_text():
    from bert_tf.export import packing
    ids_a = tf.ragged.constant([[5, 6, 7], [8], [9, 10, 11, 12, 13]],
                               tf.int32)
    ids_b = tf.ragged.constant([[20, 21], [], [22]], tf.int32)
    full = packing.pack_inputs(ids_a, ids_b, 32, cls_id=1, sep_id=2)
    short = packing.pack_inputs(ids_a, ids_b, 32, cls_id=1, sep_id=2,
                                pad_to_multiple_of=8)
    # Longest row: [CLS] 5 pieces [SEP] 1 piece [SEP] = 9 -> 16.
    assert short["input_ids"].shape == (3, 16)
    for name in full:
        np.testing.assert_array_equal(short[name], full[name][:, :16])
        assert not np.any(full[name][:, 16:])
    np.testing.assert_array_equal(
        short["input_ids"][2, :9], [1, 9, 10, 11, 12, 13, 2, 22, 2])
    # Truncation stays at max_seq_length.
    capped = packing.pack_inputs(ids_a, ids_b, 6, cls_id=1, sep_id=2,
                                 pad_to_multiple_of=8)
    np.testing.assert_array_equal(
        capped["input_ids"],
        packing.pack_inputs(ids_a, ids_b, 6, cls_id=1, sep_id=2)["input_ids"])
