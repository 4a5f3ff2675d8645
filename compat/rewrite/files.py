"""Read, rewrite and (with `in_place`) write files safely: regular files only, atomic, skip if changed since read."""

from __future__ import annotations

import dataclasses
import io
import os
import stat
import tokenize
from collections.abc import Callable, Iterable, Iterator, Mapping

import libcst as cst

from compat.audit import token_scan
from compat.audit.custom_ops import registered_op_types
from compat.audit.engine import audit_file
from compat.audit.walker import iter_python_files
from compat.regular_files import NotRegularFile, open_regular
from compat.rewrite import tree
from compat.rewrite.engine import rewrite_source
from compat.rewrite.kept import TreeFacts
from compat.rewrite.replace import Snapshot, replace
from compat.rewrite.result import PATTERNS, FileResult, Site, Status
from compat.rewrite.todo import PREFIX as TODO_PREFIX

DEFAULT_MAX_FILE_BYTES = 5 * 1024 * 1024


def _open_regular(path: str) -> tuple[int, os.stat_result] | str:
    """An fd on `path` if it is a regular file, else why not (never blocks on a FIFO or device)."""
    try:
        return open_regular(path)
    except NotRegularFile as e:
        if e.replaced:
            other = "another file" if stat.S_ISREG(e.mode) else "a special file"
            return f"file was replaced by {other} while being opened: skipped"
        return "not a regular file (FIFO, device, socket or directory): never opened"
    except OSError as e:
        return f"cannot read file: {e.strerror or e}"


def _read(path: str, max_bytes: int) -> tuple[bytes, Snapshot] | FileResult:
    opened = _open_regular(path)
    if isinstance(opened, str):
        status = "failed" if opened.startswith("cannot read") else "skipped"
        return FileResult(path, status, opened)  # type: ignore[arg-type]
    fd, st = opened
    with os.fdopen(fd, "rb") as handle:
        if st.st_size > max_bytes:
            return FileResult(path, "skipped", f"file is larger than the rewrite limit ({max_bytes} bytes); "
                                               "raise max_file_bytes to rewrite it")
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        return FileResult(path, "skipped", f"file grew past the rewrite limit ({max_bytes} bytes) while read")
    return data, Snapshot.of(st, data)


def _decode(data: bytes) -> tuple[str, str] | str:
    """(text, encoding), or why the bytes are not Python source."""
    if b"\0" in data:
        return "binary content (NUL byte); not a Python source file"
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding), encoding
    except (SyntaxError, UnicodeDecodeError, LookupError) as e:
        return f"cannot decode source: {e}; save it as UTF-8 (or declare its coding) and run again"


def rewrite_file(path: str, *, in_place: bool = False, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
                 registry: Mapping[str, list[tree.Registered]] | None = None,
                 facts: TreeFacts | None = None) -> FileResult:
    """Rewrite one file; never raises for a bad file: the result says `skipped` or `failed` with the reason.

    `registry`: the gradients the other files of the tree register (`tree.index`), for maps using them.
    `facts`: what the files rewritten with it say (see `rewrite_source`'s `tree`); without it, this file alone.
    """
    read = _read(path, max_file_bytes)
    if isinstance(read, FileResult):
        return read
    data, snapshot = read
    decoded = _decode(data)
    if isinstance(decoded, str):
        return FileResult(path, "failed", decoded)
    text, encoding = decoded
    try:
        result = (rewrite_source(text, path, facts) if registry is None
                  else tree.rewrite_in_tree(text, path, registry, facts))
    except cst.ParserSyntaxError as e:
        return _unparsable(path, text, f"syntax error at line {e.raw_line}: {e.message}; not touched")
    except RecursionError:
        return FileResult(path, "failed", "too deeply nested to rewrite; not touched")
    if result.text == text:
        return FileResult(path, "unchanged", sites=result.sites, original=text, rewritten=text)
    status: Status = "todo" if _without_todos(result.text) == _without_todos(text) else "rewritten"
    written = False
    if in_place:
        reason = replace(path, result.text.encode(encoding), snapshot)
        if reason:
            return FileResult(path, "skipped", reason, result.sites, text, result.text)
        written = True
    return FileResult(path, status, "", result.sites, text, result.text, written)


def _without_todos(text: str) -> list[str]:
    """The lines of `text` but its `# TODO(gradcompat): ...` comment lines: equal for a TODO-only change."""
    return [line for line in text.splitlines() if not line.lstrip().startswith(TODO_PREFIX)]


