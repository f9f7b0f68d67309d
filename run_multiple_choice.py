"""BERT fine-tuning for multiple choice: SWAG, OpenBookQA, PIQA, ...

    python run_multiple_choice.py --do_train=true --do_eval=true \\
      --data_dir=$SWAG_DIR --input_format=swag \\
      --vocab_file=$BERT_BASE_DIR/vocab.txt \\
      --bert_config_file=$BERT_BASE_DIR/bert_config.json \\
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt \\
      --max_seq_length=128 --train_batch_size=16 --learning_rate=2e-5 \\
      --num_train_epochs=3.0 --output_dir=/tmp/swag_output/

Input: `--data_dir` with SWAG's `train.csv`, `val.csv`, `test.csv`
(`--input_format=swag`) or `train.jsonl`, `dev.jsonl`, `test.jsonl`
(`--input_format=jsonl`: question, choices or options, answer; see
`bert_tf/tasks/multiple_choice/examples.py`), or any files by `--train_file`,
`--eval_file`, `--predict_file`. Every example of a run has the same number
of choices; one with another number is an error naming its file and line.

Each choice is encoded as `[CLS] context [SEP] choice [SEP]`, scored by one
shared dense layer on the pooled output (`output_weights` [1, hidden],
`output_bias` [1]: Google's classifier names) and the scores go through a
softmax over the choices. Outputs: `eval_results.txt` (eval_accuracy,
eval_loss, global_step, loss) and `test_results.tsv` (each example's choice
probabilities on a line, in input order). Checkpoints carry Google's names,
so `--init_checkpoint` of a fine-tuned output_dir predicts as that model.
"""

from bert_tf import startup

# Before anything imports TensorFlow: keeps its C++ start-up lines out.
startup.quiet_start()

from absl import app
from absl import flags
from absl import logging

from bert_tf import cli
from bert_tf.runners import finetune
from bert_tf.runners import flags as runner_flags

FLAGS = flags.FLAGS
PROGRAM = "run_multiple_choice.py"
DEFAULT_FILES = {
    "swag": {"train": "train.csv", "eval": "val.csv", "predict": "test.csv"},
    "jsonl": {"train": "train.jsonl", "eval": "dev.jsonl",
              "predict": "test.jsonl"},
}


def define_flags(flag_values=FLAGS):
    """run_classifier.py's flags where they apply, plus the input's."""
    finetune.define_flags(
        flag_values, max_seq_length=128, train_batch_size=16,
        eval_batch_size=8, learning_rate=2e-5,
        do_predict_help="Whether to score the predict file's choices "
                        "(writes test_results.tsv).")
    finetune.define_data_file_flags(
        flag_values,
        "Directory with the train/dev/test files: SWAG's train.csv, val.csv, "
        "test.csv, or train.jsonl, dev.jsonl, test.jsonl.",
        {"train": "train.csv or train.jsonl", "eval": "val.csv or dev.jsonl",
         "predict": "test.csv or test.jsonl"})
    flags.DEFINE_enum(
        "input_format", "swag", ("swag", "jsonl"),
        "swag: SWAG's CSV (sent1, sent2, ending0.., label). jsonl: one JSON "
        "object per line with question (and optionally context or "
        "passage), choices (a list) or options ('A. ...' lines), answer.",
        flag_values=flag_values)


def _validate_flags(flag_values):
    if not (flag_values.do_train or flag_values.do_eval
            or flag_values.do_predict):
        raise ValueError(
            "At least one of `do_train`, `do_eval` or `do_predict' must be "
            "True.")
    finetune.validate_flags(flag_values)


def run(flag_values):
    """Validates the flags, then trains, evaluates and/or predicts.

    Returns:
      A dict: "train", "eval" (the results), "predict" (probabilities
      [n, num_choices]), for the phases that ran.
    """
    from bert_tf.tasks.multiple_choice import examples as multiple_choice
    from bert_tf.tasks import base
    from bert_tf.tasks.multiple_choice import task as task_lib
    from bert_tf.training import trainer as trainer_lib

    _validate_flags(flag_values)
    # Before anything is written: no output may be an input.
    runner_flags.check_outputs_are_not_inputs(
        flag_values, (trainer_lib.EVAL_RESULTS_FILE,
                      task_lib.TEST_RESULTS_FILE, "checkpoint"),
        ("train_file", "eval_file", "predict_file", "bert_config_file",
         "vocab_file", "init_checkpoint"),
        data_dir_files=DEFAULT_FILES[flag_values.input_format].values())
    bert_config = finetune.load_bert_config(flag_values)
    bert_config.check_max_seq_length(flag_values.max_seq_length)

    # Every file is read (and checked) before any training; the first file
    # read fixes the number of choices for the others.
    examples = {}
    num_choices = None
    for phase, wanted in (("train", flag_values.do_train),
                          ("eval", flag_values.do_eval),
                          ("predict", flag_values.do_predict)):
        if not wanted:
            continue
        path = finetune.phase_input_file(
            flag_values, phase,
            DEFAULT_FILES[flag_values.input_format][phase])
        examples[phase] = multiple_choice.read_examples(
            path, flag_values.input_format, num_choices)
        if not examples[phase]:
            raise ValueError(f"{path}: no example")
        num_choices = len(examples[phase][0].choices)
        if phase != "predict":
            unlabelled = [e for e in examples[phase] if e.label is None]
            if unlabelled:
                raise ValueError(
                    f"{path}:{unlabelled[0].line_number}: no answer (a "
                    f"{phase} file needs one for every example)")

    steps = finetune.training_steps(flag_values,
                                    len(examples.get("train", ())))
    run = finetune.start(flag_values)
    finetune.write_run_description(
        flag_values, run, PROGRAM, finetune.MULTIPLE_CHOICE,
        input_format=flag_values.input_format, num_choices=num_choices)
    arrays = {phase: multiple_choice.examples_to_arrays(
        phase_examples, flag_values.max_seq_length, run.tokenizer)
        for phase, phase_examples in examples.items()}
    if flag_values.do_train:
        logging.info("***** Running training *****")
        logging.info("  Num examples = %d, choices = %d",
                     len(examples["train"]), num_choices)
        logging.info("  Num steps = %d", steps.num_train_steps)

    task = task_lib.MultipleChoiceTask(
        bert_config, base.ArraysDataConfig(
            train_arrays=arrays.get("train"), eval_arrays=arrays.get("eval"),
            predict_arrays=arrays.get("predict"),
            max_seq_length=flag_values.max_seq_length,
            seed=flag_values.seed,
            # TPUs need full evaluation batches (weight-0 padding).
            pad_to_full_batches=run.on_tpu),
        init_checkpoint=run.init_checkpoint,
        causal_attention=flag_values.causal_attention)
    trainer = finetune.make_trainer(run, task, flag_values, steps,
                                    flag_values.eval_batch_size)

    return finetune.run_phases(
        trainer, flag_values,
        num_predict_examples=len(examples.get("predict", ())),
        # TPUs need full batches: the last is padded (and dropped).
        pad_to_full_batches=run.on_tpu, predicted=task.probabilities)


def main(argv, flag_values=FLAGS):
    """Runs with parsed flags; a bad flag or input ends with its message."""
    runner_flags.run_main(PROGRAM, run, argv, flag_values)


if __name__ == "__main__":
    define_flags()
    cli.list_every_flag_in_help()
    app.run(main)
