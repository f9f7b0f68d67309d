"""Extracts contextual token vectors from a pre-trained BERT (Google's flags).

Each line of --input_file is one example; `text_a ||| text_b` is a pair.
--output_file gets one JSON object per example, as Google's script writes it:

  {"linex_index": 0, "features": [{"token": "[CLS]",
    "layers": [{"index": -1, "values": [...]}, ...]}, ...]}

`--verbosity=1` also logs the first five examples in full (`input_ids: 101
...`), as Google's script does at its default verbosity.

Example:
  python extract_features.py --input_file=samples/sample_text.txt \\
    --output_file=work/features.jsonl --vocab_file=$BERT_DIR/vocab.txt \\
    --bert_config_file=$BERT_DIR/bert_config.json \\
    --init_checkpoint=$BERT_DIR/bert_model.ckpt --layers=-1,-2,-3,-4 \\
    --max_seq_length=128 --batch_size=8
"""

from bert_tf import startup

# Before anything imports TensorFlow: keeps its C++ start-up lines out.
startup.quiet_start()

from absl import flags

from bert_tf import cli
from bert_tf import finetuning
from bert_tf.finetuning import checks
from bert_tf.runners import flags as runner_flags

FLAGS = flags.FLAGS

flags.DEFINE_string("input_file", None,
                    "Text file: one example per line, 'text_a ||| text_b' "
                    "for a pair.")
flags.DEFINE_string("output_file", None,
                    "JSON lines file to write (replaced only once complete).")
flags.DEFINE_string("layers", "-1,-2,-3,-4",
                    "Comma-separated indexes of the layers whose outputs to "
                    "write; -1 is the last layer, 0 the first.")
flags.DEFINE_string("bert_config_file", None,
                    "The bert_config.json of the pre-trained model.")
flags.DEFINE_integer("max_seq_length", 128,
                     "Maximum tokens per example after WordPiece, [CLS] and "
                     "[SEP] included; longer examples are truncated, shorter "
                     "ones padded.")
flags.DEFINE_string("init_checkpoint", None,
                    "Checkpoint of the pre-trained model (a prefix such as "
                    ".../bert_model.ckpt, or its directory).")
flags.DEFINE_string("vocab_file", None,
                    "The vocabulary file the model was trained with.")
flags.DEFINE_bool("do_lower_case", True,
                  "Lower-case and strip accents: True for uncased models, "
                  "False for cased ones.")
flags.DEFINE_integer("batch_size", 32, "Examples per model call.")
flags.DEFINE_bool("allow_tf32", False,
                  "Let float32 matmuls run in TF32 on NVIDIA GPUs from "
                  "Ampere on (faster; outputs then differ from Google's by "
                  "more than float32 round-off). Default: float32 means "
                  "float32.")
flags.DEFINE_bool("use_tpu", False, "Run on the Cloud TPU at --master.")
flags.DEFINE_string("master", None,
                    "With --use_tpu: the TPU's address (grpc://host:port) or "
                    "Cloud TPU name.")
flags.DEFINE_integer("num_tpu_cores", 8,
                     "With --use_tpu: how many TPU cores to use (at most "
                     "what the TPU has).")
flags.DEFINE_bool("use_one_hot_embeddings", False,
                  "Google's flag for faster embedding lookups on TPU; "
                  "accepted so Google's command lines run. The embedding "
                  "lookup is a gather on every device, which gives the same "
                  "numbers.")

# At which length batches run, as the training programs say it.
runner_flags.define_config_flags(
    finetuning.RunConfig, FLAGS,
    names=("pad_to_multiple_of", "length_buckets"))

for _name in ("input_file", "output_file", "bert_config_file",
              "init_checkpoint", "vocab_file"):
    flags.mark_flag_as_required(_name)


def length_settings():
    """`--pad_to_multiple_of` and `--length_buckets` as arguments of
    `extract_features` (a bad value: FeatureExtractionError naming it)."""
    from bert_tf.features import FeatureExtractionError
    try:
        multiple, buckets = checks.length_settings(FLAGS)
    except ValueError as error:
        raise FeatureExtractionError(str(error)) from None
    return {"pad_to_multiple_of": multiple, "length_buckets": buckets}


def main(_):
    from bert_tf.checkpoints import CheckpointError
    from bert_tf.config import BertConfigError
    from bert_tf.features import FeatureExtractionError
    from bert_tf.features import extract_features
    from bert_tf.text import UnknownVocabularyEntryError
    from bert_tf.training.distribution import DistributionError
    from bert_tf.training.distribution import get_distribution_strategy
    from bert_tf.training.precision import set_tensor_float_32

    from bert_tf import file_io
    import keras

    cli.log_info_and_above()
    # KERAS_BACKEND=jax (or torch): the same JSON without tf.data or a
    # tf.distribute strategy (TensorFlow reads the checkpoint only).
    on_tensorflow = keras.backend.backend() == "tensorflow"
    if on_tensorflow:
        set_tensor_float_32(FLAGS.allow_tf32)
    try:
        file_io.check_outputs_are_not_inputs(
            [("--output_file", FLAGS.output_file)],
            [(f"--{name}", FLAGS[name].value) for name in (
                "input_file", "bert_config_file", "init_checkpoint",
                "vocab_file")])
        # Before tokenizing and loading the model: a missing directory is
        # found now, and what a killed run left is removed.
        file_io.check_output_directory(FLAGS.output_file)
        file_io.remove_dead_writers_temporaries(FLAGS.output_file)
        if on_tensorflow:
            strategy = get_distribution_strategy(
                "default", use_tpu=FLAGS.use_tpu, master=FLAGS.master,
                num_tpu_cores=FLAGS.num_tpu_cores)
        elif FLAGS.use_tpu or FLAGS.allow_tf32:
            raise DistributionError(
                f"--{'use_tpu' if FLAGS.use_tpu else 'allow_tf32'} needs "
                "the TensorFlow backend (KERAS_BACKEND is "
                f"{keras.backend.backend()})")
        else:
            strategy = None
        count = extract_features(
            input_file=FLAGS.input_file,
            output_file=FLAGS.output_file,
            bert_config_file=FLAGS.bert_config_file,
            init_checkpoint=FLAGS.init_checkpoint,
            vocab_file=FLAGS.vocab_file,
            layers=FLAGS.layers,
            max_seq_length=FLAGS.max_seq_length,
            do_lower_case=FLAGS.do_lower_case,
            batch_size=FLAGS.batch_size,
            strategy=strategy,
            **length_settings())
    except (OSError, file_io.OutputIsInputError, BertConfigError,
            CheckpointError, DistributionError,
            FeatureExtractionError, UnknownVocabularyEntryError) as error:
        # Bad input: one message naming the file, flag or variable at fault.
        cli.exit_with_error("extract_features.py", error)
    print(f"Wrote features of {count} examples to {FLAGS.output_file}")


if __name__ == "__main__":
    cli.run_app(main)
