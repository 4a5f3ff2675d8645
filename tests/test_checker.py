"""The check matrix on real TensorFlow: verdicts, reference fallback, broken specs, exit codes."""

import sys

import numpy as np
import pytest
import tensorflow as tf

import compat
from compat.catalogue import CATALOGUE
from compat.checker import DEFAULT_REFERENCE, check


@pytest.fixture(scope="module")
def seed_report():
    return check([CATALOGUE["scaled_ste"](), CATALOGUE["multi_output_int"]()],
                 scenarios=["sum", "weighted", "gather", "unused_output", "second_order"])


def test_every_cell_is_a_run_and_native_variants_agree(seed_report):
    assert seed_report.unexpected == ()
    assert seed_report.exit_code == 0
    # Measured, not a harness bug: a tape outside the tf.function (or wrap_function) calls the gradient function
    # (custom_gradient, override_map, python_grad_func alike) again for the second order, the second call with
    # only zero upstreams (the int output's None): zero_calls, which cannot change the values (a gradient
    # function with side effects runs them twice).
    rerun = {(c.spec, c.variant) for c in seed_report.cells
             if c.scenario == "second_order" and any(d.kind == "zero_calls" for d in c.differences)}
    assert rerun == {("multi_output_int", f"{mechanism}@{context}") for context in ("outer_tape", "wrap_function")
                     for mechanism in ("custom_gradient", "override_map", "defun_python_grad_func")} | {
        (spec, "custom_gradient@saved_model") for spec in ("scaled_ste", "multi_output_int")} | {  # the loaded one too
        ("scaled_ste", "override_map@saved_model")}  # its gradient never reads `op`, so it saves (issue #24)
    assert seed_report.reference == DEFAULT_REFERENCE
    assert seed_report.tensorflow == tf.__version__
    expected_cells = (5 + 4) * len(compat.VARIANTS)  # unused_output is skipped for the one-output spec
    assert len(seed_report.cells) == expected_cells
    assert [(s.spec, s.scenario) for s in seed_report.skipped] == [("scaled_ste", "unused_output")]
    for cell in seed_report.cells:
        assert cell.result.variant == cell.variant and cell.result.downstream == cell.scenario


def test_cross_variants_show_the_tape_pitfall_without_failing(seed_report):
    cell = next(c for c in seed_report.cells
                if (c.spec, c.scenario, c.variant) == ("scaled_ste", "weighted", "override_map@eager_tape"))
    assert not cell.native and cell.status == "not_called" and not cell.unexpected
    assert {d.kind for d in cell.differences} == {"not_called", "values"}


def test_gather_upstream_is_sparse_in_graphs_and_compared_densified(seed_report):
    by_variant = {c.variant: c for c in seed_report.cells if (c.spec, c.scenario) == ("scaled_ste", "gather")}
    assert by_variant["custom_gradient@v1_session"].result.upstream[0].kind == "indexed_slices"
    assert by_variant[DEFAULT_REFERENCE].result.upstream[0].kind == "dense"
    kinds = {d.kind for d in by_variant["custom_gradient@v1_session"].differences}
    assert kinds == {"sparse_vs_dense"}
    assert not by_variant["custom_gradient@v1_session"].unexpected


def test_unused_outputs_none_vs_zeros(seed_report):
    cells = {c.variant: c for c in seed_report.cells if (c.spec, c.scenario) == ("multi_output_int", "unused_output")}
    reference_upstreams = cells[DEFAULT_REFERENCE].result.upstream
    # A Defun grad_func gets zeros for the unused int output; tf.gradients hands a Python gradient None.
    assert reference_upstreams[1].kind == "dense" and not np.any(reference_upstreams[1].value)
    session = cells["custom_gradient@v1_session"]
    assert session.result.upstream[1].kind == "none"
    assert ("none_vs_zeros", "upstream[1]") in {(d.kind, d.where) for d in session.differences}
    assert not session.unexpected


def test_second_order_falls_back_when_the_reference_cannot_run(seed_report):
    cells = {c.variant: c for c in seed_report.cells if (c.spec, c.scenario) == ("scaled_ste", "second_order")}
    assert cells[DEFAULT_REFERENCE].status == "unsupported"
    assert "SymbolicGradient" in cells[DEFAULT_REFERENCE].result.message
    fallback = cells["custom_gradient@eager_tape"]
    assert fallback.reference != DEFAULT_REFERENCE and not fallback.unexpected
    assert {d.kind for d in fallback.differences} <= {"static_shape"}, fallback.differences


def test_a_gradient_that_branches_on_static_shape_is_an_unexpected_difference():
    """Defun bodies see unknown shapes; code that branches on them learns something else after migration."""
    spec = compat.GradientSpec(
        "static_shape_branch", tf.identity,
        lambda i, o, u: [u[0] * (2.0 if u[0].shape.rank is None else 1.0)],
        [np.ones((2, 2), np.float32)], op_type="Identity")
    report = check([spec], scenarios=["sum"], variants=["custom_gradient@eager_tape", "override_map@v1_session"])
    assert report.exit_code == 1
    assert {c.variant for c in report.unexpected} == {"custom_gradient@eager_tape", "override_map@v1_session"}
    (difference,) = [d for d in report.unexpected[0].differences if d.where == "input_grad[0]"]
    assert difference.kind == "values" and difference.max_abs == pytest.approx(1.0)


