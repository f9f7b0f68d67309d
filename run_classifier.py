"""BERT fine-tuning for GLUE-style classification, as Google's original.

A command line written for google-research/bert's run_classifier.py runs
unchanged:

    python run_classifier.py --task_name=MRPC --do_train=true --do_eval=true \\
      --data_dir=$GLUE_DIR/MRPC --vocab_file=$BERT_BASE_DIR/vocab.txt \\
      --bert_config_file=$BERT_BASE_DIR/bert_config.json \\
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt \\
      --max_seq_length=128 --train_batch_size=32 --learning_rate=2e-5 \\
      --num_train_epochs=3.0 --output_dir=/tmp/mrpc_output/

It writes what the original writes: `train.tf_record`, `eval.tf_record`,
`predict.tf_record`, `model.ckpt-<step>` checkpoints with Google's variable
names (encoder, `output_weights`, `output_bias`, optimizer slots),
`eval_results.txt` (`key = value`: eval_accuracy, eval_loss, global_step,
loss, plus eval_f1 for MRPC/QQP, eval_matthews_corrcoef for CoLA,
eval_pearson/eval_spearman instead of accuracy for STS-B) and
`test_results.tsv` (one line of tab-separated class probabilities per test
example, in input order; the predicted score for STS-B).

Tasks: the original's cola, mnli, mrpc, xnli (--xnli_language), GLUE's
mnli-mm, sst-2, qqp, qnli, rte, wnli, sts-b, and `generic` for your own
TSV/CSV files (--text_a_column, --text_b_column, --label_column,
--data_format). New flags (--distribution_strategy, --dtype, --enable_xla,
--seed, ...) default to the original's behaviour. Restarting with the same
--output_dir resumes training from its newest checkpoint.
"""

from bert_tf import startup

# Before anything imports TensorFlow: keeps its C++ start-up lines out.
startup.quiet_start()

import os

from absl import app
from absl import flags
from absl import logging

from bert_tf import cli
from bert_tf.runners import finetune
from bert_tf.runners import flags as runner_flags
from bert_tf.runners import multi_label as multi_label_runner

FLAGS = flags.FLAGS
PROGRAM = "run_classifier.py"
# Google's log headings of the phases.
_PHASE_NAMES = {"train": "training", "eval": "evaluation",
                "predict": "prediction"}


def define_flags(flag_values=FLAGS):
    """Defines Google's run_classifier.py flags, plus the new shared ones.

    Called on the global FLAGS when this file runs as a program (see
    bert_tf/runners/flags.py).
    """
    finetune.define_flags(flag_values, max_seq_length=128,
                          train_batch_size=32, eval_batch_size=8,
                          learning_rate=5e-5)
    flags.DEFINE_string(
        "data_dir", None,
        "The input data dir. Should contain the .tsv files (or other data "
        "files) for the task.", flag_values=flag_values)
    flags.DEFINE_string(
        "task_name", None,
        "The name of the task to train: cola, mnli, mnli-mm, mrpc, xnli, "
        "sst-2, qqp, qnli, rte, wnli, sts-b, or generic (your own files; see "
        "--text_a_column).", flag_values=flag_values)
    flags.DEFINE_string(
        "xnli_language", "zh",
        "--task_name=xnli: the language to train and evaluate on (the "
        "original hard-codes zh). Reads "
        "multinli/multinli.train.<language>.tsv and the <language> rows of "
        "xnli.dev.tsv.", flag_values=flag_values)
    flags.DEFINE_string(
        "text_a_column", "sentence",
        "--task_name=generic: header name of the column holding the text "
        "(the first text of a pair).", flag_values=flag_values)
    flags.DEFINE_string(
        "text_b_column", None,
        "--task_name=generic: header name of the column holding the second "
        "text of a pair; unset for single-text classification.",
        flag_values=flag_values)
    flags.DEFINE_string(
        "label_column", "label",
        "--task_name=generic: header name of the label column. The label "
        "list is every value in train.<format>, sorted.",
        flag_values=flag_values)
    flags.DEFINE_enum(
        "data_format", "tsv", ("tsv", "csv"),
        "--task_name=generic: train/dev/test.tsv (tab separated, no quoting) "
        "or train/dev/test.csv (comma separated, double-quote quoting), each "
        "with a header row.", flag_values=flag_values)
    multi_label_runner.define_flags(flag_values)

    flags.mark_flag_as_required("data_dir", flag_values=flag_values)
    flags.mark_flag_as_required("task_name", flag_values=flag_values)




def _validate_flags(flag_values):
    if not (flag_values.do_train or flag_values.do_eval
            or flag_values.do_predict):
        raise ValueError(
            "At least one of `do_train`, `do_eval` or `do_predict' must be "
            "True.")
    runner_flags.require(flag_values, "data_dir", "task_name")
    finetune.validate_flags(flag_values)
    import tensorflow as tf
    if not tf.io.gfile.isdir(flag_values.data_dir):
        raise ValueError(
            f"--data_dir: {flag_values.data_dir} is not a directory")


