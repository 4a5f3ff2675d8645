"""The `autodiff` reference on real TensorFlow: what a custom gradient changes against TensorFlow's own gradient."""

import numpy as np

import compat
from compat.downstream import Downstream
from compat.references import compute
from compat.references.base import check_cell
from compat.scenarios import SCENARIOS
from tests.references.conftest import X


def _checked(spec, scenario="weighted", variant="custom_gradient@eager_tape", dtype="float32"):
    downstream = SCENARIOS[scenario].downstream(spec)
    value = compute("autodiff", spec, downstream, dtype)
    (result,) = compat.run(spec, downstream, [variant])
    return value, check_cell(value, result, dtype)


def test_a_numerically_stable_rewrite_changes_nothing(specs):
    value, checked = _checked(specs["right"])
    assert value.status == "ok" and checked.status == "same", checked.detail
    import tensorflow as tf

    with tf.GradientTape() as tape:  # TensorFlow's own gradient is what the reference holds
        x = tf.constant(X)
        tape.watch(x)
        loss = SCENARIOS["weighted"].downstream(specs["right"]).loss(tf.math.log(1.0 + tf.exp(x)))
    np.testing.assert_allclose(value.input_grads[0], tape.gradient(loss, x).numpy())


def test_a_wrong_gradient_differs_naming_the_input_and_by_how_much(specs):
    _, checked = _checked(specs["wrong"])
    assert checked.status == "differs" and checked.where == "input_grad[0]"
    assert checked.max_abs is not None and checked.max_abs > 0.01
    assert "from autodiff" in checked.detail


def test_a_straight_through_sign_differs_everywhere(specs):
    value, checked = _checked(specs["sign"], "sum")
    assert not np.any(value.input_grads[0])  # TensorFlow's gradient of sign: zeros
    assert checked.status == "differs" and f"{X.size} of {X.size} elements" in checked.detail


def test_an_op_tensorflow_gives_no_gradient_is_not_differentiable(specs):
    value, checked = _checked(specs["round"], "sum")
    assert value.status == "ok" and value.input_grads == (None,)
    assert checked.status == "not_differentiable" and checked.reason == "TensorFlow's gradient is None"


def test_an_op_with_no_registered_gradient_is_not_differentiable_in_tensorflow_s_words():
    import tensorflow as tf

    spec = compat.GradientSpec("unique", lambda x: tf.unique(x)[0], lambda i, o, u: [u[0]],
                               [np.array([0.5, 1.5, 0.5], np.float32)])
    value = compute("autodiff", spec, Downstream("sum", lambda y: tf.reduce_sum(y)), "float32")
    assert value.status == "not_differentiable" and value.reason == "no gradient registered"
    assert "Unique" in value.message and "reference `autodiff`" in value.message


def test_second_order_and_variables_are_differentiated_like_the_cells(specs):
    value, checked = _checked(specs["right"], "second_order")
    assert value.status == "ok" and checked.status == "same", checked.detail
    spec = compat.CATALOGUE["variable_scale"]()  # its variable's gradient is scaled by 0.1: autodiff's is not
    value, checked = _checked(spec, "sum", "custom_gradient@function_tape")
    assert len(value.input_grads) == 2 and checked.status == "differs" and checked.where == "input_grad[1]"
