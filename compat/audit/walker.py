"""Find the files to audit and read each once: excludes, symlink-loop safety, the cheap pre-filter."""

from __future__ import annotations

import ast
import dataclasses
import fnmatch
import io
import os
import platform
import re
import stat
import symtable
import tokenize
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import BinaryIO

from compat.audit import token_scan
from compat.audit.findings import FileResult, Finding
from compat.audit.prefilter import LONGEST_TRIGGER, TRIGGERS, names_legacy_api
from compat.audit.rules import RULES
from compat.regular_files import NotRegularFile, open_regular, special_kind

# Files up to this size are read and decoded whole; larger ones are only streamed through the pre-filter.
DEFAULT_MAX_FILE_BYTES = 20 * 1024 * 1024
# ast.parse peak memory, measured on CPython 3.11.7 (peak RSS growth / source bytes): one tiny statement per
# line (`a\n`) 923x, `f(x)\n` 745x, a one-line list of ints 331x; real generated code (TensorFlow's
# gen_nn_ops.py, 650 KB) 75x. Lines bound nothing (a one-line file is as costly), so the limit is in bytes:
# at 1 MiB the worst case peaks at 941 MiB per worker (18 MiB baseline), so one worker per core on 2 cores
# fits in 2 GiB. Larger files are streamed through the pre-filter and are GC000 only if they need parsing.
DEFAULT_MAX_PARSE_BYTES = 1024 * 1024
_PARSE_BYTES_PER_BYTE = 923
_GRAMMAR_NOTE = (f"parsed with the grammar of the Python running compat-audit, {platform.python_version()}; "
                 "code for a newer Python needs compat-audit run under that Python")
_CHUNK = 1 << 20


# Directories a walk does not enter unless told to (`default_excludes=False`): version control, virtualenvs and
# installed packages, tool environments, build output. A directory holding `pyvenv.cfg` is a virtualenv whatever
# its name. Matched against directory base names only (a file `build.py` is walked).
DEFAULT_EXCLUDES: tuple[str, ...] = (
    ".git", ".hg", ".svn", ".venv", "venv", "__pypackages__", "site-packages", "dist-packages", ".tox", ".nox",
    ".eggs", "*.egg-info", "build", "dist", "bazel-*", "node_modules",
)
VIRTUALENV_MARKER = "pyvenv.cfg"


def _is_excluded(rel: str, excludes: Iterable[str]) -> bool:
    base = rel.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(rel, pat) or fnmatch.fnmatchcase(base, pat)
               or fnmatch.fnmatchcase(rel, pat.rstrip("/") + "/*") for pat in excludes)


_DEFAULT_NAMES = re.compile("|".join(fnmatch.translate(pattern) for pattern in DEFAULT_EXCLUDES))


def is_default_excluded(directory: str) -> bool:
    """Whether a walk skips `directory` by default: named in DEFAULT_EXCLUDES, or a virtualenv (pyvenv.cfg)."""
    return bool(_DEFAULT_NAMES.match(os.path.basename(os.path.normpath(directory)))
                or os.path.isfile(os.path.join(directory, VIRTUALENV_MARKER)))


def iter_python_files(paths: Iterable[str], excludes: Iterable[str] = (), *, default_excludes: bool = True,
                      on_default_excluded: Callable[[str], None] | None = None,
                      suffixes: tuple[str, ...] = (".py",)) -> Iterator[str]:
    """Yield `.py` files (or files ending in one of `suffixes`) under `paths` (files given explicitly are yielded
    whatever their suffix).

    Directories are walked in sorted order following symlinks, but each real directory (device, inode) is
    entered once, so symlink loops end. A directory that cannot be listed is yielded itself (it becomes a
    GC000), as is any explicit path that is not a directory (a FIFO or a device is a GC000, never opened).
    `excludes` are glob patterns matched against the path relative to the given root, against the path as
    displayed, and against the base name (`build`, `*_pb2.py`, `third_party/*`).
    With `default_excludes`, directories found in the walk that `is_default_excluded` are not entered (each is
    passed to `on_default_excluded`); a given root is always walked, without the defaults if it is one of them.
    """
    excludes = tuple(excludes)
    for root in paths:
        if not os.path.isdir(root):  # a file, FIFO or device named explicitly: read_and_parse says which
            if not _is_excluded(_posix(root), excludes):
                yield _posix(root)
            continue
        skip_defaults = default_excludes and not is_default_excluded(root)
        yield from _walk(root, excludes, skip_defaults, on_default_excluded, suffixes)


