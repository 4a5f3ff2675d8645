"""The probe records at the gradient function's entry, each time it runs, in eager and in graphs."""

import numpy as np
import tensorflow as tf

import compat
from compat.mechanisms import MECHANISMS
from compat.probe import Probe

X = np.array([1.0, -2.0, 3.0], np.float32)


def _spec(name="probe"):
    return compat.GradientSpec(name, lambda x: 3.0 * x, lambda i, o, u: [3.0 * u[0]], [X])


def test_each_eager_call_is_recorded_with_its_own_upstream():
    probe = Probe(_spec(), "custom_gradient@eager_tape")
    op = MECHANISMS["custom_gradient"].build(probe)
    x = tf.constant(X)
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.reduce_sum(op(x)[0] * 2.0) + tf.reduce_sum(op(x)[0] * 5.0)
    tape.gradient(loss, x)
    assert probe.traces == 2 and len(probe.calls) == 2
    received = sorted(call[0].value[0] for call in probe.calls)
    assert received == [2.0, 5.0]


def test_graph_build_without_run_records_nothing_then_each_run_records():
    probe = Probe(_spec(), "override_map@v1_session")
    with tf.Graph().as_default():
        x = tf.compat.v1.placeholder(tf.float32, [3])
        (grad,) = tf.compat.v1.gradients(tf.reduce_sum(MECHANISMS["override_map"].build(probe)(x)[0]), [x])
        assert probe.traces == 1 and probe.calls == []
        with tf.compat.v1.Session() as session:
            session.run(grad, {x: X})
            session.run(grad, {x: X})
    assert len(probe.calls) == 2
    probe.reset_calls()
    assert probe.calls == [] and probe.traces == 1


def test_capture_inside_a_defun_body_survives_garbage_collection():
    import gc

    probe = Probe(_spec(), "defun_grad_func@v1_session")
    with tf.Graph().as_default():
        x = tf.compat.v1.placeholder(tf.float32, [3])
        (grad,) = tf.compat.v1.gradients(tf.reduce_sum(MECHANISMS["defun_grad_func"].build(probe)(x)[0]), [x])
        gc.collect()
        with tf.compat.v1.Session() as session:
            value = session.run(grad, {x: X})
    np.testing.assert_array_equal(value, [3.0, 3.0, 3.0])
    np.testing.assert_array_equal(probe.calls[0][0].value, [1.0, 1.0, 1.0])


def test_first_user_error_wins_and_names_spec_and_variant():
    probe = Probe(_spec("named"), "custom_gradient@v1_tape")
    first = probe.fail("first problem")
    probe.fail("second problem")
    assert probe.error is first
    assert str(first) == "spec `named`, variant `custom_gradient@v1_tape`: first problem"
