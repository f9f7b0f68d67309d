"""SQuAD v1.1 and 2.0 (`run_squad.py`): `examples` reads the JSON,
`features` cuts contexts into windows and writes Google's records,
`task` is the `SquadTask` and its model, `postprocess` turns logits into
answers and `predictions.json`, `evaluate` is the official scorer;
`graph_answers` does the windows and answer extraction as TensorFlow ops
for the raw-text export (both read one `postprocess.SquadPostprocessConfig`).
`recipe` is run_squad.py's config and run, `export` its raw-text export,
`python_api` `bert_tf.finetune`'s and `predict`'s conversions, `spec` its
entry in `bert_tf.tasks.registry`."""
