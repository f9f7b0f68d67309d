"""Pair regression from a config: a whole fine-tuning run as a function.

    results = run(PairRegressionConfig(output_dir="work/pairs", do_train=True,
                                       ...), train_examples=[...])

Writes the checkpoints, `eval_results.txt`, `test_results.tsv` and the run
description (`bert_tf_run.json`, task `pair_regression`, from which
`bert_tf.load(output_dir)` predicts). The examples are lists of
`task.PairExample`s (this small task reads no files).
"""

import dataclasses

from bert_tf import finetuning
from bert_tf.finetuning import checks

# The program its config's fields would be the flags of.
PROGRAM = "run_pair_regression.py"
# The run description's task kind: the spec's name, which serves it.
TASK_KIND = "pair_regression"


@dataclasses.dataclass
class PairRegressionConfig(finetuning.FineTuningConfig):
    """The shared fine-tuning settings (`FineTuningConfig`); a task with
    settings of its own adds them here as fields
    (`bert_tf.finetuning.fields.setting`: default and help)."""

    def validate(self):
        """Checks every field once; raises ValueError naming the first bad
        one."""
        self.require_a_phase()
        super().validate()


def run(config, train_examples=None, eval_examples=None,
        predict_examples=None):
    """Validates `config`, then trains, evaluates and/or predicts.

    Args:
      config: a `PairRegressionConfig`.
      train_examples, eval_examples, predict_examples: lists of
        `PairExample`s, for the phases `config` runs.

    Returns:
      A dict: "train", "eval" (the results), "predict" (float32 scores
      [n]), for the phases that ran.

    Raises:
      ValueError: a bad field, or a phase without examples, named.
    """
    from bert_tf.training import trainer as trainer_lib

    # Imported by its package's name: this folder may be copied anywhere.
    from . import task as task_lib

    config.validate()
    # Before anything is written: no output may be an input.
    checks.check_outputs_are_not_inputs(
        config, (trainer_lib.EVAL_RESULTS_FILE, task_lib.TEST_RESULTS_FILE,
                 "checkpoint"),
        ("bert_config_file", "vocab_file", "init_checkpoint"))
    bert_config = finetuning.load_bert_config(config)
    bert_config.check_max_seq_length(config.max_seq_length)
    given = {"train": train_examples, "eval": eval_examples,
             "predict": predict_examples}
    wanted = {"train": config.do_train, "eval": config.do_eval,
              "predict": config.do_predict}
    for phase, examples in given.items():
        if wanted[phase] and not examples:
            raise ValueError(f"--do_{phase}: no {phase}_examples ({PROGRAM} "
                             "reads no files)")
        if phase != "predict" and wanted[phase] and any(
                example.score is None for example in examples):
            raise ValueError(f"{phase}_examples: every example needs a "
                             "score")

    steps = finetuning.training_steps(config, len(train_examples or ()))
    run_setup = finetuning.start(config)
    finetuning.write_run_description(config, run_setup, PROGRAM, TASK_KIND)
    arrays = {phase: task_lib.examples_to_arrays(
        examples, config.max_seq_length, run_setup.tokenizer)
        for phase, examples in given.items() if wanted[phase]}
    task = task_lib.PairRegressionTask(
        bert_config, finetuning.arrays_data_config(run_setup, config, arrays),
        init_checkpoint=run_setup.init_checkpoint,
        causal_attention=config.causal_attention)
    trainer = finetuning.make_trainer(run_setup, task, config, steps,
                                      config.eval_batch_size)
    return finetuning.run_phases(
        trainer, config,
        num_predict_examples=len(predict_examples or ()),
        # TPUs need full batches: the last is padded (and dropped).
        pad_to_full_batches=run_setup.on_tpu, predicted=task.scores)
