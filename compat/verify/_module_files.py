"""The original's and the rewrite's module files: regular and readable, checked before any child starts."""

from __future__ import annotations

import io
import os
import stat
import tokenize

from compat.errors import Error
from compat.regular_files import NotRegularFile, open_regular, special_kind


class ModuleFileError(Error, ValueError):
    """The original's or the rewrite's path is not a Python file that can be read; the message names the path
    and the side, and says what to give instead. Nothing has run when it is raised."""


def check_module_file(path: str, side: str) -> None:
    """Raise ModuleFileError unless `path` is a regular file (never opened: FIFOs and devices cannot block)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise ModuleFileError(f"{path}: no such file (the {side} module): give the path of its .py file") from None
    except OSError as exc:
        raise ModuleFileError(f"{path}: cannot be read ({exc.strerror or exc}) (the {side} module)") from None
    if stat.S_ISDIR(mode):
        raise ModuleFileError(f"{path}: a directory, not a module (the {side} module): give the .py file in it "
                              "that holds the code to verify")
    if not stat.S_ISREG(mode):
        raise ModuleFileError(f"{path}: {special_kind(mode)}, not a regular file (the {side} module): it is never "
                              "opened, as reading it could wait forever; give a .py file")


def read_source(path: str, side: str = "original") -> tuple[str, str]:
    """(text, encoding) of the module file `path` as Python reads it: a PEP 263 coding line or a BOM decides the
    encoding. Raises ModuleFileError when it is not a readable regular file or cannot be decoded."""
    check_module_file(path, side)
    try:
        fd, _ = open_regular(path)
        with os.fdopen(fd, "rb") as handle:
            data = handle.read()
    except NotRegularFile:
        raise ModuleFileError(f"{path}: replaced by another file while being opened (the {side} module); run "
                              "again once it is in place") from None
    except OSError as exc:
        raise ModuleFileError(f"{path}: cannot be read ({exc.strerror or exc}) (the {side} module)") from None
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding), encoding
    except SyntaxError as exc:
        raise ModuleFileError(f"{path}: {exc.msg} (the {side} module): fix its coding line") from None
    except UnicodeDecodeError as exc:
        raise ModuleFileError(f"{path}: cannot decode the source as {encoding} ({exc.reason} at byte {exc.start}); "
                              f"save it in the encoding its coding line declares") from None
