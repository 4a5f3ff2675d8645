"""compat.reports.summary: the one-screen answer says what was received, what fails and why, and points on."""

import dataclasses

import numpy as np
import pytest

from compat.reports import render
from compat.reports.summary import DETAILS_HINT, LISTED, WIDTH, upstream_word
from compat.reports.view import View
from compat.results import Upstream

SUMMARY = View(summary=True)


def _dense(*values, dtype=np.float32):
    return Upstream("dense", np.dtype(dtype).name, (len(values),), np.array(values, dtype))


@pytest.mark.parametrize("upstreams, word", [
    ((_dense(1.0, 1.0),), "ones"),
    ((_dense(0.0, 0.0),), "zeros"),
    ((_dense(3.0, 3.0, dtype=np.float16),), "all 3"),
    ((_dense(-0.5, 2.0),), "-0.5..2"),
    ((_dense(np.nan, 1.0),), "ones with NaN"),
    ((_dense(np.nan),), "NaN"),
    ((Upstream("indexed_slices", "float32", (1,), np.ones(1, np.float32), np.array([0]), (3,)),), "IndexedSlices"),
    ((Upstream("none"), _dense(1.0)), "None | ones"),
    ((Upstream("dense", "float32", (0,), np.zeros(0, np.float32)),), "empty"),
])
def test_an_upstream_is_said_in_a_word_per_output(upstreams, word):
    assert upstream_word(upstreams) == word


def test_a_real_report_answers_in_a_screen_with_the_upstream_per_scenario(report):
    text = render(report, "table", view=SUMMARY)
    lines = text.splitlines()
    assert len(lines) <= 25 and all(len(line) <= 2 * WIDTH for line in lines)
    assert lines[0].startswith(f"compat-check: TensorFlow {report.tensorflow}; 1 spec x 3 scenarios x "
                               f"{len(report.variants)} variants (float32)")
    scaled, against_forward = [line for line in lines if line.lstrip().startswith("scaled_ste")]
    assert scaled.startswith("  scaled_ste: ones in sum; IndexedSlices in gather; varies in second_order")
    assert against_forward == ("  scaled_ste: autodiff: differs in sum, gather, same in second_order; "
                               "finite_difference: not differentiable (piecewise constant) in sum, gather, "
                               "n/a in second_order")
    assert lines[-2:] == [DETAILS_HINT, render(report, "table", view=View(quiet=True)).splitlines()[-1]]
    assert "Migration pitfalls" in text and "Unexpected differences in native variants" in text


def test_the_whole_report_stays_one_flag_away(report):
    whole = render(report, "table")
    assert "What your gradient function received" in whole and DETAILS_HINT not in whole
    assert len(whole.splitlines()) > len(render(report, "table", view=SUMMARY).splitlines())


def test_an_unexpected_cell_is_one_line_with_its_first_difference(handmade_report):
    lines = render(handmade_report, "table", view=SUMMARY).splitlines()
    (line,) = [line for line in lines if line.startswith("  hand · float32 · sum · custom_gradient@eager_tape")]
    assert "[values] upstream[0]: values differ <b>here</b>" in line
    assert lines[-1].startswith("FAIL: 1 unexpected difference")


def test_long_lists_are_cut_and_counted(handmade_report):
    (cell, odd) = handmade_report.cells
    many = tuple(dataclasses.replace(odd, scenario=f"s{i}", result=dataclasses.replace(
        odd.result, message="line one\nline two " + "x" * 400)) for i in range(LISTED + 3))
    report = dataclasses.replace(handmade_report, cells=(cell, *many),
                                 scenarios=("sum", *(c.scenario for c in many)))
    lines = render(report, "table", view=SUMMARY).splitlines()
    assert "  ... 3 more (--details)" in lines
    assert all(len(line) <= 2 * WIDTH for line in lines)
