"""Write the matrix files all or none: staged in a temporary directory beside them, then moved in together."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from compat.errors import Error


class OutputDirError(Error, ValueError):
    """The output directory cannot hold the files: `path` (the directory given) and `reason` (what is wrong and
    what to do); the message is `path: reason`, and a command line names its flag before the path."""

    def __init__(self, path: str | Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = str(path), reason

    def __reduce__(self) -> tuple[type[OutputDirError], tuple[str, str]]:
        return OutputDirError, (self.path, self.reason)


def write_all(directory: str | Path, files: Mapping[str, str]) -> None:
    """Write each `name -> text` (UTF-8) into `directory`, creating it if needed, so that either every file is
    replaced or none: a failure at any point leaves the files that were there before, as they were.

    Raises:
      OutputDirError: `directory` is not a directory or cannot be created or written, naming it.
    """
    out = Path(directory)
    _prepare(out)
    try:
        staging = Path(tempfile.mkdtemp(prefix=".matrix-", dir=out))
    except OSError as exc:
        raise OutputDirError(out, f"cannot write there ({exc.strerror}); choose another directory") from None
    try:
        for name, text in files.items():
            with open(staging / name, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
        _move_in(staging, out, list(files))
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _prepare(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise OutputDirError(out, "it is a file, not a directory; give a directory (it is created if missing)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputDirError(out, f"cannot create it ({exc.strerror}); give a directory you can write") from None


def _move_in(staging: Path, out: Path, names: list[str]) -> None:
    """Move the staged files over the old ones; if one move fails, put back every file already moved."""
    previous = staging / "previous"
    previous.mkdir()
    moved: list[str] = []
    current = ""
    try:
        for current in names:
            if (out / current).is_file():
                _keep(out / current, previous / current)
            os.replace(staging / current, out / current)
            moved.append(current)
    except OSError as exc:
        for name in moved:
            if (previous / name).exists():
                os.replace(previous / name, out / name)
            else:
                (out / name).unlink()
        raise OutputDirError(out, f"could not write {out / current} ({exc.strerror}); no file there was "
                             "changed") from None


def _keep(path: Path, copy: Path) -> None:
    """A copy of `path` that stays valid once `path` is replaced: a hard link, or a real copy where links fail."""
    try:
        os.link(path, copy)
    except OSError:
        shutil.copy2(path, copy)
