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
from bert_tf.pretraining import corpus as pretraining_corpus
from bert_tf.pretraining import instances as pretraining_instances
from bert_tf.runners import pretraining_data_flags


# Google's flags, shared with create_pretraining_data_beam.py.
pretraining_data_flags.define_flags(flags.FLAGS)
flags.adopt_module_key_flags(pretraining_data_flags)  # listed by --help
flags.DEFINE_string(
    "output_file", None,
    "Output TFRecord file (or comma-separated list of files; instances are "
    "written round-robin).")
flags.DEFINE_integer(
    "num_workers", None,
    "Processes that tokenize the input and build the records. Default: "
    "chosen from the input's size and the free cores, one per 2 MB of text "
    "up to one per core not busy with other work (by the load average); "
    "small inputs, and busy machines, run in one process, which is faster "
    "for them. The output is the same for every value.", lower_bound=1)

flags.DEFINE_enum(
    "pretraining_objective", "mlm_nsp", ["mlm_nsp", "mlm_sop"],
    "The sentence-pair task the records are made for. mlm_nsp (Google's; "
    "the records are Google's, byte for byte): B is the next segment or, "
    "half of the time, a random one (label 1). mlm_sop (ALBERT's "
    "sentence-order prediction): B is always A's true continuation, and "
    "half of the time the two are swapped (label 1); train with "
    "run_pretraining.py --pretraining_objective=mlm_sop. Only in this "
    "script (not the Beam one); made by the Python instance loop.")

FLAGS = flags.FLAGS


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
        output_files = FLAGS.output_file.split(",")
        for output_file in output_files:
            # Before the slow work: a missing directory is found now, and
            # what a killed run left (`.<name>.tmp-<pid>-*`, as large as
            # the records) is removed.
            file_io.check_output_directory(output_file)
            file_io.remove_dead_writers_temporaries(output_file)
        word_segmentation = pretraining_data_flags.word_segmentation(FLAGS)
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
            output_files=output_files,
            tokenizer=tokenizer,
            max_seq_length=FLAGS.max_seq_length,
            max_predictions_per_seq=FLAGS.max_predictions_per_seq,
            random_seed=FLAGS.random_seed,
            dupe_factor=FLAGS.dupe_factor,
            masked_lm_prob=FLAGS.masked_lm_prob,
            short_seq_prob=FLAGS.short_seq_prob,
            do_whole_word_mask=FLAGS.do_whole_word_mask,
            num_workers=num_workers,
            word_segmentation=word_segmentation,
            sentence_order=FLAGS.pretraining_objective == "mlm_sop")
    except (pretraining_corpus.PretrainingDataError, OSError,
            file_io.OutputIsInputError) as error:
        # Bad input: say what is wrong, without a traceback.
        cli.exit_with_error("create_pretraining_data.py", error)


if __name__ == "__main__":
    flags.mark_flag_as_required("input_file")
    flags.mark_flag_as_required("output_file")
    flags.mark_flag_as_required("vocab_file")
    cli.list_every_flag_in_help()
    app.run(main)
