"""compat.testing.assert_gradient_matches_forward on real TensorFlow: gradcheck for a custom gradient."""

import pytest

import compat
from tests.references.conftest import round_ste, sign_ste, softplus

VARIANTS = ["custom_gradient@eager_tape", "defun_grad_func@v1_session"]


def test_a_numerically_stable_gradient_passes_against_both_references():
    report = compat.testing.assert_gradient_matches_forward(softplus(), ["sum", "weighted", "second_order"],
                                                            variants=VARIANTS,
                                                            references=["finite_difference", "autodiff"])
    statuses = {(f.status, c.result.status) for c in report.cells for f in c.forward}
    assert {"same", "not_applicable"} == {status for status, _ in statuses} - {"not_compared"}
    assert all(cell == "unsupported" for status, cell in statuses if status == "not_compared")  # Defun 2nd order


def test_a_wrong_gradient_fails_naming_scenario_variants_direction_and_error():
    with pytest.raises(AssertionError) as caught:
        compat.testing.assert_gradient_matches_forward(softplus(1.1, "wrong_softplus"), ["weighted"],
                                                       variants=VARIANTS)
    message = str(caught.value)
    assert message.startswith("2 cell(s) compute a gradient that is not the derivative of the forward")
    assert ("spec `wrong_softplus`, scenario `weighted`, dtype float32, variants defun_grad_func@v1_session, "
            "custom_gradient@eager_tape: finite_difference differs") in message
    assert "  direction[" in message and "g.u is" in message and "abs error" in message
    assert message.endswith("finite_difference tolerances: |g.u - v.Ju| <= atol + rtol * (sum |g| |u| + |v.Ju|), "
                            "float32 rtol=0.0001 atol=1e-06")


def test_a_wrong_gradient_fails_against_autodiff_naming_the_input():
    with pytest.raises(AssertionError, match=r"autodiff differs\n  input_grad\[0\]: values differ at 6 of 6"):
        compat.testing.assert_gradient_matches_forward(softplus(1.1, "wrong_softplus"), ["sum"],
                                                       variants="custom_gradient@eager_tape", references="autodiff")


@pytest.mark.parametrize("spec", [sign_ste, round_ste])
def test_a_straight_through_estimator_is_not_differentiable_unless_allowed(spec):
    with pytest.raises(AssertionError, match="finite_difference not differentiable(.|\n)*allow_not_differentiable"):
        compat.testing.assert_gradient_matches_forward(spec(), ["sum"], variants="custom_gradient@eager_tape")
    compat.testing.assert_gradient_matches_forward(spec(), ["sum"], variants="custom_gradient@eager_tape",
                                                   allow_not_differentiable=True)


def test_a_failing_cell_fails_and_an_empty_reference_list_is_refused():
    import tensorflow as tf

    right = softplus()
    broken = compat.GradientSpec("broken", right.forward, lambda i, o, u: [tf.constant(1.0) / "x"],
                                 list(right.example_inputs))
    with pytest.raises(AssertionError, match="variant custom_gradient@eager_tape: the cell failed"):
        compat.testing.assert_gradient_matches_forward(broken, ["sum"], variants="custom_gradient@eager_tape")
    with pytest.raises(ValueError, match="needs a reference"):
        compat.testing.assert_gradient_matches_forward(right, ["sum"], references=[])


def test_absl_test_case_has_it_as_a_method():
    case = compat.testing.TestCase()
    with pytest.raises(case.failureException, match="finite_difference differs"):
        case.assertGradientMatchesForward(softplus(1.1, "wrong_softplus"), ["sum"],
                                          variants="custom_gradient@eager_tape")
