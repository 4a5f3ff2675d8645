"""A product whose gate gets no gradient: RegisterGradient over a two-input op."""

import tensorflow as tf

GRADCOMPAT_ENTRIES = {"entry": [("float32", [3]), ("float32", [3])]}


@tf.RegisterGradient("GatedMulGrad")
def _gated_mul_grad(op, grad):
    x = op.inputs[0]
    gate = op.inputs[1]
    # Only the signal learns; the gate is treated as a constant.
    return grad * gate, None


def gated(x, gate):
    with tf.get_default_graph().gradient_override_map({"Mul": "GatedMulGrad"}):
        out = tf.multiply(x, gate)
    return out


def entry(x, w):
    return gated(x, tf.sigmoid(w)) + 0.1 * w
