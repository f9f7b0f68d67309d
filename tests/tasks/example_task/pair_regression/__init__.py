"""Sentence-pair regression: a task kept outside bert_tf, the worked
example of docs/adding-a-task.md (tests/tasks/test_adding_a_task.py copies
this folder into a temporary directory, registers its spec and fine-tunes,
predicts and exports with it).

`spec.py` declares the task (`SPEC`, what `bert_tf.tasks.registry.register`
takes); `task.py` holds its model, loss and predictions; `recipe.py` runs a
fine-tuning run from a config; `python_api.py` turns `bert_tf.finetune`'s
and `load(...).predict`'s Python values into the recipe's examples and the
export's columns; `export.py` builds the raw-text SavedModel.
"""
