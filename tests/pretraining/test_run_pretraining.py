"""run_pretraining.py: Google's command line, flag errors, kill and resume.

Flag tests parse into a fresh `flags.FlagValues()` and call `run`, in
process (`runner_harness.parse_runner_flags`). The kill/resume test runs the
real program in a subprocess (`runner_harness.start_runner`) and SIGKILLs
it mid-run.
"""

import os
import re
import signal
import subprocess
import time

from absl import flags
import numpy as np
import pytest
import tensorflow as tf

import bert_tf
import run_pretraining
from bert_tf import checkpoints

from modeling_harness import tiny_bert_config
from pretraining_harness import make_pretraining_arrays
from pretraining_harness import pretraining_command_line
from pretraining_harness import write_pretraining_records
from pretraining_harness import write_tiny_pretraining_data
from runner_harness import parse_runner_flags
from runner_harness import start_runner

SEQ, PREDICTIONS = 32, 5


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """Two record shards and a tiny bert_config.json."""
    return write_tiny_pretraining_data(
        tmp_path_factory.mktemp("pretraining_data"), SEQ, PREDICTIONS)


def google_args(data_dir, output_dir, **overrides):
    """A command line as written for Google's run_pretraining.py."""
    return pretraining_command_line(data_dir, output_dir, SEQ, PREDICTIONS, {
        "do_train": "True", "do_eval": "True",
        "train_batch_size": "8", "eval_batch_size": "8",
        "num_train_steps": "4", "num_warmup_steps": "2",
        "learning_rate": "1e-3", "save_checkpoints_steps": "2",
        "iterations_per_loop": "2", "max_eval_steps": "3",
        "use_tpu": "False"}, **overrides)


def parse(args):
    return parse_runner_flags(run_pretraining, *args)


# -- flags -------------------------------------------------------------------

def test_google_defaults():
    flag_values = parse(["--input_file=x", "--output_dir=y",
                         "--bert_config_file=z"])
    assert (flag_values.max_seq_length, flag_values.max_predictions_per_seq,
            flag_values.train_batch_size, flag_values.eval_batch_size,
            flag_values.learning_rate, flag_values.num_train_steps,
            flag_values.num_warmup_steps, flag_values.save_checkpoints_steps,
            flag_values.iterations_per_loop, flag_values.max_eval_steps,
            flag_values.num_tpu_cores) == (
                128, 20, 32, 8, 5e-5, 100000, 10000, 1000, 1000, 100, 8)
    assert not flag_values.do_train and not flag_values.do_eval
    assert not flag_values.use_tpu and flag_values.tpu_name is None
    assert flag_values.init_checkpoint is None
    # New flags keep the original's behaviour by default.
    assert (flag_values.distribution_strategy, flag_values.optimizer,
            flag_values.num_accumulation_steps, flag_values.dtype,
            flag_values.enable_xla, flag_values.dynamic_masking,
            flag_values.seed, flag_values.pretraining_objective) == (
                "default", "adamw", 1, "float32", False, False, None,
                "mlm_nsp")


def test_required_flags_are_enforced_at_parse_time():
    with pytest.raises(flags.IllegalFlagValueError, match="--input_file"):
        parse(["--output_dir=y", "--bert_config_file=z"])


def test_unknown_dtype_is_rejected_at_parse_time():
    with pytest.raises(flags.IllegalFlagValueError, match=re.escape(
            "--dtype=float16: value should be one of "
            "<float32|mixed_float16|mixed_bfloat16>")):
        parse(["--input_file=x", "--output_dir=y", "--bert_config_file=z",
               "--dtype=float16"])


def test_unknown_pretraining_objective_is_rejected_at_parse_time():
    with pytest.raises(flags.IllegalFlagValueError, match=re.escape(
            "--pretraining_objective=nsp: value should be one of "
            "<mlm_nsp|mlm|ltr|mlm_sop>")):
        parse(["--input_file=x", "--output_dir=y", "--bert_config_file=z",
               "--pretraining_objective=nsp"])


def test_pretraining_objective_choices_are_the_tasks():
    from bert_tf.pretraining import task as pretraining
    flag_values = parse(["--input_file=x", "--output_dir=y",
                         "--bert_config_file=z"])
    assert tuple(flag_values["pretraining_objective"].parser.enum_values) == (
        pretraining.OBJECTIVES)


