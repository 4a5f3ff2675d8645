"""Module-level gradient reversal registered once at import."""

import tensorflow as tf


GRADCOMPAT_ENTRIES = {"entry": [("float32", [3])]}


@tf.custom_gradient
def _identity_with_reverse_grad(x):
    y = tf.identity(x, name="reversed")

    def _reverse_grad(grad):
        return tf.negative(grad)

    return y, _reverse_grad


def grad_reverse(x):
    y = _identity_with_reverse_grad(x)
    return y


def entry(x):
    return tf.square(grad_reverse(x)) + x
