"""A two-input, two-output Defun with a python gradient that reads outputs."""

import tensorflow.compat.v1 as tf
from tensorflow.python.framework import function

GRADCOMPAT_ENTRIES = {
    "entry": [("float32", [3]), ("float32", [3])],
    "first_only": [("float32", [3]), ("float32", [3])],
}


def _pair_grad(op, g_prod, g_sum):
    a, b = op.inputs[0], op.inputs[1]
    prod = op.outputs[0]
    # d(prod)/da = b, d(sum)/da = 1; the product term is damped by |prod|.
    damp = 1.0 / (1.0 + tf.abs(prod))
    return [g_prod * b * damp + g_sum, g_prod * a * damp + g_sum]


@function.Defun(tf.float32, tf.float32, python_grad_func=_pair_grad)
def prod_and_sum(a, b):
    prod = a * b
    return prod, a + b


def entry(a, b):
    p, s = prod_and_sum(a, b)
    return p + 2.0 * s


def first_only(a, b):
    return prod_and_sum(a, b)[0]
