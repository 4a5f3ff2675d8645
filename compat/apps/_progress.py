"""Progress on stderr, never on the report's stream: a rich bar on a terminal, periodic plain lines in CI logs.

    progress = progress_on_stderr("compat-check", setting=None)   # a bar on a terminal, lines otherwise
    progress.phase("importing TensorFlow")
    progress.start(30, "spec x dtype")
    progress.advance("scaled_ste float32")
    progress.close()

On a terminal the bar shows the phase or the last unit done, done/total, elapsed time and an estimate of what
is left. Elsewhere (stderr redirected to a file, a CI log) one line is written per phase, then one at most every
`interval` seconds and one at the end, each with done/total, elapsed time and the estimate.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Protocol, TextIO

LINE_INTERVAL = 10.0
"""Seconds between two progress lines when stderr is not a terminal (the end and phases are always written)."""
HEARTBEAT = 30.0
"""Seconds without a progress line after which one is written anyway (`...; still working`)."""


class Progress(Protocol):
    """What an app reports while it works; every method may be called in any order, `close` more than once."""

    def phase(self, text: str) -> None: ...

    def start(self, total: int, unit: str) -> None: ...

    def advance(self, label: str = "", steps: int = 1) -> None: ...

    def close(self) -> None: ...


def progress_on_stderr(program: str, setting: bool | None, lines_by_default: bool = True,
                       stream: TextIO | None = None) -> Progress | None:
    """The progress an app shows for `--progress`/`--noprogress` (`setting`) or by default.

    An explicit `--noprogress` shows nothing. On a terminal: a bar. Elsewhere: lines, when `--progress` is given
    or `lines_by_default` (the long-running apps: a CI log must show that something is happening).
    """
    stream = stream or sys.stderr
    if setting is False:
        return None
    if _is_terminal(stream):
        return TerminalProgress(stream)
    return LineProgress(program, stream) if setting or lines_by_default else None


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # closed or not a real file
        return False


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


class LineProgress:
    """One plain line per phase, then at most one per `interval` seconds, and one at the end."""

    def __init__(self, program: str, stream: TextIO, interval: float = LINE_INTERVAL,
                 heartbeat: float = HEARTBEAT) -> None:
        self.program, self.stream, self.interval, self.heartbeat = program, stream, interval, heartbeat
        self.began = time.monotonic()
        self.total, self.done, self.unit = 0, 0, ""
        self._last_line = 0.0
        self._closed = False
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def phase(self, text: str) -> None:
        with self._lock:
            self._write(f"{text} ({_clock(time.monotonic() - self.began)} elapsed)")

    def start(self, total: int, unit: str) -> None:
        self.total, self.unit = max(total, 0), unit
        self._last_line = time.monotonic()
        if self.heartbeat > 0:
            threading.Thread(target=self._beat, name=f"{self.program} progress", daemon=True).start()

    def advance(self, label: str = "", steps: int = 1) -> None:
        with self._lock:
            self.done = min(self.total, self.done + steps) if self.total else self.done + steps
            now = time.monotonic()
            if now - self._last_line >= self.interval or (self.total and self.done >= self.total):
                self._last_line = now
                self._write(self._status(now) + (f": {label}" if label else ""))

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            if not self._closed and self.total and self.done < self.total:
                self._write(self._status(time.monotonic()) + "; stopped")
            self._closed = True

    def _beat(self) -> None:
        """A line after `heartbeat` seconds without one, so a log never looks hung while a long unit runs."""
        while not self._stop.wait(min(self.interval, self.heartbeat)):
            with self._lock:
                now = time.monotonic()
                if not self._closed and now - self._last_line >= self.heartbeat:
                    self._last_line = now
                    self._write(self._status(now) + "; still working")

    def _status(self, now: float) -> str:
        elapsed = now - self.began
        text = f"{self.done}/{self.total} {self.unit}, {_clock(elapsed)} elapsed"
        if self.total and 0 < self.done < self.total:
            text += f", about {_clock(elapsed / self.done * (self.total - self.done))} left"
        return text

    def _write(self, text: str) -> None:
        try:
            self.stream.write(f"{self.program}: {text}\n")
            self.stream.flush()
        except (OSError, ValueError):  # stderr closed or a broken pipe: progress is never worth a failure
            pass


class TerminalProgress:
    """rich's bar: the phase or last unit, done/total, elapsed time and time left, redrawn in place.

    It draws on its own duplicate of the stream's file descriptor, so it stays visible while the app points
    fd 2 elsewhere (TensorFlow's import is run with fd 2 sent to a temporary file, to hide its chatter).
    """

    def __init__(self, stream: TextIO) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._own: TextIO | None = _duplicate(stream)
        self._bar = Progress(TextColumn("{task.description:<28.28}"), BarColumn(), MofNCompleteColumn(),
                             TextColumn("{task.fields[unit]}"), TimeElapsedColumn(), TextColumn("eta"),
                             TimeRemainingColumn(), console=Console(file=self._own or stream), transient=False,
                             redirect_stdout=False, redirect_stderr=False)
        self._task = self._bar.add_task("starting", total=None, unit="")
        self._bar.start()

    def phase(self, text: str) -> None:
        self._bar.update(self._task, description=text)
        self._bar.refresh()  # drawn now: the next step may hold the interpreter for seconds (an import)

    def start(self, total: int, unit: str) -> None:
        self._bar.update(self._task, total=total, unit=unit)

    def advance(self, label: str = "", steps: int = 1) -> None:
        self._bar.update(self._task, advance=steps, description=label or None)

    def close(self) -> None:
        self._bar.stop()
        if self._own is not None:
            self._own.close()
            self._own = None


def _duplicate(stream: TextIO) -> TextIO | None:
    """A new file object on a duplicate of `stream`'s descriptor, or None when it has none (a test's StringIO)."""
    try:
        stream.flush()
        return os.fdopen(os.dup(stream.fileno()), "w", encoding=getattr(stream, "encoding", None) or "utf-8",
                         errors="replace")
    except (AttributeError, OSError, ValueError):
        return None
