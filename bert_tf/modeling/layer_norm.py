"""Layer normalization as Google's BERT uses it (`LayerNorm/gamma`, `beta`)."""

import keras
import tensorflow as tf

_HALF_PRECISION = ("float16", "bfloat16")


class LayerNorm(keras.layers.Layer):
    """Normalizes the last axis to zero mean and unit variance, then scales.

    y = (x - mean(x)) / sqrt(var(x) + epsilon) * gamma + beta

    with epsilon 1e-12 (Google's `tf.contrib.layers.layer_norm` call). Under
    a mixed-precision policy the statistics, `gamma` and `beta` stay in
    float32: inputs are converted to float32 on the way in and the result is
    cast back to the compute dtype.
    """

    def __init__(self, epsilon=1e-12, name="LayerNorm", **kwargs):
        super().__init__(name=name, **kwargs)
        self.epsilon = epsilon

    @property
    def input_dtype(self):
        # Keras converts floating inputs to this dtype before `call`.
        if self.compute_dtype in _HALF_PRECISION:
            return "float32"
        return self.compute_dtype

    def build(self, input_shape):
        width = input_shape[-1]
        if width is None:
            raise ValueError(
                f"{self.name}: the last dimension of the input must be known")
        # autocast=False: read in float32 even inside a float16 call.
        self.gamma = self.add_weight(
            name="gamma", shape=(width,), initializer="ones", autocast=False)
        self.beta = self.add_weight(
            name="beta", shape=(width,), initializer="zeros", autocast=False)

    def call(self, inputs):
        mean, variance = tf.nn.moments(inputs, axes=[-1], keepdims=True)
        normalized = (inputs - mean) * tf.math.rsqrt(variance + self.epsilon)
        outputs = normalized * self.gamma + self.beta
        return tf.cast(outputs, self.compute_dtype)

    def get_config(self):
        return {**super().get_config(), "epsilon": self.epsilon}
