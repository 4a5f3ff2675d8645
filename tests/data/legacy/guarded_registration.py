"""A registration guarded by a module flag, so calling twice does not register twice."""

import tensorflow as tf

GRADCOMPAT_ENTRIES = {"entry": [("float32", [3])]}

GRAD_DEFINED = False


def scaled_identity(x):
    global GRAD_DEFINED
    if not GRAD_DEFINED:
        @tf.RegisterGradient("FGGrad")
        def _fg_grad(op, grad):
            return grad * 0.25  # damp the gradient four times

        GRAD_DEFINED = True
    g = tf.get_default_graph()
    with g.gradient_override_map({"Identity": "FGGrad"}):
        return tf.identity(x)


def entry(x):
    return scaled_identity(x) + scaled_identity(2.0 * x)
