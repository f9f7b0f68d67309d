"""Every command line of the README is one its program accepts.

Each `python <program>.py ...` and `python -m <module> ...` line of the
README's shell blocks (continuation lines joined, `$VARIABLES` and
`$(...)` replaced by a path) is parsed by the program's own absl flag
definitions, in this process: an unknown flag, a bad value or a missing
required flag (`--output_dir`) fails the test with the README line. The
reference is the README as written; the parser is the program's, exactly
as a user's shell would hand it the line.
"""

import functools
import importlib
import json
import os
import pathlib
import re
import shlex
import subprocess
import sys

import pytest

from bert_tf import cli
from runner_harness import runner_environment

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
README = REPO_ROOT / "README.md"
# What a `$VARIABLE` or `$(command)` stands for in the check.
PLACEHOLDER = "work/placeholder"
# Programs whose flags live on absl's global FLAGS (defined at import).
GLOBAL_FLAG_PROGRAMS = ("extract_features", "create_pretraining_data")
# Programs taking a sub-command, and those passing unknown flags on (Beam).
POSITIONAL = ("bert_tf.convert",)
KNOWN_ONLY = ("create_pretraining_data_beam",)
# `python -m pytest ...`: not ours.
NOT_ABSL_PROGRAMS = ("pytest",)


def readme_commands():
    """`(line number, argv)` of each python program command in the README's
    ```sh blocks."""
    commands = []
    in_shell = heredoc = False
    pending, start = "", 0
    for number, line in enumerate(README.read_text(encoding="utf-8").split(
            "\n"), start=1):
        if line.startswith("```"):
            in_shell = line.strip() == "```sh"
            continue
        if not in_shell:
            continue
        if heredoc:
            heredoc = line.strip() != "EOF"
            continue
        if "<<EOF" in line:
            heredoc = True
            continue
        if not pending:
            start = number
        pending += line.rstrip("\\").rstrip() + " " if line.endswith(
            "\\") else line
        if line.endswith("\\"):
            continue
        command, pending = pending, ""
        command = _without_substitutions(command)
        command = re.sub(r"\$\{?[A-Za-z_]+\}?", PLACEHOLDER, command)
        for part in command.split("&&"):
            words = shlex.split(part, comments=True)
            if len(words) >= 2 and words[0] == "python" and (
                    words[1].endswith(".py") or words[1] == "-m"):
                commands.append((start, words[1:]))
    return commands


def _without_substitutions(command):
    """`command` with each `$(...)` (parentheses balanced) a placeholder."""
    while "$(" in command:
        start = command.index("$(")
        depth, end = 0, start + 1
        for end in range(start + 1, len(command)):
            depth += {"(": 1, ")": -1}.get(command[end], 0)
            if depth == 0:
                break
        command = command[:start] + PLACEHOLDER + command[end + 1:]
    return command


COMMANDS = readme_commands()


def _program(argv):
    """`(module name, the program's arguments)` of `python ...`'s argv."""
    if argv[0] == "-m":
        return argv[1], argv[2:]
    return argv[0][:-len(".py")].replace("/", "."), argv[1:]


# Parses argument lists (JSON on stdin) with a program whose flags are
# defined on absl's global FLAGS when it is imported; prints the errors.
GLOBAL_FLAGS_PARSER = r"""
import copy, importlib, json, sys
from absl import flags
importlib.import_module(sys.argv[1])
errors = []
for arguments in json.load(sys.stdin):
    flag_values = copy.deepcopy(flags.FLAGS)
    try:
        flag_values([sys.argv[1] + ".py", *arguments])
        errors.append(None)
    except flags.Error as error:
        errors.append(str(error))
print(json.dumps(errors))
"""


@functools.lru_cache(maxsize=None)
def _global_flag_errors(module_name):
    """{README line: error or None} of the program's README commands,
    parsed in one process of its own (two such programs define the same
    flag names on absl's global FLAGS: they cannot share a process)."""
    commands = [(line, _program(argv)[1]) for line, argv in COMMANDS
                if _program(argv)[0] == module_name]
    process = subprocess.run(
        [sys.executable, "-c", GLOBAL_FLAGS_PARSER, module_name],
        input=json.dumps([arguments for _, arguments in commands]),
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
        env=runner_environment())
    assert process.returncode == 0, process.stderr[-3000:]
    return dict(zip([line for line, _ in commands],
                    json.loads(process.stdout.strip().split("\n")[-1])))


