"""A Keras-free quantization layer object with a sign STE inside a method."""

import tensorflow as tf


# Rewritten by gradcompat from gradient_override_map({"Sign": "Identity"}).
@tf.custom_gradient
def _sign_with_identity_grad(x):
    y = tf.sign(x)

    def grad(dy):
        return dy

    return y, grad


GRADCOMPAT_ENTRIES = {"entry": [("float32", [4])]}


class BinaryActivation(object):
    """y = scale * sign(x), trained with a straight-through estimator."""

    def __init__(self, scale=0.5):
        self.scale = scale

    def __call__(self, x):
        with tf.name_scope("binary"):
            y = _sign_with_identity_grad(x) * self.scale
        return y


def entry(x):
    layer = BinaryActivation(scale=0.25)
    return layer(x) * x + layer(x - 0.5)
