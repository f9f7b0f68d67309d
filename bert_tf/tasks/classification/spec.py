"""The classification task's spec: what `bert_tf.tasks.registry` lists."""

from bert_tf.tasks import registry
from bert_tf.tasks.classification import glue_processors

SPEC = registry.folder_spec(
    "bert_tf.tasks.classification", name="classification",
    program="run_classifier.py", config_class="ClassificationConfig",
    run_kinds=("classification", "multi_label"),
    # run_classifier.py's tasks (Google's, GLUE's and `generic`), read
    # from data_dir.
    aliases=tuple(glue_processors.PROCESSORS),
    export_names=tuple(sorted(glue_processors.PROCESSORS)),
    finetune_aliases="finetune_alias",
    summary="labelled texts or text pairs (GLUE, your own files)",
)
