"""Multiple choice: SWAG, OpenBookQA, PIQA, ... (`run_multiple_choice.py`):
`examples` reads SWAG CSV and JSON lines and encodes each (context,
choice) pair, `task` is the `MultipleChoiceTask` and its model. `recipe`
is run_multiple_choice.py's config and run, `export` its raw-text export,
`python_api` `bert_tf.finetune`'s and `predict`'s conversions, `spec` its
entry in `bert_tf.tasks.registry`."""
