"""What every gradcompat absl app shares: exit codes, safe output, a stderr progress bar, the runner."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import TextIO

from absl import app, flags

from compat.apps._output import write_output

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


def write_atomically(path: str, text: str) -> None:
    """Create `path`'s missing parent directories, then `write_output` (kept for apps not yet checking first)."""
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    except OSError:
        pass  # write_output raises OutputError with the reason
    write_output(path, text)


class ProgressBar:
    """A one-line bar on stderr, redrawn at most 10 times a second; stdout is never touched."""

    def __init__(self, total: int, unit: str, stream: TextIO | None = None) -> None:
        self.total, self.done, self.unit = max(total, 1), 0, unit
        self.stream = stream or sys.stderr
        self._last = 0.0

    def advance(self, label: str = "", steps: int = 1) -> None:
        self.done = min(self.total, self.done + steps)
        now = time.monotonic()
        if now - self._last >= 0.1 or self.done == self.total:
            self._last = now
            filled = int(30 * self.done / self.total)
            self.stream.write(f"\r[{'#' * filled}{'.' * (30 - filled)}] {self.done}/{self.total} {self.unit} "
                              f"{label[:48]:<48}")
            self.stream.flush()

    def close(self) -> None:
        self.stream.write("\n")
        self.stream.flush()


def wants_progress(setting: bool | None) -> bool:
    """An explicit --progress/--noprogress wins; otherwise show the bar only when stderr is a terminal."""
    return sys.stderr.isatty() if setting is None else setting


def run_app(main: Callable[[list[str]], int], module_name: str, program: str) -> None:
    """app.run(main) with this module's flags shown by --help and bad flags as exit 2, for console scripts."""
    # Under a console script the main module is the generated wrapper, so absl would list no flags in --help.
    for flag in flags.FLAGS.get_key_flags_for_module(module_name):
        flags.FLAGS.register_key_flag_for_module(sys.argv[0], flag)

    def parse(argv: Sequence[str]) -> list[str]:
        try:
            return flags.FLAGS(list(argv))
        except flags.Error as error:
            sys.stderr.write(f"{program}: {error}\nPass --helpshort for the flags.\n")
            sys.exit(EXIT_USAGE)

    app.run(main, flags_parser=parse)