@pytest.mark.parametrize("overrides, message", [
    (dict(do_train="False", do_eval="False"),
     "At least one of `do_train` or `do_eval` must be True."),
    (dict(bert_config_file="/no/such/bert_config.json"),
     "--bert_config_file: file /no/such/bert_config.json does not exist"),
    (dict(input_file="/no/such/dir/*.tfrecord"),
     "--input_file: no file matches input pattern '/no/such/dir/*.tfrecord'"),
    (dict(max_seq_length="128"),
     "Cannot use sequence length 128 because the BERT model was only "
     "trained up to sequence length 64 (--max_seq_length exceeds the "
     "model's max_position_embeddings of "),
    (dict(dynamic_masking="True"), "--vocab_file is required"),
    (dict(do_whole_word_mask="True"),
     "--do_whole_word_mask masks raw text: it needs --dynamic_masking"),
    (dict(num_accumulation_steps="3"),
     "--train_batch_size=8 is not divisible by the 1 replicas x 3 "
     "accumulation steps"),
    (dict(use_tpu="True"), "needs --tpu_name"),
    (dict(use_tpu="True", distribution_strategy="mirrored"),
     "--use_tpu=True contradicts --distribution_strategy=mirrored"),
    (dict(num_train_steps="0"), "--num_train_steps=0 must be positive"),
    (dict(keep_checkpoint_max="-1"), "--keep_checkpoint_max=-1 must be >= 0"),
])
def test_bad_flags_are_named(data_dir, tmp_path, overrides, message):
    flag_values = parse(google_args(data_dir, tmp_path / "out", **overrides))
    with pytest.raises(ValueError) as raised:
        run_pretraining.run(flag_values)
    assert message in str(raised.value)
    assert not (tmp_path / "out").exists()


def test_records_of_another_sequence_length_name_the_file(data_dir, tmp_path):
    flag_values = parse(google_args(data_dir, tmp_path / "out",
                                    max_seq_length="16"))
    with pytest.raises(ValueError, match=r"records-0\.tfrecord: feature "
                                         r"'input_ids' has 32 values, "
                                         r"expected 16"):
        run_pretraining.run(flag_values)


def test_main_reports_the_error_and_exits(data_dir, tmp_path):
    flag_values = parse(google_args(data_dir, tmp_path / "out",
                                    input_file="/no/such/file"))
    with pytest.raises(SystemExit) as raised:
        run_pretraining.main(["run_pretraining.py"], flag_values)
    assert str(raised.value) == (
        "run_pretraining.py: error: --input_file: no file matches input "
        "pattern '/no/such/file'")


def test_input_globs_are_expanded_once(data_dir, tmp_path):
    """The glob matches a record file whose name holds a comma and a glob
    character; expanded again by a later reader, that name would be split
    into the patterns '.../records' and '[1].tfrecord' (matching nothing)
    and the run would stop on a file that exists."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "records,[1].tfrecord").write_bytes(
        (data_dir / "records-0.tfrecord").read_bytes())
    output_dir = tmp_path / "out"
    run_pretraining.run(parse(google_args(
        data_dir, output_dir, input_file=f"{data}/*.tfrecord",
        do_eval="False", num_train_steps="1", num_warmup_steps="0")))
    assert checkpoints.read_checkpoint(
        str(output_dir / "model.ckpt-1"))["global_step"] == 1


# -- init_checkpoint ---------------------------------------------------------

def test_init_checkpoint_from_a_released_style_checkpoint(cased_tiny_dir,
                                                          tmp_path):
    """One step at learning rate 0 (warmup step 0): weights stay Google's."""
    data = tmp_path / "data"
    data.mkdir()
    write_pretraining_records(
        data / "records.tfrecord",
        make_pretraining_arrays(16, SEQ, PREDICTIONS, vocab_size=2000))
    output_dir = tmp_path / "out"
    flag_values = parse([
        f"--input_file={data}/records.tfrecord",
        f"--output_dir={output_dir}",
        f"--bert_config_file={cased_tiny_dir}/bert_config.json",
        f"--init_checkpoint={cased_tiny_dir}/bert_model.ckpt",
        "--do_train=True", "--train_batch_size=8",
        f"--max_seq_length={SEQ}", f"--max_predictions_per_seq={PREDICTIONS}",
        "--num_train_steps=1", "--num_warmup_steps=1",
    ])
    run_pretraining.run(flag_values)
    released = checkpoints.read_checkpoint(
        str(cased_tiny_dir / "bert_model.ckpt"))
    written = checkpoints.read_checkpoint(str(output_dir / "model.ckpt-1"))
    assert written["global_step"] == 1
    for name, value in released.items():
        np.testing.assert_array_equal(written[name], value, err_msg=name)
        assert f"{name}/adam_m" in written and f"{name}/adam_v" in written
    # The step filled the moments (Google's first step does, at rate 0).
    assert np.abs(written["bert/pooler/dense/kernel/adam_v"]).sum() > 0


