"""SQuAD 1.1 / 2.0 from a config: Google's run_squad.py as a library
function.

    results = run(SquadConfig(train_file="train-v1.1.json", do_train=True,
                              predict_file="dev-v1.1.json", do_predict=True,
                              ...))

Writes `train.tf_record`, `eval.tf_record`, the checkpoints,
`predictions.json`, `nbest_predictions.json`, `null_odds.json` (2.0) and,
when the predict questions have answers, `eval_results.txt`, as
run_squad.py (which calls it). The questions come from `train_file` and
`predict_file`, or from SQuAD JSON `data` lists already in memory.
"""

import dataclasses
import os
import random
from typing import Optional

from absl import logging

from bert_tf.runners import finetune
from bert_tf.runners import flags as runner_flags
from bert_tf.tasks.squad import postprocess as squad_postprocess

PROGRAM = "run_squad.py"
TRAIN_RECORD_FILE = "train.tf_record"
PREDICT_RECORD_FILE = "eval.tf_record"
# Google shuffles the training examples with this seed before writing them.
TRAIN_EXAMPLE_SHUFFLE_SEED = 12345


@dataclasses.dataclass
class SquadConfig(finetune.FineTuningConfig):
    """run_squad.py's flags as fields (see its `--help`). Google's
    run_squad.py has no `do_eval`: its dev-set pass is `do_predict`."""
    max_seq_length: int = 384
    pad_to_multiple_of: Optional[int] = None
    train_file: Optional[str] = None
    predict_file: Optional[str] = None
    doc_stride: int = 128
    max_query_length: int = 64
    n_best_size: int = 20
    max_answer_length: int = 30
    verbose_logging: bool = False
    version_2_with_negative: bool = False
    null_score_diff_threshold: float = 0.0
    span_bilstm: bool = False
    span_bilstm_units: Optional[int] = None

    PREDICTING_PHASES = ("do_predict",)

    def postprocess_config(self):
        """The windows and answer settings, for both post-processing twins
        (`postprocess.SquadPostprocessConfig`)."""
        return squad_postprocess.SquadPostprocessConfig.from_fields(self)

    def validate(self, bert_config, reads_train_file=True,
                 reads_predict_file=True):
        """Google's `validate_flags_or_throw`, plus checks of the new
        fields; raises ValueError naming the first bad one.

        Args:
          bert_config: the `BertConfig` of `bert_config_file`.
          reads_train_file, reads_predict_file: whether training and
            prediction read `train_file` and `predict_file` (not questions
            given in memory).
        """
        super().validate()
        if not self.do_train and not self.do_predict:
            raise ValueError(
                "At least one of `do_train` or `do_predict` must be True.")
        if self.do_train and reads_train_file and not self.train_file:
            raise ValueError(
                "If `do_train` is True, then `train_file` must be "
                "specified.")
        if self.do_predict and reads_predict_file and not self.predict_file:
            raise ValueError(
                "If `do_predict` is True, then `predict_file` must be "
                "specified.")
        bert_config.check_max_seq_length(self.max_seq_length)
        self.postprocess_config().check(self.max_seq_length)
        finetune.bilstm_units(self, "span", bert_config)


