"""Messages a user meets, read as the user reads them (issue 22).

Each test runs a program's `main` in this process (`error_line_in_process`)
or as a process of its own, and compares the whole line it ends with: the
file and line at fault named, the whole reason given, every valid choice
listed, and how to get out of the situation. Checks that need the slow part
of a run (a model loaded) make it impossible to reach, so that the message
can only come from the early check.
"""

import os
import socket
import subprocess
import sys

import pytest

import export_saved_model
import run_multiple_choice
from runner_harness import error_line_in_process
from runner_harness import run_runner


def _model_flags(golden_dir, init_checkpoint=None):
    model = golden_dir / "models" / "cased_tiny"
    return [f"--vocab_file={model}/vocab.txt",
            f"--bert_config_file={model}/bert_config.json",
            f"--init_checkpoint={init_checkpoint or model / 'bert_model.ckpt'}",
            "--do_lower_case=False"]


def _multiple_choice_error(golden_dir, tmp_path, input_format, content):
    predict_file = tmp_path / f"test.{input_format}"
    predict_file.write_bytes(content)
    error = error_line_in_process(
        run_multiple_choice, *_model_flags(golden_dir), "--do_predict=True",
        f"--predict_file={predict_file}", f"--input_format={input_format}",
        f"--output_dir={tmp_path / 'out'}")
    return error, predict_file


def test_a_multiple_choice_file_not_in_utf8_is_named_with_its_line(
        golden_dir, tmp_path):
    # Latin-1 "é" (0xe9) on the third line, 5th character.
    error, path = _multiple_choice_error(
        golden_dir, tmp_path, "swag",
        b"sent1,sent2,ending0,ending1,label\n"
        b"A man,He,runs,sits,0\n"
        b"Caf\xe9,She,drinks,eats,1\n")
    assert error == (
        f"run_multiple_choice.py: error: {path}:3: not UTF-8 text (invalid "
        f"continuation byte: byte 0xe9 at column 4); save the file as UTF-8")
    error, path = _multiple_choice_error(
        golden_dir, tmp_path, "jsonl",
        b'{"question": "q", "choices": ["a", "b"]}\n' * 300
        + b'{"question": "na\xefve", "choices": ["a", "b"]}\n')
    assert error == (
        f"run_multiple_choice.py: error: {path}:301: not UTF-8 text "
        f"(invalid continuation byte: byte 0xef at column 17); save the "
        f"file as UTF-8")


def test_a_bad_json_line_gives_the_whole_reason(golden_dir, tmp_path):
    error, path = _multiple_choice_error(
        golden_dir, tmp_path, "jsonl",
        b'{"question": "q", "choices": ["a", "b"]}\n'
        b'{"question": "a\tb", "choices": ["a", "b"]}\n')
    assert error == (
        f"run_multiple_choice.py: error: {path}:2: not JSON (Invalid "
        f"control character at column 16)")
    error, path = _multiple_choice_error(
        golden_dir, tmp_path, "jsonl", b'{"question": "q",}\n')
    assert error == (
        f"run_multiple_choice.py: error: {path}:1: not JSON (Expecting "
        f"property name enclosed in double quotes at column 18)")


def test_an_unknown_export_task_lists_every_task(golden_dir, tmp_path):
    error = error_line_in_process(
        export_saved_model, "--task_name=ner", *_model_flags(golden_dir),
        f"--export_dir={tmp_path / 'export'}")
    assert error == (
        "export_saved_model.py: error: --task_name=ner: unknown task; one "
        "of: cola, generic, mnli, mnli-mm, mrpc, qnli, qqp, rte, sst-2, "
        "sts-b, wnli, xnli, squad, tagging, multiple_choice, embeddings")


def test_an_existing_export_dir_is_refused_before_the_model_loads(
        golden_dir, tmp_path):
    export_dir = tmp_path / "export"
    export_dir.mkdir()
    # No such checkpoint: loading it would fail with another message.
    error = error_line_in_process(
        export_saved_model, "--task_name=embeddings",
        *_model_flags(golden_dir, tmp_path / "missing.ckpt"),
        f"--export_dir={export_dir}")
    assert error == (
        f"export_saved_model.py: error: {export_dir} already exists; choose "
        f"another directory or allow replacing it (--overwrite)")


def test_a_missing_output_directory_is_named_before_the_work(golden_dir,
                                                             tmp_path):
    text = tmp_path / "input.txt"
    text.write_text("Hello world .\n")
    output = tmp_path / "missing" / "features.jsonl"
    # No such checkpoint: loading the model would fail with another message.
    process = run_runner(
        "extract_features.py", None, f"--input_file={text}",
        f"--output_file={output}", *_model_flags(golden_dir,
                                                 tmp_path / "none.ckpt"),
        expect_success=False)
    assert process.returncode == 1
    assert process.stderr.strip().splitlines()[-1] == (
        f"extract_features.py: error: cannot write {output}: directory "
        f"{tmp_path / 'missing'} does not exist")


