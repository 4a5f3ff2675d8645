"""Uniform quantizer: round to a fixed grid, straight-through backward."""

import tensorflow.compat.v1 as tf


# Rewritten by gradcompat from gradient_override_map({"Round": "Identity"}).
@tf.custom_gradient
def _round_with_identity_grad(x):
    y = tf.round(x)

    def grad(dy):
        return dy

    return y, grad


# Rewritten by gradcompat from gradient_override_map({"Floor": "Identity"}).
@tf.custom_gradient
def _floor_with_identity_grad(x):
    y = tf.floor(x)

    def grad(dy):
        return dy

    return y, grad


GRADCOMPAT_ENTRIES = {
    "entry": [("float32", [5])],
    "floor_entry": [("float32", [2, 3])],
}

LEVELS = 4.0


def quantize(x, levels=LEVELS):
    scaled = x * levels  # Mul is not overridden
    q = _round_with_identity_grad(scaled) / levels
    return q


def floor_quantize(x):
    return _floor_with_identity_grad(x * 3.0) / 3.0  # floor, straight through


def entry(x):
    return quantize(tf.tanh(x))


def floor_entry(x):
    return floor_quantize(x) + x
