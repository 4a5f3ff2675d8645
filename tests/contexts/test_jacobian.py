"""jacobian_loop and jacobian_pfor on real TensorFlow: one-hot upstreams, one row per call, pfor's extra row."""

import numpy as np
import pytest
import tensorflow as tf

import compat
from compat.contexts import ALL_CONTEXTS, CONTEXTS
from compat.scenarios import SCENARIOS

X = np.array([1.0, -2.0, 3.0], np.float32)
STE = compat.GradientSpec("half_ste", lambda x: tf.sign(x), lambda inputs, outputs, upstreams: [0.5 * upstreams[0]],
                          [X], op_type="Sign")
JACOBIANS = ["jacobian_loop", "jacobian_pfor"]


def _one(variant: str, scenario: str) -> compat.VariantResult:
    (result,) = compat.run(STE, SCENARIOS[scenario].downstream(STE), variant)
    return result


@pytest.mark.parametrize("context", JACOBIANS)
def test_a_non_scalar_target_hands_one_one_hot_row_per_call(context):
    result = _one(f"custom_gradient@{context}", "grad_ys")
    reference = _one("custom_gradient@eager_tape", "grad_ys")
    rows = [call[0].value for call in result.upstreams]
    # Every row of the identity, in order (pfor first replays row 0: the traced iteration, run on its own).
    extra = 1 if context == "jacobian_pfor" else 0
    np.testing.assert_array_equal(np.stack(rows[extra:]), np.eye(X.size, dtype=np.float32))
    if extra:
        np.testing.assert_array_equal(rows[0], rows[1])
    assert result.calls == X.size + extra and result.traces == 1  # the Python gradient is traced once
    # The Jacobian contracted with grad_ys is the tape's gradient: the contexts stay comparable.
    np.testing.assert_allclose(result.input_grads[0], reference.input_grads[0], rtol=1e-6)
    assert reference.calls == 1 and not np.array_equal(reference.upstreams[0][0].value, rows[-1])


@pytest.mark.parametrize("context", JACOBIANS)
def test_a_scalar_target_is_one_row_the_tapes_upstream(context):
    result, reference = _one(f"custom_gradient@{context}", "weighted"), _one("custom_gradient@eager_tape", "weighted")
    for call in result.upstreams:
        np.testing.assert_array_equal(call[0].value, reference.upstreams[0][0].value)
    assert result.calls == (2 if context == "jacobian_pfor" else 1)


@pytest.mark.parametrize("context", JACOBIANS)
def test_override_map_is_ignored_by_the_tape_inside_the_function(context):
    result = _one(f"override_map@{context}", "sum")
    assert result.status == "not_called"
    np.testing.assert_array_equal(result.input_grads[0], np.zeros_like(X))  # sign's own gradient


def test_jacobians_are_opt_in_and_cross():
    for name in JACOBIANS:
        assert ALL_CONTEXTS[name].opt_in and not ALL_CONTEXTS[name].native and name not in CONTEXTS


def _recording_square():
    """x**2 whose gradient records each upstream with a numpy_function and counts its Python runs."""
    seen, python_runs = [], []

    @tf.custom_gradient
    def square(x):
        def grad(dy):
            python_runs.append(1)
            recorded = tf.numpy_function(lambda v: seen.append(v.copy()) or np.int64(0), [dy], tf.int64,
                                         stateful=True)
            with tf.control_dependencies([recorded]):
                return 2.0 * x * dy

        return x * x, grad

    return square, seen, python_runs


def test_eagerly_the_loop_runs_the_python_gradient_once_per_row_on_a_persistent_tape():
    square, seen, python_runs = _recording_square()
    x = tf.constant(X)
    with tf.GradientTape(persistent=True) as tape:  # TensorFlow refuses a non-persistent one here
        tape.watch(x)
        y = square(x)
    tape.jacobian(y, x, experimental_use_pfor=False)
    assert len(python_runs) == len(seen) == X.size
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = square(x)
    with pytest.raises(RuntimeError, match="persistent=True"):
        tape.jacobian(y, x, experimental_use_pfor=False)


@pytest.mark.parametrize("use_pfor", [False, True])
def test_batch_jacobian_hands_one_one_hot_column_for_every_batch_row_per_call(use_pfor):
    square, seen, _ = _recording_square()
    batch = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    with tf.GradientTape(persistent=not use_pfor) as tape:
        tape.watch(batch)
        y = square(batch)
    jacobian = tape.batch_jacobian(y, batch, experimental_use_pfor=use_pfor)
    assert jacobian.shape == (3, 2, 2)
    rows = seen[1:] if use_pfor else seen  # pfor again replays the traced first row
    assert len(rows) == 2
    for column, upstream in enumerate(rows):
        expected = np.zeros((3, 2), np.float32)
        expected[:, column] = 1.0
        np.testing.assert_array_equal(upstream, expected)
