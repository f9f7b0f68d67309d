"""create_pretraining_data.py once per input shard, on an Apache Beam runner.

Each input file is a shard; for each, `<output_dir>/<file name>.tfrecord`
gets exactly the records `create_pretraining_data.py` writes for that file
alone with the same flags (Google's README: shard the corpus, run the
script once per shard). Google's flags keep their names and defaults;
`--output_dir` replaces `--output_file`. Every other argument is a Beam
pipeline option (`--runner`, `--project`, `--region`, `--temp_location`,
`--setup_file`, `--flink_master`, ...).

Local (Beam's DirectRunner, one process per core):
  python create_pretraining_data_beam.py --input_file='shards/*.txt' \\
      --output_dir=records --vocab_file=vocab.txt \\
      --direct_num_workers=0 --direct_running_mode=multi_processing

Needs `pip install -e ".[beam]"` (apache-beam).
"""

from bert_tf import startup

# Before anything imports TensorFlow: keeps its C++ start-up lines out.
startup.quiet_start()

import os

from absl import flags

from bert_tf import cli
from bert_tf import file_io
from bert_tf.pretraining import beam as pretraining_beam
from bert_tf.pretraining import chinese_words
from bert_tf.pretraining import corpus as pretraining_corpus
from bert_tf.pretraining import instances as pretraining_instances
from bert_tf.pretraining.errors import PretrainingDataError
from bert_tf.runners import pretraining_data_flags

PROGRAM = "create_pretraining_data_beam.py"


def define_flags(flag_values):
    """Google's create_pretraining_data.py flags, with --output_dir."""
    pretraining_data_flags.define_flags(flag_values)
    flags.DEFINE_string(
        "output_dir", None,
        "Existing directory that receives <input file name>.tfrecord for "
        "each input file (each input file is one shard).",
        flag_values=flag_values)
    for name in ("input_file", "output_dir", "vocab_file"):
        flags.mark_flag_as_required(name, flag_values=flag_values)


def parse_command_line(argv):
    """`(flag_values, pipeline_arguments)`: Google's flags, and every other
    argument, for Beam's `PipelineOptions`.

    Raises:
      SystemExit: a flag of ours is malformed or missing (status 1, the
        message on stderr), or help was asked for (status 0).
    """
    return cli.parse_flags(PROGRAM, define_flags, argv, known_only=True)


def run(flag_values, pipeline_arguments=()):
    """Builds and runs the pipeline; returns its Beam result.

    Args:
      flag_values: parsed flags (`define_flags`).
      pipeline_arguments: Beam pipeline options (`--runner=...`, ...).

    Raises:
      PretrainingDataError: a bad flag value, an unusable vocabulary, a
        missing output directory, or Apache Beam not installed.
      file_io.InputFileError: no input file matches.
    """
    input_files = file_io.expand_input_patterns(flag_values.input_file,
                                                sort=True)
    word_segmentation = pretraining_data_flags.word_segmentation(flag_values)
    options = pretraining_beam.ShardOptions(
        vocab_file=flag_values.vocab_file,
        do_lower_case=flag_values.do_lower_case,
        max_seq_length=flag_values.max_seq_length,
        max_predictions_per_seq=flag_values.max_predictions_per_seq,
        random_seed=flag_values.random_seed,
        dupe_factor=flag_values.dupe_factor,
        masked_lm_prob=flag_values.masked_lm_prob,
        short_seq_prob=flag_values.short_seq_prob,
        do_whole_word_mask=flag_values.do_whole_word_mask,
        word_segmentation=word_segmentation)
    # Fail here, before workers start, on what would fail in each of them.
    if word_segmentation:
        chinese_words.WordSegmenter(word_segmentation)  # jieba installed?
    pretraining_instances.validate_arguments(
        flag_values.max_seq_length, flag_values.dupe_factor,
        flag_values.short_seq_prob, flag_values.masked_lm_prob,
        flag_values.max_predictions_per_seq)
    pretraining_instances.PretrainingVocab(
        pretraining_corpus.load_tokenizer(flag_values.vocab_file,
                                          flag_values.do_lower_case).vocab,
        flag_values.vocab_file)
    output_dir = flag_values.output_dir
    if "://" not in output_dir and not os.path.isdir(output_dir):
        raise PretrainingDataError(
            f"--output_dir={output_dir} is not an existing directory")
    # Beam is imported once the command line is known to be good (it takes
    # seconds).
    try:
        import apache_beam as beam
        from apache_beam.options.pipeline_options import PipelineOptions
    except ImportError as error:
        raise PretrainingDataError(
            f"{error}; install the beam extra: pip install -e \".[beam]\"")
    with beam.Pipeline(
            options=PipelineOptions(list(pipeline_arguments))) as pipeline:
        pretraining_beam.build_pipeline(
            pipeline, input_files, output_dir, options)
    return pipeline.result


def main(argv=None):
    """Runs the command line; a bad flag or input exits with status 1 and
    a one-line message (`cli.exit_with_error`)."""
    flag_values, pipeline_arguments = parse_command_line(argv)
    return cli.run_or_exit(PROGRAM, run, flag_values, pipeline_arguments)


if __name__ == "__main__":
    main()
