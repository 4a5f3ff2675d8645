"""compat.child: children that hang, crash, flood stderr, raise, or outlive a parent killed or interrupted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from compat.child import (
    RaisedInChild,
    child_env,
    describe_exit,
    fatal_or_tail,
    fork_call,
    kill_group,
    package_root,
    start,
    stderr_tail,
    wait_until,
)

# A child that starts a grandchild (both sleep for ever) and writes both pids to argv[1], as user code might.
_FAMILY = textwrap.dedent("""
    import json, subprocess, sys, time
    grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open(sys.argv[1] + ".part", "w") as out:
        json.dump({"child": __import__("os").getpid(), "grandchild": grandchild.pid}, out)
    __import__("os").replace(sys.argv[1] + ".part", sys.argv[1])
    time.sleep(600)
""")


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting for its reaper does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def _gone(pid: int, seconds: float = 10.0) -> bool:
    """Whether `pid` stops running within `seconds` (a reaper may take a moment; never a timed assertion)."""
    end = time.monotonic() + seconds
    while _alive(pid):
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


def _pids(path: Path, seconds: float = 30.0) -> dict[str, int]:
    end = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < end, f"the child never wrote {path}"
        time.sleep(0.05)
    pids: dict[str, int] = json.loads(path.read_text())
    return pids


def test_a_hanging_child_is_killed_at_its_deadline_with_its_grandchildren(tmp_path):
    pids_path = tmp_path / "pids.json"
    child = start([sys.executable, "-c", _FAMILY, str(pids_path)])
    pids = _pids(pids_path)
    assert wait_until(child, time.monotonic() + 0.5) is None
    assert child.returncode == -signal.SIGKILL
    assert _gone(pids["child"]) and _gone(pids["grandchild"])


def test_the_child_leads_its_own_session_so_a_group_kill_spares_the_parent():
    child = start([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        assert os.getsid(child.pid) == child.pid != os.getsid(0)
    finally:
        assert kill_group(child) == -signal.SIGKILL
    assert kill_group(child) == -signal.SIGKILL  # twice is harmless: the reaped pid is never signalled


def _run_to_its_end(tmp_path: Path, argv: list[str], seconds: float) -> tuple[int | None, Path]:
    """(exit code, the file its stderr went to) of a child started with `argv`, waited for `seconds` at most."""
    stderr_path = tmp_path / "child.stderr"
    with open(stderr_path, "wb") as stderr:
        child = start(argv, stderr=stderr)
    return wait_until(child, time.monotonic() + seconds), stderr_path


def test_an_abort_is_reported_by_its_signal_with_the_fatal_line_quoted(tmp_path):
    code = ("import os, sys; sys.stderr.write('F0000 00:00:00.000000   123 op.cc:42] Check failed: x == y\\n'"
            " + 'stack frame\\n' * 20); sys.stderr.flush(); os.abort()")
    exit_code, stderr_path = _run_to_its_end(tmp_path, [sys.executable, "-c", code], 60)
    assert describe_exit(exit_code) == "was killed by SIGABRT"
    assert fatal_or_tail(stderr_path) == "; fatal: F0000 00:00:00.000000   123 op.cc:42] Check failed: x == y"


def test_a_segfault_is_reported_by_its_signal_with_python_s_fatal_error_quoted(tmp_path):
    argv = [sys.executable, "-X", "faulthandler", "-c", "import ctypes; ctypes.string_at(0)"]
    exit_code, stderr_path = _run_to_its_end(tmp_path, argv, 60)
    assert describe_exit(exit_code) == "was killed by SIGSEGV"
    assert fatal_or_tail(stderr_path).startswith("; fatal: Fatal Python error: Segmentation fault")


def test_megabytes_on_stderr_neither_block_the_child_nor_the_message(tmp_path):
    code = ("import sys; sys.stderr.write(('x' * 999 + '\\n') * 20_000 + 'y' * 5000 + '\\nthe last words\\n'); "
            "sys.exit(3)")
    exit_code, stderr_path = _run_to_its_end(tmp_path, [sys.executable, "-c", code], 120)
    assert exit_code == 3  # no pipe to fill: the child never blocks
    assert stderr_path.stat().st_size > 20_000_000
    lines = stderr_tail(stderr_path)
    assert lines[-1] == "the last words" and len(lines) == 3
    assert lines[-2].startswith("yyy") and lines[-2].endswith("(4500 more characters)")


@pytest.mark.parametrize("raised", ["SystemExit(3)", "KeyboardInterrupt()", "ValueError('boom')"])
def test_an_exception_raised_in_a_forked_child_reaches_the_parent_as_data(tmp_path, raised):
    carried = tmp_path / "raised.json"

    def work() -> None:
        try:
            raise eval(raised)  # noqa: S307 - the test's own literal
        except BaseException as exc:  # noqa: BLE001 - what the toolkit carries back
            carried.write_text(json.dumps(RaisedInChild.of(exc).as_dict()))

    assert fork_call(work, time.monotonic() + 60) == 0
    found = RaisedInChild.from_dict(json.loads(carried.read_text()))
    assert found.type == raised.split("(")[0] and "Traceback (most recent call last)" in found.traceback
    assert found.line == {"SystemExit(3)": "SystemExit: 3", "KeyboardInterrupt()": "KeyboardInterrupt",
                          "ValueError('boom')": "ValueError: boom"}[raised]


@pytest.mark.parametrize("raised", [SystemExit(3), KeyboardInterrupt()])
def test_an_exception_escaping_a_forked_child_ends_it_not_the_parent(tmp_path, raised):
    stderr_path = str(tmp_path / "fork.stderr")

    def work() -> None:
        raise raised

    assert fork_call(work, time.monotonic() + 60, stderr_path) == 1
    assert type(raised).__name__ in Path(stderr_path).read_text()


def test_a_hanging_forked_child_is_killed_at_its_deadline():
    assert fork_call(lambda: time.sleep(600), time.monotonic() + 0.2) is None


def test_the_environment_makes_the_package_and_the_user_s_paths_importable(tmp_path):
    (tmp_path / "users_module.py").write_text("WHERE = 'user'\n")
    env = child_env([str(tmp_path)], base={"PATH": os.environ["PATH"]}, TF_CPP_MIN_LOG_LEVEL="3")
    child = start([sys.executable, "-c", "import compat.child, users_module; print(compat.child.__file__)"],
                  env=env, stdout=subprocess.PIPE, cwd="/")
    out, _ = child.communicate(timeout=60)
    assert child.returncode == 0 and out.decode().strip().startswith(package_root())
    assert env["TF_CPP_MIN_LOG_LEVEL"] == "3"


_PARENT = textwrap.dedent("""
    import sys, time
    from compat.child import child_env, killed_on_exit, start
    child = start([sys.executable, "-c", "from compat.child import die_with_parent; die_with_parent(); "
                   + sys.argv[1], sys.argv[2]], env=child_env())
    with killed_on_exit(child):
        time.sleep(600)
""")


@pytest.mark.parametrize("ending", [signal.SIGINT, signal.SIGKILL], ids=["ctrl_c", "parent_killed"])
def test_no_child_or_grandchild_outlives_a_parent_interrupted_or_killed(tmp_path, ending):
    pids_path = tmp_path / "pids.json"
    parent = subprocess.Popen([sys.executable, "-c", _PARENT, _FAMILY, str(pids_path)],
                              env=child_env(), stderr=subprocess.PIPE)
    try:
        pids = _pids(pids_path)
        assert _alive(pids["child"]) and _alive(pids["grandchild"])
        parent.send_signal(ending)  # SIGINT: what Ctrl-C sends to the terminal's foreground group
        parent.communicate(timeout=60)
        assert _gone(pids["child"]) and _gone(pids["grandchild"])
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
