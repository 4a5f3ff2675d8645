"""forward_accumulator on real TensorFlow: what forward mode hands a backward function, and what it computes."""

import numpy as np
import pytest
import tensorflow as tf

import compat
from compat.contexts import ALL_CONTEXTS, CONTEXTS, Case
from compat.downstream import SUM, Downstream
from compat.scenarios import SCENARIOS

X = np.array([1.0, -2.0, 3.0], np.float32)


def _spec(forward, factor=0.5):
    return compat.GradientSpec("scaled", forward, lambda inputs, outputs, upstreams: [factor * upstreams[0]],
                               [X], op_type="Sign")


def test_the_backward_function_runs_once_per_pass_with_an_upstream_of_ones_whatever_the_downstream():
    spec = _spec(tf.sign)
    (result,) = compat.run(spec, SCENARIOS["weighted"].downstream(spec), "custom_gradient@forward_accumulator")
    assert result.status == "ok" and result.calls == X.size  # one pass per input element
    for call in result.upstreams:
        np.testing.assert_array_equal(call[0].value, np.ones_like(X))  # not the weights the tape hands over
    (tape,) = compat.run(spec, SCENARIOS["weighted"].downstream(spec), "custom_gradient@eager_tape")
    np.testing.assert_allclose(result.input_grads[0], tape.input_grads[0], rtol=1e-6)  # sign has no JVP of its own


def test_a_forward_with_a_jvp_of_its_own_keeps_it_and_the_custom_gradient_changes_nothing():
    spec = _spec(lambda x: x * x, factor=100.0)
    (result,) = compat.run(spec, None, "custom_gradient@forward_accumulator")
    (tape,) = compat.run(spec, None, "custom_gradient@eager_tape")
    assert result.calls == X.size  # called, with ones, ...
    np.testing.assert_allclose(result.input_grads[0], 2 * X)  # ... but the JVP is x*x's own
    np.testing.assert_allclose(tape.input_grads[0], np.full_like(X, 100.0))


def test_legacy_mechanisms_get_what_eager_code_gets():
    spec = _spec(tf.sign)
    results = {r.mechanism: r for r in compat.run(spec, None, "*@forward_accumulator")}
    assert results["override_map"].status == "not_called"  # a map entered eagerly is never consulted
    for mechanism in ("defun_grad_func", "defun_python_grad_func"):
        assert results[mechanism].status == "unsupported" and "eager" in results[mechanism].message


def _square():
    @tf.custom_gradient
    def square(x):
        return x * x, lambda dy: 2.0 * x * dy

    return lambda x, *variables: (square(x) * (variables[0] if variables else 1.0),)


@pytest.mark.parametrize("downstream, expected", [
    (Downstream("grad_ys", lambda y: y, output_gradients=lambda t: tf.constant([1.0, 10.0, 100.0])),
     2 * X * [1.0, 10.0, 100.0]),
    (Downstream("second", lambda y: tf.reduce_sum(y), order=2), np.full_like(X, 2.0)),
])
def test_grad_ys_and_second_order(downstream, expected):
    (outcome,) = ALL_CONTEXTS["forward_accumulator"].run([Case(_square, (X,), downstream)])
    np.testing.assert_allclose(outcome.input_grads[0], expected)


def test_variables_get_their_derivative_too():
    (outcome,) = ALL_CONTEXTS["forward_accumulator"].run([Case(_square, (X,), SUM, variables=(np.float32(3.0),))])
    np.testing.assert_allclose(outcome.input_grads[0], 3.0 * 2 * X)
    assert outcome.input_grads[1] == pytest.approx(float((X * X).sum()))


def test_forward_mode_is_opt_in_and_cross():
    context = ALL_CONTEXTS["forward_accumulator"]
    assert context.opt_in and not context.native and "forward_accumulator" not in CONTEXTS
