"""bert_tf: Google's BERT rebuilt on TensorFlow 2 and Keras 3."""

__version__ = "0.1.0"
