"""What a training run leaves in its `--output_dir` for prediction.

A run that trains copies its model files there (`bert_config.json`,
`vocab.txt`, as a released checkpoint directory has them) and writes
`bert_tf_run.json`, so that the directory alone predicts (`bert_tf.load`,
`export_saved_model.py`).
"""

import json
import os

# Written into a training run's --output_dir beside its checkpoints, so that
# the directory alone predicts (`bert_tf.load`, like a released checkpoint
# directory): the model's config and vocabulary, and what the task needs.
RUN_DESCRIPTION_FILE = "bert_tf_run.json"
BERT_CONFIG_FILE = "bert_config.json"
VOCAB_FILE = "vocab.txt"
# The built-in tasks' kinds of a run description. A task's spec
# (`bert_tf.tasks.registry`) says which kinds it serves, so a task added
# outside bert_tf writes its own: this list is not a gate.
CLASSIFICATION = "classification"
MULTI_LABEL = "multi_label"
SQUAD = "squad"
TAGGING = "tagging"
MULTIPLE_CHOICE = "multiple_choice"
TASK_KINDS = (CLASSIFICATION, MULTI_LABEL, SQUAD, TAGGING, MULTIPLE_CHOICE)


def write_run_description(config, run, program, task, **settings):
    """Makes a training run's `--output_dir` loadable by itself.

    Copies `--bert_config_file` and `--vocab_file` into it as
    `bert_config.json` and `vocab.txt` (as a released checkpoint directory
    has them) and writes `bert_tf_run.json`: the program, the task kind,
    `max_seq_length`, `do_lower_case`, `causal_attention` and the task's
    own `settings` (labels, windows, ...). Only a run that trains writes
    them (a prediction run describes no model of its own), and only its
    chief (the worker that writes checkpoints). Each file is written under
    a temporary name and renamed.

    Args:
      config: the run's `FineTuningConfig`.
      run: the `FineTuningRun` (its strategy says who the chief is).
      program: the runner's file name, e.g. "run_classifier.py".
      task: the task kind (a `TaskSpec`'s `kinds()`: `bert_tf.load`
        finds the task's spec by it), e.g. one of `TASK_KINDS`.
      **settings: JSON-serializable task settings.

    Raises:
      ValueError: `--output_dir` already holds a `bert_config.json` or
        `vocab.txt` that differs from the run's (another model's files,
        which are not overwritten).
    """
    from bert_tf.training import distribution
    check_finished_run_matches(config, task, settings.get("label_list"))
    if not config.do_train or not distribution.is_chief(run.strategy):
        return
    if not isinstance(task, str) or not task:
        raise ValueError(f"task kind {task!r} must be a non-empty string")
    from bert_tf import file_io
    copy_model_files(config, ("bert_config_file", "vocab_file"))
    description = {
        "program": program, "task": task,
        "max_seq_length": config.max_seq_length,
        "do_lower_case": config.do_lower_case,
        "causal_attention": config.causal_attention, **settings}
    with file_io.atomic_write(
            os.path.join(config.output_dir, RUN_DESCRIPTION_FILE)) as writer:
        json.dump(description, writer, indent=2, ensure_ascii=False)
        writer.write("\n")


# The file a model flag is copied to in a run's --output_dir.
MODEL_FILE_OF_FLAG = {"bert_config_file": BERT_CONFIG_FILE,
                      "vocab_file": VOCAB_FILE}


def copy_model_files(config, flag_names):
    """Copies the files of model flags into `--output_dir`, as a released
    checkpoint directory has them (`bert_config.json`, `vocab.txt`).

    A file already there with the same bytes is left as it is; nothing is
    written unless every copy can be (each under a temporary name, then
    renamed).

    Args:
      config: the run's config (`RunConfig` or a subclass).
      flag_names: of `MODEL_FILE_OF_FLAG`; a field without a value is
        skipped.

    Raises:
      ValueError: `--output_dir` already holds such a file that differs
        (another model's file, which is not overwritten); the message names
        it.
    """
    from bert_tf import file_io
    copies = []
    for flag in flag_names:
        if not getattr(config, flag):
            continue
        content = file_io.read_bytes(getattr(config, flag), f"--{flag}")
        target = os.path.join(config.output_dir, MODEL_FILE_OF_FLAG[flag])
        if _existing_bytes(target) not in (None, content):
            raise ValueError(
                f"--output_dir: {target} exists and differs from --{flag}="
                f"{getattr(config, flag)} (another model's file is not "
                "overwritten; use another --output_dir)")
        copies.append((target, content))
    for target, content in copies:
        if _existing_bytes(target) is None:
            with file_io.atomic_write(target, "wb") as writer:
                writer.write(content)


def _existing_bytes(path):
    """The content of `path`, or None where there is no such file."""
    from bert_tf import file_io
    try:
        return file_io.read_bytes(path)
    except FileNotFoundError:
        return None


