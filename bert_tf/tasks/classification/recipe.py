"""Classification (and multi-label classification) from a config: Google's
run_classifier.py as a library function.

    config = ClassificationConfig(
        task_name="mrpc", data_dir="glue/MRPC", do_train=True, do_eval=True,
        bert_config_file=".../bert_config.json", vocab_file=".../vocab.txt",
        init_checkpoint=".../bert_model.ckpt", output_dir="out")
    results = run(config)               # {"train": ..., "eval": ...}

`run` writes what run_classifier.py writes (it is what run_classifier.py
calls): `train.tf_record`, `eval.tf_record`, `predict.tf_record`, the
checkpoints, `eval_results.txt`, `test_results.tsv` and the run description.
The examples come from `data_dir` (the task's processor), or, for any
phase, from a list of `InputExample`s (`bert_tf.finetune` passes Python
lists so, with `task_name="generic"`).
"""

import dataclasses
import os
from typing import List, Optional

from absl import logging

from bert_tf import finetuning
from bert_tf.finetuning import checks
from bert_tf.finetuning.fields import setting

PROGRAM = "run_classifier.py"
# The files a run writes into `output_dir` besides its checkpoints.
OUTPUT_FILES = ("eval_results.txt", "test_results.tsv", "train.tf_record",
                "eval.tf_record", "predict.tf_record", "checkpoint")
RECORD_FILES = {"train": "train.tf_record", "eval": "eval.tf_record",
                "predict": "predict.tf_record"}
# Google's log headings of the phases.
_PHASE_NAMES = {"train": "training", "eval": "evaluation",
                "predict": "prediction"}


@dataclasses.dataclass
class ClassificationConfig(finetuning.FineTuningConfig):
    """run_classifier.py's flags as fields (see its `--help`), plus
    `label_list`.

    Attributes:
      label_list: the labels in label-id order, for examples given as
        lists (default: every label of the training examples, sorted as
        strings, as the generic task reads them from its training file).
        Examples read from `data_dir` take the processor's labels.
    """
    data_dir: Optional[str] = setting(
        None,
        "The input data dir. Should contain the .tsv files (or other data "
        "files) for the task.")
    task_name: Optional[str] = setting(
        None,
        "The name of the task to train: cola, mnli, mnli-mm, mrpc, xnli, "
        "sst-2, qqp, qnli, rte, wnli, sts-b, or generic (your own files; see "
        "--text_a_column).")
    xnli_language: str = setting(
        "zh",
        "--task_name=xnli: the language to train and evaluate on (the "
        "original hard-codes zh). Reads "
        "multinli/multinli.train.<language>.tsv and the <language> rows of "
        "xnli.dev.tsv.")
    text_a_column: str = setting(
        "sentence",
        "--task_name=generic: header name of the column holding the text "
        "(the first text of a pair).")
    text_b_column: Optional[str] = setting(
        None,
        "--task_name=generic: header name of the column holding the second "
        "text of a pair; unset for single-text classification.")
    label_column: str = setting(
        "label",
        "--task_name=generic: header name of the label column. The label "
        "list is every value in train.<format>, sorted.")
    data_format: str = setting(
        "tsv",
        "--task_name=generic: train/dev/test.tsv (tab separated, no quoting) "
        "or train/dev/test.csv (comma separated, double-quote quoting), each "
        "with a header row.", choices=("tsv", "csv"))
    # Several labels per example (`multi_label_data` for the label columns,
    # `multi_label_task` for the model, loss and metrics).
    multi_label: bool = setting(
        False,
        "--task_name=generic: several labels per example, a sigmoid per "
        "label and binary cross-entropy. --label_column names one column "
        "holding a --label_delimiter separated list of labels, or several "
        "comma-separated columns, each a label with values 1/0. Reports "
        "eval_micro_f1, eval_macro_f1, eval_exact_match; test_results.tsv "
        "holds each label's probability.")
    label_delimiter: str = setting(
        ",", "--multi_label with one label column: what separates its labels.")
    threshold: float = setting(
        0.5,
        "--multi_label: a label is predicted when its probability is at "
        "least this.")
    label_list: Optional[List[str]] = None

    REQUIRED_FLAGS = finetuning.FineTuningConfig.REQUIRED_FLAGS + (
        "data_dir", "task_name")

    def validate(self, reads_files=True):
        """Checks every field once; raises ValueError naming the first bad
        one.

        Args:
          reads_files: some phase reads its examples from `data_dir` (which
            must then be a directory).
        """
        self.require_a_phase()
        checks.require(self, *(("data_dir",) if reads_files else ()),
                             "task_name")
        super().validate()
        if reads_files:
            import tensorflow as tf
            if not tf.io.gfile.isdir(self.data_dir):
                raise ValueError(
                    f"--data_dir: {self.data_dir} is not a directory")
        if self.multi_label and self.task_name.lower() != "generic":
            raise ValueError("--multi_label needs --task_name=generic (your "
                             f"own files), not {self.task_name}")
        check_room_for_special_tokens(self.max_seq_length, has_text_b=False)
        check_label_list(self.label_list)


