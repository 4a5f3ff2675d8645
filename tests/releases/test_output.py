"""compat.releases.output: the matrix files are written all or none, the old ones kept on any failure."""

import os

import pytest

from compat.releases import output
from compat.releases.output import OutputDirError, write_all

NEW = {"matrix.json": "{}\n", "matrix.md": "# new\n", "matrix.html": "<html>new</html>\n"}


def _old(tmp_path):
    out = tmp_path / "reports"
    out.mkdir()
    (out / "check-tf2.12.json").write_text("an input report")
    (out / "matrix.json").write_text("old json")
    (out / "matrix.md").write_text("old md")
    return out


def test_every_file_is_replaced_and_nothing_else_in_the_folder_is_touched(tmp_path):
    out = _old(tmp_path)
    write_all(out, NEW)
    assert {p.name: p.read_text() for p in out.iterdir()} == {**NEW, "check-tf2.12.json": "an input report"}


def test_a_move_failing_half_way_puts_back_the_files_already_moved(tmp_path, monkeypatch):
    out = _old(tmp_path)
    real = os.replace

    def fails_on_the_html(source, target):
        if str(target).endswith("matrix.html"):
            raise PermissionError(13, "Permission denied")
        return real(source, target)

    monkeypatch.setattr(output.os, "replace", fails_on_the_html)
    with pytest.raises(OutputDirError, match=r"could not write .*matrix.html \(Permission denied\); no file there"):
        write_all(out, NEW)
    assert {p.name: p.read_text() for p in out.iterdir()} == {
        "check-tf2.12.json": "an input report", "matrix.json": "old json", "matrix.md": "old md"}


def test_a_missing_folder_is_created_and_a_file_in_its_place_is_refused(tmp_path):
    write_all(tmp_path / "new" / "reports", NEW)
    assert sorted(p.name for p in (tmp_path / "new" / "reports").iterdir()) == sorted(NEW)
    (tmp_path / "taken").write_text("x")
    with pytest.raises(OutputDirError, match="is a file, not a directory"):
        write_all(tmp_path / "taken", NEW)


def test_the_error_names_the_directory_not_a_flag_and_carries_path_and_reason(tmp_path):
    (tmp_path / "taken").write_text("x")
    with pytest.raises(OutputDirError) as raised:
        write_all(tmp_path / "taken", NEW)
    assert raised.value.path == str(tmp_path / "taken")
    assert raised.value.reason.startswith("it is a file, not a directory; give a directory")
    assert str(raised.value) == f"{tmp_path / 'taken'}: {raised.value.reason}"
    assert "--output_dir" not in str(raised.value)
