"""compat-audit: find TF1 custom-gradient patterns (Defun, RegisterGradient, gradient_override_map) statically.

Usage:
  compat-audit [--format=text|json|sarif|markdown] [--output=FILE] [--exclude=GLOB,...] [--nodefault_excludes] PATH...

Exit codes: 0 no findings (or notes only), 1 warnings or errors, 2 usage error (an --output that cannot be written
included).
Never imports TensorFlow or the scanned code.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from absl import app, flags

from compat.apps._common import (
    DEFAULT_EXCLUDES_HELP,
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_USAGE,
    prepare_output,
    run_app,
)
from compat.apps._output import OutputError, write_output
from compat.apps._progress import Progress, progress_on_stderr
from compat.audit import RULES, audit_paths
from compat.audit.engine import AuditReport
from compat.audit.findings import FileResult
from compat.audit.formats import FORMATS, RenderOptions, render
from compat.audit.formats.text import summary
from compat.audit.walker import (
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_PARSE_BYTES,
    iter_python_files,
)

_FORMAT = flags.DEFINE_enum("format", "text", list(FORMATS), "Output format.")
_OUTPUT = flags.DEFINE_string(
    "output", None, "Write the report to this file instead of stdout: a regular file is replaced atomically "
    "(a symlink's target), a device or FIFO is written as it is. Checked before the audit starts.")
_EXCLUDE = flags.DEFINE_multi_string(
    "exclude", [], "Glob of paths to skip, matched against the path relative to each PATH and the base "
    "name; repeatable or comma-separated (e.g. --exclude='*_pb2.py,third_party/*').")
_DEFAULT_EXCLUDES = flags.DEFINE_bool("default_excludes", True, DEFAULT_EXCLUDES_HELP)
_PROGRESS = flags.DEFINE_bool(
    "progress", None, "Show a progress bar on stderr (default: only when stderr is a terminal).")
_JOBS = flags.DEFINE_integer("jobs", 0, "Worker processes (0: one per CPU).", lower_bound=0)
_STRICT = flags.DEFINE_bool(
    "strict", False, "Run every file through CPython's parser and symbol table, so a syntax error anywhere "
    "is GC000 (default: only files naming a legacy gradient API in code are parsed; all are read "
    "and decoded).")
_MAX_FILE_BYTES = flags.DEFINE_integer(
    "max_file_bytes", DEFAULT_MAX_FILE_BYTES, "Files larger than this are only streamed through the "
    "pre-filter; if they mention a legacy API (or with --strict) they are GC000.", lower_bound=1)
_MAX_PARSE_BYTES = flags.DEFINE_integer(
    "max_parse_bytes", DEFAULT_MAX_PARSE_BYTES, "Files larger than this are GC000 if they need parsing: "
    "parsing takes up to ~920x the file size in memory, per worker.", lower_bound=1)
_SUGGESTIONS = flags.DEFINE_bool("show_suggestions", False, "Text format: print each suggestion, indented.")
_LIST_RULES = flags.DEFINE_bool("list_rules", False, "Print the rules and exit.")

FLAGS = flags.FLAGS
EXIT_CLEAN = EXIT_OK


class _FileProgress:
    """Counts files and findings as the audit streams them."""

    def __init__(self, progress: Progress, total: int) -> None:
        self.progress, self.findings = progress, 0
        progress.start(total, "files")

    def __call__(self, result: FileResult) -> None:
        self.findings += len(result.findings)
        self.progress.advance(f"{self.findings} findings")


def _excludes(values: Sequence[str]) -> list[str]:
    return [p.strip() for value in values for p in value.split(",") if p.strip()]


def _list_rules() -> str:
    return "".join(f"{r.id}  {r.severity:<7}  {r.name:<32} {r.short}\n" for r in RULES.values())


def main(argv: Sequence[str]) -> int:
    if _LIST_RULES.value:
        sys.stdout.write(_list_rules())
        return EXIT_CLEAN
    paths = list(argv[1:])
    if not paths:
        raise app.UsageError("give at least one file or directory to audit, e.g. `compat-audit src/`",
                             exitcode=EXIT_USAGE)
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        raise app.UsageError(f"no such file or directory: {', '.join(missing)}", exitcode=EXIT_USAGE)
    if _OUTPUT.value is not None:
        try:
            prepare_output(_OUTPUT.value)
        except OutputError as e:
            sys.stderr.write(f"compat-audit: {e}\n")
            return EXIT_USAGE
    excludes = _excludes(_EXCLUDE.value)
    default_excludes = _DEFAULT_EXCLUDES.value
    progress = progress_on_stderr("compat-audit", _PROGRESS.value, lines_by_default=False)
    try:
        on_file = (_FileProgress(progress, sum(1 for _ in iter_python_files(
            paths, excludes, default_excludes=default_excludes))) if progress else None)
        report: AuditReport = audit_paths(
            paths, excludes=excludes, default_excludes=default_excludes, jobs=_JOBS.value or None,
            strict=_STRICT.value, max_file_bytes=_MAX_FILE_BYTES.value, max_parse_bytes=_MAX_PARSE_BYTES.value,
            on_file=on_file,
        )
    finally:
        if progress:
            progress.close()
    text = render(report, _FORMAT.value, RenderOptions(base_dir=os.getcwd(), suggestions=_SUGGESTIONS.value))
    if _OUTPUT.value is not None:
        try:
            write_output(_OUTPUT.value, text)
        except OutputError as e:
            sys.stderr.write(f"compat-audit: {e}\n")
            return EXIT_USAGE
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    sys.stderr.write(summary(report) + "\n")
    # Notes say what needs no migration (a gradient registered for a real op type): they never fail a CI run.
    return EXIT_FINDINGS if any(f.severity != "note" for f in report.findings) else EXIT_CLEAN


def run() -> None:
    """Console-script entry point (`compat-audit`)."""
    run_app(main, __name__, "compat-audit")


if __name__ == "__main__":
    run()