def _walk(root: str, excludes: tuple[str, ...], skip_defaults: bool,
          on_default_excluded: Callable[[str], None] | None, suffixes: tuple[str, ...]) -> Iterator[str]:
    visited: set[tuple[int, int]] = set()
    unlisted: list[OSError] = []
    for dirpath, dirnames, filenames in os.walk(root, onerror=unlisted.append, followlinks=True):
        yield from _drain(unlisted)
        try:
            st = os.stat(dirpath)
        except OSError:
            dirnames[:] = []
            continue
        if (st.st_dev, st.st_ino) in visited:  # a symlink back into a directory already walked
            dirnames[:] = []
            continue
        visited.add((st.st_dev, st.st_ino))
        # A virtualenv whatever its name, seen in the listing os.walk made anyway (a stat per directory costs
        # more than the rest of the default excludes).
        if skip_defaults and dirpath != root and VIRTUALENV_MARKER in filenames:
            if on_default_excluded is not None:
                on_default_excluded(_posix(dirpath))
            dirnames[:] = []
            continue
        rel_dir = dirpath[len(root):].lstrip(os.sep)  # os.walk joins each dirpath onto root
        rel_dir = "" if rel_dir in ("", ".") else _posix(rel_dir) + "/"
        kept = []
        for d in sorted(dirnames):
            full = os.path.join(dirpath, d)
            if excludes and (_is_excluded(rel_dir + d, excludes) or _is_excluded(_posix(full), excludes)):
                continue
            if skip_defaults and _DEFAULT_NAMES.match(d):
                if on_default_excluded is not None:
                    on_default_excluded(_posix(full))
                continue
            kept.append(d)
        dirnames[:] = kept
        for name in sorted(filenames):
            if not name.endswith(suffixes):
                continue
            full = _posix(os.path.join(dirpath, name))
            if excludes and (_is_excluded(rel_dir + name, excludes) or _is_excluded(full, excludes)):
                continue
            yield full
    yield from _drain(unlisted)


def _drain(unlisted: list[OSError]) -> Iterator[str]:
    """Directories os.walk could not list, yielded like files so that each becomes a GC000."""
    while unlisted:
        error = unlisted.pop(0)
        if error.filename is not None:
            yield _posix(os.fsdecode(error.filename))


def _posix(path: str) -> str:
    return os.path.normpath(path).replace(os.sep, "/")


def _gc000(path: str, message: str, lines: int = 0, line: int = 1, col: int = 1) -> FileResult:
    return FileResult(path, lines=lines, findings=(Finding(
        path=path, line=max(line, 1), col=max(col, 1), rule="GC000", end_line=max(line, 1),
        severity=str(RULES["GC000"].severity), message=message, suggestion=RULES["GC000"].help,
    ),))


def _unparsable(path: str, text: str, lines: int, error: SyntaxError) -> FileResult:
    """GC000 for a syntax error, and the legacy sites a scan of the code text still finds (Python 2 files are
    full of them): each as its own finding, so a file full of `Defun(grad_func=)` never counts as clean."""
    hint = " (Python 2 code?)" if "print" in str(error.msg) or "Missing parentheses" in str(error.msg) else ""
    sites = token_scan.legacy_sites(text)
    held = token_scan.describe(sites)
    port = (f"; it holds {held}, found without parsing: port it to Python 3 first (e.g. `python3.11 -m lib2to3 -w "
            f"{os.path.basename(path)}`, or by hand), then audit and rewrite it again") if held else ""
    result = _gc000(path, f"syntax error: {error.msg}{hint}{port} [{_GRAMMAR_NOTE}]", lines, error.lineno or 1,
                    error.offset or 1)
    found = tuple(Finding(path, site.line, site.col, site.rule, site.line, str(RULES[site.rule].severity),
                          f"`{site.api}` found by a text scan (the file does not parse, so aliases and scopes are "
                          f"not resolved): port the file to Python 3, then audit it again",
                          RULES[site.rule].help) for site in sites)
    return dataclasses.replace(result, findings=result.findings + found)


