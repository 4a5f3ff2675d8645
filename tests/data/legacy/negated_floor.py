"""A floor whose gradient is the negated upstream, via the built-in "Neg" gradient."""

import tensorflow as tf

GRADCOMPAT_ENTRIES = {"entry": [("float32", [3])]}


def reversed_floor(x):
    g = tf.get_default_graph()
    # Borrow the gradient of Neg: the upstream, negated.
    with g.gradient_override_map({"Floor": "Neg"}):
        y = tf.floor(x)
    return y


def entry(x):
    return reversed_floor(x * 2.0) + tf.sin(x)
