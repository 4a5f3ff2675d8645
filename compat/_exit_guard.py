"""`os._exit` called by user code becomes an exception in the process that guards it, never a silent exit.

`os._exit(0)` ends a process at once with status 0, skipping `finally` blocks and atexit: in compat-check's own
process (a `--loss` file, a spec module, a gradient run with `--jobs=1`) it would end the run as a pass with no
report. Inside `exits_raised()`, a call of `os._exit` from this process raises `ExitCalled` instead, which
gradcompat reports like `SystemExit`: as the user's error, named. A process forked meanwhile (user code using
multiprocessing's fork) still exits for real.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import NoReturn


class ExitCalled(BaseException):
    """User code called `os._exit(code)` inside `exits_raised()`.

    A BaseException, as SystemExit is, so the user's own `except Exception` does not swallow it.
    """

    def __init__(self, code: object) -> None:
        super().__init__(code)
        self.code = code

    def __str__(self) -> str:
        return f"os._exit({self.code!r}) (user code called os._exit, which would have ended the run)"


@contextlib.contextmanager
def exits_raised() -> Iterator[None]:
    """Within the block, `os._exit(code)` called in this process raises ExitCalled(code)."""
    real = os._exit
    owner = os.getpid()

    def guarded(status: int) -> NoReturn:
        if os.getpid() != owner:  # a child forked inside the block: its exit is its own
            real(status)
        raise ExitCalled(status)

    os._exit = guarded
    try:
        yield
    finally:
        os._exit = real
