"""A registration guarded by a module flag, so calling twice does not register twice."""

import tensorflow as tf

GRADCOMPAT_ENTRIES = {"entry": [("float32", [3])]}

GRAD_DEFINED = False


def scaled_identity(x):
    global GRAD_DEFINED
    @tf.custom_gradient
    def _identity_with_fg_grad(x):
        y = tf.identity(x)

        def _fg_grad(grad):
            return grad * 0.25  # damp the gradient four times

        return y, _fg_grad

    if not GRAD_DEFINED:
        GRAD_DEFINED = True
    return _identity_with_fg_grad(x)


def entry(x):
    return scaled_identity(x) + scaled_identity(2.0 * x)
