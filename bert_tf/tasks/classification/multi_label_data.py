"""Multi-label classification data and metrics.

The files are the `generic` task's (`train`, `dev`, `test` `.tsv` or `.csv`
with a header row, texts by `--text_a_column`/`--text_b_column`); the
labels of a row come either from

- one column (`--label_column=labels`) holding a `--label_delimiter`
  separated list of label names (`sports,politics`; an empty field is a
  row with no label), the label list being every name in the training
  file, sorted; or
- several columns (`--label_column=toxic,obscene,insult`), each a label
  whose value is 1/0 (also true/false, yes/no), the label list being those
  columns in the order given.

Features are the classifier's (`classifier_features.convert_single_example`)
with a multi-hot `label_ids` [num_labels] instead of one id.

Metrics (`multi_label_metrics`), over a set's 0/1 gold and predicted
matrices [examples, labels], as scikit-learn computes them:
`micro_f1` (counts pooled over labels), `macro_f1` (each label's F1,
averaged; a label never true nor predicted scores 0, scikit-learn's
`zero_division` default), `exact_match` (the fraction of examples whose
whole label set is right, `accuracy_score` on multi-label input), and the
micro precision and recall.
"""

import numpy as np

from bert_tf.tasks.classification import features as classifier_features
from bert_tf.tasks.classification import glue_processors

TRUE_VALUES = ("1", "true", "yes")
FALSE_VALUES = ("0", "false", "no", "")


class MultiLabelProcessor(glue_processors.GenericProcessor):
    """The generic processor with a set of labels per row."""

    task_name = "generic"

    def __init__(self, text_a_column="sentence", text_b_column=None,
                 label_column="label", file_format="tsv",
                 label_delimiter=","):
        """Args: as `GenericProcessor`'s, and

          label_column: one column name (a delimited list of labels) or
            several, comma-separated (one 0/1 column per label).
          label_delimiter: separates the labels in a single label column.
        """
        self.label_columns = [name.strip() for name in label_column.split(",")
                              if name.strip()]
        if not self.label_columns:
            raise ValueError("--label_column names no column")
        repeated = sorted({name for name in self.label_columns
                           if self.label_columns.count(name) > 1})
        if repeated:
            # A repeated column would be a second label with the same
            # values: trained twice, counted twice in the metrics.
            raise ValueError(
                f"--label_column={label_column} names column(s) "
                f"{', '.join(repr(name) for name in repeated)} more than "
                "once; each label column once")
        if len(self.label_columns) == 1 and not label_delimiter:
            raise ValueError("--label_delimiter must not be empty")
        super().__init__(text_a_column=text_a_column,
                         text_b_column=text_b_column,
                         label_column=self.label_columns[0],
                         file_format=file_format)
        self.label_delimiter = label_delimiter

    @property
    def one_column(self):
        return len(self.label_columns) == 1

    def _read(self, data_dir, split):
        path, rows, columns = super()._read(data_dir, split)
        if split != "test":
            header = list(columns)
            for name in self.label_columns:
                if name not in columns:
                    raise glue_processors.DataFormatError(
                        f"{path}: no column {name!r} in the header (columns: "
                        f"{', '.join(header)})")
        return path, rows, columns

    def _row_labels(self, path, row, columns):
        if self.one_column:
            field = row.fields[columns[self.label_columns[0]]]
            return tuple(label.strip()
                         for label in field.split(self.label_delimiter)
                         if label.strip())
        labels = []
        for name in self.label_columns:
            value = row.fields[columns[name]].strip().lower()
            if value in TRUE_VALUES:
                labels.append(name)
            elif value not in FALSE_VALUES:
                raise glue_processors.DataFormatError(
                    f"{path}, line {row.line_number}: column {name!r} is "
                    f"{row.fields[columns[name]]!r}; a label column holds "
                    "1/0 (true/false, yes/no)")
        return tuple(labels)

    def get_labels(self, data_dir=None):
        """The label list (see the module docstring)."""
        if not self.one_column:
            return list(self.label_columns)
        if data_dir is None:
            raise ValueError("the multi-label task infers its labels from the "
                             "training file; pass the data directory")
        path, rows, columns = self._read(data_dir, "train")
        labels = {label for row in rows
                  for label in self._row_labels(path, row, columns)}
        if not labels:
            raise glue_processors.DataFormatError(
                f"{path}: no label in column {self.label_columns[0]!r}")
        return sorted(labels)

    def _create_examples(self, data_dir, split):
        known = None if split == "test" else set(self.get_labels(data_dir))
        path, rows, columns = self._read(data_dir, split)
        has_labels = all(name in columns for name in self.label_columns)
        text_b_index = (None if self.text_b_column is None
                        else columns[self.text_b_column])
        examples = []
        for row in rows:
            labels = None
            if has_labels:
                labels = self._row_labels(path, row, columns)
                unknown = [label for label in labels
                           if known is not None and label not in known]
                if unknown:
                    raise glue_processors.DataFormatError(
                        f"{path}, line {row.line_number}: unknown label "
                        f"{unknown[0]!r}; the training file has labels "
                        f"{', '.join(repr(x) for x in sorted(known))}")
            examples.append(glue_processors.InputExample(
                guid=f"{split}-{row.line_number - 1}",
                text_a=row.fields[columns[self.text_a_column]],
                text_b=(None if text_b_index is None
                        else row.fields[text_b_index]),
                label=labels))
        return examples


