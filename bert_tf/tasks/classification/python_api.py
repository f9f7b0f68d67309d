"""Classification from Python (the task spec's hooks, `spec.py`):
`bert_tf.finetune`'s lists as the generic task's examples;
`load(run).predict` of a run as its recipe predicts (`predictor`, on any
Keras backend); a SavedModel's texts as its columns and its rows as
results."""

from bert_tf.data import python_inputs


def python_examples(given, values, base, names):
    """Python lists as the generic task's `InputExample`s.

    Labels are read as text; a label that is None, or labels of mixed
    types (1, 1.0, True and "1" would be four classes), are refused.
    """
    from bert_tf.tasks.classification import glue_processors
    values["task_name"] = "generic"
    examples, pairs, first_label = {}, set(), None
    for phase, data in given.items():
        name = names[phase]
        if not isinstance(data, (list, tuple)):
            raise ValueError(
                f"finetune: {name} of task='classification' must be a list "
                "(for files: task='generic', data_dir=...)")
        if not data:
            raise ValueError(f"finetune: {name}: no examples")
        labelled = phase != "predict"
        phase_examples = []
        for i, item in enumerate(data):
            if labelled:
                ok = (isinstance(item, (list, tuple)) and len(item) in (2, 3)
                      and all(isinstance(t, str) for t in item[:-1]))
                texts, label = (tuple(item[:-1]), item[-1]) if ok else ((),
                                                                        None)
            else:
                ok = isinstance(item, str) or (
                    isinstance(item, (list, tuple)) and len(item) == 2
                    and all(isinstance(t, str) for t in item))
                texts, label = ((item,) if isinstance(item, str)
                                else tuple(item)), None
            if not ok:
                expected = ("(text, label) or (text_a, text_b, label)"
                            if labelled else "a text or (text_a, text_b)")
                raise ValueError(f"finetune: {name}[{i}]: expected "
                                 f"{expected}, got {item!r:.80}")
            if labelled:
                where = f"{name}[{i}]"
                check_label(where, label, first_label)
                first_label = first_label or (where, label)
                label = str(label)
            pairs.add(len(texts) == 2)
            phase_examples.append(glue_processors.InputExample(
                guid=f"{name}-{i}", text_a=texts[0],
                text_b=texts[1] if len(texts) == 2 else None, label=label))
        examples[f"{phase}_examples"] = phase_examples
    if len(pairs) > 1:
        raise ValueError("finetune: mixed single texts and text pairs in "
                         "train/dev/test")
    if "train" in given:
        label_list = sorted({example.label
                             for example in examples["train_examples"]})
    else:
        # The model's own labels (a classification run's base_dir).
        label_list = getattr(base, "labels", None)
        if label_list is None:
            raise ValueError(
                "finetune: labels: without train, base_dir must be a "
                "classification run's output directory (its labels)")
    values.setdefault("label_list", label_list)
    for i, example in enumerate(examples.get("eval_examples", ())):
        if example.label not in label_list:
            raise ValueError(
                f"finetune: dev[{i}]: label {example.label!r} is not one of "
                f"the labels {', '.join(map(repr, label_list))}")
    return examples


def check_label(where, label, first):
    """A classification label: not None, of the first label's type.

    Args:
      where: the example, e.g. "train[3]".
      label: its label.
      first: `(where, label)` of the first label, or None.

    Raises:
      ValueError: naming the example and saying how labels are read.
    """
    if label is None:
        raise ValueError(f"finetune: {where}: label None: a labelled "
                         "example needs a label (texts to predict go in "
                         "test)")
    if not isinstance(label, (str, int, float)):
        raise ValueError(f"finetune: {where}: label {label!r:.80} must be "
                         "a string or a number")
    if isinstance(label, str) and not label.strip():
        raise ValueError(f"finetune: {where}: empty label {label!r}")
    if first is not None and type(label) is not type(first[1]):
        raise ValueError(
            f"finetune: {where}: label {label!r} is of type "
            f"{type(label).__name__}, but {first[0]}'s label {first[1]!r} "
            f"is of type {type(first[1]).__name__}: labels are read as "
            f"text, so these would be two classes {str(first[1])!r} and "
            f"{str(label)!r}; give every label as one type")


def finetune_alias(task_name, sets, settings):
    """A run_classifier.py task name (cola, mrpc, ..., generic): read from
    `data_dir`, phases from `do_train`/`do_eval`/`do_predict`.

    Raises:
      ValueError: lists were given (they are for task='classification').
    """
    if any(data is not None for data in sets.values()):
        raise ValueError(
            f"finetune: task={task_name!r} reads data_dir=... (and "
            "do_train/do_eval/do_predict); train/dev/test are for "
            "task='classification'")
    return {"task_name": task_name, **settings}


def serves(input_names, output_names):
    """A classifier export takes `text_a` (and `text_b`); a multi-label
    one also says which labels are predicted."""
    if set(input_names) <= {"text_a", "text_b"}:
        return "multi_label" if "predicted" in output_names else (
            "classification")
    return None


