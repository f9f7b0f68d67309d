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
from bert_tf.runners import finetune
from bert_tf.runners import flags as runner_flags

FLAGS = flags.FLAGS
PROGRAM = "run_squad.py"


def define_flags(flag_values=FLAGS):
    """Defines Google's run_squad.py flags, plus the new shared ones.

    Called on the global FLAGS when this file runs as a program; tests call
    it on a fresh `flags.FlagValues()` so several runners can be tested in
    one process. Google's run_squad.py has no --do_eval or --eval_batch_size
    (its dev-set pass is --do_predict with --predict_batch_size).
    """
    finetune.define_flags(
        flag_values, max_seq_length=384, train_batch_size=32,
        learning_rate=5e-5, has_eval=False,
        # Google's span loss is a softmax over every position, padding
        # included, and its n-best list ranks the logits of padding too:
        # a shorter batch changes both, so it is an option here.
        pad_to_multiple_of=None,
        pad_to_multiple_of_note=(
            " run_squad.py's default is the full length: Google's span loss "
            "is a softmax over all --max_seq_length positions (padding "
            "included) and its n-best candidates are the top logits of all "
            "positions (padding ranked, then dropped), so a window run at "
            "its real length trains on a softmax over its real tokens and "
            "can list more candidates in nbest_predictions.json; "
            "predictions.json changes only when a padding logit outranks "
            "the answer's runners-up (rare for a trained model)."),
        do_predict_help="Whether to predict answers for --predict_file (and "
                        "score them when it has answers).")
    flags.DEFINE_string(
        "train_file", None,
        "SQuAD JSON file to train on, e.g. train-v1.1.json or "
        "train-v2.0.json.", flag_values=flag_values)
    flags.DEFINE_string(
        "predict_file", None,
        "SQuAD JSON file to predict answers for, e.g. dev-v1.1.json or "
        "test-v1.1.json. When its questions have answers (a dev set), the "
        "predictions are also scored with the official metrics into "
        "eval_results.txt.", flag_values=flag_values)
    flags.DEFINE_integer(
        "doc_stride", 128,
        "Documents longer than one window are cut into overlapping windows "
        "whose starts are this many word pieces apart.",
        flag_values=flag_values)
    flags.DEFINE_integer(
        "max_query_length", 64,
        "Questions are cut to this many word pieces.",
        flag_values=flag_values)
    flags.DEFINE_integer(
        "n_best_size", 20,
        "How many start and end positions are combined into candidate "
        "answers, and how many answers nbest_predictions.json lists per "
        "question.", flag_values=flag_values)
    flags.DEFINE_integer(
        "max_answer_length", 30,
        "Longest answer, in word pieces (start and end are predicted "
        "independently, so long spans must be ruled out).",
        flag_values=flag_values)
    flags.DEFINE_bool(
        "verbose_logging", False,
        "Log every answer whose text could not be aligned with the original "
        "context (a number of them is normal).", flag_values=flag_values)
    flags.DEFINE_bool(
        "version_2_with_negative", False,
        "SQuAD 2.0: some questions have no answer in their paragraph.",
        flag_values=flag_values)
    flags.DEFINE_float(
        "null_score_diff_threshold", 0.0,
        "SQuAD 2.0: predict no answer when the no-answer score exceeds the "
        "best answer's score by more than this.", flag_values=flag_values)
    finetune.define_bilstm_flags(flag_values, "span", "the span head")


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
        squad_recipe.SquadConfig, flag_values))


def main(argv, flag_values=FLAGS):
    """Runs with parsed flags; a bad flag or input ends with its message."""
    runner_flags.run_main(PROGRAM, run, argv, flag_values)


if __name__ == "__main__":
    define_flags()
    cli.run_app(main)
