"""BERT fine-tuning for GLUE-style classification, as Google's original.

A command line written for google-research/bert's run_classifier.py runs
unchanged:

    python run_classifier.py --task_name=MRPC --do_train=true --do_eval=true \\
      --data_dir=$GLUE_DIR/MRPC --vocab_file=$BERT_BASE_DIR/vocab.txt \\
      --bert_config_file=$BERT_BASE_DIR/bert_config.json \\
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt \\
      --max_seq_length=128 --train_batch_size=32 --learning_rate=2e-5 \\
      --num_train_epochs=3.0 --output_dir=/tmp/mrpc_output/

It writes what the original writes: `train.tf_record`, `eval.tf_record`,
`predict.tf_record`, `model.ckpt-<step>` checkpoints with Google's variable
names (encoder, `output_weights`, `output_bias`, optimizer slots),
`eval_results.txt` (`key = value`: eval_accuracy, eval_loss, global_step,
loss, plus eval_f1 for MRPC/QQP, eval_matthews_corrcoef for CoLA,
eval_pearson/eval_spearman instead of accuracy for STS-B) and
`test_results.tsv` (one line of tab-separated class probabilities per test
example, in input order; the predicted score for STS-B).

Tasks: the original's cola, mnli, mrpc, xnli (--xnli_language), GLUE's
mnli-mm, sst-2, qqp, qnli, rte, wnli, sts-b, and `generic` for your own
TSV/CSV files (--text_a_column, --text_b_column, --label_column,
--data_format). New flags (--distribution_strategy, --dtype, --enable_xla,
--seed, ...) default to the original's behaviour. Restarting with the same
--output_dir resumes training from its newest checkpoint.
"""

from bert_tf import startup

# Before anything imports TensorFlow: keeps its C++ start-up lines out.
startup.quiet_start()

from absl import flags

from bert_tf import cli
from bert_tf.runners import flags as runner_flags

FLAGS = flags.FLAGS
PROGRAM = "run_classifier.py"


def config_class():
    """The recipe's config, whose fields are this program's flags."""
    from bert_tf.tasks.classification import recipe as classification_recipe
    return classification_recipe.ClassificationConfig


def define_flags(flag_values=FLAGS):
    """Defines run_classifier.py's flags: the fields of
    `ClassificationConfig` (Google's flags, plus the new shared ones).

    Called on the global FLAGS when this file runs as a program (see
    bert_tf/runners/flags.py).
    """
    runner_flags.define_config_flags(config_class(), flag_values)


def run(flag_values):
    """Trains, evaluates and/or predicts as the parsed flags say
    (`bert_tf.tasks.classification.recipe.run`).

    Returns:
      A dict: "train" (the last training log), "eval" (the eval results),
      "predict" (the test probabilities, numpy [n, num_labels]), for the
      phases that ran.
    """
    # Imported here so that `--help` and flag errors come without importing
    # the model code.
    from bert_tf.tasks.classification import recipe as classification_recipe
    return classification_recipe.run(runner_flags.config_from_flags(
        config_class(), flag_values))


def main(argv, flag_values=FLAGS):
    """Runs with parsed flags; a bad flag or input ends with its message."""
    runner_flags.run_main(PROGRAM, run, argv, flag_values)


if __name__ == "__main__":
    define_flags()
    cli.run_app(main)
