"""The TFRecord schema of Google's pretraining data (create_pretraining_data.py)."""

import tensorflow as tf

# Feature names, exactly as Google's create_pretraining_data.py writes them.
INPUT_IDS = "input_ids"
INPUT_MASK = "input_mask"
SEGMENT_IDS = "segment_ids"
MASKED_LM_POSITIONS = "masked_lm_positions"
MASKED_LM_IDS = "masked_lm_ids"
MASKED_LM_WEIGHTS = "masked_lm_weights"
NEXT_SENTENCE_LABELS = "next_sentence_labels"


def pretraining_feature_spec(max_seq_length, max_predictions_per_seq):
    """The `tf.io.parse_example` spec of one pretraining record.

    Args:
      max_seq_length: length every sequence feature is padded to.
      max_predictions_per_seq: length the masked-LM features are padded to.

    Returns:
      A dict from feature name to `tf.io.FixedLenFeature`.
    """
    return {
        INPUT_IDS: tf.io.FixedLenFeature([max_seq_length], tf.int64),
        INPUT_MASK: tf.io.FixedLenFeature([max_seq_length], tf.int64),
        SEGMENT_IDS: tf.io.FixedLenFeature([max_seq_length], tf.int64),
        MASKED_LM_POSITIONS: tf.io.FixedLenFeature(
            [max_predictions_per_seq], tf.int64),
        MASKED_LM_IDS: tf.io.FixedLenFeature(
            [max_predictions_per_seq], tf.int64),
        MASKED_LM_WEIGHTS: tf.io.FixedLenFeature(
            [max_predictions_per_seq], tf.float32),
        NEXT_SENTENCE_LABELS: tf.io.FixedLenFeature([1], tf.int64),
    }
