"""Token tagging (NER, POS) from a config: what run_tagging.py runs, as a
library function.

    results = run(TaggingConfig(data_dir="conll2003", do_train=True, ...))

Writes `label_list.txt`, `eval_results.txt`, `test_predictions.txt`,
`test_predictions.jsonl`, `test_results.txt`, the checkpoints and the run
description, as run_tagging.py (which calls it). The sentences come from
the phases' files (`<phase>_file`, else `data_dir`'s), or from
`TaggingFile`s built in memory (`bert_tf.tasks.tagging.examples`).
"""

import dataclasses
import os
from typing import Optional

from absl import logging

from bert_tf import finetuning
from bert_tf.finetuning import checks
from bert_tf.finetuning.fields import override
from bert_tf.finetuning.fields import setting
from bert_tf.tasks.tagging import examples as tagging_examples

PROGRAM = "run_tagging.py"
DEFAULT_FILES = {"train": "train.txt", "eval": "dev.txt",
                 "predict": "test.txt"}


@dataclasses.dataclass
class TaggingConfig(finetuning.FineTuningConfig):
    """run_tagging.py's flags as fields (see its `--help`): run_classifier.py's
    where they apply, plus tagging's own."""
    do_predict: bool = override(
        finetuning.FineTuningConfig, "do_predict",
        help="Whether to tag the predict file (writes "
             "test_predictions.txt).")
    data_dir: Optional[str] = setting(
        None,
        "Directory with train.txt, dev.txt and test.txt (CoNLL-2003's "
        "names); --train_file/--eval_file/--predict_file override each. A "
        "predict file may have labels (then test_results.txt is written).")
    train_file: Optional[str] = finetuning.phase_file_setting(
        "train", DEFAULT_FILES["train"])
    eval_file: Optional[str] = finetuning.phase_file_setting(
        "eval", DEFAULT_FILES["eval"])
    predict_file: Optional[str] = finetuning.phase_file_setting(
        "predict", DEFAULT_FILES["predict"])
    input_format: str = setting(
        "conll",
        "conll: a word per line with columns, blank lines between sentences, "
        "-DOCSTART- lines. peoples_daily: People's Daily 1998 word/TAG lines, "
        "POS tags. peoples_daily_ner: the same lines, PER/LOC/ORG BIO tags "
        "from the nr/ns/nt tags and bracketed compounds. word_tag: any "
        "word/TAG sentence-per-line file (e.g. the WSJ sample), tags as "
        "labels.", choices=tagging_examples.INPUT_FORMATS)
    label_column: int = setting(
        -1,
        "--input_format=conll: the label's column (0 is the word; negative "
        "counts from the end: -1, the last, is CoNLL-2003's NER tag; 1 its "
        "POS tag).")
    label_list_file: Optional[str] = setting(
        None,
        "The labels, one per line, instead of the training file's (e.g. "
        "the whole tag set of a corpus): a tag rare enough to occur only "
        "in the dev or test file is then scored (the model never learnt to "
        "predict it) instead of stopping the run. Every training label must "
        "be in it. With --do_train; saved as label_list.txt in "
        "--output_dir, as the training file's labels are.")
    use_crf: bool = setting(
        False,
        "A linear-chain CRF over each window's words (transition scores "
        "crf/transitions; trained by the forward algorithm, decoded by "
        "Viterbi) instead of an independent softmax per word.")
    doc_stride: int = setting(
        64,
        "A sentence longer than --max_seq_length - 2 word pieces is split "
        "into windows starting this many pieces apart; each word is "
        "predicted in the window where it has most context.")
    tagging_bilstm: bool = finetuning.bilstm_setting(
        "tagging", "the per-word classifier")
    tagging_bilstm_units: Optional[int] = finetuning.bilstm_units_setting(
        "tagging")

    def validate(self):
        """Checks every field once; raises ValueError naming the first bad
        one."""
        self.require_a_phase()
        super().validate()
        if self.label_list_file and not self.do_train:
            raise ValueError(
                "--label_list_file needs --do_train (without training, the "
                "labels are the training run's label_list.txt)")
        self.window_config().check()

    def window_config(self):
        """The window settings, for both window twins
        (`features.TaggingWindowConfig`)."""
        from bert_tf.tasks.tagging import features as tagging_features
        return tagging_features.TaggingWindowConfig(
            max_seq_length=self.max_seq_length, doc_stride=self.doc_stride)


