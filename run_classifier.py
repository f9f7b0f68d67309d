"""BERT fine-tuning for GLUE-style classification, as Google's original.

A command line written for google-research/bert's run_classifier.py runs
unchanged:

    python run_classifier.py --task_name=MRPC --do_train=true --do_eval=true \
      --data_dir=$GLUE_DIR/MRPC --vocab_file=$BERT_BASE_DIR/vocab.txt \
      --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt \
      --max_seq_length=128 --train_batch_size=32 --learning_rate=2e-5 \
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

import os

from absl import app
from absl import flags
from absl import logging

from bert_tf.runners import flags as runner_flags
from bert_tf.runners import multi_label as multi_label_runner

FLAGS = flags.FLAGS
PROGRAM = "run_classifier.py"


def define_flags(flag_values=FLAGS):
    """Defines Google's run_classifier.py flags, plus the new shared ones.

    Called on the global FLAGS when this file runs as a program (see
    bert_tf/runners/flags.py).
    """
    runner_flags.define_model_flags(flag_values)
    runner_flags.define_tokenizer_flags(flag_values, do_lower_case=True)
    runner_flags.define_training_flags(
        flag_values, max_seq_length=128, train_batch_size=32,
        eval_batch_size=8, learning_rate=5e-5)
    runner_flags.define_tpu_flags(flag_values)
    runner_flags.define_runtime_flags(flag_values)

    flags.DEFINE_string(
        "data_dir", None,
        "The input data dir. Should contain the .tsv files (or other data "
        "files) for the task.", flag_values=flag_values)
    flags.DEFINE_string(
        "task_name", None,
        "The name of the task to train: cola, mnli, mnli-mm, mrpc, xnli, "
        "sst-2, qqp, qnli, rte, wnli, sts-b, or generic (your own files; see "
        "--text_a_column).", flag_values=flag_values)
    flags.DEFINE_bool(
        "do_predict", False,
        "Whether to run the model in inference mode on the test set.",
        flag_values=flag_values)
    flags.DEFINE_integer("predict_batch_size", 8,
                         "Total batch size for predict.",
                         flag_values=flag_values)
    flags.DEFINE_float("num_train_epochs", 3.0,
                       "Total number of training epochs to perform.",
                       flag_values=flag_values)
    flags.DEFINE_float(
        "warmup_proportion", 0.1,
        "Proportion of training to perform linear learning rate warmup for. "
        "E.g., 0.1 = 10% of training.", flag_values=flag_values)
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
    flags.mark_flag_as_required("vocab_file", flag_values=flag_values)
    flags.mark_flag_as_required("bert_config_file", flag_values=flag_values)
    flags.mark_flag_as_required("output_dir", flag_values=flag_values)


def num_training_steps(num_examples, train_batch_size, num_train_epochs,
                       warmup_proportion):
    """Google's step counts: `(num_train_steps, num_warmup_steps)`.

    `int(num_examples / train_batch_size * num_train_epochs)` and
    `int(num_train_steps * warmup_proportion)`, exactly as the original
    computes them.
    """
    num_train_steps = int(num_examples / train_batch_size * num_train_epochs)
    return num_train_steps, int(num_train_steps * warmup_proportion)


def _validate_flags(flag_values):
    if not (flag_values.do_train or flag_values.do_eval
            or flag_values.do_predict):
        raise ValueError(
            "At least one of `do_train`, `do_eval` or `do_predict' must be "
            "True.")
    runner_flags.require(flag_values, "data_dir", "task_name", "vocab_file",
                         "bert_config_file", "output_dir")
    runner_flags.check_file("bert_config_file", flag_values.bert_config_file)
    runner_flags.check_file("vocab_file", flag_values.vocab_file)
    import tensorflow as tf
    if not tf.io.gfile.isdir(flag_values.data_dir):
        raise ValueError(
            f"--data_dir: {flag_values.data_dir} is not a directory")
    if flag_values.predict_batch_size <= 0:
        raise ValueError(f"--predict_batch_size="
                         f"{flag_values.predict_batch_size} must be positive")
    if flag_values.do_train:
        if flag_values.num_train_epochs <= 0:
            raise ValueError(
                f"--num_train_epochs={flag_values.num_train_epochs} must be "
                "positive")
        if not 0 <= flag_values.warmup_proportion <= 1:
            raise ValueError(f"--warmup_proportion="
                             f"{flag_values.warmup_proportion} must be in "
                             "[0, 1]")


def _convert_and_write(examples, label_list, tokenizer, flag_values,
                       file_name, is_regression, pad_to_batch=None):
    """Features of `examples` written to `<output_dir>/<file_name>`.

    Returns:
      (record file path, number of records) — padding included.
    """
    from bert_tf.data import classifier_features
    if pad_to_batch:
        examples = classifier_features.pad_to_batch_multiple(examples,
                                                             pad_to_batch)
    features = classifier_features.convert_examples_to_features(
        examples, label_list, flag_values.max_seq_length, tokenizer)
    path = os.path.join(flag_values.output_dir, file_name)
    count = classifier_features.write_tfrecord(features, path, is_regression)
    return path, count


def run(flag_values):
    """Validates the flags, then trains, evaluates and/or predicts.

    Returns:
      A dict: "train" (the last training log), "eval" (the eval results),
      "predict" (the test probabilities, numpy [n, num_outputs]), for the
      phases that ran.
    """
    # Imported here so that `--help` and flag errors come without importing
    # TensorFlow and the model code.
    import tensorflow as tf

    from bert_tf.config import BertConfig
    from bert_tf.data.glue_processors import create_processor
    from bert_tf.tasks import base
    from bert_tf.tasks import classification
    from bert_tf.text import tokenization
    from bert_tf.training import distribution
    from bert_tf.training import trainer as trainer_lib

    _validate_flags(flag_values)
    bert_config = BertConfig.from_json_file(flag_values.bert_config_file)
    if flag_values.max_seq_length > bert_config.max_position_embeddings:
        raise ValueError(
            f"Cannot use sequence length {flag_values.max_seq_length} "
            "(--max_seq_length) because the BERT model was only trained up to "
            f"sequence length {bert_config.max_position_embeddings} "
            f"(--bert_config_file={flag_values.bert_config_file})")
    tokenization.validate_case_matches_checkpoint(
        flag_values.do_lower_case, flag_values.init_checkpoint)
    if flag_values.multi_label:
        return multi_label_runner.run(flag_values, bert_config,
                                      num_training_steps)

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
    train_examples = eval_examples = predict_examples = None
    num_train_steps = num_warmup_steps = 0
    if flag_values.do_train:
        train_examples = processor.get_train_examples(data_dir)
        num_train_steps, num_warmup_steps = num_training_steps(
            len(train_examples), flag_values.train_batch_size,
            flag_values.num_train_epochs, flag_values.warmup_proportion)
        if num_train_steps <= 0:
            raise ValueError(
                f"{len(train_examples)} training examples / "
                f"--train_batch_size={flag_values.train_batch_size} * "
                f"--num_train_epochs={flag_values.num_train_epochs} gives no "
                "training step")
    if flag_values.do_eval:
        eval_examples = processor.get_dev_examples(data_dir)
    if flag_values.do_predict:
        predict_examples = processor.get_test_examples(data_dir)

    # The strategy comes before any other TensorFlow work: multi-worker and
    # TPU strategies must configure the runtime before it starts.
    strategy = runner_flags.strategy_from_flags(flag_values)
    runner_flags.set_seed_from_flags(flag_values)
    # TPUs need every batch full: like the original, pad the eval and predict
    # sets with examples that count for nothing.
    on_tpu = distribution.resolve_strategy_name(
        flag_values.distribution_strategy, flag_values.use_tpu) == "tpu"
    tf.io.gfile.makedirs(flag_values.output_dir)
    tokenizer = tokenization.FullTokenizer(
        vocab_file=flag_values.vocab_file,
        do_lower_case=flag_values.do_lower_case)

    train_file = eval_file = predict_file = None
    num_eval_records = num_predict_records = 0
    if train_examples is not None:
        train_file, _ = _convert_and_write(
            train_examples, label_list, tokenizer, flag_values,
            "train.tf_record", is_regression)
        logging.info("***** Running training *****")
        logging.info("  Num examples = %d", len(train_examples))
        logging.info("  Batch size = %d", flag_values.train_batch_size)
        logging.info("  Num steps = %d", num_train_steps)
    if eval_examples is not None:
        eval_file, num_eval_records = _convert_and_write(
            eval_examples, label_list, tokenizer, flag_values,
            "eval.tf_record", is_regression,
            pad_to_batch=flag_values.eval_batch_size if on_tpu else None)
        logging.info("***** Running evaluation *****")
        logging.info("  Num examples = %d (%d actual, %d padding)",
                     num_eval_records, len(eval_examples),
                     num_eval_records - len(eval_examples))
    if predict_examples is not None:
        predict_file, num_predict_records = _convert_and_write(
            predict_examples, label_list, tokenizer, flag_values,
            "predict.tf_record", is_regression,
            pad_to_batch=flag_values.predict_batch_size if on_tpu else None)
        logging.info("***** Running prediction *****")
        logging.info("  Num examples = %d (%d actual, %d padding)",
                     num_predict_records, len(predict_examples),
                     num_predict_records - len(predict_examples))

    task = classification.ClassificationTask(
        bert_config, num_labels,
        classification.ClassificationDataConfig(
            train_file=train_file, eval_file=eval_file,
            predict_file=predict_file,
            max_seq_length=flag_values.max_seq_length,
            drop_remainder_for_eval=on_tpu, seed=flag_values.seed),
        is_regression=is_regression, glue_task_name=task_name)
    trainer_config = runner_flags.trainer_config_from_flags(
        flag_values, num_train_steps=num_train_steps, max_eval_steps=None)
    optimizer_factory = None
    if flag_values.do_train:
        optimizer_factory = runner_flags.optimizer_factory_from_flags(
            flag_values, num_train_steps=num_train_steps,
            num_warmup_steps=num_warmup_steps)
    trainer = trainer_lib.Trainer(task, trainer_config, strategy,
                                  optimizer_factory=optimizer_factory)

    results = {}
    if flag_values.do_train:
        results["train"] = trainer.train()
    if flag_values.do_eval:
        results["eval"] = trainer.evaluate()
    if flag_values.do_predict:
        state, _ = trainer.run_predictions(
            base.PREDICT, flag_values.predict_batch_size,
            num_examples=num_predict_records)
        results["predict"] = task.predicted_probabilities(state)
    return results


def main(argv, flag_values=FLAGS):
    """Runs with parsed flags; a bad flag or input ends with its message."""
    runner_flags.run_main(PROGRAM, run, argv, flag_values)


if __name__ == "__main__":
    define_flags()
    app.run(main)
