"""`run_classifier.py --task_name=generic --multi_label=true`.

Several labels per example (see
`bert_tf.tasks.classification.multi_label_data` for the label columns and
`bert_tf.tasks.classification.multi_label_task` for the model, loss and
metrics).
`run_classifier.py` defines the flags (`define_flags` here adds the
multi-label ones) and hands a multi-label run to `run`.
"""

from absl import flags
from absl import logging



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


def run(flag_values, bert_config):
    """Trains, evaluates and/or predicts a multi-label task.

    Args:
      flag_values: run_classifier.py's parsed flags (already validated).
      bert_config: the `BertConfig`.

    Returns:
      A dict as `run_classifier.run`'s: "train", "eval", "predict"
      (probabilities [n, num_labels]).
    """
    from bert_tf.tasks.classification import multi_label_data as data_lib
    from bert_tf.runners import finetune
    from bert_tf.tasks import base
    from bert_tf.tasks.classification import multi_label_task as task_lib

    if flag_values.task_name.lower() != "generic":
        raise ValueError("--multi_label needs --task_name=generic (your own "
                         f"files), not {flag_values.task_name}")
    processor = data_lib.MultiLabelProcessor(
        text_a_column=flag_values.text_a_column,
        text_b_column=flag_values.text_b_column,
        label_column=flag_values.label_column,
        file_format=flag_values.data_format,
        label_delimiter=flag_values.label_delimiter)
    data_dir = flag_values.data_dir
    label_list = processor.get_labels(data_dir)
    # Every file is read (and checked) before any training.
    examples = {}
    if flag_values.do_train:
        examples["train"] = processor.get_train_examples(data_dir)
    if flag_values.do_eval:
        examples["eval"] = processor.get_dev_examples(data_dir)
    if flag_values.do_predict:
        examples["predict"] = processor.get_test_examples(data_dir)
    steps = finetune.training_steps(flag_values,
                                    len(examples.get("train", ())))
    run_setup = finetune.start(flag_values)
    # The run's record (`finetune.read_multi_label_head`): its checkpoints
    # look like a softmax classifier's; this says they are multi-label.
    finetune.write_run_description(
        flag_values, run_setup, "run_classifier.py", finetune.MULTI_LABEL,
        label_list=label_list, has_text_b=processor.has_text_b,
        threshold=flag_values.threshold)
    arrays = {phase: data_lib.examples_to_arrays(
        phase_examples, label_list, flag_values.max_seq_length,
        run_setup.tokenizer)
        for phase, phase_examples in examples.items()}
    logging.info("Multi-label classification: %d labels (%s)",
                 len(label_list), ", ".join(label_list))

    task = task_lib.MultiLabelTask(
        bert_config, label_list, base.ArraysDataConfig(
            train_arrays=arrays.get("train"), eval_arrays=arrays.get("eval"),
            predict_arrays=arrays.get("predict"),
            max_seq_length=flag_values.max_seq_length,
            seed=flag_values.seed,
            # TPUs need full evaluation batches (weight-0 padding).
            pad_to_full_batches=run_setup.on_tpu),
        threshold=flag_values.threshold,
        init_checkpoint=run_setup.init_checkpoint,
        causal_attention=flag_values.causal_attention)
    trainer = finetune.make_trainer(run_setup, task, flag_values, steps,
                                    flag_values.eval_batch_size)
    return finetune.run_phases(
        trainer, flag_values,
        num_predict_examples=len(examples.get("predict", ())),
        # TPUs need full batches: the last is padded (and dropped).
        pad_to_full_batches=run_setup.on_tpu,
        predicted=lambda state: task.stacked_predictions(state)[0])
