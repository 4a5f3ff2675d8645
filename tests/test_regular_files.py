"""compat.regular_files: only regular files are opened, never blocking on FIFOs or devices."""

import os
import stat
import threading

import pytest

from compat import regular_files
from compat.regular_files import NotRegularFile, UnreadableJson, open_regular, read_json, read_regular


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


@pytest.mark.parametrize(("make", "said"), [("fifo", "a FIFO, not a regular file: never read"),
                                            ("device", "a character device, not a regular file: never read"),
                                            ("directory", "a directory, not a regular file: never read"),
                                            ("missing", "No such file or directory"),
                                            ("deep", "nested too deep for Python's JSON parser"),
                                            ("latin1", "can't decode byte"),
                                            ("not_json", "Expecting value")])
def test_read_json_refuses_what_is_not_a_json_file_without_blocking(tmp_path, make, said):
    path = tmp_path / "report.json"
    if make == "fifo":
        os.mkfifo(path)
    elif make == "directory":
        path.mkdir()
    elif make == "device":
        path = "/dev/zero"  # read as a stream it would never end
    elif make == "deep":
        path.write_text("[" * 100_000 + "]" * 100_000)
    elif make == "latin1":
        path.write_bytes(b'{"path": "caf\xe9"}')
    elif make == "not_json":
        path.write_text("compat-check: OK\n")
    raised = []

    def read() -> None:
        try:
            read_json(path)
        except UnreadableJson as exc:
            raised.append(exc)
    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    worker.join(10)
    assert raised, f"read_json blocked on, or accepted, {make}"
    assert said in str(raised[0]) and str(path) not in str(raised[0]), raised[0]  # callers name the file


def test_read_json_reads_a_report(tmp_path):
    path = tmp_path / "report.json"
    path.write_text('{"tool": "compat-check", "cells": [1.5, "NaN"]}', encoding="utf-8")
    assert read_json(path) == read_json(str(path)) == {"tool": "compat-check", "cells": [1.5, "NaN"]}