def _sleeper():
    """A live process of this host that is no bert_tf run."""
    return subprocess.Popen([sys.executable, "-c",
                             "import time; time.sleep(600)"])


def test_a_lock_of_a_reused_process_id_is_taken_over(tmp_path, caplog):
    from bert_tf.training import run_lock
    lock = tmp_path / run_lock.LOCK_FILE
    host = socket.gethostname()
    other = _sleeper()
    try:
        started = run_lock._process_start(other.pid)  # pylint: disable=protected-access
        if started is None:
            pytest.skip("this system does not say when a process started")
        boot, ticks = started.rsplit("/", 1)
        # The lock of a run that had this id before (earlier start): the
        # process that has it now is not that run.
        lock.write_text(f"host={host}\npid={other.pid}\n"
                        f"process_start={boot}/{int(ticks) - 1}\n")
        with caplog.at_level("WARNING"):
            assert run_lock.lock_output_dir(tmp_path) == str(lock)
        assert (f"Took over the lock {lock} of process {other.pid} on "
                f"{host}: that id now names a process started later (the run "
                f"that took the lock is gone).") in caplog.text
        run_lock.release_output_dir(tmp_path)
        # The same process (its start recorded): a live run, refused.
        lock.write_text(f"host={host}\npid={other.pid}\n"
                        f"process_start={started}\n")
        with pytest.raises(run_lock.OutputDirLockedError) as raised:
            run_lock.lock_output_dir(tmp_path)
        assert str(raised.value) == (
            f"--output_dir={tmp_path} is in use by another run (process "
            f"{other.pid} on this host, lock file {lock}); wait for it to "
            f"finish or use another --output_dir (if process {other.pid} is "
            f"not a bert_tf run, e.g. its id was reused after a restart, "
            f"delete {lock})")
        assert lock.read_text().startswith(f"host={host}\npid={other.pid}\n")
    finally:
        other.kill()
        other.wait()


def test_the_lock_records_the_process_start(tmp_path):
    from bert_tf.training import run_lock
    run_lock.lock_output_dir(tmp_path)
    try:
        fields = dict(line.split("=", 1) for line in
                      (tmp_path / run_lock.LOCK_FILE).read_text().splitlines())
    finally:
        run_lock.release_output_dir(tmp_path)
    assert fields["pid"] == str(os.getpid())
    if os.path.exists(f"/proc/{os.getpid()}/stat"):
        with open(f"/proc/{os.getpid()}/stat", encoding="utf-8") as reader:
            # The 22nd field, after the command name in parentheses.
            ticks = reader.read().rsplit(")", 1)[1].split()[19]
        assert fields["process_start"].endswith(f"/{ticks}")


@pytest.mark.parametrize("runner, flags_", [
    ("run_classifier", ["--task_name=generic", "--data_dir=data"]),
    ("run_tagging", ["--data_dir=data"]),
    ("run_multiple_choice", ["--data_dir=data"]),
    ("run_squad", ["--train_file=train.json"]),
])
@pytest.mark.parametrize("flag, message", [
    ("--train_batch_size=0", "--train_batch_size=0 must be a positive "
                             "integer"),
    ("--num_train_epochs=nan", "--num_train_epochs=nan must be a finite "
                               "number"),
    ("--num_train_epochs=inf", "--num_train_epochs=inf must be a finite "
                               "number"),
])
def test_a_batch_size_of_zero_or_endless_epochs_are_named(
        golden_dir, tmp_path, runner, flags_, flag, message):
    """Issue 49 item 5: a ZeroDivisionError or OverflowError traceback, or
    "cannot convert float NaN to integer", before."""
    import importlib
    error = error_line_in_process(
        importlib.import_module(runner), *_model_flags(golden_dir),
        "--do_train=True", f"--output_dir={tmp_path / 'out'}", *flags_, flag)
    assert error == f"{runner}.py: error: {message}"
    assert not (tmp_path / "out").exists()


