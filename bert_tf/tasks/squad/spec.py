"""The squad task's spec: what `bert_tf.tasks.registry` lists."""

from bert_tf.tasks import registry

_RECIPE = "bert_tf.tasks.squad.recipe"
_PYTHON_API = "bert_tf.tasks.squad.python_api"
_EXPORT = "bert_tf.tasks.squad.export"

SPEC = registry.TaskSpec(
    name="squad",
    program="run_squad.py",
    recipe=registry.module(_RECIPE),
    config_class=registry.attribute(_RECIPE, "SquadConfig"),
    python_examples=registry.hook(_PYTHON_API, "python_examples"),
    serves=registry.hook(_PYTHON_API, "serves"),
    columns=registry.hook(_PYTHON_API, "columns"),
    results=registry.hook(_PYTHON_API, "results"),
    export_from_run=registry.hook(_EXPORT, "export_from_run"),
    export_from_flags=registry.hook(_EXPORT, "export_from_flags"),
    finetune_sets=registry.hook(_PYTHON_API, "dev_is_predicted"),
    default_max_seq_length=384,
    summary="questions answered by a span of their context (SQuAD v1.1 and 2.0)",
)
