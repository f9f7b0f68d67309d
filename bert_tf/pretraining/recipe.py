"""Pretraining from a config: Google's run_pretraining.py as a library
function.

    results = run(PretrainingConfig(
        input_file="records/*.tfrecord", bert_config_file="bert_config.json",
        output_dir="out", do_train=True, num_train_steps=1000))

Trains and/or evaluates on `create_pretraining_data.py` records (or, with
`dynamic_masking`, raw text masked on the fly) and writes Google's
checkpoints and `eval_results.txt`, as run_pretraining.py (which calls it).
`input_file`'s comma-separated globs are expanded once, here; every reader
gets the files. A run that trains copies `bert_config_file` (and
`vocab_file`, when given) into `output_dir` as bert_config.json and
vocab.txt, beside the checkpoints, so that `bert_tf.load(output_dir)` loads
it as a released checkpoint directory; a differing file of another model
there is an error, never overwritten.
"""

import dataclasses
from typing import Optional

from bert_tf.runners import finetune
from bert_tf.runners import flags as runner_flags


@dataclasses.dataclass
class PretrainingConfig(finetune.RunConfig):
    """run_pretraining.py's flags as fields (see its `--help`)."""
    input_file: Optional[str] = None
    max_predictions_per_seq: int = 20
    num_train_steps: int = 100000
    num_warmup_steps: int = 10000
    max_eval_steps: int = 100
    dynamic_masking: bool = False
    masked_lm_prob: float = 0.15
    short_seq_prob: float = 0.1
    do_whole_word_mask: bool = False
    pretraining_objective: str = "mlm_nsp"
    packing: str = "sentence_pairs"
    pack_sequences: bool = False
    max_sequences_per_pack: int = 3

    def validate(self):
        """Checks the fields that need no input file read; raises
        ValueError naming the first bad one (`run` then checks the
        sequence length against `bert_config_file` and expands
        `input_file`)."""
        finetune.check_field_types(self)
        if not self.do_train and not self.do_eval:
            # Google's message, word for word.
            raise ValueError(
                "At least one of `do_train` or `do_eval` must be True.")
        runner_flags.require(self, "bert_config_file", "output_dir",
                             "input_file")
        runner_flags.check_file("bert_config_file", self.bert_config_file)
        if self.pack_sequences and self.max_sequences_per_pack < 1:
            raise ValueError(
                f"--max_sequences_per_pack={self.max_sequences_per_pack} "
                f"must be at least 1")


def run(config):
    """Validates `config`, then trains and/or evaluates.

    Returns:
      The eval results dict when `do_eval`, else the last training log.

    Raises:
      ValueError: a bad field or input, named.
    """
    from bert_tf.pretraining.task import PretrainingDataConfig
    from bert_tf.pretraining.task import PretrainingTask
    from bert_tf.training.trainer import Trainer

    config.validate()
    if config.pack_sequences:
        from bert_tf import backend  # pylint: disable=import-outside-toplevel
        if backend.name() != backend.TENSORFLOW:
            raise ValueError(
                f"--pack_sequences runs on Keras' TensorFlow backend, not "
                f"KERAS_BACKEND={backend.name()}")
    bert_config = finetune.load_bert_config(config)
    bert_config.check_max_seq_length(config.max_seq_length)
    # The one expansion of the globs: the readers get these files.
    input_files = runner_flags.expand_file_patterns("input_file",
                                                    config.input_file)
    if config.dynamic_masking:
        runner_flags.require(config, "vocab_file")
        runner_flags.check_file("vocab_file", config.vocab_file)
    if config.do_train and config.num_train_steps <= 0:
        raise ValueError(f"--num_train_steps={config.num_train_steps} "
                         "must be positive with --do_train")
    # Before anything is written: no output may be an input, and a run that
    # does not train needs weights to evaluate.
    runner_flags.check_outputs_are_not_inputs(
        config, ("eval_results.txt", "checkpoint"),
        ("bert_config_file", "init_checkpoint", "vocab_file"),
        input_files={"input_file": input_files})
    if not config.do_train:
        runner_flags.require_weights_without_training(config, "--do_eval")
    trainer_config = runner_flags.trainer_config_from_flags(
        config, num_train_steps=config.num_train_steps,
        max_eval_steps=config.max_eval_steps)
    optimizer_factory = None
    if config.do_train:
        optimizer_factory = runner_flags.optimizer_factory_from_flags(
            config, num_train_steps=config.num_train_steps,
            num_warmup_steps=config.num_warmup_steps)
    data_config = PretrainingDataConfig(
        input_patterns=input_files,
        max_seq_length=config.max_seq_length,
        max_predictions_per_seq=config.max_predictions_per_seq,
        dynamic_masking=config.dynamic_masking,
        vocab_file=config.vocab_file,
        do_lower_case=config.do_lower_case,
        masked_lm_prob=config.masked_lm_prob,
        short_seq_prob=config.short_seq_prob,
        do_whole_word_mask=config.do_whole_word_mask,
        packing=config.packing,
        seed=config.seed,
        pack_sequences=config.pack_sequences,
        max_sequences_per_pack=config.max_sequences_per_pack,
        max_eval_batches=config.max_eval_steps)

    # The strategy comes before any other TensorFlow work: multi-worker and
    # TPU strategies must configure the runtime before it starts.
    strategy = runner_flags.strategy_from_flags(config)
    runner_flags.set_seed_from_flags(config)
    task = PretrainingTask(bert_config, data_config,
                           objective=config.pretraining_objective,
                           init_checkpoint=config.init_checkpoint or None)
    trainer = Trainer(task, trainer_config, strategy,
                      optimizer_factory=optimizer_factory)
    if config.do_train and trainer.is_chief:
        # As a released checkpoint directory has them, so that the run's
        # directory loads with `bert_tf.load` (the Trainer has made it and
        # holds its lock).
        finetune.copy_model_files(config, ("bert_config_file", "vocab_file"))
    result = None
    if config.do_train:
        result = trainer.train()
    if config.do_eval:
        result = trainer.evaluate()
    return result
