"""Run a function in a forked copy of this process, bounded in time: for children that must not re-import TensorFlow.

The forked process runs `work()`, flushes, and ends with `os._exit` (no atexit, no `finally` of the parent's
frames); an exception it lets out is printed to its stderr (what `stderr_tail` then quotes) and ends it with
code 1. At the deadline it is killed.

    code = fork_call(lambda: write_result(compute()), deadline=time.monotonic() + 30)   # None: killed
"""

from __future__ import annotations

import os
import signal
import sys
import time
import traceback
from collections.abc import Callable

from compat.child.exits import exit_code


def fork_call(work: Callable[[], object], deadline: float | None = None, stderr_path: str | None = None) -> int | None:
    """Fork; the child (stderr to `stderr_path` if given) runs `work` and exits 0, or 1 if it raised; the parent
    waits: the child's exit code (negative: killed by that signal), or None when it was killed at `deadline`."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _run_forked(work, stderr_path)
    return _wait(pid, deadline)


def _run_forked(work: Callable[[], object], stderr_path: str | None) -> None:
    code = 1
    try:
        if stderr_path is not None:
            fd = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(fd, 2)
        work()
        code = 0
    except BaseException:  # noqa: BLE001 - reported through stderr, the only channel left
        if stderr_path is None:
            traceback.print_exc()
        else:  # to the file itself, even when sys.stderr was replaced (captured, or by user code)
            with open(2, "w", closefd=False) as stderr:
                traceback.print_exc(file=stderr)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _wait(pid: int, deadline: float | None) -> int | None:
    """The exit code of `pid`, or None when it was still running at `deadline` and was killed."""
    if deadline is None:
        return exit_code(os.waitpid(pid, 0)[1])
    pause = 0.002
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return exit_code(status)
        if time.monotonic() >= deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None
        time.sleep(pause)
        pause = min(pause * 2, 0.05)
