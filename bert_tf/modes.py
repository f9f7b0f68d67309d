"""The modes a task's input pipeline and prediction hooks are called in.

Defined below both the training loop and the tasks, so that the training
layer needs nothing from `bert_tf.tasks` (see DESIGN.md's layer order);
`bert_tf.tasks.base` re-exports them.
"""

TRAIN = "train"
EVAL = "eval"
PREDICT = "predict"
MODES = (TRAIN, EVAL, PREDICT)