@finetuning.releases_output_dir
def run(config, train_examples=None, eval_examples=None,
        predict_examples=None):
    """Fine-tunes a sentence (pair) classifier: validates `config`, then
    trains, evaluates and/or predicts.

    Args:
      config: a `ClassificationConfig`.
      train_examples, eval_examples, predict_examples: lists of
        `InputExample`s, each instead of the phase's file in `data_dir`
        (not with `multi_label`).

    Returns:
      A dict: "train" (the last training log), "eval" (the eval results),
      "predict" (the test probabilities, numpy [n, num_labels]), for the
      phases that ran.

    Raises:
      ValueError: a bad field or input, named.
    """
    given = {"train": train_examples, "eval": eval_examples,
             "predict": predict_examples}
    wanted = {"train": config.do_train, "eval": config.do_eval,
              "predict": config.do_predict}
    reads_files = any(wanted[phase] and given[phase] is None
                      for phase in given)
    config.validate(reads_files=reads_files)
    from bert_tf.tasks.classification.glue_processors import InputExample
    finetuning.check_given_examples(config, given, InputExample)
    # Before anything is written: no output may be an input.
    checks.check_outputs_are_not_inputs(
        config, OUTPUT_FILES,
        ("bert_config_file", "vocab_file", "init_checkpoint"))
    bert_config = finetuning.load_bert_config(config)
    bert_config.check_max_seq_length(config.max_seq_length)
    if config.multi_label:
        if any(examples is not None for examples in given.values()):
            raise ValueError("multi-label examples are read from data_dir "
                             "(task_name='generic', data_dir=...)")
        return _run_multi_label(config, bert_config)

    from bert_tf.tasks.classification.glue_processors import create_processor
    task_name = config.task_name.lower()
    processor = create_processor(
        task_name, xnli_language=config.xnli_language,
        text_a_column=config.text_a_column,
        text_b_column=config.text_b_column,
        label_column=config.label_column,
        file_format=config.data_format)
    is_regression = processor.is_regression
    label_list = config.label_list
    if label_list is None:
        if reads_files or is_regression:
            label_list = processor.get_labels(config.data_dir)
        else:
            label_list = _labels_of(train_examples)
    num_labels = 1 if is_regression else len(label_list)
    # Every input file is read (and checked) before any training, so a bad
    # dev or test file fails in seconds, not after hours of training.
    read = {"train": processor.get_train_examples,
            "eval": processor.get_dev_examples,
            "predict": processor.get_test_examples}
    examples = {phase: (given[phase] if given[phase] is not None
                        else read[phase](config.data_dir))
                for phase in given if wanted[phase]}
    has_text_b = (processor.has_text_b if reads_files else any(
        example.text_b is not None
        for phase_examples in examples.values()
        for example in phase_examples))
    check_room_for_special_tokens(config.max_seq_length, has_text_b)
    steps = finetuning.training_steps(config, len(examples.get("train", ())))

    run_setup = finetuning.start(config)
    finetuning.write_run_description(
        config, run_setup, PROGRAM, finetuning.CLASSIFICATION,
        task_name=task_name,
        label_list=None if is_regression else label_list,
        label_names=None if is_regression else _label_names(
            processor, label_list),
        is_regression=is_regression, has_text_b=has_text_b)
    # The records are padded for TPUs (which need every batch full) like
    # the original's, with examples that count for nothing.
    batch_sizes = {"train": None, "eval": config.eval_batch_size,
                   "predict": config.predict_batch_size}
    files, num_records = {}, {}
    for phase, phase_examples in examples.items():
        files[phase], num_records[phase] = _write_records(
            phase_examples, label_list, run_setup, config,
            RECORD_FILES[phase], is_regression, batch_sizes[phase])

    def log_phase(mode):
        # Google's heading of each phase, when the phase starts (not when
        # its records are written, all before training).
        logging.info("***** Running %s *****", _PHASE_NAMES[mode])
        if mode == "train":
            logging.info("  Num examples = %d", len(examples[mode]))
            logging.info("  Batch size = %d", config.train_batch_size)
            logging.info("  Num steps = %d", steps.num_train_steps)
        else:
            logging.info("  Num examples = %d (%d actual, %d padding)",
                         num_records[mode], len(examples[mode]),
                         num_records[mode] - len(examples[mode]))

    from bert_tf.tasks.classification import task as classification
    task = classification.ClassificationTask(
        bert_config, num_labels,
        classification.ClassificationDataConfig(
            train_file=files.get("train"), eval_file=files.get("eval"),
            predict_file=files.get("predict"),
            max_seq_length=config.max_seq_length,
            drop_remainder_for_eval=run_setup.on_tpu, seed=config.seed),
        is_regression=is_regression, glue_task_name=task_name,
        init_checkpoint=run_setup.init_checkpoint,
        causal_attention=config.causal_attention)
    trainer = finetuning.make_trainer(run_setup, task, config, steps,
                                    config.eval_batch_size)
    # The records are padded for TPUs already (`_write_records`).
    return finetuning.run_phases(
        trainer, config, num_predict_examples=num_records.get("predict"),
        pad_to_full_batches=False, predicted=task.predicted_probabilities,
        before_phase=log_phase)


