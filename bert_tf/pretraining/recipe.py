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

from bert_tf import finetuning
from bert_tf.finetuning import checks
from bert_tf.finetuning import fields
from bert_tf.finetuning import runtime
from bert_tf.finetuning.fields import setting


@dataclasses.dataclass
class PretrainingConfig(finetuning.RunConfig):
    """run_pretraining.py's flags as fields (see its `--help`)."""
    input_file: Optional[str] = setting(
        None,
        "Input TF example files (can be a glob or comma separated); with "
        "--dynamic_masking, raw text files in create_pretraining_data.py's "
        "input format.")
    max_predictions_per_seq: int = setting(
        20,
        "Maximum number of masked LM predictions per sequence. Must match "
        "data generation.")
    num_train_steps: int = setting(100000, "Number of training steps.")
    num_warmup_steps: int = setting(10000, "Number of warmup steps.")
    max_eval_steps: int = setting(100, "Maximum number of eval steps.")
    dynamic_masking: bool = setting(
        False,
        "Read raw text (--input_file) and create masked instances on the "
        "fly, with new masks each epoch, instead of reading "
        "create_pretraining_data.py records. Needs --vocab_file and "
        "--do_lower_case.")
    masked_lm_prob: float = setting(
        0.15, "With --dynamic_masking: the fraction of tokens to mask.")
    short_seq_prob: float = setting(
        0.1, "With --dynamic_masking: the probability of a shorter sequence.")
    do_whole_word_mask: bool = setting(
        False,
        "With --dynamic_masking: whole-word masking as "
        "create_pretraining_data.py --do_whole_word_mask (a word's ## "
        "pieces are masked together).")
    pretraining_objective: str = setting(
        "mlm_nsp",
        "The BERT paper's pretraining objectives (section 5.1 ablation). "
        "mlm_nsp: masked LM + next sentence prediction (Google's original). "
        "mlm: masked LM only (\"No NSP\"); the next-sentence head is kept "
        "in checkpoints, untrained, and eval reports masked_lm_accuracy/"
        "masked_lm_loss only. ltr: left-to-right LM (\"LTR & No NSP\"): "
        "causal attention, each position predicts the next original token; "
        "eval reports lm_accuracy/lm_loss. mlm_sop: masked LM + ALBERT's "
        "sentence-order prediction (the next-sentence head and loss on "
        "pairs swapped half of the time; eval reports "
        "sentence_order_accuracy/loss): with --dynamic_masking the pairs "
        "are made so; records must come from create_pretraining_data.py "
        "--pretraining_objective=mlm_sop (on Google's records it would "
        "learn next sentence prediction under another name). All read "
        "records or --dynamic_masking text and write the same checkpoint "
        "names.", choices=("mlm_nsp", "mlm", "ltr", "mlm_sop"))
    packing: str = setting(
        "sentence_pairs",
        "With --dynamic_masking: how sequences are made. sentence_pairs: "
        "Google's [CLS] A [SEP] B [SEP]. full_sentences: RoBERTa's "
        "FULL-SENTENCES, whole sentences in corpus order packed up to "
        "--max_seq_length, across document boundaries with a [SEP] between "
        "two documents, one segment (for mlm or ltr; RoBERTa's recipe is "
        "--pretraining_objective=mlm --dynamic_masking "
        "--packing=full_sentences).",
        choices=("sentence_pairs", "full_sentences"))
    pack_sequences: bool = setting(
        False,
        "Pack up to --max_sequences_per_pack sequences (records or "
        "--dynamic_masking's) into each row of --max_seq_length tokens as "
        "they are read, so little of the compute is spent on padding. "
        "Each sequence attends only to itself, with its own positions, "
        "masked-LM predictions and next-sentence prediction at its [CLS]: "
        "losses, metrics and checkpoints are those of the same sequences "
        "unpacked. --train_batch_size and --eval_batch_size then count "
        "rows, each holding several sequences; evaluation packs the "
        "sequences of --max_eval_steps unpacked batches.")
    max_sequences_per_pack: int = setting(
        3, "With --pack_sequences: the most sequences one row holds.")

    REQUIRED_FLAGS = ("input_file", "bert_config_file", "output_dir")

    def validate(self):
        """Checks the fields that need no input file read; raises
        ValueError naming the first bad one (`run` then checks the
        sequence length against `bert_config_file` and expands
        `input_file`)."""
        finetuning.check_field_types(self)
        if not self.do_train and not self.do_eval:
            # Google's message, word for word.
            raise ValueError(
                "At least one of `do_train` or `do_eval` must be True.")
        checks.require(self, "bert_config_file", "output_dir",
                             "input_file")
        checks.check_file("bert_config_file", self.bert_config_file)
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
    bert_config = finetuning.load_bert_config(config)
    bert_config.check_max_seq_length(config.max_seq_length)
    # The one expansion of the globs: the readers get these files.
    input_files = checks.expand_file_patterns("input_file",
                                                    config.input_file)
    if config.dynamic_masking:
        checks.require(config, "vocab_file")
        checks.check_file("vocab_file", config.vocab_file)
    if config.do_train and config.num_train_steps <= 0:
        raise ValueError(f"--num_train_steps={config.num_train_steps} "
                         "must be positive with --do_train")
    # Before anything is written: no output may be an input, and a run that
    # does not train needs weights to evaluate.
    checks.check_outputs_are_not_inputs(
        config, ("eval_results.txt", "checkpoint"),
        ("bert_config_file", "init_checkpoint", "vocab_file"),
        input_files={"input_file": input_files})
    if not config.do_train:
        checks.require_weights_without_training(config, "--do_eval")
    trainer_config = runtime.make_trainer_config(
        config, num_train_steps=config.num_train_steps,
        max_eval_steps=config.max_eval_steps)
    optimizer_factory = None
    if config.do_train:
        optimizer_factory = runtime.make_optimizer_factory(
            config, num_train_steps=config.num_train_steps,
            num_warmup_steps=config.num_warmup_steps)
    data_config = PretrainingDataConfig(
        input_patterns=input_files, max_eval_batches=config.max_eval_steps,
        **fields.values(config, (
            "max_seq_length", "max_predictions_per_seq", "dynamic_masking",
            "vocab_file", "do_lower_case", "masked_lm_prob", "short_seq_prob",
            "do_whole_word_mask", "packing", "seed", "pack_sequences",
            "max_sequences_per_pack")))

    # The strategy comes before any other TensorFlow work: multi-worker and
    # TPU strategies must configure the runtime before it starts.
    strategy = runtime.make_strategy(config)
    runtime.set_seed(config)
    task = PretrainingTask(bert_config, data_config,
                           objective=config.pretraining_objective,
                           init_checkpoint=config.init_checkpoint or None)
    trainer = Trainer(task, trainer_config, strategy,
                      optimizer_factory=optimizer_factory)
    if config.do_train and trainer.is_chief:
        # As a released checkpoint directory has them, so that the run's
        # directory loads with `bert_tf.load` (the Trainer has made it and
        # holds its lock).
        finetuning.copy_model_files(config, ("bert_config_file", "vocab_file"))
    result = None
    if config.do_train:
        result = trainer.train()
    if config.do_eval:
        result = trainer.evaluate()
    return result
