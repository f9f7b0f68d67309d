"""The pair regression task's spec: the one line of the task list is
`bert_tf.tasks.registry.register(SPEC)`.

The folder is laid out as the built-in tasks' (`registry.folder_spec`:
recipe.py, python_api.py, export.py); its hooks are named, not imported,
so reading the spec imports no TensorFlow.
"""

from bert_tf.tasks import registry

SPEC = registry.folder_spec(
    # This folder's package, whatever it is called where it is copied.
    __name__.rsplit(".", 1)[0], name="pair_regression",
    program="run_pair_regression.py", config_class="PairRegressionConfig",
    summary="a score for a pair of sentences (mean squared error)",
)
