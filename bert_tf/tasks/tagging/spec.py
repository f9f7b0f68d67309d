"""The tagging task's spec: what `bert_tf.tasks.registry` lists."""

from bert_tf.tasks import registry

SPEC = registry.folder_spec(
    "bert_tf.tasks.tagging", name="tagging", program="run_tagging.py",
    config_class="TaggingConfig",
    summary="a label per word: named entities, parts of speech (CoNLL files)",
)
