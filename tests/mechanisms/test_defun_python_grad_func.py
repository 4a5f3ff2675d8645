"""defun_python_grad_func builds what the hand-written Defun in its docstring builds, in a v1 Session."""

import numpy as np
import tensorflow as tf
from tensorflow.python.framework import function

import compat

X = np.array([1.0, -2.0, 3.0], np.float32)


def hand_written_input_grad(indices):
    def sign_grad(op, dy):
        return 0.5 * tf.convert_to_tensor(dy)

    @function.Defun(tf.float32, python_grad_func=sign_grad)
    def sign_ste(x):
        return tf.sign(x)

    with tf.Graph().as_default():
        x = tf.compat.v1.placeholder(tf.float32, [3])
        (grad,) = tf.compat.v1.gradients(tf.reduce_sum(tf.gather(sign_ste(x), indices)), [x])
        with tf.compat.v1.Session() as session:
            return session.run(grad, {x: X})


def test_matches_hand_written_defun_and_sees_indexed_slices():
    indices = [0, 0, 2]
    spec = compat.GradientSpec("python_grad_hand", tf.sign, lambda i, o, u: [0.5 * tf.convert_to_tensor(u[0])],
                               [X], op_type="Sign")
    (result,) = compat.run(spec, lambda y: tf.reduce_sum(tf.gather(y, indices)),
                           variants="defun_python_grad_func@v1_session")
    assert result.status == "ok"
    np.testing.assert_array_equal(result.input_grads[0], hand_written_input_grad(indices))
    (upstream,) = result.upstream
    assert upstream.kind == "indexed_slices"
    np.testing.assert_array_equal(upstream.indices, indices)
    np.testing.assert_array_equal(upstream.to_dense(), [2.0, 0.0, 1.0])


def test_unused_int_output_upstream_is_none():
    spec = compat.GradientSpec("int_out_py", lambda x: (2.0 * x, tf.cast(x, tf.int32)),
                               lambda i, o, u: [2.0 * u[0]], [X])
    (result,) = compat.run(spec, variants="defun_python_grad_func@v1_session")
    assert result.status == "ok", result
    assert [u.kind for u in result.upstream] == ["dense", "none"]


def test_a_gradient_written_for_dense_upstreams_fails_on_indexed_slices(seed_spec):
    (result,) = compat.run(seed_spec("dense_only"), lambda y: tf.reduce_sum(tf.gather(y, [1])),
                           variants="defun_python_grad_func@v1_session")
    assert result.status == "error"
    assert "gradient raised TypeError" in result.message and "IndexedSlices" in result.message
