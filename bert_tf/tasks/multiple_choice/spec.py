"""The multiple choice task's spec: what `bert_tf.tasks.registry` lists."""

from bert_tf.tasks import registry

SPEC = registry.folder_spec(
    "bert_tf.tasks.multiple_choice", name="multiple_choice",
    program="run_multiple_choice.py", config_class="MultipleChoiceConfig",
    summary="the likeliest of several choices (SWAG, JSON lines)",
)
