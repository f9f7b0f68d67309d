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


def pytest_collection_modifyitems(config, items):
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
