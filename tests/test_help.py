"""`--help` of every program lists every flag it takes.

absl's `--help` shows the main module's key flags only, so flags defined in
the shared modules (`--vocab_file`, `--init_checkpoint`, `--output_dir`,
`--do_train`, ...) used to be missing from `run_classifier.py --help`. The
reference is absl's own registry of the program's flags.
"""

import importlib
import re
import subprocess
import sys

from absl import flags
import pytest

from bert_tf import cli
from runner_harness import REPO_ROOT
from runner_harness import runner_environment

# Programs started with absl's app.run (`python <program>.py`).
APP_RUN_PROGRAMS = ("run_classifier", "run_squad", "run_tagging",
                    "run_multiple_choice", "run_pretraining",
                    "export_saved_model", "extract_features",
                    "create_pretraining_data", "demo")
# Those that define their flags on a `FlagValues` they are given.
DEFINE_FLAGS_PROGRAMS = ("run_classifier", "run_squad", "run_tagging",
                         "run_multiple_choice", "run_pretraining",
                         "export_saved_model", "demo")


def _help_flags(text):
    return set(re.findall(r"^\s+--(?:\[no\])?(\w+):", text, re.M))


@pytest.mark.parametrize("program", APP_RUN_PROGRAMS)
def test_every_program_adopts_its_flags_for_help(program):
    source = (REPO_ROOT / f"{program}.py").read_text()
    main_block = source[source.index('if __name__ == "__main__":'):]
    assert main_block.index("cli.list_every_flag_in_help()") < (
        main_block.index("app.run(main)"))


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
    # (absl's --help exits with status 1.)
    listed = _help_flags(process.stdout)
    assert {"vocab_file", "init_checkpoint", "output_dir", "do_train",
            "bert_config_file", "task_name", "data_dir", "seed",
            "multi_label", "do_lower_case"} <= listed
    assert len(listed) > 40
    # The docstring's example keeps its line continuations.
    assert "--task_name=MRPC --do_train=true --do_eval=true \\\n" in (
        process.stdout)


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
    "bert_tf.corpora.rotten_tomatoes", "bert_tf.corpora.task_corpora"])
def test_python_m_program_help_exits_0(module):
    process = subprocess.run(
        [sys.executable, "-m", module, "--help"], cwd=REPO_ROOT,
        env=runner_environment(), capture_output=True, text=True,
        timeout=300)
    assert process.returncode == 0, process.stderr[-2000:]
    assert f"Usage: python -m {module} [flags]" in process.stdout
