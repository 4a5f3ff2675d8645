"""A two-input, two-output Defun with a python gradient that reads outputs."""

import tensorflow.compat.v1 as tf

GRADCOMPAT_ENTRIES = {
    "entry": [("float32", [3]), ("float32", [3])],
    "first_only": [("float32", [3]), ("float32", [3])],
}


@tf.custom_gradient
def prod_and_sum(a, b):
    prod = a * b
    y = prod, a + b

    def _pair_grad(g_prod, g_sum):
        prod = prod_and_sum(a, b)[0]
        # d(prod)/da = b, d(sum)/da = 1; the product term is damped by |prod|.
        damp = 1.0 / (1.0 + tf.abs(prod))
        return [g_prod * b * damp + g_sum, g_prod * a * damp + g_sum]

    return y, _pair_grad


def entry(a, b):
    p, s = prod_and_sum(a, b)
    return p + 2.0 * s


def first_only(a, b):
    return prod_and_sum(a, b)[0]
