"""Fine-tuning tasks, one folder each: `classification/` (GLUE and
multi-label), `squad/`, `tagging/`, `multiple_choice/`. A task's folder
holds its whole path: readers (`examples`, `glue_processors`), features,
metrics and post-processing, the `Task` and its Keras model (`task`), its
program's config and run (`recipe`), the in-graph counterpart of its
Python pre- or post-processing for the raw-text exports (`graph_*`), its
export builders (`export`), `bert_tf.finetune`'s and `load(...).predict`'s
conversions (`python_api`) and its `TaskSpec` (`spec`).

Shared here: the one list of tasks (`registry`: `bert_tf.api`,
export_saved_model.py and `python -m bert_tf` read it; adding a task is a
folder and a line there, docs/adding-a-task.md), the `Task` interface the
trainer knows (`base`), the losses (`losses`) and the encoder part of the
models whose head reads every position (`sequence_model`). What the
recipes share (configs, checks, the run description) is
`bert_tf/finetuning/`; pretraining is `bert_tf/pretraining/`."""
