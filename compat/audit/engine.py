"""Audit many files in parallel and combine them: tree-wide rules (GC007 notes, GC008) and the summary."""

from __future__ import annotations

import ast
import collections
import dataclasses
import multiprocessing
import os
import sys
from collections.abc import Callable, Iterable, Mapping

from compat.audit import custom_ops
from compat.audit import data as tf_data
from compat.audit.branches import exclusive
from compat.audit.findings import FileResult, Finding, Site, display_path
from compat.audit.rules import RULES, Severity
from compat.audit.visitor import audit_tree
from compat.audit.walker import DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_PARSE_BYTES, iter_python_files, read_and_parse
from compat.regular_files import read_regular

# Below this many files a process pool costs more than it saves.
_PARALLEL_MIN_FILES = 48
_CHUNKSIZE = 16


@dataclasses.dataclass(frozen=True)
class AuditReport:
    """The result of one audit run. Holds findings and counts only, so memory does not grow per clean file.

    Attributes:
      findings: all findings, sorted by path, line, column, rule.
      files_scanned: number of files read (or attempted).
      files_parsed: files parsed (the rest were skipped by the pre-filter or are GC000); with `strict`, those
        no rule applies to count when CPython's parser and symbol table accepted them.
      files_unreadable: files with a GC000 finding.
      lines: total lines read.
      tf_version: TensorFlow version of the shipped op-type data.
    """

    findings: tuple[Finding, ...]
    files_scanned: int
    files_parsed: int
    files_unreadable: int
    lines: int
    tf_version: str

    @property
    def counts(self) -> Mapping[str, int]:
        """Findings per rule id, every rule listed (zeros included), in rule order."""
        counter = collections.Counter(f.rule for f in self.findings)
        return {rule: counter.get(rule, 0) for rule in RULES}


@dataclasses.dataclass(frozen=True)
class _Options:
    strict: bool
    max_file_bytes: int
    max_parse_bytes: int = DEFAULT_MAX_PARSE_BYTES


def audit_file(path: str, strict: bool = False, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
               max_parse_bytes: int = DEFAULT_MAX_PARSE_BYTES) -> FileResult:
    """Audit one file (per-file rules only). Never raises: failures are GC000 findings."""
    result, tree, text = read_and_parse(path, strict=strict, max_file_bytes=max_file_bytes,
                                        max_parse_bytes=max_parse_bytes)
    if tree is None:
        return result
    try:
        return audit_tree(path, tree, text, tf_data.load(), result.lines)
    except RecursionError as e:
        return _not_audited(result, f"too deeply nested to audit: {e}")
    except Exception as e:  # noqa: BLE001 - a bug of ours on one odd file must not end the whole run.
        return _not_audited(result, f"compat-audit failed on this file ({type(e).__name__}: {e}); the rest of "
                                    f"the tree was audited, please report this file's construct as a bug")


def _not_audited(result: FileResult, message: str) -> FileResult:
    return dataclasses.replace(result, parsed=False, findings=(Finding(
        result.path, 1, 1, "GC000", 1, str(RULES["GC000"].severity), message, RULES["GC000"].help),))


def _audit_task(args: tuple[str, _Options]) -> FileResult:
    path, opts = args
    return audit_file(path, opts.strict, opts.max_file_bytes, opts.max_parse_bytes)


def _pool_context() -> multiprocessing.context.BaseContext:
    # fork is much cheaper to start; spawn elsewhere (and where fork is unavailable).
    if sys.platform.startswith("linux"):
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def _results(paths: Iterable[str], opts: _Options, jobs: int) -> Iterable[FileResult]:
    paths = iter(paths)
    head = [p for _, p in zip(range(_PARALLEL_MIN_FILES), paths, strict=False)]
    if jobs <= 1 or len(head) < _PARALLEL_MIN_FILES:
        tasks = [(p, opts) for p in head] + [(p, opts) for p in paths]
        yield from map(_audit_task, tasks)
        return
    tf_data.load()  # loaded once in the parent; forked workers inherit it.
    with _pool_context().Pool(jobs) as pool:
        streamed = ((p, opts) for chain in (head, paths) for p in chain)
        yield from pool.imap_unordered(_audit_task, streamed, chunksize=_CHUNKSIZE)


