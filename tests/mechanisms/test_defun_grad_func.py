"""defun_grad_func builds what the hand-written Defun in its docstring builds, in a v1 Session."""

import numpy as np
import tensorflow as tf
from tensorflow.python.framework import function

import compat

WEIGHTS = np.array([2.0, -1.0, 0.5], np.float32)
X = np.array([1.0, -2.0, 3.0], np.float32)


def hand_written_input_grad():
    @function.Defun(tf.float32, tf.float32)
    def sign_grad(x, dy):
        return 0.5 * dy

    @function.Defun(tf.float32, grad_func=sign_grad)
    def sign_ste(x):
        return tf.sign(x)

    with tf.Graph().as_default():
        x = tf.compat.v1.placeholder(tf.float32, [3])
        (grad,) = tf.compat.v1.gradients(tf.reduce_sum(sign_ste(x) * WEIGHTS), [x])
        with tf.compat.v1.Session() as session:
            return session.run(grad, {x: X})


def test_matches_hand_written_defun(seed_spec):
    (result,) = compat.run(seed_spec("defun_hand"), lambda y: tf.reduce_sum(y * WEIGHTS),
                           variants="defun_grad_func@v1_session")
    assert result.status == "ok"
    np.testing.assert_array_equal(result.input_grads[0], hand_written_input_grad())
    np.testing.assert_array_equal(result.upstream[0].value, WEIGHTS)


def test_none_gradient_becomes_zeros_as_a_defun_user_must_write():
    spec = compat.GradientSpec("none_grad", lambda a, b: a * b, lambda i, o, u: [u[0] * i[1], None], [X, X])
    (result,) = compat.run(spec, variants="defun_grad_func@v1_session")
    assert result.status == "ok"
    np.testing.assert_array_equal(result.input_grads[0], X)
    np.testing.assert_array_equal(result.input_grads[1], np.zeros(3, np.float32))


def test_int_output_gets_a_dense_upstream_in_the_grad_defun():
    spec = compat.GradientSpec("int_out", lambda x: (2.0 * x, tf.cast(x, tf.int32)),
                               lambda i, o, u: [2.0 * u[0]], [X])
    (result,) = compat.run(spec, variants="defun_grad_func@v1_session")
    assert result.status == "ok", result
    assert [u.kind for u in result.upstream] == ["dense", "dense"]
    assert result.upstream[1].dtype == "int32"


def _counting_forward(runs: list):
    """sign(x) that counts its runs (a side effect, as a stateful or random op would have)."""
    def forward(x):
        counted = tf.numpy_function(lambda v: (runs.append(1), v)[1], [x], tf.float32, stateful=True)
        return tf.sign(tf.reshape(counted, tf.shape(x)))

    return forward


def _hand_written_forward_runs() -> int:
    """How often the forward runs when the hand-written Defun of the docstring (gradient 0.5 * dy) is trained."""
    runs: list = []

    @function.Defun(tf.float32, tf.float32)
    def sign_grad(x, dy):
        return 0.5 * dy

    @function.Defun(tf.float32, grad_func=sign_grad)
    def sign_ste(x):
        return _counting_forward(runs)(x)

    with tf.Graph().as_default():
        x = tf.compat.v1.placeholder(tf.float32, [3])
        (grad,) = tf.compat.v1.gradients(tf.reduce_sum(sign_ste(x)), [x])
        with tf.compat.v1.Session() as session:
            session.run(grad, {x: X})
    return len(runs)


def test_the_forward_runs_in_the_grad_defun_only_when_the_gradient_uses_the_outputs():
    """A grad_func is handed (inputs, dys), not the outputs: the adapter recomputed the forward inside it for every
    spec, running its ops (here a side effect) twice per step where the hand-written Defun runs them once."""
    runs: list = []
    spec = compat.GradientSpec("counted", _counting_forward(runs), lambda i, o, u: [0.5 * u[0]], [X])
    (result,) = compat.run(spec, variants="defun_grad_func@v1_session")
    assert result.status == "ok" and result.calls == 1, result.message
    assert len(runs) == _hand_written_forward_runs() == 1

    runs.clear()
    uses_outputs = compat.GradientSpec("counted_outputs", _counting_forward(runs),
                                       lambda i, o, u: [0.5 * u[0] * tf.abs(o[0])], [X])
    (result,) = compat.run(uses_outputs, variants="defun_grad_func@v1_session")
    assert result.status == "ok", result.message
    np.testing.assert_array_equal(result.input_grads[0], np.full(3, 0.5, np.float32))
    assert len(runs) == 2  # the outputs it reads are computed again in the gradient, as its users must
