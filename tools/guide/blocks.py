"""Run the guide's Python code blocks, each in a fresh interpreter, and capture what they print or raise."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from compat.child import child_env, killed_on_exit, start

_TIMEOUT_SECONDS = 600
_ROOT = str(Path(__file__).resolve().parent.parent.parent)  # the checkout: `tools.guide` is not installed
_EXCEPTION_LINE = re.compile(r"^(?P<type>[A-Za-z_][\w.]*(Error|Exception|Exit)): (?P<message>.*)$")


@dataclasses.dataclass(frozen=True)
class BlockRun:
    """What one block printed (stdout) and, if it raised, the exception's last traceback line."""

    stdout: str
    exception: str | None

    def text(self) -> str:
        """The output as the guide shows it: printed lines, then `Traceback: <Type>: <message>` if it raised."""
        lines = self.stdout.rstrip("\n").splitlines()
        if self.exception:
            lines.append(f"Traceback (most recent call last): ... {self.exception}")
        return "\n".join(lines)


def run_block(code: str) -> BlockRun:
    """Execute `code` as a script in a fresh Python (this interpreter, an empty temporary directory).

    A fresh interpreter each: TensorFlow's gradient registry and eager/graph mode are process-wide, and the
    guide's blocks register gradient names and disable eager execution, as legacy code does.
    """
    env = _env()
    with tempfile.TemporaryDirectory() as workdir:
        done = subprocess.run([sys.executable, "-c", code], cwd=workdir, env=env, capture_output=True,
                              text=True, encoding="utf-8", timeout=_TIMEOUT_SECONDS, check=False)
    exception = None
    if done.returncode:
        found = [m for line in done.stderr.splitlines() if (m := _EXCEPTION_LINE.match(line.strip()))]
        exception = found[-1].group(0) if found else f"exit status {done.returncode}: {done.stderr[-500:]}"
    return BlockRun(done.stdout, exception)


def run_blocks(codes: Sequence[str]) -> list[BlockRun]:
    """Every block, in order: in one child that imports TensorFlow once and forks per block (TensorFlow's
    import is most of a block's time), or, where there is no fork, one fresh interpreter per block."""
    if not hasattr(os, "fork"):
        return [run_block(code) for code in codes]
    runner = start([sys.executable, "-m", "tools.guide._fork_runner"], env=_env(), stdin=subprocess.PIPE,
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with killed_on_exit(runner):  # a timeout (TimeoutExpired) or Ctrl-C kills the runner and its forks
        out, err = runner.communicate(json.dumps(list(codes)).encode(), timeout=_TIMEOUT_SECONDS * max(1, len(codes)))
    if runner.returncode:
        stderr = err.decode("utf-8", errors="replace")
        raise RuntimeError(f"the guide's block runner failed (exit {runner.returncode}): {stderr[-2000:]}")
    return [BlockRun(r["stdout"], r["exception"]) for r in json.loads(out.decode("utf-8"))]


def _env() -> dict[str, str]:
    return child_env([_ROOT], TF_CPP_MIN_LOG_LEVEL="3", PYTHONIOENCODING="utf-8")
