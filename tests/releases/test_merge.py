"""Per-release reports merge into one matrix: every release listed (skipped ones with why), changes found; hostile
reports are usage errors naming the file and the JSON path, and the output folder is written all or not at all."""

import copy
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import pytest

from compat.releases import html, load_report, merge, skip_record
from compat.releases.__main__ import main


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


def test_a_release_that_changes_the_forward_s_own_gradient_is_flagged(report):
    """Where TensorFlow's gradient of the forward changes (a release registering a gradient), the cell's comparison
    with `autodiff` changes: the `forward` aspect, per release; a report without references changes nothing."""
    other = _loaded(report, "2.21")
    changed = [c for c in other["cells"] if c["scenario"] == "sum" and c["forward"][0]["status"] == "differs"]
    for cell in changed:
        cell["forward"][0]["status"] = "same"
    matrix = merge([_loaded(report, "2.12"), other])
    rows = [row for row in matrix["rows"] if row["changed"]]
    assert len(rows) == len(changed) > 0 and matrix["summary"]["changed_by_aspect"] == {"forward": len(changed)}
    assert rows[0]["changes"][0]["releases"]["2.12"] == {"autodiff": "differs",
                                                         "finite_difference": "not_differentiable"}
    assert rows[0]["changes"][0]["releases"]["2.21"]["autodiff"] == "same"
    bare = _loaded(report, "2.21")
    for cell in bare["cells"]:
        cell.pop("forward")
    assert merge([_loaded(report, "2.12"), bare])["summary"]["changed"] == 0


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


def _deep(depth):
    value = 0.0
    for _ in range(depth):
        value = [value]
    return value


def _mutated(report, how):
    other = copy.deepcopy(report)
    how(other)
    return other


HOSTILE = {  # issue #29 item 13, each as the JSON path and the problem the error names
    "cells_as_a_dict": (lambda r: r.update(cells={"a": 1}), "$.cells: expected array, got object"),
    "a_null_cell": (lambda r: r["cells"].__setitem__(0, None), "$.cells[0]: expected object, got null"),
    "a_cell_without_spec": (lambda r: r["cells"][0].pop("spec"), '$.cells[0]: "spec" is missing'),
    "list_tolerances": (lambda r: r.update(tolerances={"float32": [1e-5, 1e-6]}),
                        "$.tolerances.float32: expected object, got array"),
    "a_numeric_release": (lambda r: r.update(release=2.13), "$.release: expected string, got number 2.13"),
    "a_difference_without_kind": (lambda r: r["cells"][0]["differences"].append(
        {"detail": "x", "where": "upstream[0]", "breaking": True}), '$.cells[0].differences[0]: "kind" is missing'),
    "deep_nesting": (lambda r: r["cells"][0]["upstream"][0].update(value=_deep(300)),
                     "$.cells[0].upstream[0].value[0][0]"),
    "deeper_than_json_parses": (lambda r: r["cells"][0]["upstream"][0].update(value=_deep(100_000)),
                                "nested too deep for Python's JSON parser"),
    "an_older_schema": (lambda r: r.update(schema_version=1), "$.schema_version: expected 2, got integer 1"),
    "a_cell_twice": (lambda r: r["cells"].append(copy.deepcopy(r["cells"][0])),
                     "the same spec, scenario, dtype and variant as $.cells[0]"),
}


def _write_deep(path, data):
    """json.dumps cannot write what json.loads cannot read either: nest the text by hand."""
    value = data["cells"][0]["upstream"][0]["value"]
    depth = 0
    while isinstance(value, list):
        value, depth = value[0], depth + 1
    data["cells"][0]["upstream"][0]["value"] = "DEEP"
    path.write_text(json.dumps(data).replace('"DEEP"', "[" * depth + "0.0" + "]" * depth), encoding="utf-8")
    return path


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_report_is_a_usage_error_naming_file_and_json_path_and_writes_nothing(report, tmp_path, capsys,
                                                                                      name):
    how, expected = HOSTILE[name]
    good = _write(tmp_path, "check-tf2.12.json", _release(report, "2.12"))
    bad_data = _mutated(_release(report, "2.13"), how)
    bad = tmp_path / "check-tf2.13.json"
    if name.startswith("deep"):
        _write_deep(bad, bad_data)
    else:
        bad.write_text(json.dumps(bad_data), encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    (out / "matrix.md").write_text("the old matrix", encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        main([str(good), str(bad), f"--output_dir={out}"])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith(f"python -m compat.releases: error: {bad}: ") and expected in error
    assert [p.name for p in out.iterdir()] == ["matrix.md"] and (out / "matrix.md").read_text() == "the old matrix"


def test_two_reports_of_one_release_are_an_error_naming_both_files(report, tmp_path, capsys):
    first = _write(tmp_path, "check-tf2.12.json", _release(report, "2.12"))
    second = _write(tmp_path, "rerun-tf2.12.json", _release(report, "2.12", scale=2.0))
    with pytest.raises(SystemExit) as exit_info:
        main([str(first), str(second), f"--output_dir={tmp_path / 'out'}"])
    assert exit_info.value.code == 2
    assert f"{first} and {second} are both release 2.12: pass one report per release" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    with pytest.raises(ValueError, match="release 2.12 appears in 2 reports"):
        merge([_loaded(report, "2.12"), _loaded(report, "2.12", scale=2.0)])


def test_an_output_dir_that_is_a_file_is_a_usage_error_naming_it(report, tmp_path, capsys):
    blocker = tmp_path / "matrix_dir"
    blocker.write_text("not a directory", encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        main([str(_write(tmp_path, "check-tf2.12.json", report)), f"--output_dir={blocker}"])
    assert exit_info.value.code == 2
    assert f"--output_dir={blocker}: it is a file, not a directory" in capsys.readouterr().err


def test_a_crash_while_rendering_leaves_the_old_output_folder_as_it_was(report, tmp_path, monkeypatch):
    paths = [str(_write(tmp_path, "check-tf2.12.json", _release(report, "2.12"))),
             str(_write(tmp_path, "check-tf2.21.json", _release(report, "2.21", scale=3.0)))]
    out = tmp_path / "out"
    assert main(paths + [f"--output_dir={out}"]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    paths[1] = str(_write(tmp_path, "check-tf2.21.json", _release(report, "2.21", scale=5.0)))

    def crash(matrix):
        raise RuntimeError("the renderer crashed")

    monkeypatch.setattr(html, "render", crash)
    with pytest.raises(RuntimeError, match="the renderer crashed"):
        main(paths + [f"--output_dir={out}"])
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
