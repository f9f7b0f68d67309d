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

import os
import random

from absl import app
from absl import flags
from absl import logging

from bert_tf import cli
from bert_tf.runners import finetune
from bert_tf.runners import flags as runner_flags

FLAGS = flags.FLAGS
PROGRAM = "run_squad.py"
TRAIN_RECORD_FILE = "train.tf_record"
PREDICT_RECORD_FILE = "eval.tf_record"
# Google shuffles the training examples with this seed before writing them.
TRAIN_EXAMPLE_SHUFFLE_SEED = 12345


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


def _validate_flags(flag_values, bert_config):
    """Google's `validate_flags_or_throw`, plus checks of the new flags."""
    if not flag_values.do_train and not flag_values.do_predict:
        raise ValueError(
            "At least one of `do_train` or `do_predict` must be True.")
    if flag_values.do_train and not flag_values.train_file:
        raise ValueError(
            "If `do_train` is True, then `train_file` must be specified.")
    if flag_values.do_predict and not flag_values.predict_file:
        raise ValueError(
            "If `do_predict` is True, then `predict_file` must be specified.")
    bert_config.check_max_seq_length(flag_values.max_seq_length)
    if flag_values.max_seq_length <= flag_values.max_query_length + 3:
        raise ValueError(
            f"The max_seq_length ({flag_values.max_seq_length}) must be "
            f"greater than max_query_length ({flag_values.max_query_length}) "
            "+ 3")
    for name in ("doc_stride", "max_query_length", "n_best_size",
                 "max_answer_length"):
        if flag_values[name].value <= 0:
            raise ValueError(
                f"--{name}={flag_values[name].value} must be positive")
    finetune.bilstm_units(flag_values, "span", bert_config)


def _write_features(examples, tokenizer, flag_values, path, is_training,
                    keep_for_prediction=False):
    """Converts examples to features, streaming them into a record file.

    Returns:
      `(number of features, kept)`: with `keep_for_prediction`, `kept` lists
      every feature without its model inputs (what post-processing needs);
      otherwise it is empty and no feature outlives its record.
    """
    from bert_tf.tasks.squad import features as squad_features
    kept = []
    with squad_features.FeatureWriter(path, is_training) as writer:
        for feature in squad_features.generate_features(
                examples, tokenizer, flag_values.max_seq_length,
                flag_values.doc_stride, flag_values.max_query_length,
                is_training):
            writer.process_feature(feature)
            if keep_for_prediction:
                kept.append(feature.without_model_inputs())
    return writer.num_features, kept


