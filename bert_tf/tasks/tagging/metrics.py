"""Tagging metrics: entity-level P/R/F1 exactly as `seqeval`, token accuracy.

Entities are read from tag sequences the way `seqeval`'s default
(non-strict, conlleval-compatible) mode reads them, for BIO (IOB2), IOB1 and
BIOES (IOBES) tags alike: a tag is `<prefix>-<TYPE>` with prefix B, I, E or
S (or plain `O`), and

- an entity ends before a B or S, or an O, after an open B or I; always
  after an E or S; and whenever the type changes;
- an entity starts at a B or S; at an I or E after O, E or S (an ill-formed
  I- tag opens an entity rather than being ignored); and whenever the type
  changes.

As `seqeval` does, the sentences of a set are joined into one sequence with
an `O` between each two before entities are read, so every rule (including
the ones for unusual tags such as a bare `PER`) gives the same spans.
Precision = correct entities / predicted entities, recall = correct /
gold, F1 = 2PR / (P + R); each is 0 when its denominator is 0 (seqeval's
`zero_division` default). Micro averages count all types together; the
per-type scores count one type.

Token accuracy is the fraction of words whose predicted tag equals the gold
tag (seqeval's `accuracy_score`), which is the usual POS-tagging metric.
"""

import collections


def _prefix_and_type(tag):
    # seqeval (suffix=False): the prefix is the first character, the type is
    # what follows the first '-' (or '_' when empty).
    return tag[:1], (tag[1:].split("-", 1)[-1] or "_")


def _ends_chunk(previous_prefix, prefix, previous_type, entity_type):
    if previous_prefix in ("E", "S"):
        return True
    if previous_prefix in ("B", "I") and prefix in ("B", "S", "O"):
        return True
    return (previous_prefix not in ("O", ".")
            and previous_type != entity_type)


def _starts_chunk(previous_prefix, prefix, previous_type, entity_type):
    if prefix in ("B", "S"):
        return True
    if previous_prefix in ("E", "S", "O") and prefix in ("E", "I"):
        return True
    return prefix not in ("O", ".") and previous_type != entity_type


def get_entities(tags):
    """The entities of one tag sequence, as seqeval's `get_entities`.

    Args:
      tags: a list of tag strings (e.g. ["B-PER", "I-PER", "O"]).

    Returns:
      A list of `(type, first_index, last_index)` tuples (inclusive end), in
      order.
    """
    previous_prefix, previous_type = "O", ""
    begin = 0
    entities = []
    for index, tag in enumerate(list(tags) + ["O"]):
        prefix, entity_type = _prefix_and_type(tag)
        if _ends_chunk(previous_prefix, prefix, previous_type, entity_type):
            entities.append((previous_type, begin, index - 1))
        if _starts_chunk(previous_prefix, prefix, previous_type, entity_type):
            begin = index
        previous_prefix, previous_type = prefix, entity_type
    return entities


def _joined(sentences):
    # seqeval joins nested lists with an "O" after every sentence.
    return [tag for sentence in sentences for tag in list(sentence) + ["O"]]


def _divide(numerator, denominator):
    return numerator / denominator if denominator else 0.0


def _f1(precision, recall):
    denominator = precision + recall
    return 2 * precision * recall / denominator if denominator else 0.0


def entity_scores(gold_sentences, predicted_sentences):
    """Entity-level precision, recall and F1, overall and per type.

    Args:
      gold_sentences: list of gold tag lists, one per sentence.
      predicted_sentences: list of predicted tag lists, the same lengths.

    Returns:
      A dict: "precision", "recall", "f1" (micro averages, as seqeval's
      `precision_score`/`recall_score`/`f1_score`), and "per_type": a dict
      from entity type to {"precision", "recall", "f1", "support"} (as
      seqeval's `classification_report`), types sorted.

    Raises:
      ValueError: the two sets differ in number or length of sentences.
    """
    if len(gold_sentences) != len(predicted_sentences):
        raise ValueError(f"{len(gold_sentences)} gold sentences but "
                         f"{len(predicted_sentences)} predicted")
    for number, (gold, predicted) in enumerate(
            zip(gold_sentences, predicted_sentences)):
        if len(gold) != len(predicted):
            raise ValueError(
                f"sentence {number}: {len(gold)} gold tags but "
                f"{len(predicted)} predicted")
    gold_entities = collections.defaultdict(set)
    predicted_entities = collections.defaultdict(set)
    for entity_type, begin, end in get_entities(_joined(gold_sentences)):
        gold_entities[entity_type].add((begin, end))
    for entity_type, begin, end in get_entities(
            _joined(predicted_sentences)):
        predicted_entities[entity_type].add((begin, end))
    per_type = {}
    total_correct = total_predicted = total_gold = 0
    for entity_type in sorted(set(gold_entities) | set(predicted_entities)):
        gold = gold_entities.get(entity_type, set())
        predicted = predicted_entities.get(entity_type, set())
        correct = len(gold & predicted)
        precision = _divide(correct, len(predicted))
        recall = _divide(correct, len(gold))
        per_type[entity_type] = {"precision": precision, "recall": recall,
                                 "f1": _f1(precision, recall),
                                 "support": len(gold)}
        total_correct += correct
        total_predicted += len(predicted)
        total_gold += len(gold)
    precision = _divide(total_correct, total_predicted)
    recall = _divide(total_correct, total_gold)
    return {"precision": precision, "recall": recall,
            "f1": _f1(precision, recall), "per_type": per_type}


def token_accuracy(gold_sentences, predicted_sentences):
    """The fraction of words tagged correctly (seqeval's `accuracy_score`)."""
    pairs = [(gold, predicted)
             for gold_tags, predicted_tags in zip(gold_sentences,
                                                  predicted_sentences)
             for gold, predicted in zip(gold_tags, predicted_tags)]
    return _divide(sum(gold == predicted for gold, predicted in pairs),
                   len(pairs))


def tagging_metrics(gold_sentences, predicted_sentences, prefix="eval_"):
    """What `eval_results.txt` reports for a tagging set.

    Returns:
      A dict: `<prefix>precision`, `<prefix>recall`, `<prefix>f1` (entity
      level, micro), `<prefix>accuracy` (token level) and
      `<prefix>f1_<TYPE>` for each entity type.
    """
    scores = entity_scores(gold_sentences, predicted_sentences)
    results = {f"{prefix}precision": scores["precision"],
               f"{prefix}recall": scores["recall"],
               f"{prefix}f1": scores["f1"],
               f"{prefix}accuracy": token_accuracy(gold_sentences,
                                                   predicted_sentences)}
    for entity_type, type_scores in scores["per_type"].items():
        results[f"{prefix}f1_{entity_type}"] = type_scores["f1"]
    return results
