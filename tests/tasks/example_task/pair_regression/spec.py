"""The pair regression task's spec: the one line of the task list is
`bert_tf.tasks.registry.register(SPEC)`.

The hooks are named, not imported: reading the spec imports no TensorFlow
(`registry.hook`, `registry.module`, `registry.attribute` import the module
when they are first called).
"""

from bert_tf.tasks import registry

# This folder's package, whatever it is called where it is copied.
_PACKAGE = __name__.rsplit(".", 1)[0]
_RECIPE = f"{_PACKAGE}.recipe"
_PYTHON_API = f"{_PACKAGE}.python_api"
_EXPORT = f"{_PACKAGE}.export"

SPEC = registry.TaskSpec(
    name="pair_regression",
    program="run_pair_regression.py",
    recipe=registry.module(_RECIPE),
    config_class=registry.attribute(_RECIPE, "PairRegressionConfig"),
    python_examples=registry.hook(_PYTHON_API, "python_examples"),
    serves=registry.hook(_PYTHON_API, "serves"),
    columns=registry.hook(_PYTHON_API, "columns"),
    results=registry.hook(_PYTHON_API, "results"),
    export_from_run=registry.hook(_EXPORT, "export_from_run"),
    export_from_flags=registry.hook(_EXPORT, "export_from_flags"),
    summary="a score for a pair of sentences (mean squared error)",
)
