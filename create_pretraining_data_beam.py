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

import argparse
import os
import sys

from bert_tf import file_io
from bert_tf.data import chinese_words
from bert_tf.data import pretraining_beam
from bert_tf.data import pretraining_corpus
from bert_tf.data import pretraining_instances
from bert_tf.data.pretraining_corpus import PretrainingDataError

PROGRAM = "create_pretraining_data_beam.py"


def _bool(text):
    """absl's bool syntax, which Google's command lines use."""
    lowered = text.lower()
    if lowered in ("true", "t", "1", "yes"):
        return True
    if lowered in ("false", "f", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def parse_arguments(argv):
    """(Google's flags, the remaining Beam pipeline options)."""
    parser = argparse.ArgumentParser(prog=PROGRAM,
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--input_file", required=True,
                        help="Input text files (comma-separated, globs "
                             "allowed); each file is one shard.")
    parser.add_argument("--output_dir", required=True,
                        help="Directory for <input file name>.tfrecord.")
    parser.add_argument("--vocab_file", required=True)
    parser.add_argument("--do_lower_case", type=_bool, nargs="?",
                        const=True, default=True)
    parser.add_argument("--do_whole_word_mask", type=_bool, nargs="?",
                        const=True, default=False)
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--max_predictions_per_seq", type=int, default=20)
    parser.add_argument("--random_seed", type=int, default=12345)
    parser.add_argument("--dupe_factor", type=int, default=10)
    parser.add_argument("--masked_lm_prob", type=float, default=0.15)
    parser.add_argument("--short_seq_prob", type=float, default=0.1)
    parser.add_argument("--chinese_word_segmenter", choices=["jieba"],
                        help="as create_pretraining_data.py's")
    parser.add_argument("--word_boundaries", choices=["spaces", "word_tag"],
                        help="as create_pretraining_data.py's")
    return parser.parse_known_args(argv)


def run(argv):
    """Builds and runs the pipeline; returns its Beam result."""
    args, beam_arguments = parse_arguments(argv)
    input_files = file_io.expand_input_patterns(args.input_file, sort=True)
    if args.chinese_word_segmenter and args.word_boundaries:
        raise PretrainingDataError(
            "--chinese_word_segmenter and --word_boundaries are "
            "alternatives; give one")
    word_segmentation = args.chinese_word_segmenter or args.word_boundaries
    if word_segmentation and not args.do_whole_word_mask:
        raise PretrainingDataError(
            "--chinese_word_segmenter/--word_boundaries choose the words of "
            "whole-word masking: they need --do_whole_word_mask")
    options = pretraining_beam.ShardOptions(
        vocab_file=args.vocab_file, do_lower_case=args.do_lower_case,
        max_seq_length=args.max_seq_length,
        max_predictions_per_seq=args.max_predictions_per_seq,
        random_seed=args.random_seed, dupe_factor=args.dupe_factor,
        masked_lm_prob=args.masked_lm_prob,
        short_seq_prob=args.short_seq_prob,
        do_whole_word_mask=args.do_whole_word_mask,
        word_segmentation=word_segmentation)
    # Fail here, before workers start, on what would fail in each of them.
    if word_segmentation:
        chinese_words.WordSegmenter(word_segmentation)  # jieba installed?
    pretraining_instances.validate_arguments(
        args.max_seq_length, args.dupe_factor, args.short_seq_prob,
        args.masked_lm_prob, args.max_predictions_per_seq)
    pretraining_instances.PretrainingVocab(
        pretraining_corpus.load_tokenizer(args.vocab_file,
                                          args.do_lower_case).vocab,
        args.vocab_file)
    if "://" not in args.output_dir and not os.path.isdir(args.output_dir):
        raise PretrainingDataError(
            f"--output_dir={args.output_dir} is not an existing directory")
    # Beam is imported once the command line is known to be good (it takes
    # seconds).
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions
    with beam.Pipeline(options=PipelineOptions(beam_arguments)) as pipeline:
        pretraining_beam.build_pipeline(
            pipeline, input_files, args.output_dir, options)
    return pipeline.result


def main(argv=None):
    try:
        run(sys.argv[1:] if argv is None else argv)
    except (PretrainingDataError, file_io.InputFileError, OSError) as error:
        sys.exit(f"{PROGRAM}: error: {error}")
    except ImportError as error:
        sys.exit(f"{PROGRAM}: error: {error}; install the beam extra: "
                 f"pip install -e \".[beam]\"")


if __name__ == "__main__":
    main()
