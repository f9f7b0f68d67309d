"""The signature `tf.saved_model.save(model, path)` traces: int32 inputs.

Keras 3 gives a subclassed model a default save signature whose inputs have
the model's float compute dtype, and the first `tf.gather` of token ids
then fails. A model of this project instead names its integer inputs, with
shape [batch_size, seq_length] (both dimensions free), through the hook
`tf.saved_model.save` reads when no `signatures` are given,
`_default_save_signature`.

`TaskModel` is the base of the task models (an encoder and a head): it
gives each that signature and Keras's `get_config`/`from_config`, so that
`model.save("x.keras")` / `keras.models.load_model` round-trip.
"""

import keras

# Only `tf.saved_model.save` reads these signatures (TensorFlow backend);
# TensorFlow is imported where they are made, so that the other backends
# never import it.


def int_feature_specs(names, dtype="int32"):
    """{name: TensorSpec([None, None], dtype, name)} for each name."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    return {name: tf.TensorSpec([None, None], dtype, name=name)
            for name in names}


def feature_dict_signature(model, specs, output_names=None):
    """A `tf.function` calling `model(features, training=False)`.

    Args:
      model: a Keras model called on a dict of features.
      specs: {feature name: tf.TensorSpec}, the signature's inputs.
      output_names: the model outputs to keep (a signature returns a flat
        dict of tensors); None keeps them all.

    Returns:
      A `tf.function` with a fixed input signature.
    """
    import tensorflow as tf  # pylint: disable=import-outside-toplevel

    @tf.function(input_signature=[specs])
    def serving_default(features):
        outputs = model(features, training=False)
        if output_names is not None:
            outputs = {name: outputs[name] for name in output_names}
        return outputs

    return serving_default


# The inputs of every fine-tuning model: Google's feature names.
ENCODER_INPUTS = ("input_ids", "input_mask", "segment_ids")


class TaskModel(keras.Model):
    """Base of the task models: Keras-native config and save signature.

    A subclass keeps its `BertConfig` as `self.bert_config`, takes it as its
    constructor's first argument, and says
      - `task_config()`: its other constructor arguments, JSON-serializable;
      - `saved_input_specs()`: the inputs `tf.saved_model.save` traces
        (default: `ENCODER_INPUTS`, int32 [batch, seq]);
      - `saved_output_names`: the outputs the signature keeps (None: all).
    """

    saved_output_names = None

    def task_config(self):
        """The constructor's arguments besides the `BertConfig`."""
        return {}

    def saved_input_specs(self):
        """{feature name: tf.TensorSpec} of the save signature."""
        return int_feature_specs(ENCODER_INPUTS)

    @property
    def _default_save_signature(self):
        """What `tf.saved_model.save(model, path)` exports."""
        return feature_dict_signature(self, self.saved_input_specs(),
                                      self.saved_output_names)

    def get_config(self):
        return {**super().get_config(),
                "bert_config": self.bert_config.to_dict(),
                **self.task_config()}

    @classmethod
    def from_config(cls, config):
        from bert_tf.config import BertConfig
        config = dict(config)
        bert_config = BertConfig.from_dict(config.pop("bert_config"))
        return cls(bert_config, **config)
