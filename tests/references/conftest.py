"""Specs whose forward is known: a numerically stable softplus (right), a wrong one, sign and round STEs, a jump."""

import numpy as np
import pytest

import compat

X = np.array([[0.3, -1.7, 2.2], [-0.45, 0.8, -2.6]], np.float32)


def _tf():
    import tensorflow as tf

    return tf


def softplus(scale: float = 1.0, name: str = "stable_softplus") -> compat.GradientSpec:
    """log(1 + exp(x)) with the numerically stable gradient sigmoid(x) * dy (times `scale`: 1 is right)."""
    tf = _tf()
    return compat.GradientSpec(name, lambda x: tf.math.log(1.0 + tf.exp(x)),
                               lambda i, o, u: [scale * tf.sigmoid(i[0]) * tf.convert_to_tensor(u[0])], [X])


def sign_ste() -> compat.GradientSpec:
    tf = _tf()
    return compat.GradientSpec("sign_ste", tf.sign, lambda i, o, u: [tf.convert_to_tensor(u[0])], [X])


def round_ste() -> compat.GradientSpec:
    tf = _tf()
    return compat.GradientSpec("round_ste", tf.round, lambda i, o, u: [tf.convert_to_tensor(u[0])], [X])


def jump(slope: float) -> compat.GradientSpec:
    """x + 100 sign(x - 0.3004) at x = 0.3: a jump 4e-4 away, which the larger step crosses and the smaller not."""
    tf = _tf()
    return compat.GradientSpec("jump", lambda x: x + 100.0 * tf.sign(x - 0.3004),
                               lambda i, o, u: [slope * tf.convert_to_tensor(u[0])], [np.array([0.3], np.float32)])


@pytest.fixture(name="specs", scope="module")
def specs_fixture():
    return {"right": softplus(), "wrong": softplus(1.1, "wrong_softplus"), "sign": sign_ste(), "round": round_ste()}