def tree_findings(registrations: Iterable[Site], override_targets: Iterable[Site],
                  builtin_gradients: frozenset[str]) -> list[Finding]:
    """GC008 for every registration of a name after its first; a GC007 note for map values never registered."""
    findings: list[Finding] = []
    by_name: dict[str, list[Site]] = collections.defaultdict(list)
    for site in registrations:
        by_name[site.name].append(site)
    for name, sites in by_name.items():
        sites.sort(key=lambda s: (s.path, s.line, s.col))
        for i, site in enumerate(sites):
            first = next((s for s in sites[:i] if not _exclusive(s, site)), None)
            if first is None:
                continue
            findings.append(Finding(
                site.path, site.line, site.col, "GC008", site.end_line, str(RULES["GC008"].severity),
                f"gradient {name!r} is registered again (first at {display_path(first.path)}:{first.line}); "
                f"TensorFlow raises KeyError: Registering two gradient with name {name!r} when both modules "
                "are imported",
                f"Rename one registration (e.g. {name + '_v2'!r}) and update the gradient_override_map "
                "values that point to it.",
            ))
    for site in override_targets:
        if site.name not in by_name and site.name not in builtin_gradients:
            findings.append(Finding(
                site.path, site.line, site.col, "GC007", site.end_line, str(Severity.NOTE),
                f"override-map value {site.name!r} is not a gradient registered in the scanned tree nor by "
                "TensorFlow; the override fails with LookupError unless it is registered elsewhere",
                f"Register it with @tf.RegisterGradient({site.name!r}), or include the module that does in "
                "the scan.",
            ))
    return findings


def op_type_registrations(findings: list[Finding], registrations: Iterable[Site], override_targets: Iterable[Site],
                          data: tf_data.TFData, op_library_files: set[str],
                          native_ops: Mapping[str, str] | None = None,
                          runtime_targets: Iterable[Site] = ()) -> list[Finding]:
    """`findings` with each GC003 that registers the gradient of a real op type (a TensorFlow op that has none of
    its own, a custom op a C++ source of the tree registers (`native_ops`), or one from a file that calls
    tf.load_op_library or imports a module next to it that does) that no override map in the tree uses turned
    into a note: TF2's tapes look gradients up by op type, so it is valid TF2 as it stands."""
    used = {site.name for site in override_targets}
    runtime = {site.name for site in runtime_targets}
    by_place = {(site.path, site.line, site.col): site for site in registrations}
    loaders: dict[str, str | None] = {}
    beside: dict[str, dict[str, str]] = {}
    out = []
    for finding in findings:
        site = by_place.get((finding.path, finding.line, finding.col)) if finding.rule == "GC003" else None
        kind = unused_op_type(site, used, data, op_library_files, native_ops) if site is not None else None
        if site is not None and kind is None and site.name not in used:  # evidence next to the file
            if site.path not in loaders:
                loaders[site.path] = _imported_op_library(site.path)
            directory = os.path.dirname(os.path.abspath(site.path))
            if directory not in beside:  # files of one directory share its C++ sources: read them once
                beside[directory] = custom_ops.op_types_in(directory)
            kind = unused_op_type(site, used, data, set(), beside[directory]) or _imported_kind(loaders[site.path])
        if site is not None and kind is None and site.name not in used and site.name in runtime:
            finding = dataclasses.replace(
                finding, severity=str(Severity.NOTE),
                message=f"RegisterGradient({site.name!r}) is used by compat.gradient_override_map (gradcompat's TF2 "
                        "form of an override map), which looks gradients up by name: valid TF2 as it is",
                suggestion="Keep it.")
        elif site is not None and kind is not None:
            finding = dataclasses.replace(
                finding, severity=str(Severity.NOTE),
                message=f"RegisterGradient({site.name!r}) registers the gradient of op type {site.name!r} itself "
                        f"({kind}), and no gradient_override_map in the scanned tree uses it: valid TF2 as it is "
                        f"(tapes look gradients up by op type); nothing to migrate",
                suggestion="Keep it. Check it with compat-check if the op's gradient must match a TF1 run.")
        out.append(finding)
    return out


