"""The `finite_difference` reference on real TensorFlow: float64 central differences v.Ju along seeded directions."""

import numpy as np
import pytest

import compat
from compat.references import compute
from compat.references.base import check_cell
from compat.references.finite_difference import DIRECTIONS
from compat.scenarios import SCENARIOS
from tests.references.conftest import jump


def _checked(spec, scenario="weighted", dtype="float32", variant="custom_gradient@eager_tape"):
    typed = compat.dtypes.cast_spec(spec, dtype) if dtype != "float32" else spec
    downstream = SCENARIOS[scenario].downstream(typed)
    value = compute("finite_difference", typed, downstream, dtype)
    (result,) = compat.run(typed, downstream, [variant])
    return value, result, check_cell(value, result, dtype)


@pytest.mark.parametrize("scenario", ["sum", "weighted", "square", "gather", "grad_ys"])
def test_the_right_gradient_matches_the_forward(specs, scenario):
    value, _, checked = _checked(specs["right"], scenario)
    assert value.status == "ok" and len(value.directions) == DIRECTIONS
    assert all(d.kind == "smooth" for d in value.directions)
    assert checked.status == "same", checked.detail


def test_a_wrong_gradient_differs_naming_the_direction_and_by_how_much(specs):
    _, _, checked = _checked(specs["wrong"])
    assert checked.status == "differs" and checked.where.startswith("direction[")
    assert "g.u is" in checked.detail and "abs error" in checked.detail and checked.max_abs > 1e-3


def test_the_directions_are_seeded_unit_vectors(specs):
    first, _, _ = _checked(specs["right"])
    again, _, _ = _checked(specs["right"])
    for a, b in zip(first.directions, again.directions, strict=True):
        np.testing.assert_array_equal(a.u[0], b.u[0])
        assert np.isclose(np.sum(a.u[0] ** 2), 1.0)


@pytest.mark.parametrize("name", ["sign", "round"])
def test_a_piecewise_constant_forward_is_not_differentiable(specs, name):
    value, _, checked = _checked(specs[name], "sum")
    assert all(d.kind == "flat" and d.quotients == (0.0, 0.0) for d in value.directions)
    assert checked.status == "not_differentiable" and checked.reason == "piecewise constant"
    assert "piecewise constant" in checked.detail


def test_a_jump_within_the_steps_is_not_differentiable():
    value, _, checked = _checked(jump(slope=2.0), "sum")
    assert all(d.kind == "unsettled" for d in value.directions)
    assert checked.status == "not_differentiable" and checked.reason == "a jump or kink"


def test_a_downstream_that_stops_the_gradient_hands_v_none(specs):
    value, result, checked = _checked(specs["wrong"], "stop_gradient")
    assert result.status == "not_called" and checked.status == "same", checked.detail
    assert all(d.quotients == (0.0, 0.0) and d.kind == "smooth" for d in value.directions)


def test_second_order_is_not_applicable(specs):
    value, _, checked = _checked(specs["right"], "second_order")
    assert value.status == "not_applicable" and checked.status == "not_applicable"


def test_tolerances_follow_the_dtype_the_gradient_was_computed_in(specs):
    value, result, checked = _checked(specs["right"], "weighted", dtype="float16")
    assert checked.status == "same", checked.detail
    assert check_cell(value, result, "float64").status == "differs"  # float16 values fail float64's bounds


def test_a_cell_without_gradients_is_not_compared(specs):
    import tensorflow as tf

    broken = compat.GradientSpec("broken", specs["right"].forward, lambda i, o, u: [tf.constant(1.0) / "x"],
                                 list(specs["right"].example_inputs))
    _, result, checked = _checked(broken)
    assert result.status == "error" and checked.status == "not_compared"
