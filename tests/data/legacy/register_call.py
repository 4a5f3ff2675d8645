"""Gradient clipping registered with a RegisterGradient(...)(fn) call."""

import tensorflow.compat.v1 as tf

GRADCOMPAT_ENTRIES = {"entry": [("float32", [4])]}

CLIP_GRAD = "ClipGradient"


def _clip_grad(op, grad):
    """Clip the incoming gradient to [-0.1, 0.1]."""
    del op  # unused
    return tf.clip_by_value(grad, -0.1, 0.1)


tf.RegisterGradient(CLIP_GRAD)(_clip_grad)


def clip_gradient(x):
    g = tf.get_default_graph()
    with g.gradient_override_map({"Identity": CLIP_GRAD}):
        return tf.identity(x)


def entry(x):
    return tf.reduce_sum(clip_gradient(x * 5.0) ** 2)
