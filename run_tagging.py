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

from absl import flags

from bert_tf import cli
from bert_tf.runners import flags as runner_flags

FLAGS = flags.FLAGS
PROGRAM = "run_tagging.py"


def config_class():
    """The recipe's config, whose fields are this program's flags."""
    from bert_tf.tasks.tagging import recipe as tagging_recipe
    return tagging_recipe.TaggingConfig


def define_flags(flag_values=FLAGS):
    """Defines run_tagging.py's flags: the fields of `TaggingConfig`
    (run_classifier.py's flags where they apply, plus tagging's own)."""
    runner_flags.define_config_flags(config_class(), flag_values)


def run(flag_values):
    """Trains, evaluates and/or predicts as the parsed flags say
    (`bert_tf.tasks.tagging.recipe.run`).

    Returns:
      A dict: "train" (the last training log), "eval" (the eval results),
      "predict" (each predict sentence's labels), for the phases that ran.
    """
    from bert_tf.tasks.tagging import recipe as tagging_recipe
    return tagging_recipe.run(runner_flags.config_from_flags(
        config_class(), flag_values))


def main(argv, flag_values=FLAGS):
    """Runs with parsed flags; a bad flag or input ends with its message."""
    # A TaggingDataError (bad input, file and line named) is a ValueError:
    # it ends the program with its message like any other bad input.
    runner_flags.run_main(PROGRAM, run, argv, flag_values)


if __name__ == "__main__":
    define_flags()
    cli.run_app(main)