def test_run_directory_loads_as_a_checkpoint_directory(cased_tiny_dir,
                                                       tmp_path):
    """The config and the vocabulary are copied beside the checkpoints:
    `bert_tf.load` of the demo's own pretraining run used to fail ("it has
    no bert_config.json or vocab.txt")."""
    data = tmp_path / "data"
    data.mkdir()
    write_pretraining_records(
        data / "records.tfrecord",
        make_pretraining_arrays(16, SEQ, PREDICTIONS, vocab_size=2000))
    output_dir = tmp_path / "out"
    run_pretraining.run(parse([
        f"--input_file={data}/records.tfrecord",
        f"--output_dir={output_dir}",
        f"--bert_config_file={cased_tiny_dir}/bert_config.json",
        f"--vocab_file={cased_tiny_dir}/vocab.txt",
        "--do_train=True", "--train_batch_size=8",
        f"--max_seq_length={SEQ}", f"--max_predictions_per_seq={PREDICTIONS}",
        "--num_train_steps=1", "--num_warmup_steps=1",
    ]))
    for name in ("bert_config.json", "vocab.txt"):
        assert (output_dir / name).read_bytes() == (
            cased_tiny_dir / name).read_bytes()
    model = bert_tf.load(output_dir)
    assert model.checkpoint == str(output_dir / "model.ckpt-1")
    # The run's masked-LM head answers.
    [[candidates]] = model.fill_mask(["a [MASK] sentence"], top_k=2)
    assert len(candidates) == 2
    assert candidates[0]["probability"] >= candidates[1]["probability"]


def test_another_models_config_in_the_output_dir_is_refused_and_kept(
        data_dir, tmp_path):
    output_dir = tmp_path / "out"
    output_dir.mkdir()
    theirs = output_dir / "bert_config.json"
    theirs.write_text('{"hidden_size": 768}\n')
    with pytest.raises(ValueError, match=re.escape(
            f"{theirs} exists and differs from --bert_config_file=")):
        run_pretraining.run(parse(google_args(data_dir, output_dir)))
    assert theirs.read_text() == '{"hidden_size": 768}\n'
    assert not list(output_dir.glob("model.ckpt-*"))


# -- kill and resume (a real process) ----------------------------------------

def _start(args, log_path):
    log = open(log_path, "w")
    return start_runner("run_pretraining.py", None, *args, stdout=log,
                        stderr=subprocess.STDOUT), log


# The default run has the same kill-and-resume at the user's level, and
# compares the weights too: tests/test_fault_injection.py's
# test_killed_and_resumed_run_equals_the_uninterrupted_run.
@pytest.mark.slow
def test_killed_run_resumes_and_finishes_at_the_same_step(data_dir, tmp_path):
    output_dir = tmp_path / "out"
    num_steps = 600
    args = google_args(
        data_dir, output_dir, num_train_steps=str(num_steps),
        save_checkpoints_steps="50", iterations_per_loop="50",
        log_steps="50", keep_checkpoint_max="0", num_warmup_steps="10")
    process, log = _start(args, tmp_path / "first.log")
    deadline = time.time() + 600
    first_checkpoint = output_dir / "model.ckpt-50.index"
    try:
        while not first_checkpoint.exists():
            assert process.poll() is None, (tmp_path / "first.log").read_text()
            assert time.time() < deadline, "no checkpoint within 10 minutes"
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
        log.close()
    assert process.returncode == -signal.SIGKILL
    steps_at_kill = sorted(
        int(name.split("-")[1].split(".")[0]) for name in os.listdir(output_dir)
        if name.startswith("model.ckpt-") and name.endswith(".index"))
    assert steps_at_kill and steps_at_kill[-1] < num_steps, steps_at_kill
    resume_step = steps_at_kill[-1]

    process, log = _start(args, tmp_path / "second.log")
    try:
        process.wait(timeout=900)
    finally:
        if process.poll() is None:
            process.kill()
        log.close()
    second_log = (tmp_path / "second.log").read_text()
    assert process.returncode == 0, second_log[-5000:]
    assert f"model.ckpt-{resume_step} (global step {resume_step})" in second_log
    assert f"from step {resume_step} to {num_steps}" in second_log
    reader = tf.train.load_checkpoint(
        str(output_dir / f"model.ckpt-{num_steps}"))
    assert reader.get_tensor("global_step") == num_steps
    steps = sorted(
        int(name.split("-")[1].split(".")[0]) for name in os.listdir(output_dir)
        if name.startswith("model.ckpt-") and name.endswith(".index"))
    # Every 50 steps, none beyond the end.
    assert steps == list(range(50, num_steps + 1, 50))
    results = dict(line.split(" = ") for line in
                   (output_dir / "eval_results.txt").read_text().splitlines())
    assert sorted(results) == ["global_step", "loss", "masked_lm_accuracy",
                               "masked_lm_loss", "next_sentence_accuracy",
                               "next_sentence_loss"]
    assert results["global_step"] == str(num_steps)
    # TensorBoard summaries of both runs.
    assert any(n.startswith("events.out.tfevents") for n in
               os.listdir(output_dir))


