"""Classification from Python: `bert_tf.finetune`'s lists as the generic
task's examples, `load(...).predict`'s texts as the export's columns and
its rows as results (the task spec's hooks, `spec.py`)."""

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


def python_head(model):
    """The classifier head of a classification run, for `predict` without
    TensorFlow (`bert_tf.api`): `(head, label_list, has_text_b)`.

    Raises:
      ValueError: a regression or multi-label run (served by the
        TensorFlow export only).
    """
    from bert_tf.modeling import ClassifierHead
    d = model.description
    if d["task"] != "classification" or d["is_regression"]:
        raise ValueError("regression" if d["task"] == "classification"
                         else d["task"])
    return (ClassifierHead(model.bert_config, len(d["label_list"])),
            d["label_list"], d["has_text_b"])
