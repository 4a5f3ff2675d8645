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

_TIMEOUT_SECONDS = 600
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
    done = subprocess.run([sys.executable, "-m", "compat.guide._fork_runner"], input=json.dumps(list(codes)),
                          env=_env(), capture_output=True, text=True, encoding="utf-8",
                          timeout=_TIMEOUT_SECONDS * max(1, len(codes)), check=False)
    if done.returncode:
        raise RuntimeError(f"the guide's block runner failed (exit {done.returncode}): {done.stderr[-2000:]}")
    return [BlockRun(r["stdout"], r["exception"]) for r in json.loads(done.stdout)]


def _env() -> dict[str, str]:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONIOENCODING": "utf-8", "PYTHONPATH": path}