def read_run_description(output_dir, task_kinds=None):
    """`bert_tf_run.json` of a training run's directory as a dict.

    Args:
      output_dir: the training run's `--output_dir`.
      task_kinds: the task kinds accepted (`bert_tf.load` passes every
        registered task's, `bert_tf.tasks.registry.run_kinds()`); None: any
        (a non-empty string).

    Raises:
      FileNotFoundError: there is none (not a training run's directory).
      ValueError: it is not a description, or of no kind in `task_kinds`
        (the message names the file).
    """
    from bert_tf import file_io
    path = os.path.join(os.fspath(output_dir), RUN_DESCRIPTION_FILE)
    content = file_io.read_bytes(path, "run description")
    try:
        description = json.loads(content.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: not a JSON run description ({error})"
                         ) from None
    task = description.get("task") if isinstance(description, dict) else None
    if not isinstance(task, str) or not task or (
            task_kinds is not None and task not in task_kinds):
        raise ValueError(f"{path}: no 'task' among "
                         f"{', '.join(task_kinds or TASK_KINDS)}")
    return description


# A run_classifier.py --multi_label run of an earlier version recorded its
# head here instead of in bert_tf_run.json; read where a run has only it.
EARLIER_MULTI_LABEL_FILE = "multi_label.json"


def read_multi_label_head(output_dir):
    """The multi-label head a training run's directory records, or None.

    The checkpoints of a `run_classifier.py --multi_label` run hold a
    softmax classifier's variables (`output_weights`, `output_bias`); only
    its `bert_tf_run.json` (task `multi_label`, with the run's labels and
    `--threshold`) says they are a sigmoid per label. Read by
    `export_saved_model.py` and `bert_tf.load`. A directory with no
    `bert_tf_run.json` but an earlier version's `multi_label.json` (the same
    two fields) is read from that.

    Args:
      output_dir: the training run's `--output_dir` (the checkpoint's
        directory).

    Returns:
      None (not a multi-label run's directory), or a dict with
      `label_list` (the labels in label-id order), `threshold` and `path`
      (the file read, for messages).

    Raises:
      ValueError: the record is not one (the message names the file).
    """
    from bert_tf import file_io
    output_dir = os.fspath(output_dir)
    path = os.path.join(output_dir, RUN_DESCRIPTION_FILE)
    try:
        record = read_run_description(output_dir)
    except FileNotFoundError:
        path = os.path.join(output_dir, EARLIER_MULTI_LABEL_FILE)
        try:
            content = file_io.read_bytes(path, "multi-label record")
        except FileNotFoundError:
            return None
        try:
            record = json.loads(content.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ValueError(f"{path}: not a JSON multi-label record "
                             f"({error})") from None
        if not isinstance(record, dict):
            raise ValueError(f"{path}: not a multi-label record")
    else:
        if record["task"] != MULTI_LABEL:
            return None
    labels, threshold = record.get("label_list"), record.get("threshold")
    if not (isinstance(labels, list) and labels
            and all(isinstance(label, str) for label in labels)):
        raise ValueError(f"{path}: 'label_list' is not a list of label "
                         "names")
    if isinstance(threshold, bool) or not isinstance(threshold,
                                                     (int, float)):
        raise ValueError(f"{path}: 'threshold' is not a number")
    return {"label_list": labels, "threshold": float(threshold),
            "path": path}


def check_finished_run_matches(config, task, label_list):
    """Refuses a run into the `--output_dir` of a run that trained (a
    checkpoint and its `bert_tf_run.json` there) when the run would resume
    or use that model under another task or other labels, or (training)
    rewrite its description with another `max_seq_length`: the old model
    would be evaluated against, and served under, the new labels.

    Args:
      config: the run's `FineTuningConfig`.
      task: the run's task kind (one of `TASK_KINDS`).
      label_list: the run's labels in label-id order, or None (a task
        without labels).

    Raises:
      ValueError: naming each setting that differs, the run's and this
        one's.
    """
    try:
        description = read_run_description(config.output_dir)
    except (FileNotFoundError, ValueError):
        return
    from bert_tf.training import checkpoint_manager
    checkpoint = checkpoint_manager.CheckpointManager(
        config.output_dir, is_chief=False).latest_checkpoint
    if checkpoint is None:
        return
    differences = []
    if description.get("task") != task:
        differences.append(f"task {description.get('task')} (this run: "
                           f"{task})")
    elif description.get("label_list") != (
            None if label_list is None else list(label_list)):
        differences.append(
            f"labels {_listed(description.get('label_list'))} (this run: "
            f"{_listed(label_list)})")
    if config.do_train and description.get(
            "max_seq_length") != config.max_seq_length:
        differences.append(
            f"max_seq_length {description.get('max_seq_length')} (this "
            f"run: {config.max_seq_length})")
    if differences:
        raise ValueError(
            f"--output_dir: {config.output_dir} holds a model trained "
            f"({os.path.basename(checkpoint)}) with {'; '.join(differences)}"
            ", which this run would use under its own; use another "
            "--output_dir")


def _listed(labels):
    """Labels as a message shows them."""
    if labels is None:
        return "none"
    return ", ".join(str(label) for label in labels)
