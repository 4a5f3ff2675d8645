"""Per-release reports merge into one matrix: every release listed (skipped ones with why), changes found."""

import copy
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import pytest

from compat.releases import load_report, merge, skip_record
from compat.releases.__main__ import main


@pytest.fixture(name="report", scope="module")
def report_fixture():
    """A real scaled_ste report (two scenarios, every variant) as compat-check --format=json writes it."""
    from compat.catalogue import CATALOGUE
    from compat.matrix import check
    from compat.reports.json_report import as_dict

    data = as_dict(check([CATALOGUE["scaled_ste"]()], scenarios=["sum", "scaled"]))
    return json.loads(json.dumps(data))


def _release(report, release, scale=1.0):
    """`report` as another release would write it, every `scaled` upstream multiplied by `scale`."""
    other = copy.deepcopy(report)
    other["tensorflow"] = f"{release}.0"
    for cell in other["cells"]:
        if cell["scenario"] == "scaled" and cell["upstream"]:
            cell["upstream"][0]["value"] = [[v * scale for v in row] for row in cell["upstream"][0]["value"]]
    return other


def _write(tmp_path, name, data):
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _loaded(report, release, scale=1.0):
    """What load_report returns for `report` written by `release`."""
    return {**_release(report, release, scale), "release": release}


def test_identical_releases_change_nothing(report):
    matrix = merge([_loaded(report, "2.12"), _loaded(report, "2.21")])
    assert matrix["summary"]["changed"] == 0
    assert matrix["summary"]["rows"] == len(report["cells"])
    assert [r["release"] for r in matrix["releases"]] == ["2.12", "2.21"]


def test_a_changed_upstream_is_flagged_per_cell_with_both_values(report):
    matrix = merge([_loaded(report, "2.12"), _loaded(report, "2.21", scale=2.0)])
    changed = [row for row in matrix["rows"] if row["changed"]]
    called = [c for c in report["cells"] if c["scenario"] == "scaled" and c["upstream"]]
    assert len(changed) == len(called) > 0
    assert all(row["scenario"] == "scaled" for row in changed)
    assert {c["aspect"] for row in changed for c in row["changes"]} == {"upstream"}
    first = changed[0]["changes"][0]["releases"]
    assert first["2.21"][0]["value"][0][0] == 2.0 * first["2.12"][0]["value"][0][0]
    assert matrix["summary"]["changed_by_aspect"] == {"upstream": len(called)}


def test_values_within_tolerance_are_not_a_change(report):
    matrix = merge([_loaded(report, "2.12"), _loaded(report, "2.21", scale=1 + 1e-7)])
    assert matrix["summary"]["changed"] == 0


def test_cli_writes_json_markdown_html_and_lists_a_skipped_release(report, tmp_path, capsys):
    paths = [_write(tmp_path, "check-tf2.12.json", _release(report, "2.12")),
             _write(tmp_path, "check-tf2.13.json", skip_record("2.13", "no wheel for Python 3.11")),
             _write(tmp_path, "check-tf2.21.json", _release(report, "2.21", scale=3.0))]
    assert main([str(p) for p in paths] + [f"--output_dir={tmp_path}"]) == 0
    matrix = json.loads((tmp_path / "matrix.json").read_text(encoding="utf-8"))
    assert [(r["release"], r["status"]) for r in matrix["releases"]] == [
        ("2.12", "ran"), ("2.13", "skipped"), ("2.21", "ran")]
    markdown = (tmp_path / "matrix.md").read_text(encoding="utf-8")
    assert "**skipped**: no wheel for Python 3.11" in markdown
    assert "| `scaled_ste` | `scaled` | float32 |" in markdown
    page = (tmp_path / "matrix.html").read_text(encoding="utf-8")
    assert "<tr class='row changed'" in page and "<script src" not in page and "<link" not in page
    assert "cells change" in capsys.readouterr().out


def test_a_file_that_is_not_a_report_is_a_usage_error_naming_it(tmp_path, capsys):
    bogus = _write(tmp_path, "check-tf2.12.json", {"hello": 1})
    with pytest.raises(SystemExit) as exit_info:
        main([str(bogus)])
    assert exit_info.value.code == 2
    assert "check-tf2.12.json: not a compat-check report" in capsys.readouterr().err


def test_release_comes_from_the_file_name(report, tmp_path):
    assert load_report(_write(tmp_path, "check-tf2.15.json", report))["release"] == "2.15"
