"""Several ops overridden by one map, and maps nested inside each other."""

import tensorflow as tf


# Rewritten by gradcompat from gradient_override_map({"Sign": "Identity"}).
@tf.custom_gradient
def _sign_with_identity_grad(x):
    y = tf.sign(x)

    def grad(dy):
        return dy

    return y, grad


# Rewritten by gradcompat from gradient_override_map({"Round": "Identity"}).
@tf.custom_gradient
def _round_with_identity_grad(x):
    y = tf.round(x)

    def grad(dy):
        return dy

    return y, grad


# Rewritten by gradcompat from gradient_override_map({"Floor": "Identity"}).
@tf.custom_gradient
def _floor_with_identity_grad(x):
    y = tf.floor(x)

    def grad(dy):
        return dy

    return y, grad


GRADCOMPAT_ENTRIES = {
    "entry": [("float32", [3]), ("float32", [3])],
    "nested_entry": [("float32", [4])],
}


def hard_features(a, b):
    # One map for every rounding-like op of the block.
    s = _sign_with_identity_grad(a)
    r = _round_with_identity_grad(b * 2.0)
    f = _floor_with_identity_grad(a + b)
    return s + r * f


def nested(x):
    coarse = _round_with_identity_grad(x)
    fine = _sign_with_identity_grad(x - coarse)  # residual sign
    return coarse + 0.5 * fine


def entry(a, b):
    return hard_features(a, b)


def nested_entry(x):
    return nested(x * 3.0)
