"""A product whose gate gets no gradient: RegisterGradient over a two-input op."""

import tensorflow as tf

GRADCOMPAT_ENTRIES = {"entry": [("float32", [3]), ("float32", [3])]}


@tf.custom_gradient
def _mul_with_gated_mul_grad(x, gate):
    y = tf.multiply(x, gate)

    def _gated_mul_grad(grad):
        # Only the signal learns; the gate is treated as a constant.
        return grad * gate, None

    return y, _gated_mul_grad


def gated(x, gate):
    out = _mul_with_gated_mul_grad(x, gate)
    return out


def entry(x, w):
    return gated(x, tf.sigmoid(w)) + 0.1 * w