def examples_to_arrays(examples, label_list, max_seq_length, tokenizer):
    """The examples' features as int32 arrays, `label_ids` multi-hot.

    Returns:
      A dict: `input_ids`, `input_mask`, `segment_ids` [n, max_seq_length],
      `label_ids` [n, num_labels] (zeros for unlabelled examples).
    """
    label_index = {label: index for index, label in enumerate(label_list)}
    arrays = {name: [] for name in (classifier_features.INPUT_IDS,
                                    classifier_features.INPUT_MASK,
                                    classifier_features.SEGMENT_IDS)}
    label_ids = np.zeros([len(examples), len(label_list)], np.int32)
    for row, example in enumerate(examples):
        unlabelled = glue_processors.InputExample(
            guid=example.guid, text_a=example.text_a, text_b=example.text_b)
        features = classifier_features.convert_single_example(
            unlabelled, label_list, max_seq_length, tokenizer)
        for name in arrays:
            arrays[name].append(getattr(features, name))
        for label in example.label or ():
            label_ids[row, label_index[label]] = 1
    arrays = {name: np.asarray(values, np.int32).reshape(
        [-1, max_seq_length]) for name, values in arrays.items()}
    arrays[classifier_features.LABEL_IDS] = label_ids
    return arrays


def _f1(true_positives, false_positives, false_negatives):
    denominator = 2 * true_positives + false_positives + false_negatives
    return 2 * true_positives / denominator if denominator else 0.0


def multi_label_metrics(gold, predicted):
    """Micro/macro F1, exact-match ratio, micro precision and recall.

    Args:
      gold: 0/1 array [examples, labels].
      predicted: 0/1 array [examples, labels].

    Returns:
      A dict of floats: micro_f1, macro_f1, exact_match, micro_precision,
      micro_recall.
    """
    gold = np.asarray(gold).astype(bool)
    predicted = np.asarray(predicted).astype(bool)
    true_positives = (gold & predicted).sum(axis=0)
    false_positives = (~gold & predicted).sum(axis=0)
    false_negatives = (gold & ~predicted).sum(axis=0)
    tp, fp, fn = (int(x.sum()) for x in (true_positives, false_positives,
                                         false_negatives))
    per_label = [_f1(*counts) for counts in zip(
        true_positives, false_positives, false_negatives)]
    return {
        "micro_f1": _f1(tp, fp, fn),
        "macro_f1": float(np.mean(per_label)) if per_label else 0.0,
        "exact_match": (float((gold == predicted).all(axis=1).mean())
                        if len(gold) else 0.0),
        "micro_precision": tp / (tp + fp) if tp + fp else 0.0,
        "micro_recall": tp / (tp + fn) if tp + fn else 0.0,
    }
