"""The classification task's spec: what `bert_tf.tasks.registry` lists."""

from bert_tf.tasks import registry
from bert_tf.tasks.classification import glue_processors

_RECIPE = "bert_tf.tasks.classification.recipe"
_PYTHON_API = "bert_tf.tasks.classification.python_api"
_EXPORT = "bert_tf.tasks.classification.export"

SPEC = registry.TaskSpec(
    name="classification",
    program="run_classifier.py",
    recipe=registry.module(_RECIPE),
    config_class=registry.attribute(_RECIPE, "ClassificationConfig"),
    python_examples=registry.hook(_PYTHON_API, "python_examples"),
    serves=registry.hook(_PYTHON_API, "serves"),
    columns=registry.hook(_PYTHON_API, "columns"),
    results=registry.hook(_PYTHON_API, "results"),
    export_from_run=registry.hook(_EXPORT, "export_from_run"),
    export_from_flags=registry.hook(_EXPORT, "export_from_flags"),
    run_kinds=("classification", "multi_label"),
    # run_classifier.py's tasks (Google's, GLUE's and `generic`), read
    # from data_dir.
    aliases=tuple(glue_processors.PROCESSORS),
    export_names=tuple(sorted(glue_processors.PROCESSORS)),
    finetune_aliases=registry.hook(_PYTHON_API, "finetune_alias"),
    python_head=registry.hook(_PYTHON_API, "python_head"),
    summary="labelled texts or text pairs (GLUE, your own files)",
)
