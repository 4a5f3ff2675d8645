"""override_map: op_type overrides and generic IdentityN wrapping match the hand-written legacy code."""

import numpy as np
import pytest
import tensorflow as tf

import compat

WEIGHTS = np.array([2.0, -1.0, 0.5], np.float32)
X = np.array([1.0, -2.0, 3.0], np.float32)


def hand_written_input_grad(gradient_name):
    @tf.RegisterGradient(gradient_name)
    def _scaled_sign_grad(op, grad):
        return 0.5 * grad

    with tf.Graph().as_default() as graph:
        x = tf.compat.v1.placeholder(tf.float32, [3])
        with graph.gradient_override_map({"Sign": gradient_name}):
            y = tf.sign(x)
        (grad,) = tf.compat.v1.gradients(tf.reduce_sum(y * WEIGHTS), [x])
        with tf.compat.v1.Session() as session:
            return session.run(grad, {x: X})


def test_op_type_override_matches_hand_written_code(seed_spec):
    (result,) = compat.run(seed_spec("override_hand"), lambda y: tf.reduce_sum(y * WEIGHTS),
                           variants="override_map@v1_session")
    assert result.status == "ok"
    np.testing.assert_array_equal(result.input_grads[0], hand_written_input_grad("HandScaledSignGrad"))


def test_generic_wrapping_of_a_two_input_forward():
    spec = compat.GradientSpec("mul_custom", lambda a, b: a * b,
                               lambda i, o, u: [10.0 * u[0], 100.0 * u[0]], [X, X])
    (result,) = compat.run(spec, lambda y: tf.reduce_sum(y * WEIGHTS), variants="override_map@v1_session")
    assert result.status == "ok"
    np.testing.assert_allclose(result.input_grads[0], 10.0 * WEIGHTS)
    np.testing.assert_allclose(result.input_grads[1], 100.0 * WEIGHTS)


def test_generic_wrapping_ignored_by_a_tape_gives_the_forward_autodiff_gradient():
    spec = compat.GradientSpec("mul_ignored", lambda a, b: a * b, lambda i, o, u: [10.0 * u[0], u[0]], [X, 2 * X])
    (result,) = compat.run(spec, variants="override_map@eager_tape")
    assert result.status == "not_called"
    np.testing.assert_array_equal(result.input_grads[0], 2 * X)  # d(a*b)/da = b
    np.testing.assert_array_equal(result.input_grads[1], X)


def test_op_type_not_created_by_forward_is_an_error_naming_the_spec():
    spec = compat.GradientSpec("wrong_type", lambda x: tf.sign(x), lambda i, o, u: [u[0]], [X], op_type="Round")
    (result,) = compat.run(spec, variants="override_map@v1_session")
    assert result.status == "error"
    assert "spec `wrong_type`" in result.message and "op_type 'Round' matches no op" in result.message
    assert "'Sign'" in result.message


@pytest.mark.parametrize("repeat", range(2))
def test_each_build_registers_a_fresh_gradient_name(seed_spec, repeat):
    (result,) = compat.run(seed_spec("same_name"), variants="override_map@v1_session")
    assert result.status == "ok"