def check_label_list(label_list):
    """Refuses a `label_list` that is not None or a list of distinct label
    names (a string "0,1" would be the classes `0`, `,` and `1`).

    Raises:
      ValueError: naming the field and what is wrong.
    """
    if label_list is None:
        return
    if not isinstance(label_list, (list, tuple)):
        raise ValueError(f"label_list={label_list!r:.80} must be a list of "
                         "label names, e.g. ['negative', 'positive']")
    if not label_list:
        raise ValueError("label_list=[] must name at least one label")
    for i, label in enumerate(label_list):
        if not isinstance(label, str) or not label:
            raise ValueError(
                f"label_list[{i}]={label!r:.80} must be a non-empty string "
                "(labels are read as text)")
    repeated = sorted({label for label in label_list
                       if label_list.count(label) > 1})
    if repeated:
        raise ValueError(f"label_list names {', '.join(map(repr, repeated))}"
                         " more than once")


def check_room_for_special_tokens(max_seq_length, has_text_b):
    """Refuses a `--max_seq_length` too short for [CLS] and the [SEP]s
    before anything is written (the features would refuse it after the run
    description).

    Raises:
      ValueError: naming the flag.
    """
    needed = 3 if has_text_b else 2
    if max_seq_length < needed:
        raise ValueError(
            f"--max_seq_length={max_seq_length} cannot hold [CLS] and the "
            f"[SEP]{'s' if has_text_b else ''} of an example (at least "
            f"{needed}{' with text pairs' if has_text_b else ''})")


