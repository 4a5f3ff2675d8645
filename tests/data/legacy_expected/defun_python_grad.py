"""Guided ReLU backward through Defun(python_grad_func=...)."""

import tensorflow as tf

GRADCOMPAT_ENTRIES = {"entry": [("float32", [6])]}


@tf.custom_gradient
def guided_relu(x):
    y = tf.nn.relu(x)

    def _guided_backward(grad):
        # Only positive gradients through positive inputs.
        return grad * tf.cast(x > 0.0, tf.float32) * tf.cast(grad > 0.0, tf.float32)

    return y, _guided_backward


def entry(x):
    return guided_relu(x) * tf.range(6, dtype=tf.float32) - 2.0
