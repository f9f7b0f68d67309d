"""`--help` of every program lists every flag it takes and exits with 0.

absl's `--help` shows the main module's key flags only, so flags defined in
the shared modules (`--vocab_file`, `--init_checkpoint`, `--output_dir`,
`--do_train`, ...) used to be missing from `run_classifier.py --help`. The
reference is absl's own registry of the program's flags. absl's help flags
also exit with status 1, which a script reads as a failure.
"""

import ast
import importlib
import json
import re
import shlex
import subprocess
import sys

from absl import flags
import pytest

from bert_tf import cli
from runner_harness import REPO_ROOT
from runner_harness import runner_environment

# Programs started with `cli.run_app` (`python <program>.py`).
APP_RUN_PROGRAMS = ("run_classifier", "run_squad", "run_tagging",
                    "run_multiple_choice", "run_pretraining",
                    "export_saved_model", "extract_features",
                    "create_pretraining_data", "demo")
# Those that define their flags on a `FlagValues` they are given.
DEFINE_FLAGS_PROGRAMS = ("run_classifier", "run_squad", "run_tagging",
                         "run_multiple_choice", "run_pretraining",
                         "export_saved_model", "demo")
# Where programs live: the root scripts, `python -m bert_tf.<module>` and
# the experiments.
PROGRAM_FILES = sorted(
    [path for path in REPO_ROOT.glob("*.py") if path.name != "setup.py"]
    + list(REPO_ROOT.glob("experiments/*.py"))
    + [path for path in REPO_ROOT.glob("bert_tf/**/*.py")
       # `python -m bert_tf` takes no flags: it prints the program list
       # (the list is checked below).
       if path != REPO_ROOT / "bert_tf" / "__main__.py"])


def _help_flags(text):
    return set(re.findall(r"^\s+--(?:\[no\])?(\w+):", text, re.M))


def _main_block(path):
    """The source of the module's `if __name__ == "__main__":` block, or
    None."""
    source = path.read_text()
    for node in ast.parse(source).body:
        if (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
                and getattr(node.test.left, "id", "") == "__name__"):
            return ast.get_source_segment(source, node)
    return None


@pytest.mark.parametrize(
    "path", [path for path in PROGRAM_FILES if _main_block(path)],
    ids=lambda path: str(path.relative_to(REPO_ROOT)))
def test_every_program_starts_through_cli(path):
    """`cli.run_app` (absl programs) or `cli.parse_flags` (`main(argv)`):
    the two ways whose help lists every flag and exits with 0."""
    assert "app.run(" not in _main_block(path), path
    assert ("cli.run_app(main)" in _main_block(path)
            or "cli.parse_flags(" in path.read_text()), path


def test_app_run_program_list_is_complete():
    assert {path.stem for path in PROGRAM_FILES
            if path.parent == REPO_ROOT
            and "cli.run_app(main)" in (_main_block(path) or "")} == set(
                APP_RUN_PROGRAMS)


HELP_PROGRAM = '''"""A program with one flag."""
from absl import flags
from bert_tf import cli
flags.DEFINE_integer("steps", 1, "how many steps")
def main(argv):
    print("ran", flags.FLAGS.steps)
if __name__ == "__main__":
    cli.run_app(main)
'''


@pytest.mark.parametrize("argument", ["--help", "-?", "--helpshort",
                                      "--helpfull", "--helpxml"])
def test_run_app_help_exits_with_zero(argument, tmp_path):
    program = tmp_path / "program.py"
    program.write_text(HELP_PROGRAM)
    process = subprocess.run(
        [sys.executable, str(program), argument], cwd=REPO_ROOT,
        env=runner_environment(PYTHONPATH=str(REPO_ROOT)),
        capture_output=True, text=True, timeout=120)
    assert process.returncode == 0, process.stderr
    assert "steps" in process.stdout
    assert "ran" not in process.stdout


