"""Exports a fine-tuned checkpoint as a SavedModel that serves raw text.

    python export_saved_model.py --task_name=MRPC \\
      --bert_config_file=$BERT_BASE_DIR/bert_config.json \\
      --vocab_file=$BERT_BASE_DIR/vocab.txt \\
      --init_checkpoint=work/mrpc_output/model.ckpt-343 \\
      --max_seq_length=128 --export_dir=work/mrpc_saved_model

The SavedModel's `serving_default` signature takes strings and does what
the runner does, in the graph: Google's tokenization (the same ids as the
Python tokenizer), packing and truncation, the model, and the task's
post-processing (SQuAD's n-best answers, the tagger's words, a label's
name as the training run beside `--init_checkpoint` gives it). Each task's
inputs and outputs: docs/serving.md; `--task_name=embeddings` exports the
encoder of any checkpoint (`pooled_output`, `mean_pooled`).

A second signature, `serving_ids`, takes int32 `input_ids`, `input_mask`,
`segment_ids`. `--enable_xla` makes the model call of both one XLA-compiled
function (each new batch size and packed length compiles once, at its first
request). `--serving_dtype=bfloat16` stores the weights in bfloat16 and
computes the matmuls in bfloat16 (LayerNorm, softmax and the outputs stay
float32). Loading needs only tensorflow and tensorflow_text
(`import tensorflow_text` registers the tokenizer's ops). The directory is
written under a temporary name and renamed at the end; an existing
`--export_dir` is refused unless `--overwrite`, and even then unless it is an
export of this program's holding nothing else (its `bert_tf_export.json`
lists the files it wrote): a training run, a vocabulary or a user's files
are never deleted. An `--export_dir` that is or holds an input is refused.

A SavedModel is a TensorFlow graph: with another Keras backend
(`KERAS_BACKEND=jax`) the program runs itself again on TensorFlow's, which
reads the same checkpoint (checkpoints are the same on every backend).
"""

import os
import sys

from bert_tf import startup

# Before anything imports TensorFlow: keeps its C++ start-up lines out.
startup.quiet_start()

from absl import flags

from bert_tf import cli
from bert_tf.finetuning import checks
from bert_tf.runners import flags as runner_flags

FLAGS = flags.FLAGS
PROGRAM = "export_saved_model.py"


def config_class():
    """The config whose fields are this program's flags."""
    from bert_tf.export import settings
    return settings.ExportConfig


def define_flags(flag_values=FLAGS):
    """Defines the flags (called when this file runs as a program)."""
    runner_flags.define_config_flags(config_class(), flag_values)


def run(flag_values):
    """Builds the export of `--task_name` (its task spec's
    `export_from_flags`) and writes it to `--export_dir`.

    Raises:
      ValueError: a bad flag (named), or Keras runs on another backend
        than TensorFlow (the program itself runs again on TensorFlow's:
        `run_on_tensorflow`; this is for a caller in such a process).
    """
    from bert_tf import backend
    if backend.name() != backend.TENSORFLOW:
        raise ValueError(
            f"exports are TensorFlow graphs: {PROGRAM} builds them with "
            f"KERAS_BACKEND=tensorflow, not {backend.name()}")
    checks.require(flag_values, "task_name", "bert_config_file",
                   "vocab_file", "init_checkpoint", "export_dir")
    from bert_tf.export import portable
    from bert_tf.export import settings
    task_name = flag_values.task_name.lower()
    spec = settings.task_spec(task_name)
    portable.check_options(flag_values.format, flag_values.quantize,
                           flag_values.enable_xla, flag_values.serving_dtype)
    checks.check_file("bert_config_file", flag_values.bert_config_file)
    checks.check_file("vocab_file", flag_values.vocab_file)
    # Before the slow work (loading the checkpoint, tracing the graph).
    settings.check_export_dir(flag_values)

    from absl import logging

    from bert_tf.config import BertConfig
    from bert_tf.export import builders
    from bert_tf.text import tokenization

    tokenization.validate_case_matches_checkpoint(
        flag_values.do_lower_case, flag_values.init_checkpoint)
    common = dict(
        bert_config=BertConfig.from_json_file(flag_values.bert_config_file),
        vocab_file=flag_values.vocab_file,
        do_lower_case=flag_values.do_lower_case,
        init_checkpoint=flag_values.init_checkpoint,
        max_seq_length=flag_values.max_seq_length or (
            128 if spec is None else spec.default_max_seq_length),
        causal_attention=flag_values.causal_attention,
        # None: the builder's default for its task.
        pad_to_multiple_of=flag_values.pad_to_multiple_of,
        enable_xla=flag_values.enable_xla,
        serving_dtype=flag_values.serving_dtype)
    export = (builders.embedding_export(**common) if spec is None
              else spec.export_from_flags(flag_values, common))
    with startup.tensorflow_python_info_hidden():
        portable.save(export, flag_values.export_dir,
                      export_format=flag_values.format,
                      quantize=flag_values.quantize,
                      overwrite=flag_values.overwrite)
    logging.info("Exported %s to %s", task_name, flag_values.export_dir)


def main(argv, flag_values=FLAGS):
    """Runs with parsed flags; a bad flag or input (an existing
    --export_dir, a full disk: OSErrors) ends with its message. With
    another Keras backend than TensorFlow's, the process's command line
    runs again on TensorFlow's (`run_on_tensorflow`)."""
    run_on_tensorflow()
    runner_flags.run_main(PROGRAM, run, argv, flag_values)


def run_on_tensorflow():
    """Replaces this process by its own command line on Keras' TensorFlow
    backend, when Keras runs on another (`KERAS_BACKEND=jax`): the export
    is built from the checkpoint there, as on TensorFlow. The command line
    is the process's (`sys.orig_argv`), so a script of one's own that runs
    this program's `main` (docs/adding-a-task.md) runs again whole."""
    from bert_tf import backend
    if backend.name() == backend.TENSORFLOW:
        return
    sys.stderr.write(
        f"{PROGRAM}: KERAS_BACKEND={backend.name()}: a SavedModel is a "
        "TensorFlow graph; building it on the TensorFlow backend\n")
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]],
              {**os.environ, "KERAS_BACKEND": backend.TENSORFLOW})


if __name__ == "__main__":
    define_flags()
    cli.run_app(main)
