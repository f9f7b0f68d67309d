"""Multiple choice from Python (the task spec's hooks, `spec.py`):
`bert_tf.finetune`'s dicts as `MultipleChoiceExample`s;
`load(run).predict` of a run as its recipe predicts (`predictor`, on any
Keras backend); a SavedModel's inputs as its columns and its rows as
results."""

from bert_tf.data import python_inputs


def python_examples(given, values, base, names):
    """Multiple-choice dicts as `MultipleChoiceExample`s (the JSON-lines
    records of run_multiple_choice.py's `--input_format=jsonl`)."""
    from bert_tf.tasks.multiple_choice import examples as multiple_choice
    lists = python_inputs.files_and_lists(given, values, names)
    if lists:
        values["input_format"] = "jsonl"
    examples, num_choices = {}, None
    for phase, records in lists.items():
        name = names[phase]
        phase_examples = []
        for i, record in enumerate(records):
            if not isinstance(record, dict):
                raise ValueError(f"finetune: {name}[{i}]: expected a dict "
                                 "with 'question' and 'choices'")
            try:
                example = multiple_choice.parse_record(name, i, record,
                                                       num_choices)
            except multiple_choice.MultipleChoiceDataError as error:
                # The reader names a file's line; this is the list's item.
                raise ValueError(
                    f"finetune: {name}[{i}]: "
                    f"{str(error).removeprefix(f'{name}:{i}: ')}") from None
            if example.label is None and phase != "predict":
                raise ValueError(f"finetune: {name}[{i}]: no 'answer' (a "
                                 f"{name} example needs one)")
            num_choices = len(example.choices)
            phase_examples.append(example)
        examples[f"{phase}_examples"] = phase_examples
    return examples


def serves(input_names, output_names):
    """A multiple-choice export takes `choices`."""
    return "multiple_choice" if "choices" in input_names else None


def columns(inputs, input_names):
    """`(context, choices)` pairs, or dicts with "choices", "context"
    (and "question", for a model trained on JSON lines)."""
    has_question = "question" in input_names
    columns = {"context": [], "choices": []}
    if has_question:
        columns["question"] = []
    for i, item in enumerate(inputs):
        if isinstance(item, dict):
            unknown = set(item) - {"context", "question", "choices"}
            if unknown:
                raise ValueError(f"inputs[{i}]: unknown keys "
                                 f"{sorted(unknown)}")
            if "question" in item and not has_question:
                raise ValueError(
                    f"inputs[{i}]: this model takes no 'question' (it "
                    "was trained on SWAG's context and choices)")
            if has_question and "question" not in item:
                raise ValueError(f"inputs[{i}]: needs a 'question'")
            context = item.get("context", "")
            choices = item.get("choices")
            question = item.get("question", "")
        elif (isinstance(item, (list, tuple)) and len(item) == 2
              and not has_question):
            context, choices = item
            question = ""
        else:
            expected = ("a dict with 'question', 'choices' (and "
                        "'context')" if has_question else
                        "a (context, choices) pair or a dict")
            raise ValueError(f"inputs[{i}]: expected {expected}, got "
                             f"{item!r:.80}")
        if not isinstance(choices, (list, tuple)) or not choices or not (
                all(isinstance(c, str) for c in choices)):
            raise ValueError(f"inputs[{i}]: 'choices' must be a "
                             "non-empty list of strings")
        if columns["choices"] and len(choices) != len(
                columns["choices"][0]):
            raise ValueError(
                f"inputs[{i}]: {len(choices)} choices, but inputs[0] "
                f"has {len(columns['choices'][0])} (all inputs need the "
                "same number)")
        for name, value in (("context", context), ("question", question)):
            if not isinstance(value, str):
                raise ValueError(f"inputs[{i}]: '{name}' must be a "
                                 "string")
        for text in [context, question] + list(choices):
            python_inputs.unicode_text(f"inputs[{i}]", text)
        columns["context"].append(context)
        columns["choices"].append(list(choices))
        if has_question:
            columns["question"].append(question)
    return columns


def results(rows, count, labels):
    """{"label" (the likeliest choice's index), "probabilities"}."""
    return [{"label": int(label),
             "probabilities": [float(p) for p in probabilities]}
            for label, probabilities in zip(rows["label"],
                                            rows["probabilities"])]


def predictor(run):
    """`load(run).predict` of a run_multiple_choice.py run: each input made
    the recipe's example (a JSON-lines record: `examples.parse_record`;
    SWAG's context and choices) and encoded as it encodes them
    (`examples.examples_to_arrays`), the run's task predicting them
    (`RunPrediction`), its probabilities those of test_results.tsv.

    Args:
      run: the loaded run (`bert_tf.api.FineTunedModel`).

    Returns:
      `predict(inputs)` -> one result per input (as `results`).
    """
    from bert_tf.finetuning.run_prediction import RunPrediction
    from bert_tf.tasks.base import ArraysDataConfig
    from bert_tf.tasks.multiple_choice import examples as multiple_choice
    from bert_tf.tasks.multiple_choice import task as task_lib
    has_question = run.description["input_format"] == multiple_choice.JSONL
    input_names = ("context", "question", "choices") if has_question else (
        "context", "choices")
    task = task_lib.MultipleChoiceTask(
        run.bert_config, ArraysDataConfig(max_seq_length=run.max_seq_length),
        causal_attention=run.causal_attention)
    prediction = RunPrediction(run, task)
    tokenizer = run.tokenizer()

    def example(i, record):
        if has_question:
            return multiple_choice.parse_record("inputs", i, record)
        return multiple_choice.MultipleChoiceExample(
            f"inputs-{i}", record["context"], record["choices"], None, i)

    def predict(inputs):
        given = columns(inputs, input_names)
        examples = [example(i, {name: given[name][i] for name in given})
                    for i in range(len(inputs))]
        probabilities = task.probabilities(prediction.predict(
            multiple_choice.examples_to_arrays(
                examples, run.max_seq_length, tokenizer)))
        return [{"label": int(row.argmax()),
                 "probabilities": [float(p) for p in row]}
                for row in probabilities]

    return predict
