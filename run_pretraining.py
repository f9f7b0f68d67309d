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


def config_class():
    """The recipe's config, whose fields are this program's flags."""
    from bert_tf.pretraining import recipe as pretraining_recipe
    return pretraining_recipe.PretrainingConfig


def define_flags(flag_values=FLAGS):
    """Defines run_pretraining.py's flags: the fields of `PretrainingConfig`
    (Google's flags, plus the new ones).

    Called on the global FLAGS when this file runs as a program; tests call it
    on a fresh `flags.FlagValues()` so several runners can be tested in one
    process.
    """
    runner_flags.define_config_flags(config_class(), flag_values)


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
        config_class(), flag_values))


def main(argv, flag_values=FLAGS):
    """Runs with parsed flags; a bad flag or input ends with its message."""
    runner_flags.run_main(PROGRAM, run, argv, flag_values)


if __name__ == "__main__":
    define_flags()
    cli.run_app(main)
