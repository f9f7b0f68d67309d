"""`create_pretraining_data.py` once per input shard, as an Apache Beam job.

Google's README has users shard their corpus and run the script once per
shard; the records of each such run are what the published models were
trained on. This pipeline makes that a distributed job: each input file is
one shard, and for each, one worker writes exactly the file the script
writes for that shard alone with the same flags and `--random_seed`
(`pretraining_instances.create_pretraining_data` on `[shard]`, in one
process). The same pipeline runs on Beam's local runner and on Dataflow,
Flink or Spark runners (`create_pretraining_data_beam.py` builds it from a
command line).

Why a shard is one unit of work rather than records spread over workers:
Google's algorithm shuffles the shard's documents and then all of its
instances with one random generator, so a shard's records depend on the
whole shard; splitting it would change them. Shards are the parallelism.

Apache Beam is an optional dependency (`pip install -e ".[beam]"`); it is
imported only when a pipeline is built.
"""

import os
import posixpath

from bert_tf import file_io
from bert_tf.pretraining.errors import PretrainingDataError

# The suffix of each shard's output file in the output directory.
OUTPUT_SUFFIX = ".tfrecord"


def output_file_for(shard, output_dir):
    """Where the records of input file `shard` go: `<output_dir>/<name>.tfrecord`.

    Args:
      shard: an input file path (local or remote).
      output_dir: the output directory (local or remote).
    """
    name = posixpath.basename(str(shard).rstrip("/")) or "shard"
    join = posixpath.join if "://" in str(output_dir) else os.path.join
    return join(str(output_dir), name + OUTPUT_SUFFIX)


def plan_shards(input_files, output_dir):
    """(input file, output file) of every shard, checked before any work.

    Raises:
      PretrainingDataError: no input file; two inputs with the same file
        name (their outputs would collide; both are named); or an output
        that is one of the inputs.
    """
    if not input_files:
        raise PretrainingDataError("no input file given")
    plan, seen = [], {}
    for shard in input_files:
        output = output_file_for(shard, output_dir)
        if output in seen:
            raise PretrainingDataError(
                f"input files {seen[output]} and {shard} have the same name, "
                f"so both would be written to {output}; rename one")
        seen[output] = shard
        plan.append((str(shard), output))
    # The one check every program uses: links and `..` resolved, hard links
    # seen (an --output_dir reached through a link may be the input's).
    try:
        file_io.check_outputs_are_not_inputs(
            [("--output_dir file", output) for _, output in plan],
            [("--input_file", shard) for shard, _ in plan])
    except file_io.OutputIsInputError as error:
        raise PretrainingDataError(str(error)) from None
    return plan


class ShardOptions:
    """The script's flags for every shard (a picklable record for workers).

    Attributes are the keyword arguments of
    `pretraining_instances.create_pretraining_data` (Google's flags), plus
    `vocab_file` and `do_lower_case` for the tokenizer.
    """

    def __init__(self, vocab_file, do_lower_case=True, max_seq_length=128,
                 max_predictions_per_seq=20, random_seed=12345,
                 dupe_factor=10, masked_lm_prob=0.15, short_seq_prob=0.1,
                 do_whole_word_mask=False, word_segmentation=None):
        self.vocab_file = str(vocab_file)
        self.do_lower_case = do_lower_case
        self.instance_arguments = dict(
            max_seq_length=max_seq_length,
            max_predictions_per_seq=max_predictions_per_seq,
            random_seed=random_seed, dupe_factor=dupe_factor,
            masked_lm_prob=masked_lm_prob, short_seq_prob=short_seq_prob,
            do_whole_word_mask=do_whole_word_mask,
            word_segmentation=word_segmentation)


def write_shard(shard, output_file, options, tokenizer=None):
    """Writes the records the script writes for `shard` alone.

    Args:
      shard: the input file.
      output_file: its TFRecord file (written atomically).
      options: a `ShardOptions`.
      tokenizer: a `FullTokenizer` to reuse (default: loaded from options).

    Returns:
      The number of records written.
    """
    from bert_tf.pretraining import corpus as pretraining_corpus
    from bert_tf.pretraining import instances as pretraining_instances
    if tokenizer is None:
        tokenizer = pretraining_corpus.load_tokenizer(
            options.vocab_file, options.do_lower_case)
    return pretraining_instances.create_pretraining_data(
        input_files=[shard], output_files=[output_file], tokenizer=tokenizer,
        num_workers=1, num_logged_examples=0, **options.instance_arguments)


def build_pipeline(pipeline, input_files, output_dir, options):
    """Adds the per-shard job to a Beam `pipeline`.

    Args:
      pipeline: an `apache_beam.Pipeline`.
      input_files: the shards (each file is one).
      output_dir: where `<shard name>.tfrecord` files go.
      options: a `ShardOptions`.

    Returns:
      A PCollection of (input file, output file, records written), one per
      shard.

    Raises:
      PretrainingDataError: see `plan_shards`.
    """
    import apache_beam as beam

    class _WriteShard(beam.DoFn):
        """One shard in, its file written, (input, output, count) out."""

        def setup(self):
            from bert_tf.pretraining import corpus as pretraining_corpus
            self._tokenizer = pretraining_corpus.load_tokenizer(
                options.vocab_file, options.do_lower_case)

        def process(self, element):
            shard, output_file = element
            count = write_shard(shard, output_file, options,
                                self._tokenizer)
            beam.metrics.Metrics.counter("pretraining", "records").inc(count)
            yield shard, output_file, count

    plan = plan_shards(input_files, output_dir)
    return (pipeline
            | "Shards" >> beam.Create(plan)
            # Spread shards over workers (Create would keep them together).
            | "Spread" >> beam.Reshuffle()
            | "WriteShard" >> beam.ParDo(_WriteShard()))
