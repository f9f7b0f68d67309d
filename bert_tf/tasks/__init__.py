"""Fine-tuning tasks, one folder each: `classification/` (GLUE and
multi-label), `squad/`, `tagging/`, `multiple_choice/`. A task's folder
holds its whole path: readers (`examples`, `glue_processors`), features,
metrics and post-processing, the `Task` and its Keras model (`task`), and
the in-graph counterpart of its Python pre- or post-processing for the
raw-text exports (`graph_*`). Shared here: the `Task` interface the trainer
knows (`base`), the losses (`losses`) and the encoder part of the models
whose head reads every position (`sequence_model`). Pretraining is
`bert_tf/pretraining/`."""
