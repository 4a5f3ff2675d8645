"""How a child ended, in words for a message: "exited with code 3", "was killed by SIGSEGV"."""

from __future__ import annotations

import os
import signal


def signal_name(number: int) -> str:
    """SIGSEGV for 11; "signal 99" for a number with no name."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def describe_exit(code: int | None) -> str:
    """For Popen/multiprocessing exit codes (negative: killed by that signal): "exited with code 3",
    "was killed by SIGKILL", or "did not exit" for None."""
    if code is None:
        return "did not exit"
    if code < 0:
        return f"was killed by {signal_name(-code)}"
    return f"exited with code {code}"


def exit_code(status: int) -> int:
    """The exit code (negative for a signal, as Popen's) of an `os.waitpid` status."""
    return os.waitstatus_to_exitcode(status)
