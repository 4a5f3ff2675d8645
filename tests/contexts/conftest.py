"""Ops every context test runs: a square with its true gradient, and ops that fail to build or at run time."""

import numpy as np
import tensorflow as tf

X = np.array([1.0, -2.0, 3.0], np.float32)


def square_op():
    """x**2 with its true gradient written by hand, so second order is 2 everywhere."""

    @tf.custom_gradient
    def square(x):
        def grad(dy):
            return 2.0 * x * dy

        return x * x, grad

    return lambda x: (square(x),)


def failing_build():
    raise RuntimeError("cannot build this one")


def failing_at_run_time():
    """Builds fine everywhere; its gradient fails when it runs."""

    @tf.custom_gradient
    def checked(x):
        def grad(dy):
            check = tf.debugging.Assert(tf.reduce_all(x > 100.0), [x])
            with tf.control_dependencies([check]):
                return tf.identity(dy)

        return tf.identity(x), grad

    return lambda x: (checked(x),)
