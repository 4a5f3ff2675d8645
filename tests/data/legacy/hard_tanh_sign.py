"""Binarization with the hard-tanh straight-through estimator (BinaryNet)."""

import tensorflow.compat.v1 as tf
from tensorflow.python.framework import ops

GRADCOMPAT_ENTRIES = {"entry": [("float32", [5])]}


@ops.RegisterGradient("HardTanhSTE")
def _hard_tanh_ste(op, grad):
    """Pass the gradient where |x| <= 1, cancel it elsewhere."""
    x = op.inputs[0]
    y = op.outputs[0]
    keep = tf.cast(tf.abs(x) <= 1.0, grad.dtype)
    return [grad * keep * tf.ones_like(y)]


def binarize(x):
    g = ops.get_default_graph()
    with ops.name_scope("Binarized"):
        with g.gradient_override_map({"Sign": "HardTanhSTE"}):
            return tf.sign(x)


def entry(x):
    return binarize(x * 1.5) * x
