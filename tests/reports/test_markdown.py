"""The markdown report and its reusable matrix table."""

from compat.reports import render
from compat.reports.markdown import matrix_table


def test_matrix_table_has_one_row_per_scenario(report):
    table = matrix_table(report, "scaled_ste", "float32")
    lines = table.splitlines()
    assert lines[1].startswith("|---|")
    assert [line.split(" | ")[0] for line in lines[2:]] == ["| `sum`", "| `gather`", "| `second_order`"]
    assert all(line.count(" | ") == len(report.variants) for line in lines[2:])
    assert "**defun_grad_func<br>@v1_session**" in lines[0]  # native columns are bold
    assert "not called" in table and "≠" not in table


def test_matrix_table_takes_a_subset_of_variants(report):
    table = matrix_table(report, "scaled_ste", "float32", ["override_map@eager_tape", "custom_gradient@eager_tape"])
    # The Defun reference sees an upstream of unknown rank, the tape a [3]: a static-shape (form) difference.
    assert table.splitlines()[2] == "| `sum` | not called | same values, other form |"


def test_report_has_summary_sections_and_escapes(report, handmade_report):
    text = render(report, "markdown")
    assert text.startswith("# compat-check report")
    for heading in ("## `scaled_ste` · float32", "## Migration pitfalls", "## Skipped scenarios"):
        assert heading in text
    assert ("override_map under v1_tape, eager_tape, function_tape, xla_tape, mixed_precision, keras_fit and "
            "recompute_grad") in text
    hand = render(handmade_report, "markdown")
    assert "**differs (unexpected)**" in hand
    assert "values differ &lt;b&gt;here&lt;/b&gt;" in hand