def test_a_forward_that_raises_gives_error_cells_naming_the_spec():
    spec = compat.GradientSpec("broken_forward", lambda x: x.undefined_attribute, lambda i, o, u: [u[0]],
                               [np.ones(2, np.float32)])
    report = check([spec], variants=["custom_gradient@*"])
    assert report.exit_code == 1
    assert {c.status for c in report.cells} == {"error"}
    assert all("spec `broken_forward`" in c.result.message and "forward raised AttributeError" in c.result.message
               for c in report.cells)


def test_bad_names_raise_value_errors_listing_valid_ones():
    spec = CATALOGUE["sign_ste"]()
    with pytest.raises(ValueError, match=r"^dtypes: unknown dtype\(s\) \['int8'\]; choose from \['float32'"):
        check([spec], dtypes=["int8"])
    with pytest.raises(ValueError, match="unknown variant"):
        check([spec], reference="nope@v1_session")
    with pytest.raises(ValueError, match="unknown scenario"):
        check([spec], scenarios=["sideways"])


def test_a_gradient_that_fails_everywhere_fails_the_run_although_nothing_differs():
    spec = compat.GradientSpec("always_raises", tf.identity, lambda i, o, u: 1 / 0, [np.ones(2, np.float32)])
    report = check([spec], scenarios=["sum"], variants=list(compat.NATIVE_VARIANTS))
    assert {cell.status for cell in report.cells} == {"error"}
    assert all(not cell.differences for cell in report.cells)  # every variant fails alike
    assert report.exit_code == 1 and len(report.unexpected) == len(compat.NATIVE_VARIANTS)


def test_hostile_specs_are_named_errors_and_the_good_ones_still_run():
    good = CATALOGUE["scaled_ste"]()
    hostile = [
        compat.GradientSpec("returns_none", lambda x: None, lambda i, o, u: [u[0]], [np.ones(2, np.float32)]),
        compat.GradientSpec("returns_dict", lambda x: {"y": x}, lambda i, o, u: [u[0]], [np.ones(2, np.float32)]),
        compat.GradientSpec("returns_object", lambda x: object(), lambda i, o, u: [u[0]], [np.ones(2, np.float32)]),
        compat.GradientSpec("exits", lambda x: x * 2.0, lambda i, o, u: sys.exit(0), [np.ones(2, np.float32)]),
    ]
    report = check([hostile[0], good, *hostile[1:]], scenarios=["sum", "weighted"])
    assert report.exit_code == 1
    by_spec = {name: [c for c in report.cells if c.spec == name] for name in report.specs}
    assert all(c.status in ("same", "differs", "not_called", "unsupported", "not_observable")
               for c in by_spec["scaled_ste"])
    assert not any(c.unexpected for c in by_spec["scaled_ste"])
    for spec in hostile:
        native = [c for c in by_spec[spec.name] if c.native]
        assert native and all(c.status == "error" and c.unexpected for c in native), spec.name
        assert all(f"spec `{spec.name}`" in c.result.message for c in native)
    assert any("SystemExit(0)" in c.result.message for c in by_spec["exits"])


def test_empty_inputs_skip_the_gather_scenarios_with_a_reason():
    spec = compat.GradientSpec("empty", lambda x: x * 2.0, lambda i, o, u: [u[0]], [np.zeros((0,), np.float32)])
    report = check([spec], scenarios=["sum", "gather", "gather_twice"], variants=list(compat.NATIVE_VARIANTS))
    assert {(s.scenario, s.reason) for s in report.skipped} == {
        (name, "the first output is empty (shape [0]): there is no row to gather")
        for name in ("gather", "gather_twice")}
    assert report.exit_code == 0 and {c.scenario for c in report.cells} == {"sum"}


def test_opt_in_contexts_run_when_named_and_report_what_tensorflow_hands_over_without_failing():
    report = check([CATALOGUE["scaled_ste"]()], scenarios=["grad_ys"],
                   variants=["custom_gradient@jacobian_loop", "custom_gradient@forward_accumulator"])
    cells = {c.variant: c for c in report.cells}
    assert report.exit_code == 0 and report.unexpected == ()
    jacobian, forward = cells["custom_gradient@jacobian_loop"], cells["custom_gradient@forward_accumulator"]
    assert not jacobian.native and not forward.native
    # One one-hot row per element of y, and an upstream of ones per JVP: calls differ from the reference's one.
    assert {d.kind for d in jacobian.differences} >= {"calls"} and jacobian.result.calls > 1
    assert "calls" in {d.kind for d in forward.differences}
    assert not [d for d in jacobian.differences if d.where.startswith("input_grad")]  # contracted: the same
