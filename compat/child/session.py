"""A child process in its own session: started with the package importable, bounded in time, killed as a group.

The child leads a new session (and process group), so killing the group ends it and everything user code
started in it (grandchildren included), and nothing else; a Ctrl-C typed in the terminal reaches only the
parent, which kills the group on its way out (`killed_on_exit`). A child that calls `die_with_parent()` first
thing also ends, with its group, when the parent dies without cleaning up (Linux: the parent-death signal).

    with killed_on_exit(start([sys.executable, "-m", "compat.x"], env=child_env())) as child:
        code = wait_until(child, time.monotonic() + 60)   # None: killed at the deadline
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import IO, Any

PARENT_VARIABLE = "GRADCOMPAT_PARENT_PID"
"""Set by `child_env` to the parent's pid, for `die_with_parent` in the child."""
_PR_SET_PDEATHSIG = 1

File = int | IO[Any] | None


def package_root() -> str:
    """The directory holding the `compat` package (what a child needs on its PYTHONPATH to import it)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def child_env(paths: Sequence[str] = (), base: Mapping[str, str] | None = None, **overrides: str) -> dict[str, str]:
    """`base` (default: this process's environment) with PYTHONPATH = the package root, `paths`, then the
    PYTHONPATH already set; `overrides` on top; and the parent's pid for `die_with_parent`."""
    env = dict(os.environ if base is None else base)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root(), *paths, env.get("PYTHONPATH", "")]))
    env.update(overrides)
    env[PARENT_VARIABLE] = str(os.getpid())
    return env


def start(command: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str | None = None,
          stdin: File = subprocess.DEVNULL, stdout: File = None, stderr: File = None) -> subprocess.Popen[bytes]:
    """Start `command` leading a new session (see the module docstring); `env` default: `child_env()`."""
    return subprocess.Popen(list(command), stdin=stdin, stdout=stdout, stderr=stderr, cwd=cwd,
                            env=dict(env) if env is not None else child_env(), start_new_session=True)


def kill_group(process: subprocess.Popen[Any]) -> int:
    """SIGKILL the child's process group (the child and what it started) if it still runs; its exit code."""
    # Only while the child is unreaped: its pid (the group's id) cannot belong to anyone else then.
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    return process.wait()


def wait_until(process: subprocess.Popen[Any], deadline: float) -> int | None:
    """The child's exit code, or None when it still ran at `deadline` (time.monotonic()) and its group was killed."""
    try:
        return process.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        kill_group(process)
        return None


@contextlib.contextmanager
def killed_on_exit(*processes: subprocess.Popen[Any]) -> Iterator[subprocess.Popen[Any]]:
    """Yield the first process; on leaving the block by any way (an error, Ctrl-C, a return), kill every group."""
    try:
        yield processes[0]
    finally:
        for process in processes:
            kill_group(process)


def die_with_parent() -> None:
    """In a child started with `child_env`: when the parent dies, kill this process's group (Linux only).

    The parent-death signal is SIGTERM, whose handler kills the whole group (the child and what it started);
    if the parent is gone already, the group is killed now.
    """
    parent = os.environ.get(PARENT_VARIABLE)
    if parent is None:
        return
    signal.signal(signal.SIGTERM, _kill_own_group)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the parent's cleanup is all there is
        return
    if str(os.getppid()) != parent:  # it died before the signal was asked for
        _kill_own_group(signal.SIGTERM, None)


def _kill_own_group(signum: int, frame: object) -> None:
    del signum, frame
    if os.getpgid(0) == os.getpid():  # only a group this process leads: never its parent's
        os.killpg(0, signal.SIGKILL)
    os._exit(128 + signal.SIGTERM)
