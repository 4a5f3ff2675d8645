"""Open regular files only, never blocking: FIFOs, devices and sockets are described, never read."""

from __future__ import annotations

import json
import os
import stat
from typing import Any

SPECIAL_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                 (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
"""(test of a mode, what a file of that mode is called) for the files that are neither regular nor directories."""


class NotRegularFile(Exception):
    """`path` is not a regular file (its `mode` says what it is), or was `replaced` while it was being opened."""

    def __init__(self, path: str, mode: int, *, replaced: bool = False) -> None:
        super().__init__(f"{path}: {'replaced while being opened' if replaced else 'not a regular file'}")
        self.path = path
        self.mode = mode
        self.replaced = replaced


def open_regular(path: str) -> tuple[int, os.stat_result]:
    """(fd, fstat) of the regular file `path`, for blocking reads; the caller closes the fd.

    Raises NotRegularFile for anything else, or when another file took `path`'s place between the stat and the
    open (`replaced`); OSError when it cannot be read.
    """
    before = os.stat(path)
    if not stat.S_ISREG(before.st_mode):
        raise NotRegularFile(path, before.st_mode)
    # O_NONBLOCK: if a FIFO replaced the file since the stat, open() must not wait for a writer.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    after = os.fstat(fd)
    if not stat.S_ISREG(after.st_mode) or (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino):
        os.close(fd)
        raise NotRegularFile(path, after.st_mode, replaced=True)
    os.set_blocking(fd, True)
    return fd, after


def read_regular(path: str, limit: int, needle: bytes) -> bytes:
    """Up to `limit` bytes of the regular file `path` if they contain `needle`, else b"" (FIFOs, devices and
    unreadable files included: never blocks)."""
    try:
        fd, _ = open_regular(path)
    except (NotRegularFile, OSError):
        return b""
    try:
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(limit)
    except OSError:
        return b""
    return data if needle in data else b""


def special_kind(mode: int) -> str:
    """What a file that is neither regular nor a directory is ("a FIFO", "a socket", ...), from its mode."""
    return next((name for test, name in SPECIAL_KINDS if test(mode)), "a special file")


class UnreadableJson(ValueError):
    """A file that cannot be read as a JSON document; the message says why, without the path (callers name it)."""


def read_json(path: str | os.PathLike[str]) -> Any:
    """The JSON document in the regular file `path` (UTF-8).

    Raises UnreadableJson when `path` is not a regular file (never opened: a FIFO would block, a device such as
    /dev/zero would stream forever), cannot be read, is not UTF-8 JSON, or nests too deep for Python's parser.
    """
    try:
        fd, _ = open_regular(os.fspath(path))
        with os.fdopen(fd, "rb") as handle:
            data = handle.read()
    except NotRegularFile as exc:
        what = "a directory" if stat.S_ISDIR(exc.mode) else special_kind(exc.mode)
        why = "replaced by another file while being opened" if exc.replaced else f"{what}, not a regular file"
        raise UnreadableJson(f"{why}: never read") from None
    except OSError as exc:
        raise UnreadableJson(exc.strerror or str(exc)) from None
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise UnreadableJson(str(exc)) from None
    except RecursionError:
        raise UnreadableJson("nested too deep for Python's JSON parser") from None