def saved_label_list(config, label_list_path):
    """Where a run without training finds the training run's labels.

    `output_dir`'s `label_list.txt`, else the one beside `init_checkpoint`
    (the fine-tuned run's output directory).
    """
    if os.path.isfile(label_list_path) or not config.init_checkpoint:
        return label_list_path
    checkpoint = config.init_checkpoint
    directory = (checkpoint if os.path.isdir(checkpoint)
                 else os.path.dirname(checkpoint))
    beside = os.path.join(directory, os.path.basename(label_list_path))
    return beside if os.path.isfile(beside) else label_list_path


def _given_label_list(path):
    """The labels of `label_list_file` (a label per line, each once)."""

    if os.path.isdir(path):
        raise ValueError(f"--label_list_file={path} is a directory, not a "
                         "file")
    if not os.path.isfile(path):
        raise ValueError(f"--label_list_file={path}: no such file")
    label_list = tagging_examples.read_label_list(path)
    repeated = sorted({label for label in label_list
                       if label_list.count(label) > 1})
    if repeated:
        raise ValueError(f"--label_list_file={path}: labels listed twice: "
                         f"{' '.join(repeated)}")
    return label_list


@finetuning.releases_output_dir
def run(config, train_examples=None, eval_examples=None,
        predict_examples=None):
    """Fine-tunes a token tagger: validates `config`, then trains,
    evaluates and/or predicts.

    Args:
      config: a `TaggingConfig`.
      train_examples, eval_examples, predict_examples: `TaggingFile`s,
        each instead of the phase's file (its `lines` are what
        `test_predictions.txt` gives back with a label column).

    Returns:
      A dict: "train" (the last training log), "eval" (the eval results),
      "predict" (each predict sentence's labels), for the phases that ran.

    Raises:
      ValueError: a bad field or input, named.
    """
    from bert_tf.tasks import base
    from bert_tf.tasks.tagging import task as tagging
    from bert_tf.training import trainer as trainer_lib

    config.validate()
    finetuning.check_given_examples(
        config, {"train": train_examples, "eval": eval_examples,
                 "predict": predict_examples},
        tagging_examples.TaggingFile, one=True)
    # Before anything is written: no output may be an input (a predict
    # file named test_predictions.txt in --output_dir would be overwritten
    # by its own predictions).
    checks.check_outputs_are_not_inputs(
        config, (trainer_lib.EVAL_RESULTS_FILE,
                 tagging.TEST_PREDICTIONS_FILE,
                 tagging.TEST_PREDICTIONS_JSONL,
                 tagging.TEST_RESULTS_FILE,
                 tagging_examples.LABEL_LIST_FILE, "checkpoint"),
        ("train_file", "eval_file", "predict_file", "label_list_file",
         "bert_config_file", "vocab_file", "init_checkpoint"),
        data_dir_files=DEFAULT_FILES.values())
    bert_config = finetuning.load_bert_config(config)
    bilstm_units = finetuning.bilstm_units(config, "tagging", bert_config)
    bert_config.check_max_seq_length(config.max_seq_length)
    given = {"train": train_examples, "eval": eval_examples,
             "predict": predict_examples}

    def read(phase):
        if given[phase] is not None:
            return given[phase]
        path = finetuning.phase_input_file(config, phase, DEFAULT_FILES[phase])
        return tagging_examples.read_tagging_file(
            path, config.input_format, config.label_column)

    # Every input file is read (and checked) before any training, so a bad
    # dev or test file fails in seconds, not after hours of training.
    label_list_path = os.path.join(config.output_dir,
                                   tagging_examples.LABEL_LIST_FILE)
    train_file = eval_file = predict_file = None
    if config.do_train:
        train_file = read("train")
        label_list = tagging_examples.labels_of(train_file)
        if config.label_list_file:
            label_list = _given_label_list(config.label_list_file)
            tagging_examples.check_labels(
                train_file, label_list,
                known_from=f"--label_list_file={config.label_list_file}")
    else:
        label_list = tagging_examples.read_label_list(
            saved_label_list(config, label_list_path))
    if config.do_eval:
        eval_file = read("eval")
        if not eval_file.has_labels:
            raise ValueError(f"{eval_file.path}: no label column (evaluation "
                             "needs labels)")
        if not eval_file.sentences:
            raise ValueError(f"{eval_file.path}: no sentence")
    if config.do_predict:
        predict_file = read("predict")
        if not predict_file.sentences:
            raise ValueError(f"{predict_file.path}: no sentence")
    for tagging_file in (eval_file, predict_file):
        if tagging_file is not None:
            tagging_examples.check_labels(tagging_file, label_list)

    if config.do_train:
        finetuning.check_finished_run_matches(config, finetuning.TAGGING,
                                              label_list)
    run_setup = finetuning.start(config)

    def make_set(tagging_file):
        if tagging_file is None:
            return None
        return tagging.make_tagging_set(
            tagging_file, label_list, config.window_config(),
            run_setup.tokenizer)

    train_set, eval_set, predict_set = map(
        make_set, (train_file, eval_file, predict_file))
    # An epoch is a pass over the windows (the sentences, when none is
    # longer than --max_seq_length).
    steps = finetuning.training_steps(
        config, train_set.num_windows if train_set else 0)
    if train_set is not None:
        tagging_examples.write_label_list(label_list_path, label_list)
        finetuning.write_run_description(
            config, run_setup, PROGRAM, finetuning.TAGGING,
            label_list=label_list, doc_stride=config.doc_stride,
            use_crf=config.use_crf)
        logging.info("***** Running training *****")
        logging.info("  Num sentences = %d, windows = %d, labels = %d",
                     len(train_file.sentences), train_set.num_windows,
                     len(label_list))
        logging.info("  Batch size = %d", config.train_batch_size)
        logging.info("  Num steps = %d", steps.num_train_steps)

    task = tagging.TaggingTask(
        bert_config, label_list,
        tagging.TaggingDataConfig(
            train_set=train_set, eval_set=eval_set, predict_set=predict_set,
            max_seq_length=config.max_seq_length,
            seed=config.seed,
            # TPUs need full evaluation batches (weight-0 padding).
            pad_to_full_batches=run_setup.on_tpu),
        use_crf=config.use_crf, init_checkpoint=run_setup.init_checkpoint,
        causal_attention=config.causal_attention,
        bilstm_units=bilstm_units)
    trainer = finetuning.make_trainer(run_setup, task, config, steps,
                                    config.eval_batch_size)

    def before_phase(mode):
        if mode == base.TRAIN:
            return
        tagged_file, windows = ((eval_file, eval_set) if mode == base.EVAL
                                else (predict_file, predict_set))
        logging.info("***** Running %s *****",
                     "evaluation" if mode == base.EVAL else "prediction")
        logging.info("  Num sentences = %d, windows = %d",
                     len(tagged_file.sentences), windows.num_windows)

    return finetuning.run_phases(
        trainer, config,
        num_predict_examples=predict_set.num_windows if predict_set else 0,
        # TPUs need full batches: the last is padded (and dropped).
        pad_to_full_batches=run_setup.on_tpu,
        predicted=lambda state: task.predicted_labels(state, base.PREDICT),
        before_phase=before_phase)
