"""Safe --output: special files are written as they are, regular files replaced atomically, checks come first."""

from __future__ import annotations

import os
import select
import signal
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from compat.apps._output import OutputError, check_output_path, write_output

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _never_hang():
    """A FIFO regression would block in open(): fail after 30 s instead of hanging CI."""
    def expire(signum, frame):
        raise TimeoutError("write_output blocked")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(30)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def _mknod_null(path: Path) -> None:
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a /dev/null clone inside tmp_path
    except OSError as e:
        pytest.skip(f"cannot create a device node here ({e}); needs root outside a restricted container")


def test_new_file_gets_ordinary_permissions_and_no_temporary_is_left(tmp_path):
    target = tmp_path / "report.json"
    check_output_path(str(target))
    assert list(tmp_path.iterdir()) == []  # the check creates nothing
    write_output(str(target), "{}\n")
    assert target.read_text() == "{}\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~_umask()
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_existing_file_is_replaced_keeping_its_permission_bits(tmp_path):
    target = tmp_path / "report.txt"
    target.write_text("old")
    target.chmod(0o640)
    inode = target.stat().st_ino
    write_output(str(target), "new")
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert target.stat().st_ino != inode  # replaced, not rewritten in place


def test_symlink_is_followed_and_its_target_replaced(tmp_path):
    real = tmp_path / "real.txt"
    real.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to("real.txt")
    write_output(str(link), "new")
    assert link.is_symlink() and os.readlink(link) == "real.txt"
    assert real.read_text() == "new"
    dangling = tmp_path / "dangling.txt"
    dangling.symlink_to("created.txt")
    write_output(str(dangling), "made")
    assert dangling.is_symlink() and (tmp_path / "created.txt").read_text() == "made"


def test_device_node_is_written_and_stays_a_device(tmp_path):
    device = tmp_path / "null"
    _mknod_null(device)
    check_output_path(str(device))
    write_output(str(device), "report\n")
    assert stat.S_ISCHR(os.lstat(device).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["null"]


def test_symlink_to_a_device_writes_the_device(tmp_path):
    device = tmp_path / "null"
    _mknod_null(device)
    (tmp_path / "out").symlink_to(device)
    write_output(str(tmp_path / "out"), "report\n")
    assert stat.S_ISCHR(os.lstat(device).st_mode) and (tmp_path / "out").is_symlink()


def test_fifo_without_reader_fails_at_once(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    check_output_path(str(fifo))  # does not open it: a reader would see an end of file
    with pytest.raises(OutputError, match="FIFO with no reader; start the reader first"):
        write_output(str(fifo), "report\n")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_fifo_with_reader_receives_the_report(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    ready = threading.Event()

    def read() -> None:
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader exists from here on
        ready.set()
        chunks: list[bytes] = []
        while select.select([fd], [], [], 10)[0]:
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                continue
            if not chunk and chunks:  # end of file once the writer has written and closed
                break
            chunks.append(chunk)
        os.close(fd)
        received.append(b"".join(chunks))

    reader = threading.Thread(target=read)
    reader.start()
    ready.wait(10)
    text = "x" * 200_000 + "\n"  # larger than a pipe buffer: the writer must wait for the reader
    write_output(str(fifo), text)
    reader.join(10)
    assert received == [text.encode()]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.parametrize("make,needle", [
    (lambda d: (d / "sub").mkdir() or d / "sub", "is a directory"),
    (lambda d: d / "missing" / "r.json", "create the directory first"),
    (lambda d: (d / "file").write_text("x") and d / "file" / "r.json", "file is not a directory"),
    (lambda d: Path("/proc/compat-audit-test.json"), "virtual file system"),
], ids=["directory", "missing_parent", "under_a_file", "proc"])
def test_unwritable_paths_are_refused_before_the_run(tmp_path, make, needle):
    path = make(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(OutputError, match=needle) as info:
        check_output_path(str(path))
    assert str(path) in str(info.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    with pytest.raises(OutputError):
        write_output(str(path), "x")


def test_socket_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "s.sock"
    monkeypatch.chdir(tmp_path)  # bind a short relative name: AF_UNIX paths are limited to 107 bytes
    server = socket.socket(socket.AF_UNIX)
    server.bind("s.sock")
    try:
        with pytest.raises(OutputError, match="socket"):
            check_output_path(str(path))
    finally:
        server.close()


def _without_permission_override() -> None:
    """In the child, before exec: drop root's CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH so mode bits apply."""
    import ctypes

    if os.geteuid() == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        for cap in (1, 2):
            if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
                raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


_UNPRIVILEGED = """
import sys
from compat.apps._output import OutputError, check_output_path
try:
    check_output_path(sys.argv[1])
except OutputError as e:
    print(e)
"""


def test_read_only_directory_is_refused(tmp_path):
    locked = tmp_path / "ro"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        proc = subprocess.run([sys.executable, "-c", _UNPRIVILEGED, str(locked / "r.json")], capture_output=True,
                              text=True, timeout=60, env={"PYTHONPATH": str(REPO)},
                              preexec_fn=_without_permission_override)
    finally:
        locked.chmod(0o755)
    assert proc.returncode == 0, proc.stderr
    assert "is not writable by you" in proc.stdout and str(locked) in proc.stdout


_FILE_SIZE_LIMIT = """
import resource, signal, sys
from compat.apps._output import OutputError, write_output
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (8, 8))
try:
    write_output(sys.argv[1], "a report longer than eight bytes")
except OutputError as e:
    print(e)
"""


def test_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "report.txt"
    target.write_text("old")
    proc = subprocess.run([sys.executable, "-c", _FILE_SIZE_LIMIT, str(target)], capture_output=True, text=True,
                          timeout=60, env={"PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    assert "write failed (File too large)" in proc.stdout and str(target) in proc.stdout
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.txt"]
