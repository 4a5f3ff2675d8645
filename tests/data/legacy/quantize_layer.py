"""A Keras-free quantization layer object with a sign STE inside a method."""

import tensorflow as tf

GRADCOMPAT_ENTRIES = {"entry": [("float32", [4])]}


class BinaryActivation(object):
    """y = scale * sign(x), trained with a straight-through estimator."""

    def __init__(self, scale=0.5):
        self.scale = scale

    def __call__(self, x):
        with tf.get_default_graph().gradient_override_map({"Sign": "Identity"}), tf.name_scope("binary"):
            y = tf.sign(x) * self.scale
        return y


def entry(x):
    layer = BinaryActivation(scale=0.25)
    return layer(x) * x + layer(x - 0.5)
