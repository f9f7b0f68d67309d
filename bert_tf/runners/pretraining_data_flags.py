"""The flags of Google's `create_pretraining_data.py`, for both its scripts.

`create_pretraining_data.py` (one process, `--output_file`) and
`create_pretraining_data_beam.py` (one Beam task per input shard,
`--output_dir`) take the same flags with the same meanings and defaults;
they are defined once, here. No TensorFlow is imported: neither script needs
it for local files.
"""

from absl import flags

from bert_tf.pretraining.errors import PretrainingDataError


def define_flags(flag_values):
    """Defines Google's data flags (all but the output) on `flag_values`."""
    flags.DEFINE_string(
        "input_file", None,
        "Input raw text file (or comma-separated list of files; glob "
        "patterns allowed). One sentence per line, an empty line between "
        "documents.", flag_values=flag_values)
    flags.DEFINE_string(
        "vocab_file", None,
        "The vocabulary file the BERT model was trained on.",
        flag_values=flag_values)
    flags.DEFINE_bool(
        "do_lower_case", True,
        "Whether to lower case the input text. Should be True for uncased "
        "models and False for cased models.", flag_values=flag_values)
    flags.DEFINE_bool(
        "do_whole_word_mask", False,
        "Whether to use whole word masking rather than per-WordPiece "
        "masking.", flag_values=flag_values)
    flags.DEFINE_integer("max_seq_length", 128, "Maximum sequence length.",
                         flag_values=flag_values)
    flags.DEFINE_integer(
        "max_predictions_per_seq", 20,
        "Maximum number of masked LM predictions per sequence.",
        flag_values=flag_values)
    flags.DEFINE_integer("random_seed", 12345,
                         "Random seed for data generation.",
                         flag_values=flag_values)
    flags.DEFINE_integer(
        "dupe_factor", 10,
        "Number of times to duplicate the input data (with different "
        "masks).", flag_values=flag_values)
    flags.DEFINE_float("masked_lm_prob", 0.15, "Masked LM probability.",
                       flag_values=flag_values)
    flags.DEFINE_float(
        "short_seq_prob", 0.1,
        "Probability of creating sequences which are shorter than the "
        "maximum length.", flag_values=flag_values)
    flags.DEFINE_enum(
        "chinese_word_segmenter", None, ["jieba"],
        "Chinese whole-word masking (with --do_whole_word_mask): segment "
        "each line into words with this segmenter (jieba: pip install "
        "jieba) and mask all characters of a word together, as the Chinese "
        "'wwm' models were trained; ids stay the plain characters. Default: "
        "Google's (each Chinese character is a word of its own).",
        flag_values=flag_values)
    flags.DEFINE_enum(
        "word_boundaries", None, ["spaces", "word_tag"],
        "Chinese whole-word masking (with --do_whole_word_mask) for text "
        "already segmented: spaces (words separated by whitespace) or "
        "word_tag ('word/TAG' items, as the People's Daily corpus; the tags "
        "are dropped from the text).", flag_values=flag_values)


def word_segmentation(flag_values):
    """The library's `word_segmentation` from the two flags.

    Returns:
      "jieba", "spaces", "word_tag", or None (Google's: each Chinese
      character is a word).

    Raises:
      PretrainingDataError: both flags are given, or one without
        --do_whole_word_mask.
    """
    if flag_values.chinese_word_segmenter and flag_values.word_boundaries:
        raise PretrainingDataError(
            "--chinese_word_segmenter and --word_boundaries are "
            "alternatives; give one")
    segmentation = (flag_values.chinese_word_segmenter
                    or flag_values.word_boundaries)
    if segmentation and not flag_values.do_whole_word_mask:
        flag = ("--chinese_word_segmenter"
                if flag_values.chinese_word_segmenter
                else "--word_boundaries")
        raise PretrainingDataError(
            f"{flag} chooses the words of whole-word masking: it needs "
            f"--do_whole_word_mask")
    return segmentation
