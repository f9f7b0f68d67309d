"""Creates masked-LM / next-sentence pretraining data, as Google's script.

Same flags, defaults and output as Google's `create_pretraining_data.py`:
for the same input files, vocabulary and flags it writes the same instances
in the same order with the same masks. It tokenizes in parallel
(`--num_workers`, which never changes the output), holds instances compactly
and serializes records directly, so it is many times faster and leaner.

Usage:
  python create_pretraining_data.py --input_file=corpus.txt \\
      --output_file=out.tfrecord --vocab_file=vocab.txt
"""

from bert_tf import startup

# Before anything imports TensorFlow (only remote files need it): keeps its
# C++ start-up lines out, without loading its runtime for XLA's logging.
startup.quiet_start(abseil_cpp=False)

from absl import app
from absl import flags
from absl import logging

from bert_tf import cli
from bert_tf import file_io
from bert_tf.data import pretraining_corpus
from bert_tf.data import pretraining_instances


flags.DEFINE_string(
    "input_file", None,
    "Input raw text file (or comma-separated list of files; glob patterns "
    "allowed). One sentence per line, an empty line between documents.")
flags.DEFINE_string(
    "output_file", None,
    "Output TFRecord file (or comma-separated list of files; instances are "
    "written round-robin).")
flags.DEFINE_string(
    "vocab_file", None, "The vocabulary file the BERT model was trained on.")
flags.DEFINE_bool(
    "do_lower_case", True,
    "Whether to lower case the input text. Should be True for uncased "
    "models and False for cased models.")
flags.DEFINE_bool(
    "do_whole_word_mask", False,
    "Whether to use whole word masking rather than per-WordPiece masking.")
flags.DEFINE_integer("max_seq_length", 128, "Maximum sequence length.")
flags.DEFINE_integer(
    "max_predictions_per_seq", 20,
    "Maximum number of masked LM predictions per sequence.")
flags.DEFINE_integer("random_seed", 12345, "Random seed for data generation.")
flags.DEFINE_integer(
    "dupe_factor", 10,
    "Number of times to duplicate the input data (with different masks).")
flags.DEFINE_float("masked_lm_prob", 0.15, "Masked LM probability.")
flags.DEFINE_float(
    "short_seq_prob", 0.1,
    "Probability of creating sequences which are shorter than the maximum "
    "length.")
flags.DEFINE_integer(
    "num_workers", None,
    "Processes that tokenize the input and build the records. Default: "
    "chosen from the input's size, one per 8 MB of text up to one per core "
    "(small inputs run in one process, which is faster for them). The "
    "output is the same for every value.", lower_bound=1)

flags.DEFINE_enum(
    "chinese_word_segmenter", None, ["jieba"],
    "Chinese whole-word masking (with --do_whole_word_mask): segment each "
    "line into words with this segmenter (jieba: pip install jieba) and mask "
    "all characters of a word together, as the Chinese 'wwm' models were "
    "trained; ids stay the plain characters. Default: Google's (each Chinese "
    "character is a word of its own).")
flags.DEFINE_enum(
    "word_boundaries", None, ["spaces", "word_tag"],
    "Chinese whole-word masking (with --do_whole_word_mask) for text already "
    "segmented: spaces (words separated by whitespace) or word_tag "
    "('word/TAG' items, as the People's Daily corpus; the tags are dropped "
    "from the text).")

FLAGS = flags.FLAGS


def _word_segmentation():
    """The library's word_segmentation from the two flags (None: Google's)."""
    if FLAGS.chinese_word_segmenter and FLAGS.word_boundaries:
        raise pretraining_corpus.PretrainingDataError(
            "--chinese_word_segmenter and --word_boundaries are "
            "alternatives; give one")
    segmentation = FLAGS.chinese_word_segmenter or FLAGS.word_boundaries
    if segmentation and not FLAGS.do_whole_word_mask:
        flag = ("--chinese_word_segmenter" if FLAGS.chinese_word_segmenter
                else "--word_boundaries")
        raise pretraining_corpus.PretrainingDataError(
            f"{flag} chooses the words of whole-word masking: it needs "
            f"--do_whole_word_mask")
    return segmentation


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(
            "unexpected arguments: " + " ".join(argv[1:]))
    logging.set_verbosity(logging.INFO)
    try:
        # Before anything is written: an output that is an input would
        # turn the corpus into a TFRecord.
        file_io.check_outputs_are_not_inputs(
            [("--output_file", FLAGS.output_file)],
            [("--input_file", FLAGS.input_file),
             ("--vocab_file", FLAGS.vocab_file)])
        word_segmentation = _word_segmentation()
        tokenizer = pretraining_corpus.load_tokenizer(
            FLAGS.vocab_file, FLAGS.do_lower_case)
        input_files = file_io.expand_input_patterns(FLAGS.input_file)
        logging.info("*** Reading from input files ***")
        for input_file in input_files:
            logging.info("  %s", input_file)
        num_workers = (FLAGS.num_workers
                       or pretraining_corpus.auto_num_workers(input_files))
        logging.info("Using %d worker process(es)", num_workers)
        pretraining_instances.create_pretraining_data(
            input_files=input_files,
            output_files=FLAGS.output_file.split(","),
            tokenizer=tokenizer,
            max_seq_length=FLAGS.max_seq_length,
            max_predictions_per_seq=FLAGS.max_predictions_per_seq,
            random_seed=FLAGS.random_seed,
            dupe_factor=FLAGS.dupe_factor,
            masked_lm_prob=FLAGS.masked_lm_prob,
            short_seq_prob=FLAGS.short_seq_prob,
            do_whole_word_mask=FLAGS.do_whole_word_mask,
            num_workers=num_workers,
            word_segmentation=word_segmentation)
    except (pretraining_corpus.PretrainingDataError, OSError,
            file_io.OutputIsInputError) as error:
        # Bad input: say what is wrong, without a traceback.
        cli.exit_with_error("create_pretraining_data.py", error)


if __name__ == "__main__":
    flags.mark_flag_as_required("input_file")
    flags.mark_flag_as_required("output_file")
    flags.mark_flag_as_required("vocab_file")
    app.run(main)
