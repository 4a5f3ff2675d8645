"""Guided ReLU backward through Defun(python_grad_func=...)."""

import tensorflow as tf
from tensorflow.python.framework.function import Defun

GRADCOMPAT_ENTRIES = {"entry": [("float32", [6])]}


def _guided_backward(op, grad):
    x = op.inputs[0]
    # Only positive gradients through positive inputs.
    return grad * tf.cast(x > 0.0, tf.float32) * tf.cast(grad > 0.0, tf.float32)


@Defun(tf.float32, python_grad_func=_guided_backward, func_name="GuidedRelu")
def guided_relu(x):
    return tf.nn.relu(x)


def entry(x):
    return guided_relu(x) * tf.range(6, dtype=tf.float32) - 2.0
