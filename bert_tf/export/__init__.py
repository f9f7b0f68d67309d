"""SavedModels that serve raw text: tokenizer + packing + model + answers.

`export_saved_model.py` is the command line (its flags: `settings`); a
task's `bert_tf/tasks/<task>/export.py` makes its export from a checkpoint
on `builders` (which makes the embeddings export), `serving` holds the
exported modules and `save_export`; `packing` is the in-graph input
packing. A task's own in-graph steps live
beside its Python ones: `tasks/squad/graph_answers.py` (SQuAD's windows and
answer extraction), `tasks/tagging/graph_windows.py` (the tagger's words and
windows), both over `data/windows.py`'s sliding windows. A saved export
needs only `tensorflow` and `tensorflow_text` to load. `portable` writes
the ids signature as ONNX (`onnx_export`, for ONNX Runtime) or TFLite,
optionally int8, with the tokenizer files and `packing.json` beside it.
`served` calls a SavedModel's `serving_default` from Python
(`bert_tf.load(saved_model_dir).predict`).
"""
