"""Pair regression from Python (the spec's hooks): `bert_tf.finetune`'s
lists as `PairExample`s, `load(run).predict` as the recipe's prediction
phase on the given pairs, and a SavedModel's columns and rows."""

import numbers

from bert_tf.data import python_inputs


def python_examples(given, values, base, names):
    """`(sentence1, sentence2, score)` triples (test: `(sentence1,
    sentence2)` pairs) as the recipe's `<phase>_examples`.

    Args:
      given: {phase: what `finetune` got for it}.
      values: the config's fields so far (unused: no field depends on the
        examples).
      base: the `load`ed base model (unused).
      names: {phase: `finetune`'s argument}, for messages.

    Raises:
      ValueError: naming the argument and item (`train[2]`).
    """
    del values, base
    from .task import PairExample
    examples = {}
    for phase, data in given.items():
        name = names[phase]
        if not isinstance(data, (list, tuple)) or not data:
            raise ValueError(f"finetune: {name} must be a non-empty list "
                             "(pair_regression reads no files)")
        labelled = phase != "predict"
        phase_examples = []
        for i, item in enumerate(data):
            size = 3 if labelled else 2
            if (not isinstance(item, (list, tuple)) or len(item) != size
                    or not all(isinstance(text, str) for text in item[:2])
                    or (labelled and (isinstance(item[2], bool) or
                                      not isinstance(item[2],
                                                     numbers.Real)))):
                expected = ("(sentence1, sentence2, score)" if labelled
                            else "(sentence1, sentence2)")
                raise ValueError(f"finetune: {name}[{i}]: expected "
                                 f"{expected}, got {item!r:.80}")
            for text in item[:2]:
                python_inputs.unicode_text(f"{name}[{i}]", text)
            phase_examples.append(PairExample(
                item[0], item[1], float(item[2]) if labelled else None))
        examples[f"{phase}_examples"] = phase_examples
    return examples


def predictor(run):
    """`load(run).predict`: the pairs made the recipe's examples and arrays
    (`examples_to_arrays`), the run's task predicting them from the run's
    newest checkpoint (`RunPrediction`, on any Keras backend), its scores
    those of test_results.tsv.

    Args:
      run: the loaded run (`bert_tf.api.FineTunedModel`: its config,
        tokenizer, `max_seq_length`, `description`).

    Returns:
      `predict(inputs)` -> [{"score"}] per input.
    """
    from bert_tf.finetuning.run_prediction import RunPrediction
    from bert_tf.tasks.base import ArraysDataConfig
    from .task import PairExample, PairRegressionTask, examples_to_arrays
    task = PairRegressionTask(
        run.bert_config, ArraysDataConfig(max_seq_length=run.max_seq_length),
        causal_attention=run.causal_attention)
    prediction = RunPrediction(run, task)

    def predict(inputs):
        pairs = columns(inputs, ())
        examples = [PairExample(first, second) for first, second in zip(
            pairs["sentence1"], pairs["sentence2"])]
        state = prediction.predict(examples_to_arrays(
            examples, run.max_seq_length, run.tokenizer()))
        return [{"score": float(score)} for score in task.scores(state)]

    return predict


def serves(input_names, output_names):
    """The export takes `sentence1` and `sentence2` and returns `score`.

    `bert_tf.load` asks every spec in the registry's order (the built-in
    tasks first): input names of its own keep a task's export from being
    taken for another's (run_classifier.py's take `text_a`, `text_b`)."""
    return ("pair_regression"
            if set(input_names) == {"sentence1", "sentence2"}
            and "score" in output_names else None)


def columns(inputs, input_names):
    """`(sentence1, sentence2)` pairs as the export's two columns."""
    del input_names
    pairs = [python_inputs.text_pair(i, item, "(sentence1, sentence2)")
             for i, item in enumerate(inputs)]
    return {"sentence1": [first for first, _ in pairs],
            "sentence2": [second for _, second in pairs]}


def results(rows, count, labels):
    """{"score"} per input."""
    del count, labels
    return [{"score": float(score)} for score in rows["score"]]
