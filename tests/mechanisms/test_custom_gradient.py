"""custom_gradient: the TF2 mechanism matches the hand-written decorator, in every context."""

import numpy as np
import pytest
import tensorflow as tf

import compat

WEIGHTS = np.array([2.0, -1.0, 0.5], np.float32)
X = np.array([1.0, -2.0, 3.0], np.float32)


def hand_written_input_grad():
    @tf.custom_gradient
    def sign_ste(x):
        y = tf.sign(x)

        def grad(dy):
            return 0.5 * dy

        return y, grad

    x = tf.constant(X)
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.reduce_sum(sign_ste(x) * WEIGHTS)
    return tape.gradient(loss, x).numpy()


@pytest.mark.parametrize("context", [name for name in compat.CONTEXTS if name != "saved_model_stripped"])
def test_matches_hand_written_decorator(seed_spec, context):  # stripped: tests/contexts/test_saved_model.py
    (result,) = compat.run(seed_spec(f"custom_{context}"), lambda y: tf.reduce_sum(y * WEIGHTS),
                           variants=f"custom_gradient@{context}")
    assert result.status == "ok"
    np.testing.assert_array_equal(result.input_grads[0], hand_written_input_grad())


def test_multi_output_grad_receives_one_upstream_per_output():
    spec = compat.GradientSpec("two_out", lambda x: (2.0 * x, 3.0 * x),
                               lambda i, o, u: [2.0 * u[0] + 3.0 * u[1]], [X])
    (result,) = compat.run(spec, lambda a, b: tf.reduce_sum(a) + tf.reduce_sum(b * 10.0),
                           variants="custom_gradient@eager_tape")
    assert result.status == "ok"
    np.testing.assert_array_equal(result.upstream[1].value, np.full(3, 10.0, np.float32))
    np.testing.assert_array_equal(result.input_grads[0], np.full(3, 32.0, np.float32))
