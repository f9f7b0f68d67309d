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
# keras-hub's formats, the demo's report. Each entry is a test file's
# `::test_name`, every parametrization included.
SMOKE_TESTS = (
    "test_create_pretraining_data.py::test_reproduces_googles_records",
    "test_exact_random.py::test_draws_and_state_equal_pythons",
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


def pytest_collection_modifyitems(config, items):
    for item in items:
        name = f"{item.path.name}::{item.originalname}"
        if name in SMOKE_TESTS:
            item.add_marker(pytest.mark.smoke)
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
    """The C extension `bert_tf.data._pretraining_native`; the test is
    skipped where it is not built (an install without a C compiler)."""
    from bert_tf.data import exact_random
    if exact_random._native is None:
        pytest.skip("the C extension bert_tf.data._pretraining_native is not "
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
