"""GLUE-style classification (`run_classifier.py`), single- and multi-label:
`glue_processors` reads the task files, `features` turns examples into
Google's records and arrays, `metrics` scores predictions, `task` is the
`ClassificationTask` and its model; `multi_label_data` and
`multi_label_task` are the same steps for several labels per example.
`recipe` is run_classifier.py's config and run, `export` its raw-text
export, `python_api` `bert_tf.finetune`'s and `predict`'s conversions,
`spec` its entry in `bert_tf.tasks.registry`."""
