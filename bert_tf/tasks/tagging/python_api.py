"""Tagging from Python (the task spec's hooks, `spec.py`):
`bert_tf.finetune`'s `(words, labels)` lists as `TaggingFile`s;
`load(run).predict` of a run's word lists as run_tagging.py tags them
(`predictor`: its windows, softmax or CRF, on any Keras backend); a
SavedModel's word lists as its columns and its rows as
test_predictions-like results."""

import numpy as np

from bert_tf.data import python_inputs
from bert_tf.data.python_inputs import decode


def python_examples(given, values, base, names):
    """Tagging lists as `TaggingFile`s, as their CoNLL file would read:
    `word label` lines, a blank line after each sentence."""
    lists = python_inputs.files_and_lists(given, values, names)
    files = {phase: tagging_file(names[phase], data)
             for phase, data in lists.items()}
    if "train" in files and not values.get("label_list_file"):
        # Named here by item; the recipe would name a line of the set.
        known = {label for sentence in files["train"].sentences
                 for label in sentence.labels}
        for phase, read in files.items():
            for i, sentence in enumerate(read.sentences):
                unknown = sorted(set(sentence.labels or ()) - known)
                if unknown:
                    raise ValueError(
                        f"finetune: {names[phase]}[{i}]: label "
                        f"{unknown[0]!r} does not occur in train (labels: "
                        f"{' '.join(sorted(known))})")
    return {f"{phase}_examples": read for phase, read in files.items()}


def tagging_file(name, sentences):
    """One phase's list as the `TaggingFile` its CoNLL file would be.

    Args:
      name: the argument's name, for messages ("train").
      sentences: `(words, labels)` pairs, or word lists (test).
    Returns:
      A `bert_tf.tasks.tagging.examples.TaggingFile` named `name`.
    Raises:
      ValueError: one line naming `name[i]`.
    """
    from bert_tf.tasks.tagging import examples as tagging_examples
    lines, tagged = [], []
    for i, item in enumerate(sentences):
        _check_labels_are_a_list(name, i, item)
        if (isinstance(item, (list, tuple)) and len(item) == 2
                and all(isinstance(part, (list, tuple)) for part in item)):
            words, labels = item
            if len(words) != len(labels):
                raise ValueError(f"finetune: {name}[{i}]: {len(words)} words "
                                 f"but {len(labels)} labels")
        else:
            words, labels = item, None
        words = (python_inputs.word_list(i, words, f"finetune: {name}")
                 if words else [])
        if not words:
            raise ValueError(f"finetune: {name}[{i}]: no words")
        if labels is None and name != "test":
            raise ValueError(f"finetune: {name}[{i}]: expected (words, "
                             "labels)")
        if tagged and (labels is None) != (tagged[0].labels is None):
            raise ValueError(f"finetune: {name}[{i}]: labelled and "
                             f"unlabelled sentences mixed ({name}[0] is "
                             f"{'un' if tagged[0].labels is None else ''}"
                             "labelled)")
        for label in labels or ():
            if not isinstance(label, str) or not label or label != "".join(
                    label.split()):
                raise ValueError(f"finetune: {name}[{i}]: label {label!r} "
                                 "must be a non-empty string without "
                                 "whitespace")
        numbers = list(range(len(lines) + 1, len(lines) + len(words) + 1))
        lines += [word if labels is None else f"{word} {label}"
                  for word, label in zip(words, labels or words)]
        lines.append("")
        tagged.append(tagging_examples.TaggedSentence(
            list(words), None if labels is None else list(labels), numbers,
            "0"))
    return tagging_examples.TaggingFile(
        name, tagging_examples.CONLL, lines, tagged,
        tagged[0].labels is not None)


def serves(input_names, output_names):
    """A tagging export takes `text` and returns `labels` (an embeddings
    export takes `text` too)."""
    return ("tagging" if set(input_names) == {"text"}
            and "labels" in output_names else None)


def columns(inputs, input_names):
    """Lists of words, joined by spaces."""
    return {"text": [" ".join(python_inputs.word_list(i, item))
                     for i, item in enumerate(inputs)]}


def results(rows, count, labels):
    """{"words", "labels"} (+ "entities" where `labels` is known)."""
    return [_result(rows, i, labels) for i in range(count)]


def _result(rows, i, label_list):
    """Words and labels; the entities too where the label list (and so
    whether the labels are BIO tags) is known."""
    from bert_tf.tasks.tagging import task as tagging
    count = int(rows["num_words"][i])
    words = [decode(word) for word in rows["words"][i][:count]]
    labels = [decode(label) for label in rows["labels"][i][:count]]
    result = {"words": words, "labels": labels}
    if label_list is not None:
        result["entities"] = tagging.sentence_entities(
            words, labels, tagging.is_chunk_scheme(label_list))
    return result


def predictor(run):
    """`load(run).predict` of a run_tagging.py run: each word list cut into
    the recipe's windows (`features.convert_sentences`), the run's task
    predicting them (`RunPrediction`: softmax or Viterbi, as the
    checkpoint's CRF says) and putting each word's label in its sentence,
    as test_predictions.txt and .jsonl have them.

    Args:
      run: the loaded run (`bert_tf.api.FineTunedModel`).

    Returns:
      `predict(inputs)` -> one result per input (as `results`).
    """
    from bert_tf import checkpoints
    from bert_tf import modes
    from bert_tf.finetuning.run_prediction import RunPrediction
    from bert_tf.tasks import sequence_model
    from bert_tf.tasks.tagging import examples as tagging_examples
    from bert_tf.tasks.tagging import features as tagging_features
    from bert_tf.tasks.tagging import task as tagging
    shapes = checkpoints.checkpoint_shapes(run.checkpoint)
    window_config = tagging_features.TaggingWindowConfig(
        max_seq_length=run.max_seq_length,
        doc_stride=run.description["doc_stride"])
    task = tagging.TaggingTask(
        run.bert_config, run.description["label_list"],
        tagging.TaggingDataConfig(max_seq_length=run.max_seq_length),
        use_crf=tagging.CRF_TRANSITIONS in shapes,
        causal_attention=run.causal_attention,
        bilstm_units=sequence_model.bilstm_units_of(shapes))
    prediction = RunPrediction(run, task)
    tokenizer = run.tokenizer()

    def predict(inputs):
        sentences = [tagging_examples.TaggedSentence(
            words, None, list(range(1, len(words) + 1)))
            for words in (python_inputs.word_list(i, item)
                          for i, item in enumerate(inputs))]
        windows = tagging_features.convert_sentences(
            sentences, task.label_list, window_config, tokenizer)
        # The state the task starts from with its own set: no word
        # predicted yet.
        state = prediction.predict(
            tagging_features.windows_to_arrays(windows, run.max_seq_length),
            [np.full([len(sentence.words)], -1, np.int64)
             for sentence in sentences])
        return [{"words": sentence.words, "labels": labels,
                 "entities": tagging.sentence_entities(
                     sentence.words, labels, task.chunk_scheme)}
                for sentence, labels in zip(
                    sentences, task.predicted_labels(state, modes.PREDICT))]

    return predict


def _check_labels_are_a_list(name, i, item):
    """Refuses `(words, "B-PER O")`: labels given as one string (read as
    words otherwise, and blamed as such)."""
    if (isinstance(item, (list, tuple)) and len(item) == 2
            and isinstance(item[0], (list, tuple))
            and isinstance(item[1], str)):
        raise ValueError(f"finetune: {name}[{i}]: labels {item[1]!r:.80} "
                         "must be a list of labels, one per word")
