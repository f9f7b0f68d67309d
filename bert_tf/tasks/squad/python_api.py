"""SQuAD from Python (the task spec's hooks, `spec.py`):
`bert_tf.finetune`'s question dicts as a SQuAD JSON's articles;
`load(run).predict` of a run's `(question, context)` pairs as run_squad.py
answers them (`predictor`: its windows and `postprocess.py`, on any Keras
backend); a SavedModel's pairs as its columns and its rows as
predictions.json-like results."""

from bert_tf.data import python_inputs
from bert_tf.data.python_inputs import decode


def python_examples(given, values, base, names):
    """SQuAD dicts as a SQuAD JSON's articles, one paragraph per
    question."""
    lists = python_inputs.files_and_lists(given, values, names)
    return {f"{phase}_articles": squad_articles(names[phase], records)
            for phase, records in lists.items()}


def squad_articles(name, records):
    paragraphs = []
    for i, record in enumerate(records):
        if not isinstance(record, dict) or not isinstance(
                record.get("question"), str) or not isinstance(
                record.get("context"), str):
            raise ValueError(f"finetune: {name}[{i}]: expected a dict with "
                             "'question' and 'context' strings")
        question = {"id": str(record.get("id", f"{name}-{i}")),
                    "question": record["question"]}
        if "is_impossible" in record:
            question["is_impossible"] = bool(record["is_impossible"])
        if "answers" in record:
            answers = []
            for answer in record["answers"]:
                if not isinstance(answer, dict) or not isinstance(
                        answer.get("text"), str):
                    raise ValueError(f"finetune: {name}[{i}]: an answer "
                                     "must be a dict with 'text'")
                start = answer.get("answer_start")
                if start is None:
                    start = record["context"].find(answer["text"])
                    if start < 0:
                        raise ValueError(
                            f"finetune: {name}[{i}]: answer "
                            f"{answer['text']!r} is not in the context")
                answers.append({"text": answer["text"],
                                "answer_start": _answer_start(name, i,
                                                              start)})
            question["answers"] = answers
        paragraphs.append({"context": record["context"], "qas": [question]})
    return [{"title": name, "paragraphs": paragraphs}]


def dev_is_predicted(sets, settings):
    """run_squad.py has no evaluation phase: `dev` (scored, with answers)
    is its predict file; `dev` and `test` together are refused.

    Returns:
      `(sets, names)`: the sets by phase, and {phase: argument name}.
    """
    names = {"train": "train", "eval": "dev", "predict": "test"}
    if sets["eval"] is not None:
        if sets["predict"] is not None:
            raise ValueError("finetune: squad predicts one file "
                             "(--predict_file): give dev or test, not both")
        sets = {**sets, "predict": sets["eval"], "eval": None}
        names["predict"] = "dev"
    return sets, names


def serves(input_names, output_names):
    """A SQuAD export takes `question` and `context`."""
    return "squad" if set(input_names) == {"question", "context"} else None


def columns(inputs, input_names):
    """`(question, context)` pairs."""
    pairs = [python_inputs.text_pair(i, item, "(question, context)")
             for i, item in enumerate(inputs)]
    return {"question": [q for q, _ in pairs],
            "context": [c for _, c in pairs]}


def results(rows, count, labels):
    """{"answer", "probability", "nbest"} (+ "null_score_diff")."""
    return [_result(rows, i) for i in range(count)]


def _result(rows, i):
    count = int(rows["nbest_count"][i])
    result = {
        "answer": decode(rows["answer"][i]),
        "probability": float(rows["probability"][i]),
        "nbest": [{"text": decode(rows["nbest_text"][i][k]),
                   "probability": float(rows["nbest_probability"][i][k]),
                   "start_logit": float(rows["nbest_start_logit"][i][k]),
                   "end_logit": float(rows["nbest_end_logit"][i][k])}
                  for k in range(count)],
    }
    if "null_score_diff" in rows:
        result["null_score_diff"] = float(rows["null_score_diff"][i])
    return result


def predictor(run):
    """`load(run).predict` of a run_squad.py run: each (question, context)
    cut into the recipe's windows (`features.generate_features`), the run's
    task predicting them at the full length (`RunPrediction`, as
    run_squad.py predicts) and its answers chosen by `postprocess.py`, as
    predictions.json, nbest_predictions.json and null_odds.json have them.

    Args:
      run: the loaded run (`bert_tf.api.FineTunedModel`).

    Returns:
      `predict(inputs)` -> one result per input (as `results`).
    """
    import dataclasses

    from bert_tf import checkpoints
    from bert_tf.finetuning.run_prediction import RunPrediction
    from bert_tf.tasks import sequence_model
    from bert_tf.tasks.squad import examples as squad_examples
    from bert_tf.tasks.squad import features as squad_features
    from bert_tf.tasks.squad import task as squad
    from bert_tf.tasks.squad.postprocess import SquadPostprocessConfig
    config = SquadPostprocessConfig(**{
        field.name: run.description[field.name]
        for field in dataclasses.fields(SquadPostprocessConfig)})
    max_seq_length = run.max_seq_length
    task = squad.SquadTask(
        run.bert_config, squad.SquadDataConfig(max_seq_length=max_seq_length),
        squad.SquadPredictionConfig(postprocess=config,
                                    do_lower_case=run.do_lower_case),
        causal_attention=run.causal_attention,
        bilstm_units=sequence_model.bilstm_units_of(
            checkpoints.checkpoint_shapes(run.checkpoint)))
    prediction = RunPrediction(run, task, pad_to_multiple_of=None)
    tokenizer = run.tokenizer()

    def predict(inputs):
        pairs = columns(inputs, ("question", "context"))
        examples = [squad_examples.SquadExample(
            qas_id=str(i), question_text=question,
            doc_tokens=squad_examples.split_context(context)[0])
            for i, (question, context) in enumerate(zip(
                pairs["question"], pairs["context"]))]
        windows = list(squad_features.generate_features(
            examples, tokenizer, max_seq_length, config.doc_stride,
            config.max_query_length, is_training=False))
        state = prediction.predict(
            squad_features.features_to_arrays(windows, is_training=False),
            squad.SpanPredictions(
                len(windows), max_seq_length, examples,
                [window.without_model_inputs() for window in windows]))
        return [_python_result(state, example.qas_id, config)
                for example in examples]

    return predict


def _python_result(state, qas_id, config):
    """The result of one question from the reduced `SpanPredictions`."""
    answer, nbest = state.predictions[qas_id], state.nbest[qas_id]
    result = {
        "answer": answer,
        # The answer's entry (the first "" when it is the null answer).
        "probability": next(entry["probability"] for entry in nbest
                            if entry["text"] == answer),
        "nbest": [{key: entry[key] for key in (
            "text", "probability", "start_logit", "end_logit")}
            for entry in nbest]}
    if config.version_2_with_negative:
        result["null_score_diff"] = float(state.null_odds[qas_id])
    return result


def _answer_start(name, i, start):
    """An answer's `answer_start` as an int (a number or a string of
    digits, as SQuAD's JSON may give it), else a ValueError naming the
    question."""
    if isinstance(start, str) and start.strip().isdigit():
        return int(start)
    if isinstance(start, int) and not isinstance(start, bool) and start >= 0:
        return start
    raise ValueError(f"finetune: {name}[{i}]: answer_start {start!r:.80} "
                     "must be a character offset (an integer >= 0)")
