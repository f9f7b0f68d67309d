r"""Pretrains BERT (masked LM + next sentence prediction), as Google's original.

A command line written for google-research/bert's run_pretraining.py runs
unchanged:

    python run_pretraining.py --input_file=/tmp/tf_examples.tfrecord \
      --output_dir=/tmp/pretraining_output --do_train=True --do_eval=True \
      --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt \
      --train_batch_size=32 --max_seq_length=128 --max_predictions_per_seq=20 \
      --num_train_steps=20 --num_warmup_steps=10 --learning_rate=2e-5

New flags (--distribution_strategy, --dtype, --optimizer,
--num_accumulation_steps, --enable_xla, --dynamic_masking,
--pretraining_objective, --pack_sequences, ...) default to the original's behaviour. Restarting
with the same --output_dir resumes from its newest checkpoint.

--pretraining_objective picks among the objectives of the BERT paper's
ablation (section 5.1): mlm_nsp (Google's), mlm ("No NSP") and ltr ("LTR &
No NSP", a causal left-to-right LM), and ALBERT's mlm_sop (sentence-order
prediction). All read the same data (records or --dynamic_masking) and
write checkpoints with the same variables, which run_classifier.py and
run_squad.py fine-tune as usual. RoBERTa's recipe is
--pretraining_objective=mlm --dynamic_masking --packing=full_sentences.
"""

from bert_tf import startup

# Before anything imports TensorFlow: keeps its C++ start-up lines out.
startup.quiet_start()

from absl import flags

from bert_tf import cli
from bert_tf.runners import flags as runner_flags

FLAGS = flags.FLAGS
PROGRAM = "run_pretraining.py"


def define_flags(flag_values=FLAGS):
    """Defines Google's run_pretraining.py flags, plus the new ones.

    Called on the global FLAGS when this file runs as a program; tests call it
    on a fresh `flags.FlagValues()` so several runners can be tested in one
    process.
    """
    runner_flags.define_model_flags(flag_values)
    runner_flags.define_training_flags(
        flag_values, max_seq_length=128, train_batch_size=32,
        eval_batch_size=8, learning_rate=5e-5)
    runner_flags.define_tpu_flags(flag_values)
    runner_flags.define_runtime_flags(flag_values)
    runner_flags.define_tokenizer_flags(flag_values)
    flags.DEFINE_string(
        "input_file", None,
        "Input TF example files (can be a glob or comma separated); with "
        "--dynamic_masking, raw text files in create_pretraining_data.py's "
        "input format.", flag_values=flag_values)
    flags.DEFINE_integer(
        "max_predictions_per_seq", 20,
        "Maximum number of masked LM predictions per sequence. Must match "
        "data generation.", flag_values=flag_values)
    flags.DEFINE_integer("num_train_steps", 100000,
                         "Number of training steps.", flag_values=flag_values)
    flags.DEFINE_integer("num_warmup_steps", 10000, "Number of warmup steps.",
                         flag_values=flag_values)
    flags.DEFINE_integer("max_eval_steps", 100,
                         "Maximum number of eval steps.",
                         flag_values=flag_values)
    flags.DEFINE_bool(
        "dynamic_masking", False,
        "Read raw text (--input_file) and create masked instances on the "
        "fly, with new masks each epoch, instead of reading "
        "create_pretraining_data.py records. Needs --vocab_file and "
        "--do_lower_case.", flag_values=flag_values)
    flags.DEFINE_float(
        "masked_lm_prob", 0.15,
        "With --dynamic_masking: the fraction of tokens to mask.",
        flag_values=flag_values)
    flags.DEFINE_float(
        "short_seq_prob", 0.1,
        "With --dynamic_masking: the probability of a shorter sequence.",
        flag_values=flag_values)
    flags.DEFINE_bool(
        "do_whole_word_mask", False,
        "With --dynamic_masking: whole-word masking as "
        "create_pretraining_data.py --do_whole_word_mask (a word's ## "
        "pieces are masked together).", flag_values=flag_values)
    flags.DEFINE_enum(
        "pretraining_objective", "mlm_nsp",
        ("mlm_nsp", "mlm", "ltr", "mlm_sop"),
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
        "names.",
        flag_values=flag_values)
    flags.DEFINE_enum(
        "packing", "sentence_pairs", ("sentence_pairs", "full_sentences"),
        "With --dynamic_masking: how sequences are made. sentence_pairs: "
        "Google's [CLS] A [SEP] B [SEP]. full_sentences: RoBERTa's "
        "FULL-SENTENCES, whole sentences in corpus order packed up to "
        "--max_seq_length, across document boundaries with a [SEP] between "
        "two documents, one segment (for mlm or ltr; RoBERTa's recipe is "
        "--pretraining_objective=mlm --dynamic_masking "
        "--packing=full_sentences).", flag_values=flag_values)
    flags.DEFINE_bool(
        "pack_sequences", False,
        "Pack up to --max_sequences_per_pack sequences (records or "
        "--dynamic_masking's) into each row of --max_seq_length tokens as "
        "they are read, so little of the compute is spent on padding. "
        "Each sequence attends only to itself, with its own positions, "
        "masked-LM predictions and next-sentence prediction at its [CLS]: "
        "losses, metrics and checkpoints are those of the same sequences "
        "unpacked. --train_batch_size and --eval_batch_size then count "
        "rows, each holding several sequences; evaluation packs the "
        "sequences of --max_eval_steps unpacked batches.",
        flag_values=flag_values)
    flags.DEFINE_integer(
        "max_sequences_per_pack", 3,
        "With --pack_sequences: the most sequences one row holds.",
        flag_values=flag_values)
    for name in ("input_file", "bert_config_file", "output_dir"):
        flags.mark_flag_as_required(name, flag_values=flag_values)


def run(flag_values):
    """Trains and/or evaluates as the parsed flags say
    (`bert_tf.pretraining.recipe.run`).

    Returns:
      The eval results dict when --do_eval, else the last training log.
    """
    # Imported here so that `--help` and flag errors come without importing
    # the model code.
    from bert_tf.pretraining import recipe as pretraining_recipe
    return pretraining_recipe.run(runner_flags.config_from_flags(
        pretraining_recipe.PretrainingConfig, flag_values))


def main(argv, flag_values=FLAGS):
    """Runs with parsed flags; a bad flag or input ends with its message."""
    runner_flags.run_main(PROGRAM, run, argv, flag_values)


if __name__ == "__main__":
    define_flags()
    cli.run_app(main)
