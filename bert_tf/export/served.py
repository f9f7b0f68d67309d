"""A task's `serving_default` function called from Python: what
`bert_tf.load(...).predict` and `embed` run.

`Served` wraps an export's (or a SavedModel's) `serving_default` and
recognizes the task it serves from its input and output names (each task's
spec says which it serves, `bert_tf.tasks.registry`); the task's
`python_api` turns `predict`'s inputs into its columns and its output rows
into results. `PythonServed` gives the same rows without TensorFlow (the
pure-Python tokenizer and the Keras model on any backend), for embeddings
and a head on the pooled output (classification).
"""

import numpy as np

from bert_tf.data import python_inputs
from bert_tf.tasks import registry


def on_tensorflow():
    """Whether Keras runs on TensorFlow (else: no exports, no in-graph
    tokenizer; `PythonServed` serves what it can)."""
    from bert_tf import backend
    return backend.name() == backend.TENSORFLOW


# The task of an embeddings export (no task's spec serves it).
EMBEDDINGS = "embeddings"


class Served:
    """A `serving_default` concrete function and the task it serves,
    recognized by its input and output names (as the exports define them)."""

    def __init__(self, export):
        from bert_tf.export import serving
        function = export.signatures()[serving.SERVING_DEFAULT]
        self._init(function, "the export")

    @classmethod
    def from_signature(cls, function, path):
        """The `Served` of a SavedModel's signature `function` (`path`
        names the SavedModel in messages)."""
        served = cls.__new__(cls)
        served._init(function, path)
        return served

    def _init(self, function, where):
        import tensorflow as tf
        self.function = function
        # A SavedModel's signature takes keywords; an export's concrete
        # function was traced on positional specs: their names are the same.
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


class PythonServed(Served):
    """`Served` without TensorFlow: the pure-Python tokenizer and the Keras
    model on any backend, giving the rows the export's `serving_default`
    gives (embeddings: `pooled_output`, `mean_pooled`; classification:
    `label`, `probabilities`)."""

    def __init__(self, spec, pretrained, models, label_list=None,
                 has_text_b=False):
        """Args:
          spec: the task's `TaskSpec` (its `python_head`), or None for
            embeddings.
          pretrained: the `PretrainedModel` (tokenizer, max_seq_length).
          models: (BertModel, the task's head or None), loaded.
          label_list: the task's labels in id order.
          has_text_b: the task takes text pairs.
        """
        self.spec = spec
        self.task = EMBEDDINGS if spec is None else spec.name
        self.input_names = (("text",) if spec is None else
                            ("text_a", "text_b") if has_text_b
                            else ("text_a",))
        self.labels = label_list
        self._tokenizer = pretrained._python_tokenizer()
        self._max_seq_length = pretrained.max_seq_length
        self._encoder, self._head = models

    def _encode(self, text_a, text_b):
        """Google's framing of one input: (ids, segment_ids), unpadded."""
        from bert_tf.data.encoded_input import frame_pair
        tokens_b = self._tokenizer.tokenize(text_b) if text_b else None
        tokens, segment_ids = frame_pair(self._tokenizer.tokenize(text_a),
                                         tokens_b, self._max_seq_length)
        return self._tokenizer.convert_tokens_to_ids(tokens), segment_ids

    def call_batched(self, columns, batch_size):
        from keras import ops
        texts_a = columns.get("text", columns.get("text_a"))
        texts_b = columns.get("text_b", [None] * len(texts_a))
        batches = []
        for start in range(0, len(texts_a), batch_size):
            encoded = [self._encode(a, b) for a, b in zip(
                texts_a[start:start + batch_size],
                texts_b[start:start + batch_size])]
            length = max(len(ids) for ids, _ in encoded)
            input_ids, input_mask, segment_ids = (
                np.zeros([len(encoded), length], np.int32) for _ in range(3))
            for row, (ids, segments) in enumerate(encoded):
                input_ids[row, :len(ids)] = ids
                input_mask[row, :len(ids)] = 1
                segment_ids[row, :len(ids)] = segments
            outputs = self._encoder(input_ids, input_mask=input_mask,
                                    segment_ids=segment_ids, training=False)
            pooled = ops.cast(outputs["pooled_output"], "float32")
            if self.spec is None:
                sequence = ops.convert_to_numpy(
                    ops.cast(outputs["sequence_output"], "float32"))
                mask = input_mask[:, :, None].astype(np.float32)
                batches.append({
                    "pooled_output": ops.convert_to_numpy(pooled),
                    "mean_pooled": (sequence * mask).sum(axis=1)
                    / mask.sum(axis=1)})
                continue
            probabilities = ops.convert_to_numpy(ops.softmax(
                self._head(pooled, training=False), axis=-1))
            batches.append({
                "label": np.array([self.labels[i] for i in
                                   probabilities.argmax(axis=-1)], object),
                "probabilities": probabilities})
        if not batches:
            return {}
        return {name: np.concatenate([batch[name] for batch in batches])
                for name in batches[0]}


def concatenate(arrays):
    """Rows of several batches; string matrices padded with "" to the
    widest (tagging's words differ in number between batches)."""
    if arrays[0].ndim == 2 and arrays[0].dtype == object:
        width = max(array.shape[1] for array in arrays)
        arrays = [np.pad(array, [(0, 0), (0, width - array.shape[1])],
                         constant_values=b"") for array in arrays]
    return np.concatenate(arrays)
