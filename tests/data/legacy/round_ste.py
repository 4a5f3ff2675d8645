"""Uniform quantizer: round to a fixed grid, straight-through backward."""

import tensorflow.compat.v1 as tf

GRADCOMPAT_ENTRIES = {
    "entry": [("float32", [5])],
    "floor_entry": [("float32", [2, 3])],
}

LEVELS = 4.0


def quantize(x, levels=LEVELS):
    g = tf.get_default_graph()
    with g.gradient_override_map({"Round": "Identity"}):
        scaled = x * levels  # Mul is not overridden
        q = tf.round(scaled) / levels
    return q


def floor_quantize(x):
    with tf.get_default_graph().gradient_override_map({"Floor": "Identity"}):
        return tf.floor(x * 3.0) / 3.0  # floor, straight through


def entry(x):
    return quantize(tf.tanh(x))


def floor_entry(x):
    return floor_quantize(x) + x
