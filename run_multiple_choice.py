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

from absl import flags

from bert_tf import cli
from bert_tf.runners import flags as runner_flags

FLAGS = flags.FLAGS
PROGRAM = "run_multiple_choice.py"


def config_class():
    """The recipe's config, whose fields are this program's flags."""
    from bert_tf.tasks.multiple_choice import recipe as multiple_choice_recipe
    return multiple_choice_recipe.MultipleChoiceConfig


def define_flags(flag_values=FLAGS):
    """Defines run_multiple_choice.py's flags: the fields of
    `MultipleChoiceConfig` (run_classifier.py's flags where they apply,
    plus the input's)."""
    runner_flags.define_config_flags(config_class(), flag_values)


def run(flag_values):
    """Trains, evaluates and/or predicts as the parsed flags say
    (`bert_tf.tasks.multiple_choice.recipe.run`).

    Returns:
      A dict: "train", "eval" (the results), "predict" (probabilities
      [n, num_choices]), for the phases that ran.
    """
    from bert_tf.tasks.multiple_choice import recipe as multiple_choice_recipe
    return multiple_choice_recipe.run(runner_flags.config_from_flags(
        config_class(), flag_values))


def main(argv, flag_values=FLAGS):
    """Runs with parsed flags; a bad flag or input ends with its message."""
    runner_flags.run_main(PROGRAM, run, argv, flag_values)


if __name__ == "__main__":
    define_flags()
    cli.run_app(main)
