"""Module-level gradient reversal registered once at import."""

import tensorflow as tf


GRADCOMPAT_ENTRIES = {"entry": [("float32", [3])]}


@tf.RegisterGradient("GradReverse")
def _reverse_grad(unused_op, grad):
    return tf.negative(grad)


def grad_reverse(x):
    with tf.get_default_graph().gradient_override_map({"Identity": "GradReverse"}):
        y = tf.identity(x, name="reversed")
    return y


def entry(x):
    return tf.square(grad_reverse(x)) + x
