"""Shared app plumbing: atomic writes keep ordinary permissions and never leave a partial file."""

import os
import stat

import pytest

from compat.apps._common import ProgressBar, write_atomically
from compat.apps._output import OutputError


def test_atomic_write_creates_directories_and_an_ordinary_file(tmp_path):
    target = tmp_path / "a" / "b" / "report.json"
    write_atomically(str(target), "{}")
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
        write_atomically(str(target), "bad \udcff surrogate")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.txt"]


def test_progress_bar_writes_only_to_its_stream(capsys):
    import io

    stream = io.StringIO()
    bar = ProgressBar(4, "files", stream)
    for _ in range(4):
        bar.advance("x")
    bar.close()
    assert "4/4 files" in stream.getvalue()
    assert capsys.readouterr() == ("", "")