# -- the new flags together: raw text, LAMB, accumulation, seed --------------

@pytest.mark.extended(reason=(
    "raw text, LAMB and accumulation in one run; the default run checks each "
    "(test_dynamic_masking, test_optimization, test_trainer)"))
def test_dynamic_masking_with_lamb_and_accumulation(cased_tiny_dir, golden_dir,
                                                    tmp_path):
    output_dir = tmp_path / "out"
    flag_values = parse([
        *_dynamic_masking_args(cased_tiny_dir, golden_dir),
        f"--output_dir={output_dir}", "--do_whole_word_mask=True",
        "--optimizer=lamb", "--num_accumulation_steps=2", "--log_steps=1"])
    results = run_pretraining.run(flag_values)
    assert results["global_step"] == 2
    assert 0.0 <= results["masked_lm_accuracy"] <= 1.0
    written = checkpoints.checkpoint_shapes(str(output_dir / "model.ckpt-2"))
    assert "bert/pooler/dense/kernel/adam_m" in written  # LAMB's slots
    assert (output_dir / "eval_results.txt").exists()


# -- --pretraining_objective: the BERT paper's ablation (section 5.1) ---------

def _eval_results(output_dir):
    return dict(line.split(" = ") for line in
                (output_dir / "eval_results.txt").read_text().splitlines())


@pytest.mark.parametrize("objective, metrics", [
    ("mlm", ["masked_lm_accuracy", "masked_lm_loss"]),
    ("ltr", ["lm_accuracy", "lm_loss"]),
])
def test_ablation_objective_trains_and_writes_eval_results(
        data_dir, tmp_path, objective, metrics):
    output_dir = tmp_path / "out"
    flag_values = parse(google_args(data_dir, output_dir,
                                    pretraining_objective=objective))
    results = run_pretraining.run(flag_values)
    written = _eval_results(output_dir)
    assert sorted(written) == sorted(["global_step", "loss"] + metrics)
    assert written["global_step"] == "4" and results["global_step"] == 4
    for name in metrics:
        assert np.isfinite(float(written[name])), name
    assert 0.0 <= float(written[metrics[0]]) <= 1.0
    # With no other loss, the objective's own loss is the reported loss
    # (both are means of the same per-token losses; batches weigh slightly
    # differently).
    np.testing.assert_allclose(float(written["loss"]),
                               float(written[metrics[1]]), rtol=0.05)
    # Google's names; the next-sentence head is saved but never trained.
    saved = checkpoints.read_checkpoint(str(output_dir / "model.ckpt-4"))
    initial = checkpoints.read_checkpoint(str(output_dir / "model.ckpt-2"))
    np.testing.assert_array_equal(
        saved["cls/seq_relationship/output_weights"],
        initial["cls/seq_relationship/output_weights"])
    assert not np.array_equal(saved["cls/predictions/output_bias"],
                              initial["cls/predictions/output_bias"])
    assert not np.any(saved["cls/seq_relationship/output_weights/adam_m"])


@pytest.mark.extended(reason=(
    "the left-to-right objective on raw text; the default run checks each "
    "(test_ablation_objective_trains_and_writes_eval_results[ltr], "
    "test_dynamic_masking)"))
