"""The terminal table: header, legend, one matrix per spec and dtype, pitfalls, unexpected, verdict."""

from compat.reports import render
from compat.reports.table import abbreviations, pitfalls


def test_real_report_has_header_legend_matrix_and_verdict(report):
    text = render(report, "table")
    assert f"TensorFlow {report.tensorflow}, reference defun_grad_func@v1_session" in text
    assert "dgf defun_grad_func" in text and "v1s v1_session" in text
    assert "scaled_ste · float32" in text
    lines = text.splitlines()
    assert lines[-1] == "OK: every native variant agrees with defun_grad_func@v1_session"
    assert all(any(line.startswith(s + " ") for line in lines) for s in ("sum", "gather", "second_order"))
    assert max(len(line) for line in lines) <= 120


def test_override_map_under_tapes_is_a_pitfall(report):
    text = render(report, "table")
    assert "override_map under any GradientTape: gradient function never called in" in text
    found = {(p.mechanism, p.status): p for p in pitfalls(report)}
    assert set(found["override_map", "not_called"].contexts) >= {"v1_tape", "eager_tape", "function_tape"}
    assert all(not c.native for p in found.values() for c in p.cells)


def test_unexpected_native_difference_is_loud(handmade_report):
    text = render(handmade_report, "table")
    assert "≠!" in text
    assert "hand · float32 · sum · custom_gradient@eager_tape (vs defun_grad_func@v1_session):" in text
    assert "[values] upstream[0]: values differ <b>here</b>" in text
    assert text.splitlines()[-1].startswith("FAIL: 1 unexpected difference")


def test_abbreviations_are_short_and_unique():
    short = abbreviations(["v1_session", "v1_tape", "function_tape", "fancy_thing"])
    assert short == {"v1_session": "v1s", "v1_tape": "v1t", "function_tape": "ft", "fancy_thing": "ft2"}


def test_representation_only_differences_have_their_own_symbol(report):
    from compat.reports.table import REPRESENTATION_SYMBOL, cell_symbol, representation_only

    gather = [c for c in report.cells if c.scenario == "gather" and c.variant == "custom_gradient@eager_tape"]
    assert gather and all(representation_only(c) and cell_symbol(c) == REPRESENTATION_SYMBOL for c in gather)
    not_called = next(c for c in report.cells if c.status == "not_called" and c.differences)
    assert not representation_only(not_called) and cell_symbol(not_called) == "∅"
