"""Activation functions selectable by `bert_config.json`'s `hidden_act`."""

import math

import tensorflow as tf

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def gelu(x):
    """Gaussian Error Linear Unit, tanh approximation (Google's `gelu`).

    gelu(x) = x * 0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))

    Args:
      x: float tensor.

    Returns:
      `x` with the activation applied, same shape and dtype.
    """
    cdf = 0.5 * (1.0 + tf.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * (x * x * x))))
    return x * cdf


def gelu_exact(x):
    """Gaussian Error Linear Unit with the exact normal CDF (`"gelu_exact"`).

    gelu(x) = x * 0.5 * (1 + erf(x / sqrt(2)))

    Not in Google's code: Hugging Face's `"gelu"` is this form, so a model
    converted from Hugging Face with `--exact_gelu` reproduces its outputs.

    Args:
      x: float tensor.

    Returns:
      `x` with the activation applied, same shape and dtype.
    """
    return tf.nn.gelu(x, approximate=False)


def linear(x):
    """The identity: Google's `"linear"` (no activation)."""
    return x


_ACTIVATIONS = {
    "gelu": gelu,
    "relu": tf.nn.relu,
    "tanh": tf.tanh,
    "linear": linear,
    "gelu_exact": gelu_exact,
}

SUPPORTED_ACTIVATIONS = tuple(_ACTIVATIONS)


def get_activation(name):
    """Maps an activation name to its function, as Google's `get_activation`.

    Args:
      name: "gelu", "relu", "tanh", "linear" or "gelu_exact" (any case). As in Google's
        code, `None` or "" mean linear and a callable is returned unchanged.

    Returns:
      A function from a tensor to a tensor of the same shape.

    Raises:
      ValueError: `name` is a string that names no supported activation.
    """
    if callable(name):
        return name
    if name is None or name == "":
        return linear
    if not isinstance(name, str):
        raise ValueError(
            f"activation must be a name or a function, got {name!r}")
    activation = _ACTIVATIONS.get(name.lower())
    if activation is None:
        raise ValueError(
            f"Unsupported activation {name!r}; supported: "
            f"{', '.join(SUPPORTED_ACTIVATIONS)}")
    return activation
