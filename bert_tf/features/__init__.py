"""Feature extraction: contextual token vectors from a pre-trained BERT."""

from bert_tf.features.extraction import ExtractionFeatures
from bert_tf.features.extraction import FeatureExtractionError
from bert_tf.features.extraction import FeatureExtractor
from bert_tf.features.extraction import InputExample
from bert_tf.features.extraction import check_layer_indexes
from bert_tf.features.extraction import convert_example_to_features
from bert_tf.features.extraction import convert_examples_to_features
from bert_tf.features.extraction import extract_features
from bert_tf.features.extraction import feature_json
from bert_tf.features.extraction import parse_example
from bert_tf.features.extraction import parse_layer_indexes
from bert_tf.features.extraction import read_examples

__all__ = [
    "ExtractionFeatures",
    "FeatureExtractionError",
    "FeatureExtractor",
    "InputExample",
    "check_layer_indexes",
    "convert_example_to_features",
    "convert_examples_to_features",
    "extract_features",
    "feature_json",
    "parse_example",
    "parse_layer_indexes",
    "read_examples",
]