@finetune.releases_output_dir
def run(config, train_articles=None, predict_articles=None):
    """Validates `config`, then trains and/or predicts (and scores).

    Args:
      config: a `SquadConfig`.
      train_articles, predict_articles: a SQuAD JSON's `data` list (its
        articles), each instead of `train_file` / `predict_file`.

    Returns:
      A dict: "train" (the last training log), "predictions" (question id
      -> answer) and "eval" (the official metrics, when the predict
      questions have answers), for the phases that ran.

    Raises:
      ValueError: a bad field or input, named.
    """
    from bert_tf.tasks.squad import examples as squad_examples
    from bert_tf.tasks import base
    from bert_tf.tasks.squad import task as squad
    from bert_tf.training import trainer as trainer_lib

    bert_config = finetune.load_bert_config(config)
    config.validate(bert_config, reads_train_file=train_articles is None,
                    reads_predict_file=predict_articles is None)
    postprocess_config = config.postprocess_config()
    version_2 = postprocess_config.version_2_with_negative
    # Before anything is written: no output may be an input.
    runner_flags.check_outputs_are_not_inputs(
        config, (squad_postprocess.PREDICTIONS_FILE,
                 squad_postprocess.NBEST_PREDICTIONS_FILE,
                 squad_postprocess.NULL_ODDS_FILE,
                 trainer_lib.EVAL_RESULTS_FILE, TRAIN_RECORD_FILE,
                 PREDICT_RECORD_FILE, "checkpoint"),
        ("train_file", "predict_file", "bert_config_file", "vocab_file",
         "init_checkpoint"))

    def read(name, articles, is_training):
        """The articles (in memory, or the file's) and their examples."""
        if articles is None:
            path = getattr(config, name)
            runner_flags.check_file(name, path)
            articles = squad_examples.load_squad_json(path)
        else:
            path = name.replace("_file", "_articles")
        return path, articles, squad_examples.examples_of_articles(
            articles, path, is_training, version_2)

    # Both sets are read (and checked) before any training, so a bad
    # predict file fails in seconds, not after hours of training.
    train_examples = predict_examples = None
    if config.do_train:
        _, _, train_examples = read("train_file", train_articles, True)
    steps = finetune.training_steps(config, len(train_examples or ()))
    gold_articles = None
    if config.do_predict:
        predict_source, predict_articles, predict_examples = read(
            "predict_file", predict_articles, False)
        if squad_examples.articles_have_answers(
                predict_articles, predict_source, version_2):
            gold_articles = predict_articles

    run_setup = finetune.start(config)
    output_dir = config.output_dir
    finetune.write_run_description(
        config, run_setup, PROGRAM, finetune.SQUAD,
        **dataclasses.asdict(postprocess_config))

    train_file = None
    if train_examples is not None:
        # Google's fixed order: windows of one document are spread over
        # batches by the shuffle buffer, not kept together.
        random.Random(TRAIN_EXAMPLE_SHUFFLE_SEED).shuffle(train_examples)
        train_file = os.path.join(output_dir, TRAIN_RECORD_FILE)
        num_train_features, _ = _write_features(
            train_examples, run_setup.tokenizer, config.max_seq_length,
            postprocess_config, train_file, is_training=True)
        logging.info("***** Running training *****")
        logging.info("  Num orig examples = %d", len(train_examples))
        logging.info("  Num split examples = %d", num_train_features)
        logging.info("  Batch size = %d", config.train_batch_size)
        logging.info("  Num steps = %d", steps.num_train_steps)
        del train_examples  # Not needed any more; the records hold them.

    predict_file = os.path.join(output_dir, PREDICT_RECORD_FILE)
    task = squad.SquadTask(
        bert_config,
        squad.SquadDataConfig(
            train_file=train_file,
            predict_file=predict_file if config.do_predict else None,
            max_seq_length=config.max_seq_length, seed=config.seed),
        squad.SquadPredictionConfig(
            postprocess=postprocess_config,
            do_lower_case=config.do_lower_case,
            verbose_logging=config.verbose_logging,
            gold_articles=gold_articles),
        init_checkpoint=run_setup.init_checkpoint,
        causal_attention=config.causal_attention,
        bilstm_units=finetune.bilstm_units(config, "span", bert_config))
    trainer = finetune.make_trainer(run_setup, task, config, steps,
                                    config.predict_batch_size)

    results = {}
    if config.do_train:
        results["train"] = trainer.train()
    if not config.do_predict:
        return results

    num_predict_features, predict_features = _write_features(
        predict_examples, run_setup.tokenizer, config.max_seq_length,
        postprocess_config, predict_file, is_training=False,
        keep_for_prediction=True)
    logging.info("***** Running predictions *****")
    logging.info("  Num orig examples = %d", len(predict_examples))
    logging.info("  Num split examples = %d", num_predict_features)
    logging.info("  Batch size = %d", config.predict_batch_size)
    state, eval_results = trainer.run_predictions(
        base.PREDICT, config.predict_batch_size,
        initial_state=squad.SpanPredictions(
            num_predict_features, config.max_seq_length,
            predict_examples, predict_features),
        pad_to_full_batches=run_setup.on_tpu,
        num_examples=num_predict_features)
    results["predictions"] = state.predictions
    if gold_articles is not None:
        results["eval"] = eval_results
    else:
        logging.info("%s has no answers: predictions are not scored",
                     predict_source)
    return results


def _write_features(examples, tokenizer, max_seq_length, postprocess_config,
                    path, is_training, keep_for_prediction=False):
    """Converts examples to features, streaming them into a record file:
    windows of `max_seq_length` pieces, cut as `postprocess_config` (a
    `SquadPostprocessConfig`) says.

    Returns:
      `(number of features, kept)`: with `keep_for_prediction`, `kept` lists
      every feature without its model inputs (what post-processing needs);
      otherwise it is empty and no feature outlives its record.
    """
    from bert_tf.tasks.squad import features as squad_features
    kept = []
    with squad_features.FeatureWriter(path, is_training) as writer:
        for feature in squad_features.generate_features(
                examples, tokenizer, max_seq_length,
                postprocess_config.doc_stride,
                postprocess_config.max_query_length, is_training):
            writer.process_feature(feature)
            if keep_for_prediction:
                kept.append(feature.without_model_inputs())
    return writer.num_features, kept
