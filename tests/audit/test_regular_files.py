"""compat.audit.regular_files: only regular files are opened, never blocking on FIFOs or devices."""

import os
import stat
import threading

import pytest

from compat.audit import regular_files
from compat.audit.regular_files import NotRegularFile, open_regular, read_regular


def test_a_regular_file_opens_for_blocking_reads(tmp_path):
    path = tmp_path / "a.py"
    path.write_bytes(b"x = 1\n")
    fd, st = open_regular(str(path))
    try:
        assert os.get_blocking(fd) and st.st_size == 6 and os.read(fd, 100) == b"x = 1\n"
    finally:
        os.close(fd)


@pytest.mark.parametrize("make", ["fifo", "device", "directory"])
def test_special_files_are_never_read(tmp_path, make):
    path = tmp_path / "special.py"
    if make == "fifo":
        os.mkfifo(path)
    elif make == "directory":
        path.mkdir()
    else:
        path = "/dev/zero"
    finished = []
    worker = threading.Thread(target=lambda: finished.append(read_regular(str(path), 10, b"")), daemon=True)
    worker.start()
    worker.join(10)
    assert finished == [b""], f"read_regular blocked or read {path}"
    with pytest.raises(NotRegularFile) as raised:
        open_regular(str(path))
    assert not raised.value.replaced and not stat.S_ISREG(raised.value.mode)


def test_a_file_replaced_between_stat_and_open_is_refused(tmp_path, monkeypatch):
    path, other = tmp_path / "a.py", tmp_path / "b.py"
    path.write_text("x = 1\n")
    other.write_text("y = 2\n")
    real_stat = os.stat
    monkeypatch.setattr(regular_files.os, "stat", lambda p: real_stat(other) if p == str(path) else real_stat(p))
    with pytest.raises(NotRegularFile) as raised:
        open_regular(str(path))
    assert raised.value.replaced and stat.S_ISREG(raised.value.mode)


def test_read_regular_returns_nothing_without_the_needle_or_the_file(tmp_path):
    path = tmp_path / "op.cc"
    path.write_bytes(b'REGISTER_OP("ZeroOut")\n' + b"x" * 100)
    assert read_regular(str(path), 1000, b"REGISTER_OP").startswith(b"REGISTER_OP")
    assert read_regular(str(path), 1000, b"load_op_library") == b""
    assert read_regular(str(path), 5, b"REGISTER_OP") == b""  # the needle lies past the limit
    assert read_regular(str(tmp_path / "missing.cc"), 1000, b"REGISTER_OP") == b""