def _labels_of(train_examples):
    """The labels of in-memory training examples, sorted (as the generic
    task's of its training file).

    Raises:
      ValueError: there are no training examples to take them from.
    """
    if not train_examples:
        raise ValueError("label_list is needed without training examples "
                         "(the labels, in the trained model's order)")
    return sorted({example.label for example in train_examples})


def _write_records(examples, label_list, run_setup, config, file_name,
                   is_regression, pad_to_batch):
    """Features of `examples` written to `<output_dir>/<file_name>`.

    On TPUs (which need every batch full) the set is first padded, like the
    original, with examples that count for nothing.

    Returns:
      (record file path, number of records) -- padding included.
    """
    from bert_tf.tasks.classification import features as classifier_features
    if run_setup.on_tpu and pad_to_batch:
        examples = classifier_features.pad_to_batch_multiple(examples,
                                                             pad_to_batch)
    features = classifier_features.convert_examples_to_features(
        examples, label_list, config.max_seq_length, run_setup.tokenizer)
    path = os.path.join(config.output_dir, file_name)
    count = classifier_features.write_tfrecord(features, path, is_regression)
    return path, count


def _run_multi_label(config, bert_config):
    """Trains, evaluates and/or predicts a multi-label task (`multi_label`:
    several labels per example; see `bert_tf.tasks.classification.multi_label_data` for the
    label columns and `bert_tf.tasks.classification.multi_label_task` for the model, loss and
    metrics).

    Returns:
      A dict as `run`'s: "train", "eval", "predict" (probabilities
      [n, num_labels]).
    """
    from bert_tf.tasks.classification import multi_label_data as data_lib
    from bert_tf.tasks.classification import multi_label_task as task_lib

    processor = data_lib.MultiLabelProcessor(
        text_a_column=config.text_a_column,
        text_b_column=config.text_b_column,
        label_column=config.label_column,
        file_format=config.data_format,
        label_delimiter=config.label_delimiter)
    data_dir = config.data_dir
    label_list = processor.get_labels(data_dir)
    # Every file is read (and checked) before any training.
    examples = {}
    if config.do_train:
        examples["train"] = processor.get_train_examples(data_dir)
    if config.do_eval:
        examples["eval"] = processor.get_dev_examples(data_dir)
    if config.do_predict:
        examples["predict"] = processor.get_test_examples(data_dir)
    check_room_for_special_tokens(config.max_seq_length,
                                  processor.has_text_b)
    steps = finetuning.training_steps(config, len(examples.get("train", ())))
    run_setup = finetuning.start(config)
    # The run's record (`finetuning.read_multi_label_head`): its checkpoints
    # look like a softmax classifier's; this says they are multi-label.
    finetuning.write_run_description(
        config, run_setup, PROGRAM, finetuning.MULTI_LABEL,
        label_list=label_list, has_text_b=processor.has_text_b,
        threshold=config.threshold)
    arrays = {phase: data_lib.examples_to_arrays(
        phase_examples, label_list, config.max_seq_length,
        run_setup.tokenizer)
        for phase, phase_examples in examples.items()}
    logging.info("Multi-label classification: %d labels (%s)",
                 len(label_list), ", ".join(label_list))

    task = task_lib.MultiLabelTask(
        bert_config, label_list, finetuning.arrays_data_config(run_setup, config, arrays),
        threshold=config.threshold,
        init_checkpoint=run_setup.init_checkpoint,
        causal_attention=config.causal_attention)
    trainer = finetuning.make_trainer(run_setup, task, config, steps,
                                    config.eval_batch_size)
    return finetuning.run_phases(
        trainer, config,
        num_predict_examples=len(examples.get("predict", ())),
        # TPUs need full batches: the last is padded (and dropped).
        pad_to_full_batches=run_setup.on_tpu,
        predicted=lambda state: task.stacked_predictions(state)[0])


def _label_names(processor, label_list):
    """The names a run's labels are shown by: GLUE's (SST-2's `negative`,
    `positive` for its 0/1) where the processor has them for these labels,
    else the labels themselves."""
    names = processor.label_names
    if names and len(names) == len(label_list):
        return list(names)
    return list(label_list)