def run(flag_values):
    """Validates the flags, then trains and/or predicts (and scores).

    Returns:
      A dict: "train" (the last training log), "predictions" (question id
      -> answer) and "eval" (the official metrics, when the predict file has
      answers), for the phases that ran.
    """
    # Imported here so that `--help` and flag errors come without importing
    # TensorFlow and the model code.
    from bert_tf.tasks.squad import examples as squad_examples
    from bert_tf.tasks.squad import postprocess as squad_postprocess
    from bert_tf.tasks import base
    from bert_tf.tasks.squad import task as squad
    from bert_tf.training import trainer as trainer_lib

    bert_config = finetune.load_bert_config(flag_values)
    finetune.validate_flags(flag_values)
    _validate_flags(flag_values, bert_config)
    version_2 = flag_values.version_2_with_negative
    # Before anything is written: no output may be an input.
    runner_flags.check_outputs_are_not_inputs(
        flag_values, (squad_postprocess.PREDICTIONS_FILE,
                      squad_postprocess.NBEST_PREDICTIONS_FILE,
                      squad_postprocess.NULL_ODDS_FILE,
                      trainer_lib.EVAL_RESULTS_FILE, TRAIN_RECORD_FILE,
                      PREDICT_RECORD_FILE, "checkpoint"),
        ("train_file", "predict_file", "bert_config_file", "vocab_file",
         "init_checkpoint"))

    # Both SQuAD files are read (and checked) before any training, so a bad
    # predict file fails in seconds, not after hours of training.
    train_examples = predict_examples = None
    if flag_values.do_train:
        runner_flags.check_file("train_file", flag_values.train_file)
        train_examples = squad_examples.read_squad_examples(
            flag_values.train_file, is_training=True,
            version_2_with_negative=version_2)
    steps = finetune.training_steps(flag_values, len(train_examples or ()))
    score_predictions = False
    if flag_values.do_predict:
        runner_flags.check_file("predict_file", flag_values.predict_file)
        predict_examples = squad_examples.read_squad_examples(
            flag_values.predict_file, is_training=False,
            version_2_with_negative=version_2)
        score_predictions = squad_examples.has_gold_answers(
            flag_values.predict_file, version_2)

    run = finetune.start(flag_values)
    output_dir = flag_values.output_dir
    finetune.write_run_description(
        flag_values, run, PROGRAM, finetune.SQUAD,
        **{name: flag_values[name].value for name in (
            "doc_stride", "max_query_length", "n_best_size",
            "max_answer_length", "version_2_with_negative",
            "null_score_diff_threshold")})

    train_file = None
    if train_examples is not None:
        # Google's fixed order: windows of one document are spread over
        # batches by the shuffle buffer, not kept together.
        random.Random(TRAIN_EXAMPLE_SHUFFLE_SEED).shuffle(train_examples)
        train_file = os.path.join(output_dir, TRAIN_RECORD_FILE)
        num_train_features, _ = _write_features(
            train_examples, run.tokenizer, flag_values, train_file,
            is_training=True)
        logging.info("***** Running training *****")
        logging.info("  Num orig examples = %d", len(train_examples))
        logging.info("  Num split examples = %d", num_train_features)
        logging.info("  Batch size = %d", flag_values.train_batch_size)
        logging.info("  Num steps = %d", steps.num_train_steps)
        del train_examples  # Not needed any more; the records hold them.

    predict_file = os.path.join(output_dir, PREDICT_RECORD_FILE)
    task = squad.SquadTask(
        bert_config,
        squad.SquadDataConfig(
            train_file=train_file,
            predict_file=predict_file if flag_values.do_predict else None,
            max_seq_length=flag_values.max_seq_length, seed=flag_values.seed),
        squad.SquadPostprocessConfig(
            n_best_size=flag_values.n_best_size,
            max_answer_length=flag_values.max_answer_length,
            do_lower_case=flag_values.do_lower_case,
            version_2_with_negative=version_2,
            null_score_diff_threshold=flag_values.null_score_diff_threshold,
            verbose_logging=flag_values.verbose_logging,
            gold_file=(flag_values.predict_file if score_predictions
                       else None)),
        init_checkpoint=run.init_checkpoint,
        causal_attention=flag_values.causal_attention,
        bilstm_units=finetune.bilstm_units(flag_values, "span",
                                            bert_config))
    trainer = finetune.make_trainer(run, task, flag_values, steps,
                                    flag_values.predict_batch_size)

    results = {}
    if flag_values.do_train:
        results["train"] = trainer.train()
    if not flag_values.do_predict:
        return results

    num_predict_features, predict_features = _write_features(
        predict_examples, run.tokenizer, flag_values, predict_file,
        is_training=False, keep_for_prediction=True)
    logging.info("***** Running predictions *****")
    logging.info("  Num orig examples = %d", len(predict_examples))
    logging.info("  Num split examples = %d", num_predict_features)
    logging.info("  Batch size = %d", flag_values.predict_batch_size)
    state, eval_results = trainer.run_predictions(
        base.PREDICT, flag_values.predict_batch_size,
        initial_state=squad.SpanPredictions(
            num_predict_features, flag_values.max_seq_length,
            predict_examples, predict_features),
        pad_to_full_batches=run.on_tpu, num_examples=num_predict_features)
    results["predictions"] = state.predictions
    if score_predictions:
        results["eval"] = eval_results
    else:
        logging.info("%s has no answers: predictions are not scored",
                     flag_values.predict_file)
    return results


def main(argv, flag_values=FLAGS):
    """Runs with parsed flags; a bad flag or input ends with its message."""
    runner_flags.run_main(PROGRAM, run, argv, flag_values)


if __name__ == "__main__":
    define_flags()
    cli.list_every_flag_in_help()
    app.run(main)
