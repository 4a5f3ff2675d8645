"""The SavedModel loading process, kept alive across batches: bounded in time, killed on every failure path.

TensorFlow's import costs seconds, so each `saved_model` context keeps one loading process (started on its first
batch) that handles one directory per request: the parent writes the directory's path on a line, the process
writes `result.json` there and answers `done` on stdout. The process never imports the user's code; a crash or a
timeout kills it, fails that batch's cases, and the next batch starts a new one.
"""

from __future__ import annotations

import atexit
import os
import select
import subprocess
import tempfile
import time
from pathlib import Path

from compat.child import kill_group, start, stderr_tail


class LoaderFailed(Exception):
    """The loading process crashed, timed out or wrote no result: its cases are errors, never guessed."""


class LoaderProcess:
    """One loading process started from `command`, serving requests in turn."""

    def __init__(self, command: list[str], env: dict[str, str]):
        self.command = command
        self.env = env
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr_path = Path(tempfile.mkstemp(prefix="gradcompat-loader-", suffix=".stderr")[1])
        atexit.register(self._at_exit)

    def request(self, directory: Path, timeout: float) -> None:
        """Have the process handle `directory` within `timeout` seconds, or raise LoaderFailed (and kill it)."""
        process = self._started()
        offset = self._stderr_path.stat().st_size
        try:
            assert process.stdin is not None and process.stdout is not None
            process.stdin.write(f"{directory}\n".encode())
            process.stdin.flush()
            answer = self._read_line(process, timeout)
        except OSError:  # a broken pipe: the process died before reading the request
            answer = b""
        except BaseException:
            self.close()
            raise
        if answer != b"done":
            code = self.close()
            raise LoaderFailed(f"the SavedModel loading process {self._ended(code)}{self._stderr_tail(offset)}")

    def _started(self) -> subprocess.Popen[bytes]:
        if self._process is None or self._process.poll() is not None:
            with open(self._stderr_path, "ab") as stderr:
                # Its own session: a timeout kills the loader and anything it started, Ctrl-C reaches only us.
                self._process = start(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                      env=self.env)
        return self._process

    @staticmethod
    def _read_line(process: subprocess.Popen[bytes], timeout: float) -> bytes:
        assert process.stdout is not None
        deadline = time.monotonic() + timeout
        line = b""
        fd = process.stdout.fileno()
        while not line.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise LoaderFailed(f"the SavedModel loading process did not finish within {timeout:g} s and was "
                                   f"killed; raise the context's timeout_seconds for large inputs")
            chunk = os.read(fd, 1)
            if not chunk:
                return line  # end of file: the process exited
            line += chunk
        return line.strip()

    @staticmethod
    def _ended(code: int | None) -> str:
        return "closed its output without answering" if code in (None, 0) else f"exited with code {code}"

    def _stderr_tail(self, offset: int) -> str:
        lines = stderr_tail(self._stderr_path, offset)
        return ": " + " | ".join(lines) if lines else ""

    def _at_exit(self) -> None:
        self.close()
        self._stderr_path.unlink(missing_ok=True)

    def close(self) -> int | None:
        """Kill the process (its group) if it runs; its exit code (None if there was none)."""
        process, self._process = self._process, None
        if process is None:
            return None
        code = kill_group(process)
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                stream.close()
        return code