def columns(inputs, input_names):
    """Texts, or `(text_a, text_b)` pairs for a pair classifier."""
    if "text_b" in input_names:
        pairs = [python_inputs.text_pair(i, item, "(text_a, text_b)")
                 for i, item in enumerate(inputs)]
        return {"text_a": [a for a, _ in pairs],
                "text_b": [b for _, b in pairs]}
    return {"text_a": [python_inputs.one_text(i, item, "a text")
                       for i, item in enumerate(inputs)]}


def results(rows, count, labels):
    """{"label", "probabilities"}; STS-B {"score"}; multi-label
    {"labels", "probabilities"}."""
    decode = python_inputs.decode
    if "score" in rows:
        return [{"score": float(s)} for s in rows["score"]]
    if "predicted" in rows:
        # "labels" holds each predicted label's name, "" elsewhere.
        return [{"labels": [decode(name) for name in names
                            if decode(name)],
                 "probabilities": [float(p) for p in probabilities]}
                for names, probabilities in zip(rows["labels"],
                                                rows["probabilities"])]
    return [{"label": decode(label),
             "probabilities": [float(p) for p in probabilities]}
            for label, probabilities in zip(rows["label"],
                                            rows["probabilities"])]


def predictor(run):
    """`load(run).predict` of a run_classifier.py run: each input encoded
    as the recipe encodes its examples (`features.convert_single_example`),
    the run's task predicting them (`RunPrediction`), its probabilities
    those of test_results.tsv.

    Args:
      run: the loaded run (`bert_tf.api.FineTunedModel`).

    Returns:
      `predict(inputs)` -> one result per input (as `results`).

    Raises:
      ValueError: a multi-label run's record is not one (naming its file).
    """
    from bert_tf import finetuning
    from bert_tf.finetuning.run_prediction import RunPrediction
    from bert_tf.tasks.classification import features
    from bert_tf.tasks.classification import glue_processors
    from bert_tf.tasks.classification import task as classification
    d = run.description
    input_names = ("text_a", "text_b") if d["has_text_b"] else ("text_a",)
    tokenizer = run.tokenizer()

    def examples(inputs):
        texts = columns(inputs, input_names)
        return [glue_processors.InputExample(
            guid=f"inputs-{i}", text_a=text_a,
            text_b=texts["text_b"][i] if d["has_text_b"] else None)
            for i, text_a in enumerate(texts["text_a"])]

    if d["task"] == finetuning.MULTI_LABEL:
        return _multi_label_predictor(run, examples)
    label_list = d["label_list"]
    task = classification.ClassificationTask(
        run.bert_config, 1 if d["is_regression"] else len(label_list),
        classification.ClassificationDataConfig(
            max_seq_length=run.max_seq_length),
        is_regression=d["is_regression"],
        causal_attention=run.causal_attention)
    prediction = RunPrediction(run, task)

    def predict(inputs):
        probabilities = task.predicted_probabilities(prediction.predict(
            features.features_to_arrays(
                features.convert_examples_to_features(
                    examples(inputs), label_list, run.max_seq_length,
                    tokenizer), d["is_regression"])))
        if d["is_regression"]:
            return [{"score": float(row[0])} for row in probabilities]
        return [{"label": run.labels[int(row.argmax())],
                 "probabilities": [float(p) for p in row]}
                for row in probabilities]

    return predict


def _multi_label_predictor(run, examples):
    """`predictor` of a `run_classifier.py --multi_label` run: a sigmoid
    per label, the labels at the run's --threshold (its record).

    Args:
      run: the loaded run.
      examples: `examples(inputs)` -> the inputs' `InputExample`s.

    Raises:
      ValueError: the run's record is not one (read before the model is
        built).
    """
    from bert_tf import finetuning
    from bert_tf.finetuning.run_prediction import RunPrediction
    from bert_tf.tasks.base import ArraysDataConfig
    from bert_tf.tasks.classification import multi_label_data
    from bert_tf.tasks.classification import multi_label_task
    head = finetuning.read_multi_label_head(run.path)
    task = multi_label_task.MultiLabelTask(
        run.bert_config, head["label_list"],
        ArraysDataConfig(max_seq_length=run.max_seq_length),
        threshold=head["threshold"], causal_attention=run.causal_attention)
    prediction = RunPrediction(run, task)

    def predict(inputs):
        probabilities, _ = task.stacked_predictions(prediction.predict(
            multi_label_data.examples_to_arrays(
                examples(inputs), task.label_list, run.max_seq_length,
                run.tokenizer())))
        return [{"labels": [label for label, on in zip(task.label_list,
                                                       predicted) if on],
                 "probabilities": [float(p) for p in row]}
                for row, predicted in zip(
                    probabilities, task.predict_labels(probabilities))]

    return predict
