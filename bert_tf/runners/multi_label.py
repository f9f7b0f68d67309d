"""`run_classifier.py --task_name=generic --multi_label=true`.

Several labels per example (see `bert_tf.tasks.classification.multi_label_data` for the label
columns and `bert_tf.tasks.classification.multi_label_task` for the model, loss and metrics).
`run_classifier.py` defines the flags (`define_flags` here adds the
multi-label ones); `bert_tf.tasks.classification.recipe` runs it.
"""

from absl import flags


def define_flags(flag_values):
    """`--multi_label`, `--label_delimiter`, `--threshold`."""
    flags.DEFINE_bool(
        "multi_label", False,
        "--task_name=generic: several labels per example, a sigmoid per "
        "label and binary cross-entropy. --label_column names one column "
        "holding a --label_delimiter separated list of labels, or several "
        "comma-separated columns, each a label with values 1/0. Reports "
        "eval_micro_f1, eval_macro_f1, eval_exact_match; test_results.tsv "
        "holds each label's probability.", flag_values=flag_values)
    flags.DEFINE_string(
        "label_delimiter", ",",
        "--multi_label with one label column: what separates its labels.",
        flag_values=flag_values)
    flags.DEFINE_float(
        "threshold", 0.5,
        "--multi_label: a label is predicted when its probability is at "
        "least this.", flag_values=flag_values)