def parse_readme_command(line, argv):
    """Parses a README command's arguments with its program's flags.

    Returns:
      None when they parse, else the program's error message.
    """
    module_name, arguments = _program(argv)
    if module_name in GLOBAL_FLAG_PROGRAMS:
        return _global_flag_errors(module_name)[line]
    if module_name.startswith("benchmarks."):
        # Benchmarks import their `harness` as a top-level module.
        benchmarks_dir = str(pathlib.Path(REPO_ROOT) / "benchmarks")
        if benchmarks_dir not in sys.path:
            sys.path.insert(0, benchmarks_dir)
    module = importlib.import_module(module_name)
    if hasattr(module, "build_parser"):  # an argparse benchmark
        try:
            module.build_parser().parse_args(arguments)
        except SystemExit as exited:
            return f"{module_name}: bad arguments (exit {exited.code})"
        return None
    program = f"{module_name}.py"
    try:
        cli.parse_flags(program, module.define_flags, arguments,
                        positional=module_name in POSITIONAL,
                        known_only=module_name in KNOWN_ONLY)
    except SystemExit as exited:
        return str(exited.code)
    return None


def test_the_readme_has_the_commands():
    programs = {_program(argv)[0] for _, argv in COMMANDS}
    assert {"run_classifier", "run_squad", "run_tagging",
            "run_multiple_choice", "run_pretraining", "export_saved_model",
            "extract_features", "create_pretraining_data",
            "bert_tf.corpora.task_corpora"} <= programs


@pytest.mark.parametrize("line, argv", COMMANDS,
                         ids=[f"README.md:{line}" for line, _ in COMMANDS])
def test_readme_command_parses(line, argv):
    if _program(argv)[0] in NOT_ABSL_PROGRAMS:
        pytest.skip(f"{_program(argv)[0]} is not a bert_tf program")
    assert parse_readme_command(line, argv) is None, (
        f"README.md:{line}: python {' '.join(argv)}")


def test_readme_outputs_are_not_under_tmp():
    """Outputs go under work/ (README: "What the commands below assume")."""
    for line, argv in COMMANDS:
        for argument in argv:
            assert "=/tmp" not in argument, f"README.md:{line}: {argument}"


def test_work_directories_are_ignored_by_git():
    ignored = (REPO_ROOT / ".gitignore").read_text().split("\n")
    for directory in ("/work/", "/work_dir/"):
        assert directory in ignored


def _shell_block_of(program):
    """The lines of the README's ```sh block that runs `program`."""
    blocks = re.findall(r"```sh\n(.*?)```", README.read_text(encoding="utf-8"),
                        re.S)
    return next(block for block in blocks if f"python {program}.py" in block)


# Appended to the README's runner command: the same command, tiny.
TINY_OVERRIDES = ["--max_seq_length=32", "--doc_stride=16",
                  "--train_batch_size=8", "--num_train_epochs=0.02"]


@pytest.mark.slow
@pytest.mark.parametrize("program", ["run_tagging", "run_multiple_choice"])
def test_readme_task_section_runs(program, tmp_path, monkeypatch,
                                  cased_tiny_dir):
    """The README's tagging and multiple-choice blocks, run as written
    (in this process, from a fresh directory, `$BERT_BASE_DIR` a tiny
    model), the training made tiny by flags appended at the end."""
    from bert_tf.corpora import task_corpora
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    for path in cased_tiny_dir.iterdir():
        (model_dir / path.name).write_bytes(path.read_bytes())
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BERT_BASE_DIR", str(model_dir))
    monkeypatch.setenv("PWD", str(tmp_path))
    block = _shell_block_of(program).replace("\\\n", " ")
    for line in block.split("\n"):
        words = shlex.split(line, comments=True)
        if not words or words[0] == "pip":
            continue
        words = [os.path.expandvars(word) for word in words]
        if words[0] == "export":
            name, value = words[1].split("=", 1)
            monkeypatch.setenv(name, value)
            continue
        module_name, arguments = _program(words[1:])
        if module_name == "bert_tf.corpora.task_corpora":
            try:
                task_corpora.package_file(
                    arguments[0].split("=", 1)[1])
            except FileNotFoundError as error:
                pytest.skip(str(error))
            task_corpora.run(cli.parse_flags(
                module_name, task_corpora.define_flags, arguments))
            continue
        module = importlib.import_module(module_name)
        overrides = [flag for flag in TINY_OVERRIDES
                     if program == "run_tagging"
                     or not flag.startswith("--doc_stride")]
        flag_values = cli.parse_flags(module_name, module.define_flags,
                                      arguments + overrides)
        results = module.run(flag_values)
        assert "eval" in results and "predict" in results
        output_dir = pathlib.Path(flag_values.output_dir)
        assert (output_dir / "eval_results.txt").exists()
