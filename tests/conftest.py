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
                     help="also run tests marked slow or real_data")


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
    "test_tokenization.py::test_same_ids_as_model_garden_on_multilingual_text",
    "test_tokenization.py::"
    "test_every_bmp_code_point_and_astral_samples_match_model_garden",
    "test_modeling.py::test_outputs_match_numpy_reference",
    "test_modeling.py::test_model_garden_bert_encoder_agrees",
    "test_extract_features.py::test_library_reproduces_google_output",
    "test_extract_features.py::test_script_reproduces_google_output",
    "test_run_classifier.py::test_single_sentence_task_learns",
    "test_convert.py::test_google_to_hf_to_google_is_bit_identical",
    "test_keras_hub_preset.py::"
    "test_keras_hub_backbone_gives_googles_golden_outputs",
    "test_keras_hub_preset.py::"
    "test_preset_keras_hub_saved_converts_back_to_googles_outputs",
    "test_demo.py::test_report_reads_tensorboard_summaries",
    "test_demo.py::test_progress_lines_become_a_bar_on_a_terminal",
)


# `-m golden`: what .ci/run's TensorFlow 2.21 run adds to the smoke tests.
# The tests that hold bert_tf to Google's own outputs and files: the golden
# extract_features JSON and pretraining records, tokenization, the
# pretraining steps, the classifier and SQuAD runners end to end, the
# trainer, and a raw-text SavedModel reproducing run_classifier.py's
# test_results.tsv in a process without bert_tf. An entry is a test file's
# path under tests/ (all of it) or that and `::test_name`.
GOLDEN_TESTS = (
    "test_extract_features.py",
    "test_tokenization.py",
    "test_create_pretraining_data.py",
    "test_run_pretraining.py",
    "test_trainer.py",
    "test_run_classifier.py",
    "test_run_squad.py",
    "test_export_saved_model.py::"
    "test_classifier_probabilities_are_run_classifiers",
    "test_export_saved_model.py::"
    "test_xla_export_runs_compiled_in_a_fresh_process",
)


def pytest_collection_modifyitems(config, items):
    tests_dir = pathlib.Path(__file__).resolve().parent
    for item in items:
        path = item.path.resolve()
        path = (path.relative_to(tests_dir).as_posix()
                if path.is_relative_to(tests_dir) else path.name)
        name = f"{path}::{item.originalname}"
        if name in SMOKE_TESTS:
            item.add_marker(pytest.mark.smoke)
        if name in GOLDEN_TESTS or path in GOLDEN_TESTS:
            item.add_marker(pytest.mark.golden)
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="slow; run with --runslow")
    for item in items:
        if "slow" in item.keywords or "real_data" in item.keywords:
            item.add_marker(skip)


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


@pytest.fixture(autouse=True)
def _restore_absl_logger_level():
    """Puts the `absl` logger's level back after each test.

    Library code that saves or loads models may call absl's `set_verbosity`,
    which sets that logger's own level; a later test's `caplog.at_level`
    (which sets the root logger's) would then miss absl INFO lines.
    """
    import logging
    absl_logger = logging.getLogger("absl")
    level = absl_logger.level
    yield
    absl_logger.setLevel(level)


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