def test_a_recipes_batch_size_of_zero_is_named(golden_dir, tmp_path):
    from bert_tf.tasks.classification import recipe
    from bert_tf.tasks.classification.glue_processors import InputExample
    model = golden_dir / "models" / "cased_tiny"
    config = recipe.ClassificationConfig(
        task_name="generic", do_train=True, train_batch_size=0,
        bert_config_file=str(model / "bert_config.json"),
        vocab_file=str(model / "vocab.txt"), do_lower_case=False,
        output_dir=str(tmp_path / "out"))
    with pytest.raises(ValueError) as error:
        recipe.run(config, train_examples=[
            InputExample("train-0", "good", label="1")])
    assert str(error.value) == "--train_batch_size=0 must be a positive integer"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("label_list, message", [
    ("0,1", "label_list='0,1' must be a list of label names, e.g. "
            "['negative', 'positive']"),
    ([], "label_list=[] must name at least one label"),
    (["0", "1", "0"], "label_list names '0' more than once"),
    (["0", 1], "label_list[1]=1 must be a non-empty string (labels are read "
               "as text)"),
])
def test_a_label_list_that_is_no_list_of_distinct_names_is_refused(
        golden_dir, tmp_path, label_list, message):
    """Issue 49 item 3: "0,1" trained the classes '0', ',' and '1';
    duplicates were accepted; [] failed without naming the field."""
    from bert_tf.tasks.classification import recipe
    from bert_tf.tasks.classification.glue_processors import InputExample
    model = golden_dir / "models" / "cased_tiny"
    config = recipe.ClassificationConfig(
        task_name="generic", do_train=True, label_list=label_list,
        bert_config_file=str(model / "bert_config.json"),
        vocab_file=str(model / "vocab.txt"), do_lower_case=False,
        output_dir=str(tmp_path / "out"))
    with pytest.raises(ValueError) as error:
        recipe.run(config, train_examples=[
            InputExample("train-0", "good", label="0"),
            InputExample("train-1", "bad", label="1")])
    assert str(error.value) == message
    assert not (tmp_path / "out").exists()


def test_an_output_dir_that_is_a_file_is_named(golden_dir, tmp_path):
    """Issue 49 item 7: "[Errno 17] File exists", before."""
    import run_classifier
    output_file = tmp_path / "notes.txt"
    output_file.write_text("mine\n")
    error = error_line_in_process(
        run_classifier, *_model_flags(golden_dir), "--task_name=generic",
        f"--data_dir={tmp_path}", "--do_train=True",
        f"--output_dir={output_file}")
    assert error == (f"run_classifier.py: error: --output_dir: {output_file} "
                     "is a file, not a directory")
    assert output_file.read_text() == "mine\n"


def _recipe_config(config_class, golden_dir, tmp_path, **fields):
    model = golden_dir / "models" / "cased_tiny"
    return config_class(
        bert_config_file=str(model / "bert_config.json"),
        vocab_file=str(model / "vocab.txt"), do_lower_case=False,
        output_dir=str(tmp_path / "out"), do_train=True, **fields)


@pytest.mark.parametrize("task, examples, message", [
    ("classification", "abc",
     "train_examples must be a list of InputExamples, not str"),
    ("classification", [], "train_examples: no examples"),
    ("classification", [("good", "1")],
     "train_examples[0] must be an InputExample, not tuple"),
    ("multiple_choice", [{"question": "q", "choices": ["a", "b"]}],
     "train_examples[0] must be a MultipleChoiceExample, not dict"),
    ("tagging", [(["a"], ["O"])],
     "train_examples must be a TaggingFile, not list"),
])
def test_a_recipes_examples_of_the_wrong_kind_are_named(
        golden_dir, tmp_path, task, examples, message):
    """Issue 49 item 8: an AttributeError from inside the recipe, or (for
    []) a request for label_list."""
    import importlib
    recipe = importlib.import_module(f"bert_tf.tasks.{task}.recipe")
    config_class = {"classification": "ClassificationConfig",
                    "multiple_choice": "MultipleChoiceConfig",
                    "tagging": "TaggingConfig"}[task]
    fields = {"task_name": "generic"} if task == "classification" else {}
    config = _recipe_config(getattr(recipe, config_class), golden_dir,
                            tmp_path, **fields)
    with pytest.raises(ValueError) as error:
        recipe.run(config, train_examples=examples)
    assert str(error.value) == message
    assert not (tmp_path / "out").exists()


def test_a_label_list_file_that_is_a_directory_is_named(golden_dir,
                                                         tmp_path):
    """Issue 49 item 8: "no such file", before."""
    import run_tagging
    (tmp_path / "train.txt").write_text("John B-PER\nruns O\n")
    error = error_line_in_process(
        run_tagging, *_model_flags(golden_dir), "--do_train=True",
        f"--data_dir={tmp_path}", f"--label_list_file={tmp_path}",
        f"--output_dir={tmp_path / 'out'}")
    assert error == (f"run_tagging.py: error: --label_list_file={tmp_path} "
                     "is a directory, not a file")
