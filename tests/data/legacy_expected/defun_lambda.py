"""Scale gradients with a lambda python_grad_func (as in Lingvo/tensor2tensor helpers)."""

import tensorflow.compat.v1 as tf

GRADCOMPAT_ENTRIES = {"entry": [("float32", [2, 2])]}


# scale the gradient down
@tf.custom_gradient
def scale_gradient(x):
    y = x

    def grad(dy):
        return dy * 0.1

    return y, grad


def entry(x):
    return tf.reduce_sum(scale_gradient(x * x), axis=1)
