"""Variable paths that are Google's checkpoint names, however layers nest.

Keras 3 names a variable `<scope>/<name>`, where the scope is the chain of
layer names around the layer that created it (`outer_model/bert/...` once
`BertModel` sits inside a task model). Google's checkpoints name the same
tensors from the root: `bert/...`, `cls/predictions/...`, and, for
`run_classifier.py`, plain `output_weights`. `checkpoint_scope` pins the scope
while a layer builds its variables and sub-layers, so the names stay Google's
whatever model the layer ends up in. (A sub-layer remembers the scope it was
first built in; that is why every layer here builds its sub-layers eagerly in
`build`, never lazily in `call`.)
"""

import contextlib

import keras


@contextlib.contextmanager
def checkpoint_scope(scope):
    """Variables created inside get the path `scope/<variable name>`.

    Args:
      scope: absolute scope such as "bert", "cls/predictions" or "" (the
        checkpoint's root: the variable path is just its name).

    Yields:
      Nothing; the scope is active inside the `with` block.
    """
    if not isinstance(scope, str) or scope.startswith("/") or scope.endswith(
            "/") or "//" in scope:
        raise ValueError(
            f"checkpoint scope must be a '/'-separated name such as "
            f"'cls/predictions' (or '' for the root), got {scope!r}")
    parent, _, last = scope.rpartition("/")
    # `override_parent` discards the enclosing scopes; with parent == "" and
    # last == "" the path is empty and variables are named from the root.
    with keras.name_scope(last, override_parent=parent):
        yield
