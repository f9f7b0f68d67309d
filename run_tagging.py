"""BERT fine-tuning for token tagging: named entities, part of speech.

    python run_tagging.py --do_train=true --do_eval=true --do_predict=true \\
      --data_dir=$CONLL_DIR --vocab_file=$BERT_BASE_DIR/vocab.txt \\
      --bert_config_file=$BERT_BASE_DIR/bert_config.json \\
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --do_lower_case=false \\
      --max_seq_length=128 --train_batch_size=32 --learning_rate=5e-5 \\
      --num_train_epochs=3.0 --output_dir=/tmp/conll_output/

Input: `--data_dir` with CoNLL-2003's `train.txt`, `dev.txt`, `test.txt`,
or any files by `--train_file`, `--eval_file`, `--predict_file`;
`--input_format=conll` (a word per line, `--label_column` picks the label
column, the last by default) or `peoples_daily` / `peoples_daily_ner`
(People's Daily 1998 `word/TAG` lines; POS tags, or PER/LOC/ORG entities
from nr/ns/nt) or `word_tag` (any `word/TAG` line format). The label list is read from the training file and saved as
`label_list.txt` in `--output_dir`; evaluating or predicting without
training reads it from there, or from beside `--init_checkpoint`.

Model: the encoder + a per-token classifier (`output_weights`,
`output_bias`, as run_classifier.py's), optionally a CRF (`--use_crf`,
`crf/transitions`), optionally a randomly initialized BiLSTM between the
encoder and the classifier (`--tagging_bilstm`, `bilstm/fw/...` and
`bilstm/bw/...` as `run_squad.py --span_bilstm`'s: the paper's "+ BiLSTM"
for a left-to-right encoder); checkpoints carry Google's names, so `--init_checkpoint`
of a fine-tuned output_dir predicts as that model. Sentences longer than
`--max_seq_length` pieces are split into windows `--doc_stride` pieces
apart; no word is dropped.

Outputs: `eval_results.txt` (eval_precision, eval_recall, eval_f1 at entity
level as seqeval computes them, eval_f1_<TYPE>, eval_accuracy per token,
eval_loss, global_step, loss), `test_predictions.txt` (the predict file
line for line with a predicted label column), `test_predictions.jsonl`
(words, labels and entities with word offsets) and, when the predict file
has labels, `test_results.txt`.
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

FLAGS = flags.FLAGS
PROGRAM = "run_tagging.py"
INPUT_FORMATS = ("conll", "peoples_daily", "peoples_daily_ner", "word_tag")
DEFAULT_FILES = {"train": "train.txt", "eval": "dev.txt",
                 "predict": "test.txt"}


def define_flags(flag_values=FLAGS):
    """run_classifier.py's flags where they apply, plus tagging's own."""
    finetune.define_flags(
        flag_values, max_seq_length=128, train_batch_size=32,
        eval_batch_size=8, learning_rate=5e-5,
        do_predict_help="Whether to tag the predict file (writes "
                        "test_predictions.txt).")
    finetune.define_data_file_flags(
        flag_values,
        "Directory with train.txt, dev.txt and test.txt (CoNLL-2003's "
        "names); --train_file/--eval_file/--predict_file override each. A "
        "predict file may have labels (then test_results.txt is written).",
        {"train": "train.txt", "eval": "dev.txt", "predict": "test.txt"})
    flags.DEFINE_enum(
        "input_format", "conll", INPUT_FORMATS,
        "conll: a word per line with columns, blank lines between sentences, "
        "-DOCSTART- lines. peoples_daily: People's Daily 1998 word/TAG lines, "
        "POS tags. peoples_daily_ner: the same lines, PER/LOC/ORG BIO tags "
        "from the nr/ns/nt tags and bracketed compounds. word_tag: any "
        "word/TAG sentence-per-line file (e.g. the WSJ sample), tags as "
        "labels.",
        flag_values=flag_values)
    flags.DEFINE_integer(
        "label_column", -1,
        "--input_format=conll: the label's column (0 is the word; negative "
        "counts from the end: -1, the last, is CoNLL-2003's NER tag; 1 its "
        "POS tag).", flag_values=flag_values)
    flags.DEFINE_string(
        "label_list_file", None,
        "The labels, one per line, instead of the training file's (e.g. "
        "the whole tag set of a corpus): a tag rare enough to occur only "
        "in the dev or test file is then scored (the model never learnt to "
        "predict it) instead of stopping the run. Every training label must "
        "be in it. With --do_train; saved as label_list.txt in "
        "--output_dir, as the training file's labels are.",
        flag_values=flag_values)
    flags.DEFINE_bool(
        "use_crf", False,
        "A linear-chain CRF over each window's words (transition scores "
        "crf/transitions; trained by the forward algorithm, decoded by "
        "Viterbi) instead of an independent softmax per word.",
        flag_values=flag_values)
    flags.DEFINE_integer(
        "doc_stride", 64,
        "A sentence longer than --max_seq_length - 2 word pieces is split "
        "into windows starting this many pieces apart; each word is "
        "predicted in the window where it has most context.",
        flag_values=flag_values)
    finetune.define_bilstm_flags(flag_values, "tagging",
                                 "the per-word classifier")


def saved_label_list(flag_values, label_list_path):
    """Where a run without training finds the training run's labels.

    `--output_dir`'s `label_list.txt`, else the one beside
    `--init_checkpoint` (the fine-tuned run's output directory).
    """
    if os.path.isfile(label_list_path) or not flag_values.init_checkpoint:
        return label_list_path
    checkpoint = flag_values.init_checkpoint
    directory = (checkpoint if os.path.isdir(checkpoint)
                 else os.path.dirname(checkpoint))
    beside = os.path.join(directory, os.path.basename(label_list_path))
    return beside if os.path.isfile(beside) else label_list_path


def _given_label_list(path):
    """The labels of --label_list_file (a label per line, each once)."""
    from bert_tf.tasks.tagging import examples as tagging_examples

    if not os.path.isfile(path):
        raise ValueError(f"--label_list_file={path}: no such file")
    label_list = tagging_examples.read_label_list(path)
    repeated = sorted({label for label in label_list
                       if label_list.count(label) > 1})
    if repeated:
        raise ValueError(f"--label_list_file={path}: labels listed twice: "
                         f"{' '.join(repeated)}")
    return label_list


def _validate_flags(flag_values):
    if not (flag_values.do_train or flag_values.do_eval
            or flag_values.do_predict):
        raise ValueError(
            "At least one of `do_train`, `do_eval` or `do_predict' must be "
            "True.")
    finetune.validate_flags(flag_values)
    if flag_values.label_list_file and not flag_values.do_train:
        raise ValueError(
            "--label_list_file needs --do_train (without training, the "
            "labels are the training run's label_list.txt)")
    if flag_values.doc_stride <= 0:
        raise ValueError(
            f"--doc_stride={flag_values.doc_stride} must be positive")
    if flag_values.max_seq_length < 3:
        raise ValueError(f"--max_seq_length={flag_values.max_seq_length} "
                         "leaves no room for a word between [CLS] and [SEP]")


def run(flag_values):
    """Validates the flags, then trains, evaluates and/or predicts.

    Returns:
      A dict: "train" (the last training log), "eval" (the eval results),
      "predict" (each predict sentence's labels), for the phases that ran.
    """
    from bert_tf.tasks.tagging import examples as tagging_examples
    from bert_tf.tasks import base
    from bert_tf.tasks.tagging import task as tagging
    from bert_tf.training import trainer as trainer_lib

    _validate_flags(flag_values)
    # Before anything is written: no output may be an input (a predict
    # file named test_predictions.txt in --output_dir would be overwritten
    # by its own predictions).
    runner_flags.check_outputs_are_not_inputs(
        flag_values, (trainer_lib.EVAL_RESULTS_FILE,
                      tagging.TEST_PREDICTIONS_FILE,
                      tagging.TEST_PREDICTIONS_JSONL,
                      tagging.TEST_RESULTS_FILE,
                      tagging_examples.LABEL_LIST_FILE, "checkpoint"),
        ("train_file", "eval_file", "predict_file", "label_list_file",
         "bert_config_file", "vocab_file", "init_checkpoint"),
        data_dir_files=DEFAULT_FILES.values())
    bert_config = finetune.load_bert_config(flag_values)
    bilstm_units = finetune.bilstm_units(flag_values, "tagging", bert_config)
    bert_config.check_max_seq_length(flag_values.max_seq_length)

    def read(phase):
        path = finetune.phase_input_file(flag_values, phase,
                                         DEFAULT_FILES[phase])
        return tagging_examples.read_tagging_file(
            path, flag_values.input_format, flag_values.label_column)

    # Every input file is read (and checked) before any training, so a bad
    # dev or test file fails in seconds, not after hours of training.
    label_list_path = os.path.join(flag_values.output_dir,
                                   tagging_examples.LABEL_LIST_FILE)
    train_file = eval_file = predict_file = None
    if flag_values.do_train:
        train_file = read("train")
        label_list = tagging_examples.labels_of(train_file)
        if flag_values.label_list_file:
            label_list = _given_label_list(flag_values.label_list_file)
            tagging_examples.check_labels(
                train_file, label_list,
                known_from=f"--label_list_file={flag_values.label_list_file}")
    else:
        label_list = tagging_examples.read_label_list(
            saved_label_list(flag_values, label_list_path))
    if flag_values.do_eval:
        eval_file = read("eval")
        if not eval_file.has_labels:
            raise ValueError(f"{eval_file.path}: no label column (evaluation "
                             "needs labels)")
        if not eval_file.sentences:
            raise ValueError(f"{eval_file.path}: no sentence")
    if flag_values.do_predict:
        predict_file = read("predict")
        if not predict_file.sentences:
            raise ValueError(f"{predict_file.path}: no sentence")
    for tagging_file in (eval_file, predict_file):
        if tagging_file is not None:
            tagging_examples.check_labels(tagging_file, label_list)

    run = finetune.start(flag_values)

    def make_set(tagging_file):
        if tagging_file is None:
            return None
        return tagging.make_tagging_set(
            tagging_file, label_list, flag_values.max_seq_length,
            flag_values.doc_stride, run.tokenizer)

    train_set, eval_set, predict_set = map(
        make_set, (train_file, eval_file, predict_file))
    # An epoch is a pass over the windows (the sentences, when none is
    # longer than --max_seq_length).
    steps = finetune.training_steps(
        flag_values, train_set.num_windows if train_set else 0)
    if train_set is not None:
        tagging_examples.write_label_list(label_list_path, label_list)
        finetune.write_run_description(
            flag_values, run, PROGRAM, finetune.TAGGING, label_list=label_list,
            doc_stride=flag_values.doc_stride, use_crf=flag_values.use_crf)
        logging.info("***** Running training *****")
        logging.info("  Num sentences = %d, windows = %d, labels = %d",
                     len(train_file.sentences), train_set.num_windows,
                     len(label_list))
        logging.info("  Batch size = %d", flag_values.train_batch_size)
        logging.info("  Num steps = %d", steps.num_train_steps)

    task = tagging.TaggingTask(
        bert_config, label_list,
        tagging.TaggingDataConfig(
            train_set=train_set, eval_set=eval_set, predict_set=predict_set,
            max_seq_length=flag_values.max_seq_length,
            seed=flag_values.seed,
            # TPUs need full evaluation batches (weight-0 padding).
            pad_to_full_batches=run.on_tpu),
        use_crf=flag_values.use_crf, init_checkpoint=run.init_checkpoint,
        causal_attention=flag_values.causal_attention,
        bilstm_units=bilstm_units)
    trainer = finetune.make_trainer(run, task, flag_values, steps,
                                    flag_values.eval_batch_size)

    def before_phase(mode):
        if mode == base.TRAIN:
            return
        tagged_file, windows = ((eval_file, eval_set) if mode == base.EVAL
                                else (predict_file, predict_set))
        logging.info("***** Running %s *****",
                     "evaluation" if mode == base.EVAL else "prediction")
        logging.info("  Num sentences = %d, windows = %d",
                     len(tagged_file.sentences), windows.num_windows)

    return finetune.run_phases(
        trainer, flag_values,
        num_predict_examples=predict_set.num_windows if predict_set else 0,
        # TPUs need full batches: the last is padded (and dropped).
        pad_to_full_batches=run.on_tpu,
        predicted=lambda state: task.predicted_labels(state, base.PREDICT),
        before_phase=before_phase)


def main(argv, flag_values=FLAGS):
    """Runs with parsed flags; a bad flag or input ends with its message."""
    # A TaggingDataError (bad input, file and line named) is a ValueError:
    # it ends the program with its message like any other bad input.
    runner_flags.run_main(PROGRAM, run, argv, flag_values)


if __name__ == "__main__":
    define_flags()
    cli.list_every_flag_in_help()
    app.run(main)
