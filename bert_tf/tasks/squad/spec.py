"""The squad task's spec: what `bert_tf.tasks.registry` lists."""

from bert_tf.tasks import registry

SPEC = registry.folder_spec(
    "bert_tf.tasks.squad", name="squad", program="run_squad.py",
    config_class="SquadConfig", finetune_sets="dev_is_predicted",
    default_max_seq_length=384,
    summary="questions answered by a span of their context (SQuAD v1.1 and 2.0)",
)
