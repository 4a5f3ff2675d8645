"""Find the files to audit and read each once: excludes, symlink-loop safety, the cheap pre-filter."""

from __future__ import annotations

import ast
import fnmatch
import io
import os
import re
import tokenize
from collections.abc import Iterable, Iterator

from compat.audit.findings import FileResult, Finding
from compat.audit.rules import RULES

# Every per-file rule needs one of these words in the file; files without them are never parsed.
TRIGGERS = re.compile(rb"Defun|RegisterGradient|gradient_override_map|custom_gradient")
_LONGEST_TRIGGER = len(b"gradient_override_map")
DEFAULT_MAX_FILE_BYTES = 20 * 1024 * 1024
_CHUNK = 1 << 20


def _is_excluded(rel: str, excludes: Iterable[str]) -> bool:
    base = rel.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(rel, pat) or fnmatch.fnmatchcase(base, pat)
               or fnmatch.fnmatchcase(rel, pat.rstrip("/") + "/*") for pat in excludes)


def iter_python_files(paths: Iterable[str], excludes: Iterable[str] = ()) -> Iterator[str]:
    """Yield `.py` files under `paths` (files given explicitly are yielded whatever their suffix).

    Directories are walked in sorted order following symlinks, but each real directory (device, inode) is
    entered once, so symlink loops end. `excludes` are glob patterns matched against the path relative to
    the given root, against the path as displayed, and against the base name (`build`, `*_pb2.py`,
    `third_party/*`).
    """
    excludes = tuple(excludes)
    for root in paths:
        if os.path.isfile(root):
            if not _is_excluded(_posix(root), excludes):
                yield _posix(root)
            continue
        visited: set[tuple[int, int]] = set()
        for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
            try:
                st = os.stat(dirpath)
            except OSError:
                dirnames[:] = []
                continue
            if (st.st_dev, st.st_ino) in visited:  # a symlink back into a directory already walked
                dirnames[:] = []
                continue
            visited.add((st.st_dev, st.st_ino))
            rel_dir = os.path.relpath(dirpath, root)
            rel_dir = "" if rel_dir == "." else _posix(rel_dir) + "/"
            dirnames[:] = sorted(
                d for d in dirnames
                if not _is_excluded(rel_dir + d, excludes)
                and not _is_excluded(_posix(os.path.join(dirpath, d)), excludes)
            )
            for name in sorted(filenames):
                if not name.endswith(".py"):
                    continue
                full = _posix(os.path.join(dirpath, name))
                if _is_excluded(rel_dir + name, excludes) or _is_excluded(full, excludes):
                    continue
                yield full


def _posix(path: str) -> str:
    return os.path.normpath(path).replace(os.sep, "/")


def _gc000(path: str, message: str, lines: int = 0, line: int = 1, col: int = 1) -> FileResult:
    return FileResult(path, lines=lines, findings=(Finding(
        path=path, line=max(line, 1), col=max(col, 1), rule="GC000", end_line=max(line, 1),
        severity=str(RULES["GC000"].severity), message=message, suggestion=RULES["GC000"].help,
    ),))


def _count_lines(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def _scan_large(path: str, limit: int) -> FileResult:
    """Stream a file over the size limit: no trigger word -> nothing to audit; else GC000 (too large)."""
    lines = 0
    tail = b""
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            lines += chunk.count(b"\n")
            window = tail + chunk
            if TRIGGERS.search(window):
                return _gc000(path, f"file is larger than the audit limit ({limit} bytes) and mentions a "
                                    "legacy gradient API; raise --max_file_bytes to audit it")
            tail = window[-_LONGEST_TRIGGER:]
    return FileResult(path, lines=lines)


def read_and_parse(
    path: str, *, strict: bool = False, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> tuple[FileResult, ast.Module | None, str]:
    """Read `path` once and parse it if it may contain a legacy pattern (or always, when `strict`).

    Returns (result, tree, text): `tree` is None when the file was skipped by the pre-filter or failed; a failure
    is a GC000 finding in `result`, never an exception.
    """
    try:
        size = os.path.getsize(path)
        if size > max_file_bytes:
            return _scan_large(path, max_file_bytes), None, ""
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        return _gc000(path, f"cannot read file: {e.strerror or e}"), None, ""
    lines = _count_lines(data)
    nul = data.find(b"\0")
    if nul >= 0:
        return _gc000(path, f"binary content (NUL byte at offset {nul}); not a Python source file", lines), None, ""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError) as e:
        return _gc000(path, f"cannot decode source: {e}", lines), None, ""
    if not strict and not TRIGGERS.search(data):
        return FileResult(path, lines=lines), None, text
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError as e:
        hint = " (Python 2 code?)" if "print" in str(e.msg) or "Missing parentheses" in str(e.msg) else ""
        return _gc000(path, f"syntax error: {e.msg}{hint}", lines, e.lineno or 1, e.offset or 1), None, ""
    except (ValueError, RecursionError, MemoryError) as e:
        return _gc000(path, f"cannot parse: {type(e).__name__}: {e}", lines), None, ""
    return FileResult(path, lines=lines, parsed=True), tree, text
