"""Exports a fine-tuned checkpoint as a SavedModel that serves raw text.

    python export_saved_model.py --task_name=MRPC \\
      --bert_config_file=$BERT_BASE_DIR/bert_config.json \\
      --vocab_file=$BERT_BASE_DIR/vocab.txt \\
      --init_checkpoint=work/mrpc_output/model.ckpt-343 \\
      --max_seq_length=128 --export_dir=work/mrpc_saved_model

The SavedModel's `serving_default` signature takes strings and does what
the runner does, in the graph: Google's tokenization (the same ids as the
Python tokenizer), packing and truncation, the model, and the task's
post-processing:

- a run_classifier.py task (cola, mnli, mnli-mm, mrpc, xnli, sst-2, qqp,
  qnli, rte, wnli, sts-b, generic): `text_a` (and `text_b` for pair tasks)
  -> `probabilities`, `label`, `label_id`, `logits` (sts-b: `score`);
  `label` is the name the training run beside `--init_checkpoint` gives
  the label (its `bert_tf_run.json`: sst-2's `negative`, `positive`, as
  `bert_tf.load` of the run answers), else the label itself;
  a `--multi_label` checkpoint (its run's `bert_tf_run.json` beside it
  says so): sigmoid `probabilities`, `predicted` (0/1 at the run's
  `--threshold`), `labels` (the predicted labels' names, "" elsewhere);
- `squad`: `question`, `context` -> `answer`, `probability`, `score`,
  the n-best list (`nbest_text`, ...), `null_score_diff`;
- `tagging` (run_tagging.py, softmax or CRF): `text` (words separated by
  whitespace) -> `labels` [batch, max_words] (each word's label, "" past
  the sentence's end), `words`, `num_words`; the labels come from
  `label_list.txt` beside `--init_checkpoint` (or `--label_list`);
- `multiple_choice` (run_multiple_choice.py): `context` (and `question`
  with `--input_format=jsonl`), `choices` [batch, num_choices] ->
  `probabilities`, `label` (the likeliest choice's index), `logits`;
- `embeddings` (any checkpoint's encoder): `text` -> `pooled_output`,
  `mean_pooled`.

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


def _task_spec(task_name):
    """The spec of `--task_name` (None: embeddings); an unknown name is
    refused, every known one listed."""
    from bert_tf.export import settings
    from bert_tf.tasks import registry
    spec = registry.of_export_name(task_name)
    if spec is None and task_name != settings.EMBEDDINGS:
        known = [name for spec in registry.specs()
                 for name in spec.exported_as()] + [settings.EMBEDDINGS]
        raise ValueError(f"--task_name={task_name}: unknown task; one of: "
                         f"{', '.join(known)}")
    return spec


def _check_export_dir(flag_values):
    """Refuses, before the checkpoint is loaded, an --export_dir that is or
    holds an input, or that exists and may not be replaced."""
    import os

    from bert_tf import file_io
    from bert_tf.export import serving
    from bert_tf.tasks.tagging import examples as tagging_examples
    checkpoint = flag_values.init_checkpoint
    checkpoint_dir = (checkpoint if os.path.isdir(checkpoint)
                      else os.path.dirname(checkpoint))
    file_io.check_outputs_are_not_inputs(
        [("--export_dir", flag_values.export_dir)],
        [(f"--{name}", flag_values[name].value) for name in (
            "bert_config_file", "vocab_file", "init_checkpoint", "data_dir")]
        + [("label list", os.path.join(checkpoint_dir,
                                       tagging_examples.LABEL_LIST_FILE))],
        whole_directories=True)
    serving.check_export_dir(flag_values.export_dir, flag_values.overwrite)


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
    task_name = flag_values.task_name.lower()
    spec = _task_spec(task_name)
    from bert_tf.export import portable
    portable.check_options(flag_values.format, flag_values.quantize,
                           flag_values.enable_xla, flag_values.serving_dtype)
    checks.check_file("bert_config_file", flag_values.bert_config_file)
    checks.check_file("vocab_file", flag_values.vocab_file)
    # Before the slow work (loading the checkpoint, tracing the graph).
    _check_export_dir(flag_values)

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
