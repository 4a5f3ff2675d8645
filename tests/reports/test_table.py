"""The terminal table: header, legend, one matrix per spec and dtype, pitfalls, unexpected, verdict."""

import re

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
    # A tape in the op's own graph looks gradients up by op type; a tape outside a tf.function or
    # wrap_function (outer_tape, wrap_function) differentiates the function, whose graph honours the override;
    # recompute_grad's eager tape looks it up by op type too.
    assert ("override_map under v1_tape, eager_tape, function_tape, xla_tape, mixed_precision, keras_fit and\n"
            "    recompute_grad: gradient function never called") in text
    found = {(p.mechanism, p.status): p for p in pitfalls(report)}
    assert set(found["override_map", "not_called"].contexts) == {"v1_tape", "eager_tape", "function_tape", "xla_tape",
                                                                 "mixed_precision", "keras_fit", "recompute_grad"}
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


def test_header_counts_agree_with_the_verdict(report):
    """Representation-only cells are counted as `other form`, so `differs` counts only what can change learning."""
    from compat.reports.table import display_counts, representation_only

    native = [c for c in report.cells if c.native]
    counts = display_counts(native)
    assert counts["differs"] == len(report.unexpected) == 0
    assert counts["other form"] == sum(representation_only(c) for c in native) > 0
    text = render(report, "table")
    assert f"  native: same {counts['same']}, other form {counts['other form']}, differs 0," in text
    assert text.splitlines()[-1].startswith("OK:")


def test_pitfalls_are_per_spec_and_count_cells(report):
    found = pitfalls(report)
    assert found and all(p.spec == "scaled_ste" for p in found)
    not_called = next(p for p in found if p.status == "not_called")
    assert not_called.sentence().startswith(f"scaled_ste: {not_called.mechanism} under ")
    assert "the input gradients TensorFlow computed instead (without your function)" in not_called.scope()
    assert " of these cells" in not_called.scope() and not re.search(r" \d+x", not_called.scope())


def test_only_differences_and_quiet(report, handmade_report):
    from compat.reports import View

    rows = [line for line in render(report, "table", view=View(only_differences=True)).splitlines()
            if line.startswith(("sum ", "gather ", "second_order "))]
    assert rows and all(any(mark in line for mark in "≈≠∅!") for line in rows)
    quiet = render(handmade_report, "table", view=View(quiet=True)).splitlines()
    assert quiet[0] == "Unexpected differences in native variants"
    assert quiet[-1].startswith("FAIL: 1 unexpected difference") and "legend" not in " ".join(quiet)


def test_the_spec_description_is_shown_in_every_format(report):
    description = report.descriptions["scaled_ste"]
    assert description and "seed" not in description
    for fmt in ("table", "markdown", "html", "json"):
        assert description in render(report, fmt), fmt


def test_values_of_a_never_called_cell_say_tensorflow_computed_them(report):
    from compat.reports.table import INSTEAD, where

    cell = next(c for c in report.cells if c.variant == "override_map@eager_tape" and c.scenario == "sum")
    values = next(d for d in cell.differences if d.kind == "values")
    assert cell.status == "not_called" and where(cell, values) == f"{values.where} ({INSTEAD})"
    assert INSTEAD in render(report, "html")


def test_unexpected_error_cells_show_their_reason_even_when_the_reference_fails_too():
    import numpy as np
    import tensorflow as tf

    import compat
    from compat.checker import check

    spec = compat.GradientSpec("always_raises", tf.identity, lambda i, o, u: 1 / 0, [np.ones(2, np.float32)])
    report = check([spec], scenarios=["sum"], variants=list(compat.NATIVE_VARIANTS))
    for fmt in ("table", "markdown"):
        text = render(report, fmt)
        assert text.count("gradient raised ZeroDivisionError: division by zero") >= len(compat.NATIVE_VARIANTS)
        assert "defun_grad_func@v1_session` (vs `defun_grad_func@v1_session" not in text
        assert "defun_grad_func@v1_session (vs defun_grad_func@v1_session)" not in text
        assert "the reference itself" in text


def test_error_cells_of_cross_variants_show_their_reason_once_per_reason():
    """A cross error is not unexpected, so no other section shows why it failed (only JSON did)."""
    import numpy as np
    import tensorflow as tf

    import compat
    from compat.checker import check

    def forward(x):
        if tf.executing_eagerly():
            raise ValueError("this forward only builds graphs")
        return tf.identity(x)

    spec = compat.GradientSpec("graph_only", forward, lambda i, o, u: [u[0]], [np.ones(2, np.float32)])
    report = check([spec], scenarios=["sum", "scaled"], variants=["override_map@eager_tape", "override_map@v1_session"])
    assert [c.status for c in report.cells if c.variant == "override_map@eager_tape"] == ["error", "error"]
    assert not report.unexpected
    for fmt in ("table", "markdown"):
        text = render(report, fmt)
        assert text.count("forward raised ValueError: this forward only builds graphs") == 1, text
        line = next(line for line in text.splitlines() if "this forward only builds graphs" in line)
        assert "graph_only" in line and "override_map@eager_tape" in line and "2 scenarios" in line, line
        assert "sum" in line and "scaled" in line, line


def test_a_pitfalls_difference_kinds_keep_the_order_they_were_found_in(handmade_report):
    """A set of kinds iterates in an order that changes with each process's string hashing, which made the
    HTML report of the same run differ from run to run."""
    import dataclasses

    from compat.comparison import Difference, Location
    from compat.reports.table import Pitfall

    cell = handmade_report.cells[1]
    for kinds in (("zero_calls", "none_vs_zeros"), ("none_vs_zeros", "zero_calls")):
        differences = tuple(Difference(kind, Location("calls"), "detail") for kind in kinds)
        pitfall = Pitfall("hand", "custom_gradient", "differs", ("eager_tape",),
                          (dataclasses.replace(cell, differences=differences),), ("sum",), True)
        assert pitfall.scope().endswith(f"cells by difference: {kinds[0]} in 1, {kinds[1]} in 1")
