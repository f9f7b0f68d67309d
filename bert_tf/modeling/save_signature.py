"""The signature `tf.saved_model.save(model, path)` traces: int32 inputs.

Keras 3 gives a subclassed model a default save signature whose inputs have
the model's float compute dtype, and the first `tf.gather` of token ids
then fails. A model of this project instead names its integer inputs, with
shape [batch_size, seq_length] (both dimensions free), through the hook
`tf.saved_model.save` reads when no `signatures` are given,
`_default_save_signature`.
"""

import tensorflow as tf


def int_feature_specs(names, dtype=tf.int32):
    """{name: TensorSpec([None, None], dtype, name)} for each name."""
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

    @tf.function(input_signature=[specs])
    def serving_default(features):
        outputs = model(features, training=False)
        if output_names is not None:
            outputs = {name: outputs[name] for name in output_names}
        return outputs

    return serving_default
