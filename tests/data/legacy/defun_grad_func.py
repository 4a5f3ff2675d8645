"""Gradient clipping through a Defun with a Defun grad_func."""

import tensorflow as tf
from tensorflow.python.framework import function


@function.Defun(tf.float32, tf.float32)
def _clip_bprop(x, dy):
    # Defun grad_func: takes (inputs..., output gradients...).
    return tf.clip_by_value(dy, -0.5, 0.5)


@function.Defun(tf.float32, grad_func=_clip_bprop)
def clip_grad_identity(x):
    return tf.identity(x)


GRADCOMPAT_ENTRIES = {"entry": [("float32", [4])]}


def entry(x):
    return clip_grad_identity(x) * 3.0
