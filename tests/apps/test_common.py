"""Shared app plumbing: output prepared before a run, a progress bar that keeps to stderr, quiet start-up."""

import os
import stat

import pytest

from compat.apps._common import prepare_output
from compat.apps._output import OutputError, write_output


def test_prepared_output_gets_its_directories_and_an_ordinary_file(tmp_path):
    target = tmp_path / "a" / "b" / "report.json"
    prepare_output(str(target))
    assert target.parent.is_dir() and not target.exists()
    write_output(str(target), "{}")
    assert target.read_text() == "{}"
    mode = stat.S_IMODE(target.stat().st_mode)
    umask = os.umask(0)
    os.umask(umask)
    assert mode == 0o666 & ~umask
    assert [p.name for p in target.parent.iterdir()] == ["report.json"]


def test_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "report.txt"
    target.write_text("old")
    with pytest.raises(OutputError, match=str(target)):
        write_output(str(target), "bad \udcff surrogate")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.txt"]


def test_unwritable_output_is_refused_before_anything_runs(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OutputError, match="file"):
        prepare_output(str(blocker / "report.json"))
    with pytest.raises(OutputError):
        prepare_output("/proc/gradcompat-report.json")
