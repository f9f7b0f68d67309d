"""A SavedModel's `serving_default` called from Python: what
`bert_tf.load(saved_model_dir).predict` runs.

`Served` wraps the signature and recognizes the task it serves from its
input and output names (each task's spec says which it serves,
`bert_tf.tasks.registry`); the task's `python_api` turns `predict`'s
inputs into its columns and its output rows into results. (A training
run's directory is predicted through its task's Python path instead, on
any Keras backend: the spec's `predictor`.)
"""

import numpy as np

from bert_tf.data import python_inputs
from bert_tf.tasks import registry


# The task of an embeddings export (no task's spec serves it).
EMBEDDINGS = "embeddings"


class Served:
    """A `serving_default` concrete function and the task it serves,
    recognized by its input and output names (as the exports define them)."""

    def __init__(self, function, where):
        """Args:
          function: a SavedModel's `serving_default` signature.
          where: names the SavedModel in messages (its path).

        Raises:
          ValueError: the signature is no bert_tf export's.
        """
        import tensorflow as tf
        self.function = function
        # The signature takes keywords: the names of its input specs.
        self.input_names = tuple(sorted(
            spec.name for spec in tf.nest.flatten(
                function.structured_input_signature)))
        outputs = set(function.structured_outputs)
        # The task whose export has these names; `text` alone and no
        # labels: the embeddings export.
        self.spec, self.task = None, None
        for spec in registry.specs():
            kind = spec.serves(self.input_names, outputs)
            if kind:
                self.spec, self.task = spec, kind
                break
        if self.spec is None:
            if set(self.input_names) != {"text"}:
                raise ValueError(
                    f"bert_tf.load: {where}'s serving_default takes "
                    f"{', '.join(self.input_names)}, which is no bert_tf "
                    "export")
            self.task = EMBEDDINGS
        self.labels = None

    def call_batched(self, columns, batch_size):
        """Runs the function on `columns` ({input: list}) batch by batch;
        returns {output: numpy array of all rows} (tagging's ragged rows
        padded to the longest)."""
        import tensorflow as tf
        count = len(next(iter(columns.values())))
        batches = []
        for start in range(0, count, batch_size):
            inputs = {name: tf.constant(values[start:start + batch_size])
                      for name, values in columns.items()}
            batches.append({name: value.numpy() for name, value in
                            self.function(**inputs).items()})
        if not batches:
            return {}
        return {name: concatenate([batch[name] for batch in batches])
                for name in batches[0]}

    # -- inputs --

    def columns(self, inputs):
        """{input name: list} of `inputs`, checked against the task."""
        if isinstance(inputs, (str, bytes)) or not isinstance(
                inputs, (list, tuple)):
            raise ValueError(f"inputs must be a list, got "
                             f"{type(inputs).__name__}")
        if self.spec is None:
            return {"text": [python_inputs.one_text(i, item, "a text")
                             for i, item in enumerate(inputs)]}
        return self.spec.columns(inputs, self.input_names)

    # -- outputs --

    def results(self, rows, count):
        """One result dict per input from the function's output rows."""
        if not count:
            return []
        if self.spec is None:
            return [{"pooled_output": rows["pooled_output"][i],
                     "mean_pooled": rows["mean_pooled"][i]}
                    for i in range(count)]
        return self.spec.results(rows, count, self.labels)


def concatenate(arrays):
    """Rows of several batches; string matrices padded with "" to the
    widest (tagging's words differ in number between batches)."""
    if arrays[0].ndim == 2 and arrays[0].dtype == object:
        width = max(array.shape[1] for array in arrays)
        arrays = [np.pad(array, [(0, 0), (0, width - array.shape[1])],
                         constant_values=b"") for array in arrays]
    return np.concatenate(arrays)
