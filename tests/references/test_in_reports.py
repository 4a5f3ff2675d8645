"""The references in a check: every cell compared with them, never unexpected, in every report format."""

import json

import jsonschema
import pytest

import compat
from compat.reports import render
from compat.reports.json_report import SCHEMA_PATH
from compat.reports.view import View

VARIANTS = ["defun_grad_func@v1_session", "custom_gradient@eager_tape", "override_map@eager_tape"]


@pytest.fixture(name="report", scope="module")
def report_fixture(specs):
    return compat.check([specs["right"], specs["sign"]], scenarios=["sum", "weighted", "second_order"],
                        variants=VARIANTS)


def test_every_cell_is_compared_with_both_references_and_none_is_unexpected(report):
    assert report.references == ("autodiff", "finite_difference")
    assert all([c.reference for c in cell.forward] == ["autodiff", "finite_difference"] for cell in report.cells)
    sign = [c for c in report.cells if c.spec == "sign_ste" and c.scenario == "sum" and c.result.calls]
    assert sign and all({f.status for f in c.forward} == {"differs", "not_differentiable"} for c in sign)
    assert report.exit_code == 0  # the difference is the information, not a failure


def test_the_values_are_computed_once_per_scenario(report):
    values = report.forward_values
    assert len(values) == 2 * 2 * 3  # references x specs x scenarios
    cells = [c for c in report.cells if c.spec == "stable_softplus" and c.scenario == "sum"]
    assert len({id(c.forward[0].value) for c in cells}) == 1


def test_no_references_when_none_are_asked_for(specs):
    report = compat.check([specs["right"]], scenarios=["sum"], variants=VARIANTS[:2], references=[])
    assert report.references == () and all(not cell.forward for cell in report.cells)
    assert "references" not in json.loads(render(report, "json"))
    assert "against the forward itself" not in render(report, "table", view=View(summary=True))


def test_unknown_references_are_named():
    with pytest.raises(ValueError, match=r"unknown reference\(s\) \['finite'\]; choose from \['autodiff'"):
        compat.check([], references=["finite"])


def test_json_holds_every_comparison_and_value_and_keeps_to_the_schema(report):
    data = json.loads(render(report, "json"))
    jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text())).validate(data)
    from compat.releases.schema import validate

    validate(data, json.loads(SCHEMA_PATH.read_text()))  # the standard-library checker compat.releases uses
    assert data["references"]["names"] == ["autodiff", "finite_difference"]
    kinds = {d["kind"] for v in data["references"]["values"] for d in v.get("directions", [])}
    assert kinds == {"smooth", "flat"}
    cell = next(c for c in data["cells"] if c["spec"] == "sign_ste" and c["variant"] == "custom_gradient@eager_tape"
                and c["scenario"] == "sum")
    assert [f["status"] for f in cell["forward"]] == ["differs", "not_differentiable"]


def test_the_one_screen_summary_says_what_the_custom_gradient_changes(report):
    text = render(report, "table", view=View(summary=True))
    assert "What the custom gradient changes against the forward itself" in text
    assert ("sign_ste: autodiff: differs in sum, weighted, same in second_order; finite_difference: not "
            "differentiable (piecewise constant) in sum, weighted, n/a in second_order") in text
    assert "stable_softplus: autodiff: same in sum, weighted, second_order; finite_difference: same in sum, " \
           "weighted, n/a in second_order" in text


def test_details_markdown_and_html_show_them(report):
    details = render(report, "table")
    assert "sign_ste · float32 · sum (defun_grad_func@v1_session):" in details
    assert "same in 1 other variant: override_map@eager_tape" in details  # ignored override: TensorFlow's own
    assert "| `sign_ste` | float32 | sum | differs (max abs 1 at input_grad[0]) | not differentiable (piecewise " \
           "constant) |" in render(report, "markdown")
    page = render(report, "html")
    assert "The custom gradient against the forward itself" in page and "against the forward itself" in page
