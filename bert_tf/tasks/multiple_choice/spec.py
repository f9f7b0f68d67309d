"""The multiple choice task's spec: what `bert_tf.tasks.registry` lists."""

from bert_tf.tasks import registry

_RECIPE = "bert_tf.tasks.multiple_choice.recipe"
_PYTHON_API = "bert_tf.tasks.multiple_choice.python_api"
_EXPORT = "bert_tf.tasks.multiple_choice.export"

SPEC = registry.TaskSpec(
    name="multiple_choice",
    program="run_multiple_choice.py",
    recipe=registry.module(_RECIPE),
    config_class=registry.attribute(_RECIPE, "MultipleChoiceConfig"),
    python_examples=registry.hook(_PYTHON_API, "python_examples"),
    serves=registry.hook(_PYTHON_API, "serves"),
    columns=registry.hook(_PYTHON_API, "columns"),
    results=registry.hook(_PYTHON_API, "results"),
    export_from_run=registry.hook(_EXPORT, "export_from_run"),
    export_from_flags=registry.hook(_EXPORT, "export_from_flags"),
    summary="the likeliest of several choices (SWAG, JSON lines)",
)
