"""Multiple choice (SWAG, OpenBookQA, PIQA, ...) from a config: what
run_multiple_choice.py runs, as a library function.

    results = run(MultipleChoiceConfig(data_dir="swag", do_train=True, ...))

Writes `eval_results.txt`, `test_results.tsv`, the checkpoints and the run
description, as run_multiple_choice.py (which calls it). The examples come
from the phases' files (`<phase>_file`, else `data_dir`'s), or from lists
of `MultipleChoiceExample`s.
"""

import dataclasses
from typing import Optional

from absl import logging

from bert_tf import finetuning
from bert_tf.finetuning import checks
from bert_tf.finetuning.fields import override
from bert_tf.finetuning.fields import setting

PROGRAM = "run_multiple_choice.py"
DEFAULT_FILES = {
    "swag": {"train": "train.csv", "eval": "val.csv", "predict": "test.csv"},
    "jsonl": {"train": "train.jsonl", "eval": "dev.jsonl",
              "predict": "test.jsonl"},
}


@dataclasses.dataclass
class MultipleChoiceConfig(finetuning.FineTuningConfig):
    """run_multiple_choice.py's flags as fields (see its `--help`):
    run_classifier.py's where they apply, plus the input's."""
    train_batch_size: int = override(finetuning.FineTuningConfig,
                                     "train_batch_size", 16)
    learning_rate: float = override(finetuning.FineTuningConfig,
                                    "learning_rate", 2e-5)
    do_predict: bool = override(
        finetuning.FineTuningConfig, "do_predict",
        help="Whether to score the predict file's choices (writes "
             "test_results.tsv).")
    data_dir: Optional[str] = setting(
        None,
        "Directory with the train/dev/test files: SWAG's train.csv, val.csv, "
        "test.csv, or train.jsonl, dev.jsonl, test.jsonl.")
    train_file: Optional[str] = finetuning.phase_file_setting(
        "train", "train.csv or train.jsonl")
    eval_file: Optional[str] = finetuning.phase_file_setting(
        "eval", "val.csv or dev.jsonl")
    predict_file: Optional[str] = finetuning.phase_file_setting(
        "predict", "test.csv or test.jsonl")
    input_format: str = setting(
        "swag",
        "swag: SWAG's CSV (sent1, sent2, ending0.., label). jsonl: one JSON "
        "object per line with question (and optionally context or "
        "passage), choices (a list) or options ('A. ...' lines), answer.",
        choices=tuple(DEFAULT_FILES))

    def validate(self):
        """Checks every field once; raises ValueError naming the first bad
        one."""
        self.require_a_phase()
        super().validate()
        if self.input_format not in DEFAULT_FILES:
            raise ValueError(f"--input_format={self.input_format!r} must be "
                             f"one of {', '.join(DEFAULT_FILES)}")


@finetuning.releases_output_dir
def run(config, train_examples=None, eval_examples=None,
        predict_examples=None):
    """Fine-tunes a multiple-choice model: validates `config`, then trains,
    evaluates and/or predicts.

    Args:
      config: a `MultipleChoiceConfig`.
      train_examples, eval_examples, predict_examples: lists of
        `MultipleChoiceExample`s, each instead of the phase's file; every
        example of a run has the same number of choices.

    Returns:
      A dict: "train", "eval" (the results), "predict" (probabilities
      [n, num_choices]), for the phases that ran.

    Raises:
      ValueError: a bad field or input, named.
    """
    from bert_tf.tasks.multiple_choice import examples as multiple_choice
    from bert_tf.tasks.multiple_choice import task as task_lib
    from bert_tf.training import trainer as trainer_lib

    config.validate()
    finetuning.check_given_examples(
        config, {"train": train_examples, "eval": eval_examples,
                 "predict": predict_examples},
        multiple_choice.MultipleChoiceExample)
    # Before anything is written: no output may be an input.
    checks.check_outputs_are_not_inputs(
        config, (trainer_lib.EVAL_RESULTS_FILE,
                 task_lib.TEST_RESULTS_FILE, "checkpoint"),
        ("train_file", "eval_file", "predict_file", "bert_config_file",
         "vocab_file", "init_checkpoint"),
        data_dir_files=DEFAULT_FILES[config.input_format].values())
    bert_config = finetuning.load_bert_config(config)
    bert_config.check_max_seq_length(config.max_seq_length)

    # Every file is read (and checked) before any training; the first set
    # read fixes the number of choices for the others.
    given = {"train": train_examples, "eval": eval_examples,
             "predict": predict_examples}
    examples = {}
    num_choices = None
    for phase, wanted in (("train", config.do_train),
                          ("eval", config.do_eval),
                          ("predict", config.do_predict)):
        if not wanted:
            continue
        if given[phase] is not None:
            where = f"{phase}_examples"
            examples[phase] = given[phase]
            _check_num_choices(where, examples[phase], num_choices)
        else:
            where = finetuning.phase_input_file(
                config, phase, DEFAULT_FILES[config.input_format][phase])
            examples[phase] = multiple_choice.read_examples(
                where, config.input_format, num_choices)
        if not examples[phase]:
            raise ValueError(f"{where}: no example")
        num_choices = len(examples[phase][0].choices)
        if phase != "predict":
            unlabelled = [e for e in examples[phase] if e.label is None]
            if unlabelled:
                raise ValueError(
                    f"{_where(where, unlabelled[0])}: no answer (a {phase} "
                    "file needs one for every example)")

    steps = finetuning.training_steps(config, len(examples.get("train", ())))
    run_setup = finetuning.start(config)
    finetuning.write_run_description(
        config, run_setup, PROGRAM, finetuning.MULTIPLE_CHOICE,
        input_format=config.input_format, num_choices=num_choices)
    arrays = {phase: multiple_choice.examples_to_arrays(
        phase_examples, config.max_seq_length, run_setup.tokenizer)
        for phase, phase_examples in examples.items()}
    if config.do_train:
        logging.info("***** Running training *****")
        logging.info("  Num examples = %d, choices = %d",
                     len(examples["train"]), num_choices)
        logging.info("  Num steps = %d", steps.num_train_steps)

    task = task_lib.MultipleChoiceTask(
        bert_config, finetuning.arrays_data_config(run_setup, config, arrays),
        init_checkpoint=run_setup.init_checkpoint,
        causal_attention=config.causal_attention)
    trainer = finetuning.make_trainer(run_setup, task, config, steps,
                                    config.eval_batch_size)

    return finetuning.run_phases(
        trainer, config,
        num_predict_examples=len(examples.get("predict", ())),
        # TPUs need full batches: the last is padded (and dropped).
        pad_to_full_batches=run_setup.on_tpu, predicted=task.probabilities)


def _where(source, example):
    """An example's place for messages: `path:line` of a file's, or the
    list's name and index (`line_number` counts from 0 there)."""
    if source.endswith("_examples"):
        return f"{source}[{example.line_number}]"
    return f"{source}:{example.line_number}"


def _check_num_choices(where, examples, num_choices):
    """Every in-memory example has `num_choices` choices (the first's when
    None).

    Raises:
      ValueError: naming the example.
    """
    for index, example in enumerate(examples):
        if num_choices is None:
            num_choices = len(example.choices)
        if len(example.choices) != num_choices:
            raise ValueError(
                f"{where}[{index}]: {len(example.choices)} choices, but "
                f"the examples have {num_choices}")
