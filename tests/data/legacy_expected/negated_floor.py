"""A floor whose gradient is the negated upstream, via the built-in "Neg" gradient."""

import tensorflow as tf


# Rewritten by gradcompat from gradient_override_map({"Floor": "Neg"}).
@tf.custom_gradient
def _floor_with_neg_grad(x):
    y = tf.floor(x)

    def grad(dy):
        return -dy

    return y, grad


GRADCOMPAT_ENTRIES = {"entry": [("float32", [3])]}


def reversed_floor(x):
    # Borrow the gradient of Neg: the upstream, negated.
    y = _floor_with_neg_grad(x)
    return y


def entry(x):
    return reversed_floor(x * 2.0) + tf.sin(x)