def test_run_app_still_refuses_a_bad_flag_with_status_1(tmp_path):
    program = tmp_path / "program.py"
    program.write_text(HELP_PROGRAM)
    environment = runner_environment(PYTHONPATH=str(REPO_ROOT))
    ran = subprocess.run(
        [sys.executable, str(program), "--steps=3"], cwd=REPO_ROOT,
        env=environment, capture_output=True, text=True, timeout=120)
    assert (ran.returncode, ran.stdout) == (0, "ran 3\n")
    refused = subprocess.run(
        [sys.executable, str(program), "--stepz=3"], cwd=REPO_ROOT,
        env=environment, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 1
    assert "stepz" in refused.stderr


@pytest.mark.parametrize("program", DEFINE_FLAGS_PROGRAMS)
def test_help_lists_every_flag(program, monkeypatch):
    module = importlib.import_module(program)
    flag_values = flags.FlagValues()
    module.define_flags(flag_values)
    monkeypatch.setattr(sys, "argv", [f"{program}.py"])
    cli.list_every_flag_in_help(flag_values)
    defined = {flag.name for module_name, module_flags
               in flag_values.flags_by_module_dict().items()
               for flag in module_flags}
    assert _help_flags(flag_values.main_module_help()) == defined


def test_run_classifier_help_as_a_user_sees_it():
    process = subprocess.run(
        [sys.executable, str(REPO_ROOT / "run_classifier.py"), "--help"],
        cwd=REPO_ROOT, env=runner_environment(), capture_output=True,
        text=True, timeout=300)
    assert process.returncode == 0, process.stderr
    listed = _help_flags(process.stdout)
    assert {"vocab_file", "init_checkpoint", "output_dir", "do_train",
            "bert_config_file", "task_name", "data_dir", "seed",
            "multi_label", "do_lower_case"} <= listed
    assert len(listed) > 40
    # Issue 49 item 16: TensorFlow's TPU tensor tracer's flag, not ours.
    assert "delta_threshold" not in listed
    # The docstring's example keeps its line continuations.
    assert "--task_name=MRPC --do_train=true --do_eval=true \\\n" in (
        process.stdout)


@pytest.mark.parametrize("program", APP_RUN_PROGRAMS)
def test_help_answers_without_importing_tensorflow(program):
    """Issue 49 item 16: `run_classifier.py --help` took 7-13 s, most of
    it importing TensorFlow, which no flag's definition needs. The
    program's `--help`, run as `python <program>.py --help` runs it: exit
    0, the help with its flags printed, TensorFlow and Keras never imported."""
    script = (
        "import contextlib, io, json, runpy, sys\n"
        f"sys.argv = [{program + '.py'!r}, '--help']\n"
        "out = io.StringIO()\n"
        "try:\n"
        "    with contextlib.redirect_stdout(out):\n"
        f"        runpy.run_path({program + '.py'!r}, run_name='__main__')\n"
        "    code = None\n"
        "except SystemExit as exit:\n"
        "    code = exit.code\n"
        "print(json.dumps([code, sys.argv[0] + ':\\n  --' in out.getvalue(),\n"
        "                  'tensorflow' in sys.modules,\n"
        "                  'keras' in sys.modules]))\n")
    process = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT,
        env=runner_environment(), capture_output=True, text=True,
        timeout=300)
    assert process.returncode == 0, process.stderr[-3000:]
    assert json.loads(process.stdout.splitlines()[-1]) == [
        0, True, False, False]


# -- `python -m bert_tf`: the one list of programs ---------------------------

def _files_with_a_main(paths):
    """The files among `paths` that run something as a program."""
    return {path for path in paths
            if re.search(r'^if __name__ == "__main__":', path.read_text(),
                         re.M)}


def test_python_m_bert_tf_lists_every_program():
    from bert_tf import __main__ as programs
    modules = {
        ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts)
        for path in _files_with_a_main((REPO_ROOT / "bert_tf").rglob("*.py"))
        if path.name != "__main__.py"}
    assert modules == set(programs.MODULES)
    scripts = {path.stem for path in _files_with_a_main(REPO_ROOT.glob("*.py"))
               if path.name not in ("setup.py", "demo.py")}
    assert scripts == set(programs.SCRIPTS)
    process = subprocess.run(
        [sys.executable, "-m", "bert_tf"], cwd=REPO_ROOT,
        env=runner_environment(), capture_output=True, text=True, timeout=60)
    assert process.returncode == 0, process.stderr
    for name in programs.SCRIPTS:
        assert re.search(rf"^  {name}\.py +\S", process.stdout, re.M), name
    for name in programs.MODULES:
        assert re.search(rf"^  python -m {re.escape(name)} +\S",
                         process.stdout, re.M), name


@pytest.mark.parametrize("module", [
    "bert_tf.convert", "bert_tf.learn_vocab", "bert_tf.prepare_corpus",
    "bert_tf.corpora.rotten_tomatoes"])
def test_python_m_program_help_exits_0(module):
    process = subprocess.run(
        [sys.executable, "-m", module, "--help"], cwd=REPO_ROOT,
        env=runner_environment(), capture_output=True, text=True,
        timeout=300)
    assert process.returncode == 0, process.stderr[-2000:]
    assert f"Usage: python -m {module} [flags]" in process.stdout


def test_task_corpora_help_starts_quietly():
    """Issue 49 item 11: TensorFlow's start-up lines before the help, in a
    user's environment (no TF_CPP_MIN_LOG_LEVEL); the one program's
    `--help` that imports TensorFlow (its task readers)."""
    module = "bert_tf.corpora.task_corpora"
    process = subprocess.run(
        [sys.executable, "-m", module, "--help"], cwd=REPO_ROOT,
        env=runner_environment(TF_CPP_MIN_LOG_LEVEL=None), capture_output=True,
        text=True, timeout=300)
    assert process.returncode == 0, process.stderr[-2000:]
    assert f"Usage: python -m {module} [flags]" in process.stdout
    assert process.stderr == ""


@pytest.mark.parametrize("command", [
    ["-m", "bert_tf"], ["-m", "bert_tf.convert", "--help"]],
    ids=["python -m bert_tf", "python -m bert_tf.convert --help"])
def test_a_reader_that_stops_early_gets_no_traceback(command):
    """Issue 49 item 11: `python -m bert_tf | head -1` ended with Python's
    BrokenPipeError traceback in about half the runs. A reader gone before
    the program writes (every time), then `head -1` itself, a few times."""
    for _ in range(3):
        process = subprocess.Popen(
            [sys.executable, *command], cwd=REPO_ROOT, env=runner_environment(),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        process.stdout.close()
        error = process.stderr.read().decode()
        process.stderr.close()
        assert (process.wait(timeout=60), error) == (0, "")
    shell_command = shlex.join([sys.executable, *command])
    for _ in range(3):
        process = subprocess.run(
            ["sh", "-c", f"{shell_command} | head -1"], cwd=REPO_ROOT,
            env=runner_environment(), capture_output=True, text=True,
            timeout=60)
        assert process.stderr == ""
        assert process.stdout.count("\n") == 1
