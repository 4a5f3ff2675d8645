"""Gradient clipping registered with a RegisterGradient(...)(fn) call."""

import tensorflow.compat.v1 as tf

GRADCOMPAT_ENTRIES = {"entry": [("float32", [4])]}

CLIP_GRAD = "ClipGradient"


@tf.custom_gradient
def _identity_with_clip_grad(x):
    y = tf.identity(x)

    def _clip_grad(grad):
        """Clip the incoming gradient to [-0.1, 0.1]."""
        return tf.clip_by_value(grad, -0.1, 0.1)

    return y, _clip_grad


def clip_gradient(x):
    return _identity_with_clip_grad(x)


def entry(x):
    return tf.reduce_sum(clip_gradient(x * 5.0) ** 2)
