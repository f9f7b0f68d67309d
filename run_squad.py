"""SQuAD v1.1 and 2.0 fine-tuning and prediction, as Google's run_squad.py.

A command line written for google-research/bert's run_squad.py runs
unchanged:

    python run_squad.py --vocab_file=$BERT_BASE_DIR/vocab.txt \\
      --bert_config_file=$BERT_BASE_DIR/bert_config.json \\
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt \\
      --do_train=True --train_file=$SQUAD_DIR/train-v1.1.json \\
      --do_predict=True --predict_file=$SQUAD_DIR/dev-v1.1.json \\
      --train_batch_size=12 --learning_rate=3e-5 --num_train_epochs=2.0 \\
      --max_seq_length=384 --doc_stride=128 --output_dir=/tmp/squad_base/

It writes what the original writes: `train.tf_record`, `eval.tf_record`,
`model.ckpt-<step>` checkpoints with Google's variable names (encoder,
`cls/squad/output_weights`, `cls/squad/output_bias`, optimizer slots),
`predictions.json`, `nbest_predictions.json` and, with
`--version_2_with_negative`, `null_odds.json`.

New: when the `--predict_file` has answers (a dev set), the predictions are
scored with the official SQuAD metrics -- v1.1 `exact_match` and `f1`; v2.0
`exact`, `f1`, `total`, the `HasAns_*`/`NoAns_*` splits and the best
no-answer threshold (`best_exact`, `best_f1`, `*_thresh`), as the official
evaluate-v2.0.py with `--na-prob-file null_odds.json` reports them -- and
written to `eval_results.txt` and the log. New flags
(--distribution_strategy, --dtype, --enable_xla, --seed, --causal_attention,
--span_bilstm, ...) default to the original's behaviour. Restarting with the same --output_dir resumes
training from its newest checkpoint.
"""

from bert_tf import startup

# Before anything imports TensorFlow: keeps its C++ start-up lines out.
startup.quiet_start()

from absl import flags

from bert_tf import cli
from bert_tf.runners import flags as runner_flags

FLAGS = flags.FLAGS
PROGRAM = "run_squad.py"


def config_class():
    """The recipe's config, whose fields are this program's flags."""
    from bert_tf.tasks.squad import recipe as squad_recipe
    return squad_recipe.SquadConfig


def define_flags(flag_values=FLAGS):
    """Defines run_squad.py's flags: the fields of `SquadConfig` (Google's
    run_squad.py flags, plus the new shared ones).

    Called on the global FLAGS when this file runs as a program; tests call
    it on a fresh `flags.FlagValues()` so several runners can be tested in
    one process. Google's run_squad.py has no --do_eval or --eval_batch_size
    (its dev-set pass is --do_predict with --predict_batch_size).
    """
    runner_flags.define_config_flags(config_class(), flag_values)


def run(flag_values):
    """Trains and/or predicts (and scores) as the parsed flags say
    (`bert_tf.tasks.squad.recipe.run`).

    Returns:
      A dict: "train" (the last training log), "predictions" (question id
      -> answer) and "eval" (the official metrics, when the predict file has
      answers), for the phases that ran.
    """
    from bert_tf.tasks.squad import recipe as squad_recipe
    return squad_recipe.run(runner_flags.config_from_flags(
        config_class(), flag_values))


def main(argv, flag_values=FLAGS):
    """Runs with parsed flags; a bad flag or input ends with its message."""
    runner_flags.run_main(PROGRAM, run, argv, flag_values)


if __name__ == "__main__":
    define_flags()
    cli.run_app(main)
