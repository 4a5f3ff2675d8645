"""Write the matrix files all or none: staged in a temporary directory beside them, then moved in together."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from compat.errors import Error


class OutputDirError(Error, ValueError):
    """`--output_dir` cannot hold the files; the message names it and says what to do."""


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
        raise OutputDirError(f"--output_dir={out}: cannot write there ({exc.strerror}); choose another "
                             "directory") from None
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
        raise OutputDirError(f"--output_dir={out} is a file, not a directory; give a directory (it is created if "
                             "missing)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputDirError(f"--output_dir={out}: cannot create it ({exc.strerror}); give a directory you can "
                             "write") from None


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
        raise OutputDirError(f"--output_dir={out}: could not write {out / current} ({exc.strerror}); no file "
                             "there was changed") from None


def _keep(path: Path, copy: Path) -> None:
    """A copy of `path` that stays valid once `path` is replaced: a hard link, or a real copy where links fail."""
    try:
        os.link(path, copy)
    except OSError:
        shutil.copy2(path, copy)
