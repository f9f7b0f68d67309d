"""Shared fixtures: paths to Google's golden outputs, tiny configs."""

import os
import pathlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import pytest  # noqa: E402

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
GOLDEN_DIR = REPO_ROOT / "tests" / "golden"


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False,
                     help="also run tests marked slow, real_data or extended")
    parser.addoption("--extended", action="store_true", default=False,
                     help="also run tests marked extended (.ci/run runs "
                          "them after the default suite)")


# `-m smoke`: the short run .ci/run makes on the lowest and the highest
# supported Python (the full suite runs on the main interpreter). One check
# per thing that can depend on the interpreter or on the versions pip picks
# there: Python's RNG replica and the C extension (Google's records),
# tokenization (unicodedata) and modeling against Google and Model Garden,
# a runner end to end, the checkpoint converters with Hugging Face's and
# keras-hub's formats, the demo's report. Each entry is a test file's path
# under tests/ and `::test_name`, every parametrization included.
SMOKE_TESTS = (
    "test_create_pretraining_data.py::test_reproduces_googles_records",
    "pretraining/test_exact_random.py::test_draws_and_state_equal_pythons",
    "text/test_tokenization.py::"
    "test_same_ids_as_model_garden_on_multilingual_text",
    "text/test_tokenization.py::"
    "test_every_bmp_code_point_and_astral_samples_match_model_garden",
    "modeling/test_modeling.py::test_outputs_match_numpy_reference",
    "modeling/test_modeling.py::test_model_garden_bert_encoder_agrees",
    "test_extract_features.py::test_library_reproduces_google_output",
    "test_extract_features.py::test_script_reproduces_google_output",
    "test_run_classifier.py::test_single_sentence_task_learns",
    "test_convert.py::test_google_to_hf_to_google_is_bit_identical",
    "checkpoints/test_keras_hub_preset.py::"
    "test_keras_hub_backbone_gives_googles_golden_outputs",
    "checkpoints/test_keras_hub_preset.py::"
    "test_preset_keras_hub_saved_converts_back_to_googles_outputs",
    "test_demo.py::test_report_reads_tensorboard_summaries",
    "test_demo.py::test_progress_lines_become_a_bar_on_a_terminal",
)


# `-m golden`: what .ci/run's TensorFlow 2.21 run adds to the smoke tests.
# The tests that hold bert_tf to Google's own outputs and files: the golden
# extract_features JSON and pretraining records, tokenization, the
# pretraining steps, the classifier and SQuAD runners end to end, the
# trainer, and a raw-text SavedModel reproducing run_classifier.py's
# test_results.tsv in a process without bert_tf; and the quiet start. An
# entry is a test file's path under tests/ (all of it) or that and
# `::test_name`.
GOLDEN_TESTS = (
    "test_extract_features.py",
    "text/test_tokenization.py",
    "test_create_pretraining_data.py",
    "test_run_pretraining.py",
    "training/test_trainer.py",
    "test_run_classifier.py",
    "test_run_squad.py",
    "export/test_export_saved_model.py::"
    "test_classifier_probabilities_are_run_classifiers",
    "export/test_export_saved_model.py::"
    "test_xla_export_runs_compiled_in_a_fresh_process",
    # TensorFlow's libraries log as they load through Abseil from 2.21 on.
    "test_user_experience.py::"
    "test_tensorflow_2_21_start_up_lines_are_dropped_and_others_kept",
    "test_user_experience.py::test_quiet_start_then_tensorflow_prints_nothing",
)


# -- how `-n 2` shares the tests out ---------------------------------------
# xdist's default (`--dist load`) deals tests out one by one, so the two
# workers each build a module's (or a session's) fixtures, and a big module
# may start last and run alone. Here a test file is one unit that one worker
# runs whole, the files sharing the export fixtures (below) are one unit,
# and the units go out heaviest first (their tests' summed durations in
# `pytest --durations`, largest first; the rest follow in collection order),
# so that small files fill the gaps at the end. Test paths under tests/.
SCHEDULING_UNITS = {
    "export/test_export_saved_model.py": "export",
    "export/test_export_onnx.py": "export",
}
HEAVIEST_FIRST = (
    "export",
    "test_fault_injection.py",
    "test_run_squad.py",
    "test_run_classifier.py",
    "pretraining/test_dynamic_masking.py",
    "test_run_pretraining.py",
    "test_run_tagging.py",
    "test_keras_backends.py",
    "test_run_classifier_multi_label.py",
    "training/test_jax_finetuning.py",
    "test_sequence_lengths.py",
    "training/test_trainer.py",
    "test_run_multiple_choice.py",
    "modeling/test_keras_native.py",
    "test_user_experience.py",
    "test_reproducibility.py",
)


def _test_path(path):
    """A test file's path under tests/ (posix), or its name outside."""
    tests_dir = pathlib.Path(__file__).resolve().parent
    path = pathlib.Path(path).resolve()
    return (path.relative_to(tests_dir).as_posix()
            if path.is_relative_to(tests_dir) else path.name)


def _scheduling_unit(test_path):
    return SCHEDULING_UNITS.get(test_path, test_path)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`-n N` without `--dist`: a unit per file, heaviest first (above)."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class FileUnitScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            return _scheduling_unit(_test_path(
                config.rootpath / nodeid.split("::", 1)[0]))

    # The workers' collection order (heaviest first, from
    # pytest_collection_modifyitems) is the order the units go out in;
    # LoadScopeScheduling would otherwise sort them by their number of tests.
    config.option.loadscopereorder = False
    return FileUnitScheduling(config, log)