def _unparsable(path: str, text: str, reason: str) -> FileResult:
    """A file that does not parse (Python 2 code, often): `failed`, with the legacy calls a scan of its code text
    finds as `skipped` sites, so they are counted and the reason says to port the file first."""
    found = token_scan.legacy_sites(text)
    if not found:
        return FileResult(path, "failed", reason)
    why = "the file does not parse: port it to Python 3 first, then rewrite it"
    sites = tuple(Site(site.line, _PATTERNS_BY_RULE[site.rule], "skipped", why) for site in found)
    held = token_scan.describe(found)
    return FileResult(path, "failed", f"{reason}; it holds {held}, found without parsing: port it to Python 3 first "
                                      f"(e.g. `python3.11 -m lib2to3 -w {os.path.basename(path)}`), then run "
                                      f"compat-rewrite again", sites)


_PATTERNS_BY_RULE = {rule: pattern for pattern, rule in PATTERNS.items()}


def write_result(result: FileResult, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> FileResult:
    """Write a dry run's rewrite into its file, atomically, if the file still holds the text that was rewritten
    (e.g. after `--verify` proved it); otherwise the result is `skipped` with the reason, the file untouched."""
    if result.status not in ("rewritten", "todo") or result.written:
        return result
    read = _read(result.path, max_file_bytes)
    if isinstance(read, FileResult):
        return dataclasses.replace(result, status="skipped", reason=read.reason)
    data, snapshot = read
    decoded = _decode(data)
    if isinstance(decoded, str) or decoded[0] != result.original:
        return dataclasses.replace(result, status="skipped",
                                   reason="file changed since it was read; not overwritten (run again)")
    reason = replace(result.path, result.rewritten.encode(decoded[1]), snapshot)
    if reason:
        return dataclasses.replace(result, status="skipped", reason=reason)
    return dataclasses.replace(result, written=True)


def _files(paths: Iterable[str], excludes: Iterable[str], *, default_excludes: bool = True,
           on_default_excluded: Callable[[str], None] | None = None) -> Iterator[str]:
    """Like the audit's walk, but a path given explicitly is always yielded, even a FIFO (to be reported)."""
    excludes = tuple(excludes)
    for root in paths:
        if os.path.isdir(root):
            yield from iter_python_files([root], excludes, default_excludes=default_excludes,
                                         on_default_excluded=on_default_excluded)
        else:
            yield root


def _texts(files: Iterable[str], max_file_bytes: int) -> Iterator[tuple[str, str]]:
    """(path, text) of each file that reads and decodes, for the tree's index of registered gradients."""
    for path in files:
        read = _read(path, max_file_bytes)
        decoded = _decode(read[0]) if not isinstance(read, FileResult) else "unreadable"
        if not isinstance(decoded, str):
            yield path, decoded[0]


def rewrite_paths(
    paths: Iterable[str], *, in_place: bool = False, excludes: Iterable[str] = (), default_excludes: bool = True,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES, on_file: Callable[[FileResult], None] | None = None,
    on_default_excluded: Callable[[str], None] | None = None,
    select: Callable[[list[str]], Iterable[str]] | None = None,
) -> Iterator[FileResult]:
    """Rewrite every `.py` file under `paths` (files given explicitly whatever their suffix), in order.

    With `default_excludes`, virtualenvs, installed packages, version control and build directories found under
    a directory are not entered (`compat.audit.walker.DEFAULT_EXCLUDES`; each is passed to
    `on_default_excluded`); a path given in `paths` is always rewritten. A map using a gradient registered in
    another file of `paths` is rewritten with it where that is provably the same function (`compat.rewrite.tree`).
    `select` (a shard's part, `compat-rewrite --shard`) gets every file walked, in order, and says which to
    rewrite; the tree-wide facts are still those of every file, so each file's result is the whole run's.
    """
    paths = list(paths)
    files = list(_files(paths, excludes, default_excludes=default_excludes, on_default_excluded=on_default_excluded))
    registry = tree.index(_texts(files, max_file_bytes))
    # A gradient one file registers may be used by an override map in another: a registration is only `kept`
    # when no map in any of the files uses it (the audit's tree-wide GC003 note).
    audits = [audit_file(path, max_file_bytes=max_file_bytes) for path in files if os.path.isfile(path)]
    native_ops = registered_op_types(paths, excludes, default_excludes=default_excludes) if any(
        a.registrations for a in audits) else {}
    facts = TreeFacts.of(audits, native_ops)
    chosen = set(select(list(files))) if select is not None else None
    for path in files:
        if chosen is not None and path not in chosen:
            continue
        result = rewrite_file(path, in_place=in_place, max_file_bytes=max_file_bytes, registry=registry,
                              facts=facts)
        if on_file is not None:
            on_file(result)
        yield result