def test_left_to_right_with_dynamic_masking(cased_tiny_dir, golden_dir,
                                            tmp_path):
    output_dir = tmp_path / "out"
    flag_values = parse([
        *_dynamic_masking_args(cased_tiny_dir, golden_dir),
        f"--output_dir={output_dir}", "--pretraining_objective=ltr"])
    run_pretraining.run(flag_values)
    assert sorted(_eval_results(output_dir)) == [
        "global_step", "lm_accuracy", "lm_loss", "loss"]


def _dynamic_masking_args(cased_tiny_dir, golden_dir):
    return [
        f"--input_file={golden_dir}/create_pretraining_data/corpus.txt",
        f"--bert_config_file={cased_tiny_dir}/bert_config.json",
        f"--vocab_file={cased_tiny_dir}/vocab.txt", "--do_lower_case=False",
        "--dynamic_masking=True", "--seed=3", "--do_train=True",
        "--do_eval=True", "--train_batch_size=4", "--eval_batch_size=4",
        f"--max_seq_length={SEQ}",
        f"--max_predictions_per_seq={PREDICTIONS}", "--num_train_steps=2",
        "--num_warmup_steps=0", "--learning_rate=1e-3", "--max_eval_steps=2"]


def test_packing_needs_dynamic_masking_and_an_objective_without_pairs(
        cased_tiny_dir, golden_dir, tmp_path):
    common = _dynamic_masking_args(cased_tiny_dir, golden_dir)
    with pytest.raises(ValueError, match="--pretraining_objective=mlm_nsp "
                                         "needs sentence pairs"):
        run_pretraining.run(parse(common + [
            f"--output_dir={tmp_path / 'x'}", "--packing=full_sentences"]))
    records_only = [arg for arg in common
                    if not arg.startswith("--dynamic_masking")]
    with pytest.raises(ValueError, match="--packing=full_sentences makes "
                                         "sequences from raw text"):
        run_pretraining.run(parse(records_only + [
            f"--output_dir={tmp_path / 'y'}", "--pretraining_objective=mlm",
            "--packing=full_sentences"]))


@pytest.mark.slow
def test_sentence_order_and_roberta_recipe_with_dynamic_masking(
        cased_tiny_dir, golden_dir, tmp_path):
    """--pretraining_objective=mlm_sop trains the pair head and reports
    sentence_order_*; RoBERTa's recipe (mlm, full_sentences) trains the
    masked LM alone."""
    common = _dynamic_masking_args(cased_tiny_dir, golden_dir)
    sop_dir = tmp_path / "sop"
    run_pretraining.run(parse(common + [
        f"--output_dir={sop_dir}", "--pretraining_objective=mlm_sop"]))
    assert sorted(_eval_results(sop_dir)) == [
        "global_step", "loss", "masked_lm_accuracy", "masked_lm_loss",
        "sentence_order_accuracy", "sentence_order_loss"]
    roberta_dir = tmp_path / "roberta"
    run_pretraining.run(parse(common + [
        f"--output_dir={roberta_dir}", "--pretraining_objective=mlm",
        "--packing=full_sentences"]))
    assert sorted(_eval_results(roberta_dir)) == [
        "global_step", "loss", "masked_lm_accuracy", "masked_lm_loss"]


# -- --pack_sequences ----------------------------------------------------------

@pytest.fixture(scope="module")
def sample_text_records(cased_tiny_dir, golden_dir, tmp_path_factory):
    """create_pretraining_data.py's records of the golden corpus, at
    sequence 128 with many short sequences (what packing is for)."""
    from bert_tf.pretraining import corpus as pretraining_corpus
    from bert_tf.pretraining import instances as pretraining_instances
    path = tmp_path_factory.mktemp("sample_text") / "records.tfrecord"
    written = pretraining_instances.create_pretraining_data(
        input_files=[str(golden_dir / "create_pretraining_data" /
                         "corpus.txt")],
        output_files=[str(path)],
        tokenizer=pretraining_corpus.load_tokenizer(
            str(cased_tiny_dir / "vocab.txt"), False),
        max_seq_length=128, max_predictions_per_seq=20, dupe_factor=1,
        short_seq_prob=0.5, num_logged_examples=0)
    assert written >= 24
    return path