def pytest_collection_modifyitems(config, items):
    units = {unit: rank for rank, unit in enumerate(HEAVIEST_FIRST)}
    items.sort(key=lambda item: units.get(
        _scheduling_unit(_test_path(item.path)), len(units)))
    for item in items:
        path = _test_path(item.path)
        name = f"{path}::{item.originalname}"
        if name in SMOKE_TESTS:
            item.add_marker(pytest.mark.smoke)
        if name in GOLDEN_TESTS or path in GOLDEN_TESTS:
            item.add_marker(pytest.mark.golden)
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="slow; run with --runslow")
    run_extended = config.getoption("--extended")
    for item in items:
        if "slow" in item.keywords or "real_data" in item.keywords:
            item.add_marker(skip)
        elif "extended" in item.keywords and not run_extended:
            # The reason, at the mark, says what the default run checks of
            # the same thing; here only that it is one (a short summary).
            if not item.get_closest_marker("extended").kwargs.get("reason"):
                raise pytest.UsageError(
                    f"{item.nodeid}: an extended mark needs a reason")
            item.add_marker(pytest.mark.skip(
                reason="extended; run with --extended"))


@pytest.fixture(scope="session")
def golden_dir():
    if not GOLDEN_DIR.is_dir():
        raise FileNotFoundError(
            f"Google's golden outputs are expected at {GOLDEN_DIR} "
            "(they are part of the repository)")
    return GOLDEN_DIR


@pytest.fixture(scope="session")
def cased_tiny_dir(golden_dir):
    return golden_dir / "models" / "cased_tiny"


@pytest.fixture(scope="session")
def uncased_vocab_file(golden_dir):
    return golden_dir / "models" / "uncased_vocab.txt"


@pytest.fixture
def c_extension():
    """The C extension `bert_tf.pretraining._native`; the test is
    skipped where it is not built (an install without a C compiler)."""
    from bert_tf.pretraining import exact_random
    if exact_random._native is None:
        pytest.skip("the C extension bert_tf.pretraining._native is not "
                    "built (pip install -e . with a C compiler)")
    return exact_random._native


@pytest.fixture
def tiny_config():
    """`modeling_harness.tiny_bert_config` with BERT's default dropout."""
    from modeling_harness import BERT_DROPOUT, tiny_bert_config
    return tiny_bert_config(**BERT_DROPOUT)


# The `absl` logger's own level when the session starts (unset: it follows
# the root logger's).
_ABSL_LEVEL = __import__("logging").getLogger("absl").level


@pytest.fixture(autouse=True)
def _restore_absl_logger_level():
    """Each test starts and ends with the `absl` logger's level of the
    session's start.

    Library code that saves or loads models may call absl's `set_verbosity`,
    which sets that logger's own level, also inside a module's fixture (run
    before the test's autouse fixtures); a later test's `caplog.at_level`
    (which sets the root logger's) would then miss absl INFO lines.
    """
    import logging
    absl_logger = logging.getLogger("absl")
    absl_logger.setLevel(_ABSL_LEVEL)
    yield
    absl_logger.setLevel(_ABSL_LEVEL)


# -- the export tests' checkpoints and runner runs ----------------------------
# Shared by test_export_saved_model.py and test_export_onnx.py, made once
# per session (a fixture is shared across modules only from here); the
# code is tests/export_harness.py's.

@pytest.fixture(scope="session")
def export_workspace(tmp_path_factory):
    import export_harness
    return export_harness.make_export_workspace(
        tmp_path_factory.mktemp("export"))


@pytest.fixture(scope="session")
def classifier_runs(export_workspace):
    import export_harness
    return export_harness.classifier_predictions(export_workspace)


@pytest.fixture(scope="session")
def squad_run(export_workspace):
    import export_harness
    return export_harness.squad_predictions(export_workspace, "squad_output")


@pytest.fixture(scope="session")
def tagging_runs(export_workspace):
    import export_harness
    return export_harness.tagging_predictions(export_workspace)


@pytest.fixture(scope="session")
def multiple_choice_run(export_workspace):
    import export_harness
    return export_harness.multiple_choice_predictions(export_workspace)


# -- Model Garden, the reference that needs TensorFlow 2.20 --------------------
# tf-models-official's only release (2.20.0) requires TensorFlow 2.20, so it is
# an extra of its own ("reference") that an install on TensorFlow 2.21 leaves
# out. A test that compares with it is then skipped, saying why, instead of
# failing; Google's golden outputs (tests/golden/) are compared by the tests
# of tokenization, modeling, extract_features, create_pretraining_data, the
# pretraining steps, the classifier and SQuAD either way.
MODEL_GARDEN_SKIP = (
    "Model Garden is not installed: it is the `reference` extra "
    "(tf-models-official 2.20.0), whose only release requires TensorFlow "
    "2.20, so it is left out on TensorFlow 2.21 (missing module: {})")


def _model_garden_missing(error):
    """The missing module's name when `error` is Model Garden's absence."""
    if isinstance(error, ModuleNotFoundError):
        top = (error.name or "").split(".")[0]
        if top in ("official", "tf_keras"):
            return error.name
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    try:
        return (yield)
    except ModuleNotFoundError as error:
        if _model_garden_missing(error):
            pytest.skip(MODEL_GARDEN_SKIP.format(error.name))
        raise


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    try:
        return (yield)
    except ModuleNotFoundError as error:
        if _model_garden_missing(error):
            pytest.skip(MODEL_GARDEN_SKIP.format(error.name))
        raise
