"""SavedModels that serve raw text: tokenizer + packing + model + answers.

`export_saved_model.py` is the command line; `serving` holds the exported
modules and `save_export`, `packing` the in-graph input packing and
`squad_answers` SQuAD's windows and answer extraction as TensorFlow ops.
A saved export needs only `tensorflow` and `tensorflow_text` to load.
"""