def _sample_text_args(cased_tiny_dir, records_file, output_dir, *extra):
    return [f"--input_file={records_file}", f"--output_dir={output_dir}",
            f"--bert_config_file={cased_tiny_dir}/bert_config.json",
            "--max_seq_length=128", "--max_predictions_per_seq=20",
            "--eval_batch_size=8", "--max_eval_steps=3", *extra]


@pytest.mark.parametrize("source", ["records", "dynamic_masking"])
def test_packed_eval_gives_the_unpacked_metrics(
        cased_tiny_dir, golden_dir, sample_text_records, tmp_path, source):
    """From Google's-format checkpoint, --pack_sequences evaluates the same
    sequences (those of 3 unpacked batches) in fewer rows, to the same
    masked-LM and next-sentence accuracy and loss; from records, or from
    text masked on the fly (evaluation's masks are seeded)."""
    inputs = sample_text_records
    if source == "dynamic_masking":
        inputs = golden_dir / "create_pretraining_data" / "corpus.txt"

    def evaluate(name, *extra):
        if source == "dynamic_masking":
            extra += ("--dynamic_masking=True", "--do_lower_case=False",
                      f"--vocab_file={cased_tiny_dir}/vocab.txt")
        return run_pretraining.run(parse(_sample_text_args(
            cased_tiny_dir, inputs, tmp_path / name,
            f"--init_checkpoint={cased_tiny_dir}/bert_model.ckpt",
            "--do_train=False", "--do_eval=True", *extra)))

    unpacked = evaluate("unpacked")
    packed = evaluate("packed", "--pack_sequences=True")
    for name in ("masked_lm_accuracy", "masked_lm_loss",
                 "next_sentence_accuracy", "next_sentence_loss"):
        np.testing.assert_allclose(packed[name], unpacked[name], atol=1e-5,
                                   err_msg=name)


def test_packed_training_writes_googles_variable_names(
        cased_tiny_dir, sample_text_records, tmp_path):
    output_dir = tmp_path / "out"
    run_pretraining.run(parse(_sample_text_args(
        cased_tiny_dir, sample_text_records, output_dir,
        "--do_train=True", "--do_eval=False", "--train_batch_size=4",
        "--num_train_steps=1", "--num_warmup_steps=0",
        "--pack_sequences=True", "--max_sequences_per_pack=2")))
    released = {name for name, _ in tf.train.list_variables(
        str(cased_tiny_dir / "bert_model.ckpt"))}
    written = {name for name, _ in tf.train.list_variables(
        str(output_dir / "model.ckpt-1"))}
    assert released and released <= written
    assert {name.rsplit("/", 1)[0] for name in written - released
            if name.endswith(("/adam_m", "/adam_v"))} == released
    assert written - released - {
        f"{name}/adam_{moment}" for name in released
        for moment in "mv"} == {"global_step"}


def test_pack_sequences_refuses_the_left_to_right_objective(data_dir,
                                                            tmp_path):
    with pytest.raises(ValueError, match="--pack_sequences is for the "
                                         "masked-LM objectives"):
        run_pretraining.run(parse(google_args(
            data_dir, tmp_path / "out", pack_sequences="True",
            pretraining_objective="ltr")))


def test_fused_attention_is_refused_for_a_model_with_attention_dropout(
        data_dir, tmp_path):
    """`--attention=fused` (no attention-probability dropout) with
    `--do_train` and a config that has that dropout: one line naming the
    flag, the field and the file, before anything is written."""
    config_file = tmp_path / "bert_config.json"
    tiny_bert_config(attention_probs_dropout_prob=0.1).to_json_file(
        str(config_file))
    flag_values = parse(google_args(data_dir, tmp_path / "out",
                                    bert_config_file=str(config_file),
                                    attention="fused"))
    with pytest.raises(SystemExit) as raised:
        run_pretraining.main(["run_pretraining.py"], flag_values)
    assert str(raised.value) == (
        "run_pretraining.py: error: --attention=fused has no "
        "attention-probability dropout, but attention_probs_dropout_prob is "
        f"0.1 in {config_file}: train with --attention=google (the default) "
        "or with a copy of the config whose attention_probs_dropout_prob is "
        "0 (evaluation and prediction take --attention=fused with any "
        "config)")
    assert not (tmp_path / "out").exists()
    with pytest.raises(flags.IllegalFlagValueError, match=re.escape(
            "--attention=flash: value should be one of <google|fused>")):
        parse(google_args(data_dir, tmp_path / "out", attention="flash"))