def _write_records(examples, label_list, run, flag_values, file_name,
                   is_regression, pad_to_batch):
    """Features of `examples` written to `<output_dir>/<file_name>`.

    On TPUs (which need every batch full) the set is first padded, like the
    original, with examples that count for nothing.

    Returns:
      (record file path, number of records) -- padding included.
    """
    from bert_tf.tasks.classification import features as classifier_features
    if run.on_tpu and pad_to_batch:
        examples = classifier_features.pad_to_batch_multiple(examples,
                                                             pad_to_batch)
    features = classifier_features.convert_examples_to_features(
        examples, label_list, flag_values.max_seq_length, run.tokenizer)
    path = os.path.join(flag_values.output_dir, file_name)
    count = classifier_features.write_tfrecord(features, path, is_regression)
    return path, count


def run(flag_values):
    """Validates the flags, then trains, evaluates and/or predicts.

    Returns:
      A dict: "train" (the last training log), "eval" (the eval results),
      "predict" (the test probabilities, numpy [n, num_labels]), for the
      phases that ran.
    """
    # Imported here so that `--help` and flag errors come without importing
    # TensorFlow and the model code.
    from bert_tf.tasks.classification.glue_processors import create_processor
    from bert_tf.tasks import base
    from bert_tf.tasks.classification import task as classification

    _validate_flags(flag_values)
    # Before anything is written: no output may be an input.
    runner_flags.check_outputs_are_not_inputs(
        flag_values, ("eval_results.txt", "test_results.tsv",
                      "train.tf_record", "eval.tf_record",
                      "predict.tf_record", "checkpoint"),
        ("bert_config_file", "vocab_file", "init_checkpoint"))
    bert_config = finetune.load_bert_config(flag_values)
    bert_config.check_max_seq_length(flag_values.max_seq_length)
    if flag_values.multi_label:
        return multi_label_runner.run(flag_values, bert_config)

    task_name = flag_values.task_name.lower()
    processor = create_processor(
        task_name, xnli_language=flag_values.xnli_language,
        text_a_column=flag_values.text_a_column,
        text_b_column=flag_values.text_b_column,
        label_column=flag_values.label_column,
        file_format=flag_values.data_format)
    data_dir = flag_values.data_dir
    label_list = processor.get_labels(data_dir)
    is_regression = processor.is_regression
    num_labels = 1 if is_regression else len(label_list)

    # Every input file is read (and checked) before any training, so a bad
    # dev or test file fails in seconds, not after hours of training.
    # (file name, examples, batch size) of each phase that runs.
    phases = {}
    if flag_values.do_train:
        phases[base.TRAIN] = ("train.tf_record",
                              processor.get_train_examples(data_dir), None)
    if flag_values.do_eval:
        phases[base.EVAL] = ("eval.tf_record",
                             processor.get_dev_examples(data_dir),
                             flag_values.eval_batch_size)
    if flag_values.do_predict:
        phases[base.PREDICT] = ("predict.tf_record",
                                processor.get_test_examples(data_dir),
                                flag_values.predict_batch_size)
    steps = finetune.training_steps(
        flag_values, len(phases.get(base.TRAIN, (None, ()))[1]))

    run = finetune.start(flag_values)
    finetune.write_run_description(
        flag_values, run, PROGRAM, finetune.CLASSIFICATION, task_name=task_name,
        label_list=None if is_regression else label_list,
        is_regression=is_regression, has_text_b=processor.has_text_b)
    files, num_records = {}, {}
    for mode, (file_name, examples, batch_size) in phases.items():
        files[mode], num_records[mode] = _write_records(
            examples, label_list, run, flag_values, file_name,
            is_regression, batch_size)

    def log_phase(mode):
        # Google's heading of each phase, when the phase starts (not when
        # its records are written, all before training).
        logging.info("***** Running %s *****", _PHASE_NAMES[mode])
        examples = phases[mode][1]
        if mode == base.TRAIN:
            logging.info("  Num examples = %d", len(examples))
            logging.info("  Batch size = %d", flag_values.train_batch_size)
            logging.info("  Num steps = %d", steps.num_train_steps)
        else:
            logging.info("  Num examples = %d (%d actual, %d padding)",
                         num_records[mode], len(examples),
                         num_records[mode] - len(examples))
    task = classification.ClassificationTask(
        bert_config, num_labels,
        classification.ClassificationDataConfig(
            train_file=files.get(base.TRAIN), eval_file=files.get(base.EVAL),
            predict_file=files.get(base.PREDICT),
            max_seq_length=flag_values.max_seq_length,
            drop_remainder_for_eval=run.on_tpu, seed=flag_values.seed),
        is_regression=is_regression, glue_task_name=task_name,
        init_checkpoint=run.init_checkpoint,
        causal_attention=flag_values.causal_attention)
    trainer = finetune.make_trainer(run, task, flag_values, steps,
                                    flag_values.eval_batch_size)

    # The records are padded for TPUs already (`_write_records`).
    return finetune.run_phases(
        trainer, flag_values, num_predict_examples=num_records.get(base.PREDICT),
        pad_to_full_batches=False, predicted=task.predicted_probabilities,
        before_phase=log_phase)


def main(argv, flag_values=FLAGS):
    """Runs with parsed flags; a bad flag or input ends with its message."""
    runner_flags.run_main(PROGRAM, run, argv, flag_values)


if __name__ == "__main__":
    define_flags()
    cli.list_every_flag_in_help()
    app.run(main)