def _count_lines(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def _describe(path: str, mode: int) -> str:
    if stat.S_ISDIR(mode):
        try:
            with os.scandir(path):
                pass
        except OSError as e:
            return f"cannot list directory ({e.strerror or e}); the files in it were not audited"
        return "is a directory, not a Python file"
    return f"not a regular file ({special_kind(mode)}); the audit only opens regular files, so it was not read"


def _scan_large(path: str, f: BinaryIO, head: bytes, size: int, limit: int, strict: bool) -> FileResult:
    """Stream a file over the size limit: no trigger word -> nothing to audit; else GC000 (too large).

    At most max(size, limit) + one chunk bytes are read, so a file that keeps growing cannot hold the run.
    """
    lines = head.count(b"\n")
    found = bool(TRIGGERS.search(head))
    tail = head[-LONGEST_TRIGGER:]
    budget = max(size, limit) + _CHUNK - len(head)
    while not found and budget > 0 and (chunk := f.read(min(_CHUNK, budget))):
        budget -= len(chunk)
        lines += chunk.count(b"\n")
        window = tail + chunk
        found = bool(TRIGGERS.search(window))
        tail = window[-LONGEST_TRIGGER:]
    if budget <= 0 and f.read(1):
        return _gc000(path, f"file kept growing while it was read (past {max(size, limit)} bytes); "
                            "audit it again once it is complete", lines)
    if found or strict:
        why = "mentions a legacy gradient API" if found else "strict mode parses every file"
        return _gc000(path, f"file is larger than the read limit ({limit} bytes) and {why}; not audited: "
                            "raise max_file_bytes to audit it", lines)
    return FileResult(path, lines=lines)


def read_and_parse(
    path: str, *, strict: bool = False, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    max_parse_bytes: int = DEFAULT_MAX_PARSE_BYTES,
) -> tuple[FileResult, ast.Module | None, str]:
    """Read `path` once and parse it if it may use a legacy gradient API (see `prefilter.names_legacy_api`).

    With `strict`, every other file is checked by CPython's parser and symbol table too (no AST is built), so a
    syntax error anywhere is GC000. Only regular files are opened; at most `max_file_bytes` (+1) bytes are held
    whatever size the file reports, and only files up to `max_parse_bytes` are parsed (parsing costs hundreds of
    times the size).

    Returns (result, tree, text): `tree` is None when the file was not parsed into an AST or failed; a failure
    is a GC000 finding in `result`, never an exception.
    """
    try:
        fd, st = open_regular(path)
        with os.fdopen(fd, "rb") as f:
            data = f.read(max_file_bytes + 1)
            if len(data) > max_file_bytes:
                return _scan_large(path, f, data, st.st_size, max_file_bytes, strict), None, ""
    except NotRegularFile as e:
        why = "was replaced by another file while being opened; run again" if e.replaced and stat.S_ISREG(
            e.mode) else _describe(path, e.mode)
        return _gc000(path, why), None, ""
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
    needs_audit = names_legacy_api(text)
    if not strict and not needs_audit:
        return FileResult(path, lines=lines), None, text
    if len(data) > max_parse_bytes:
        return _gc000(path, f"file is {len(data)} bytes ({lines} lines), over the parse limit ({max_parse_bytes} "
                            f"bytes): parsing takes up to {_PARSE_BYTES_PER_BYTE}x the file size in memory; raise "
                            "max_parse_bytes to audit it", lines), None, ""
    if not needs_audit:  # strict on a file no rule applies to: CPython's front end checks it, no AST is built
        result, _ = _parse(path, text, lines, _check_syntax)
        return result, None, text
    result, tree = _parse(path, text, lines, ast.parse)
    return result, tree, text if tree is not None else ""


def _check_syntax(text: str, filename: str) -> None:
    """Raise SyntaxError as compiling `text` would, short of generating bytecode (a third faster than ast.parse)."""
    symtable.symtable(text, filename, "exec")


def _parse(path: str, text: str, lines: int,
           parser: Callable[[str, str], ast.Module | None]) -> tuple[FileResult, ast.Module | None]:
    try:
        with warnings.catch_warnings():  # invalid escape sequences and the like are the parsed code's business
            warnings.simplefilter("ignore")
            tree = parser(text, path)
    except SyntaxError as e:
        return _unparsable(path, text, lines, e), None
    except (MemoryError, RecursionError) as e:
        detail = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
        return _gc000(path, f"cannot parse: expressions nested too deeply for the parser ({detail}); Python "
                            f"cannot compile this file either [{_GRAMMAR_NOTE}]", lines), None
    except ValueError as e:
        return _gc000(path, f"cannot parse: {type(e).__name__}: {e}", lines), None
    return FileResult(path, lines=lines, parsed=True), tree