def unused_op_type(site: Site, used: set[str] | frozenset[str], data: tf_data.TFData,
                   op_library_files: set[str] | frozenset[str],
                   native_ops: Mapping[str, str] | None = None) -> str | None:
    """What real op type `site` registers the gradient of, if no override map uses its name ("a TensorFlow op",
    "a custom op: REGISTER_OP(...) in FILE", "an op this file loads with tf.load_op_library"), else None (the
    rewriter keeps such registrations as well)."""
    if site.name in used:
        return None
    if site.name in data.op_types and site.name not in data.gradient_names:
        return "a TensorFlow op"
    if native_ops and site.name in native_ops:
        return f"a custom op: REGISTER_OP({site.name!r}) in {native_ops[site.name]}"
    if site.path in op_library_files:
        return "an op this file loads with tf.load_op_library"
    return None


def _imported_kind(loader: str | None) -> str | None:
    return None if loader is None else f"an op `{loader}`, which this file imports, loads with tf.load_op_library"


def _imported_op_library(path: str) -> str | None:
    """The module next to `path` that it imports and that calls tf.load_op_library, or None (unreadable too)."""
    source = read_regular(path, DEFAULT_MAX_PARSE_BYTES, b"import")
    try:
        return custom_ops.imported_op_library(path, ast.parse(source)) if source else None
    except (SyntaxError, ValueError, RecursionError):
        return None


def _exclusive(a: Site, b: Site) -> bool:
    """Registrations in different arms of one if/else (or match, or except/else) never both run."""
    return a.path == b.path and exclusive(a.branches, b.branches)


def audit_paths(
    paths: Iterable[str],
    *,
    excludes: Iterable[str] = (),
    default_excludes: bool = True,
    jobs: int | None = None,
    strict: bool = False,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    max_parse_bytes: int = DEFAULT_MAX_PARSE_BYTES,
    on_file: Callable[[FileResult], None] | None = None,
) -> AuditReport:
    """Audit every `.py` file under `paths`; never imports or executes the scanned code.

    Args:
      paths: files and directories. Missing paths are the caller's to reject (the app exits 2).
      excludes: glob patterns, see `walker.iter_python_files`.
      default_excludes: skip virtualenvs, installed packages, version control and build directories found in
        the walk (`walker.DEFAULT_EXCLUDES`); a path given in `paths` is always audited.
      jobs: worker processes (default: CPU count). Small trees are audited in-process.
      strict: run every file through CPython's parser and symbol table, so a syntax error anywhere is GC000
        (slower: by default files that name no legacy gradient API in code are only read and decoded).
      max_file_bytes: larger files are streamed through the pre-filter, and GC000 if they need parsing.
      max_parse_bytes: larger files are GC000 if they need parsing (parse memory is up to ~920x the size).
      on_file: called with each file's result as it completes (e.g. a progress bar).

    Returns:
      An `AuditReport`.

    Example:
      >>> report = audit_paths(["src/"], excludes=["*_pb2.py"])
      >>> [f"{f.path}:{f.line}: {f.rule}" for f in report.findings]
    """
    paths = list(paths)
    data = tf_data.load()
    opts = _Options(strict=strict, max_file_bytes=max_file_bytes, max_parse_bytes=max_parse_bytes)
    findings: list[Finding] = []
    registrations: list[Site] = []
    targets: list[Site] = []
    runtime_targets: list[Site] = []
    op_library_files: set[str] = set()
    scanned = parsed = unreadable = lines = 0
    files = iter_python_files(paths, excludes, default_excludes=default_excludes)
    for result in _results(files, opts, jobs or os.cpu_count() or 1):
        scanned += 1
        parsed += result.parsed
        unreadable += result.unreadable
        lines += result.lines
        findings.extend(result.findings)
        registrations.extend(result.registrations)
        targets.extend(result.override_targets)
        runtime_targets.extend(result.runtime_targets)
        if result.loads_op_library:
            op_library_files.add(result.path)
        if on_file is not None:
            on_file(result)
    findings.extend(tree_findings(registrations, targets, data.gradient_names))
    native_ops = custom_ops.registered_op_types(paths, excludes, default_excludes=default_excludes) if any(
        f.rule == "GC003" for f in findings) else {}
    findings = op_type_registrations(findings, registrations, targets, data, op_library_files, native_ops,
                                     runtime_targets)
    return AuditReport(tuple(sorted(findings)), scanned, parsed, unreadable, lines, data.version)
