"""compat.testing.assert_same_upstream / assert_same_gradients / run_variant on real TensorFlow."""

import numpy as np
import pytest
import tensorflow as tf

import compat
from compat.testing import assert_same_gradients, assert_same_upstream, run_variant


def ste() -> compat.GradientSpec:
    """A straight-through estimator: sign forward, identity gradient."""
    return compat.GradientSpec("ste", lambda x: tf.sign(x), lambda i, o, u: [u[0]],
                               [np.array([1.0, -2.0, 3.0], np.float32)])


def shape_branch() -> compat.GradientSpec:
    """A gradient that reads dy.shape: doubles where the rank is unknown (inside a Defun body)."""
    return compat.GradientSpec("shape_branch", tf.identity,
                               lambda i, o, u: [u[0] * (2.0 if u[0].shape.rank is None else 1.0)],
                               [np.ones((2, 2), np.float32)], op_type="Identity")


def test_native_variants_pass_and_the_report_is_returned():
    report = assert_same_upstream(ste(), scenarios=["sum"])
    assert {cell.variant for cell in report.cells} == set(compat.NATIVE_VARIANTS)
    assert_same_gradients(ste(), scenarios=["sum"])


def test_representation_differences_pass_unless_strict():
    assert_same_upstream(ste(), scenarios=["gather"], variants="custom_gradient@eager_tape")
    with pytest.raises(AssertionError, match=r"sparse_vs_dense at upstream\[0\]"):
        assert_same_upstream(ste(), scenarios=["gather"], variants="custom_gradient@eager_tape", strict=True)


def test_failure_shows_spec_scenario_dtype_variant_kind_values_and_index():
    with pytest.raises(AssertionError) as caught:
        assert_same_gradients(shape_branch(), scenarios=["sum"], variants=["custom_gradient@eager_tape"])
    text = str(caught.value)
    assert "1 cell(s) differ from the reference in the input gradients" in text
    assert ("spec `shape_branch`, scenario `sum`, dtype float32, variant custom_gradient@eager_tape: "
            "values at input_grad[0] (reference defun_grad_func@v1_session)") in text
    assert "first at index [0, 0] (1 here, 2 in the reference)" in text
    assert "  custom_gradient@eager_tape: [[1. 1.]\n" in text
    assert "  defun_grad_func@v1_session (reference): [[2. 2.]\n" in text


def test_cells_that_fail_alike_are_grouped_and_an_odd_reference_is_named():
    with pytest.raises(AssertionError) as caught:
        assert_same_gradients(shape_branch(), scenarios=["sum"], variants="custom_gradient@*")
    text = str(caught.value)
    assert text.count("values at input_grad[0]") == 1
    assert "variants custom_gradient@v1_session, custom_gradient@v1_tape, custom_gradient@eager_tape" in text
    assert "the reference is the odd one out" in text and "reference='custom_gradient@v1_session'" in text


def test_expected_pitfalls_pass_and_fail_once_tensorflow_stops_showing_them():
    assert_same_gradients(ste(), scenarios=["sum"], variants="*@eager_tape",
                          expected={"override_map@eager_tape": "not_called"})
    with pytest.raises(AssertionError) as caught:
        assert_same_gradients(ste(), scenarios=["sum"], variants="*@eager_tape",
                              expected={"custom_gradient@eager_tape": "not_called"})
    text = str(caught.value)
    assert "no longer shows 1 expected pitfall(s): its behaviour changed" in text
    assert "expected {'custom_gradient@eager_tape': 'not_called'}, but the cells show: " in text
    assert "override_map@eager_tape: not_called" in text  # the undeclared pitfall still fails


def test_unsupported_cells_pass_unless_strict_or_declared():
    assert_same_upstream(ste(), scenarios=["sum"], variants="defun_grad_func@eager_tape")
    with pytest.raises(AssertionError, match="unsupported at status"):
        assert_same_upstream(ste(), scenarios=["sum"], variants="defun_grad_func@eager_tape", strict=True)
    assert_same_upstream(ste(), scenarios=["sum"], variants="defun_grad_func@eager_tape", strict=True,
                         expected={"defun_grad_func@eager_tape": "unsupported"})


def test_run_variant_runs_one_variant():
    result = run_variant(ste(), "custom_gradient@eager_tape")
    assert result.variant == "custom_gradient@eager_tape" and result.status == "ok"
    np.testing.assert_array_equal(result.upstream[0].value, [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="runs one variant"):
        run_variant(ste(), "*@eager_tape")
