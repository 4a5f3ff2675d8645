"""compat-audit: find TF1 custom-gradient patterns (Defun, RegisterGradient, gradient_override_map) statically.

Usage:
  compat-audit [--format=text|json|sarif|markdown] [--output=FILE] [--exclude=GLOB,...] PATH...

Exit codes: 0 no findings, 1 findings, 2 usage error. Never imports TensorFlow or the scanned code.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Sequence

from absl import app, flags

from compat.audit import RULES, audit_paths
from compat.audit.engine import AuditReport
from compat.audit.findings import FileResult
from compat.audit.formats import FORMATS, RenderOptions, render
from compat.audit.formats.text import summary
from compat.audit.walker import DEFAULT_MAX_FILE_BYTES, iter_python_files

_FORMAT = flags.DEFINE_enum("format", "text", list(FORMATS), "Output format.")
_OUTPUT = flags.DEFINE_string("output", None, "Write the report to this file (atomically) instead of stdout.")
_EXCLUDE = flags.DEFINE_multi_string(
    "exclude", [], "Glob of paths to skip, matched against the path relative to each PATH and the base "
    "name; repeatable or comma-separated (e.g. --exclude='*_pb2.py,third_party/*').")
_PROGRESS = flags.DEFINE_bool(
    "progress", None, "Show a progress bar on stderr (default: only when stderr is a terminal).")
_JOBS = flags.DEFINE_integer("jobs", 0, "Worker processes (0: one per CPU).", lower_bound=0)
_STRICT = flags.DEFINE_bool(
    "strict", False, "Parse every file, so a syntax error anywhere is GC000 (default: only files that "
    "mention a legacy gradient API are parsed; all are read and decoded).")
_MAX_FILE_BYTES = flags.DEFINE_integer(
    "max_file_bytes", DEFAULT_MAX_FILE_BYTES, "Files larger than this are only streamed through the "
    "pre-filter; if they mention a legacy API they are GC000.", lower_bound=1)
_SUGGESTIONS = flags.DEFINE_bool("show_suggestions", False, "Text format: print each suggestion, indented.")
_LIST_RULES = flags.DEFINE_bool("list_rules", False, "Print the rules and exit.")

FLAGS = flags.FLAGS
EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


class _ProgressBar:
    """A one-line bar on stderr, redrawn at most 10 times a second; stdout is never touched."""

    def __init__(self, total: int, stream=sys.stderr) -> None:  # noqa: ANN001 - a text stream
        self.total, self.done, self.findings = max(total, 1), 0, 0
        self.stream, self._last = stream, 0.0

    def __call__(self, result: FileResult) -> None:
        self.done += 1
        self.findings += len(result.findings)
        now = time.monotonic()
        if now - self._last >= 0.1 or self.done == self.total:
            self._last = now
            filled = int(30 * self.done / self.total)
            self.stream.write(f"\r[{'#' * filled}{'.' * (30 - filled)}] {self.done}/{self.total} files, "
                              f"{self.findings} findings")
            self.stream.flush()

    def close(self) -> None:
        self.stream.write("\n")
        self.stream.flush()


def _excludes(values: Sequence[str]) -> list[str]:
    return [p.strip() for value in values for p in value.split(",") if p.strip()]


def _write_atomically(path: str, text: str) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".compat-audit-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


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
    if _OUTPUT.value and os.path.isdir(_OUTPUT.value):
        raise app.UsageError(f"--output={_OUTPUT.value} is a directory; give a file name",
                             exitcode=EXIT_USAGE)
    excludes = _excludes(_EXCLUDE.value)
    show_progress = _PROGRESS.value if _PROGRESS.value is not None else sys.stderr.isatty()
    bar = _ProgressBar(sum(1 for _ in iter_python_files(paths, excludes))) if show_progress else None
    report: AuditReport = audit_paths(
        paths, excludes=excludes, jobs=_JOBS.value or None, strict=_STRICT.value,
        max_file_bytes=_MAX_FILE_BYTES.value, on_file=bar,
    )
    if bar is not None:
        bar.close()
    text = render(report, _FORMAT.value, RenderOptions(base_dir=os.getcwd(), suggestions=_SUGGESTIONS.value))
    if _OUTPUT.value:
        _write_atomically(_OUTPUT.value, text)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    sys.stderr.write(summary(report) + "\n")
    return EXIT_FINDINGS if report.findings else EXIT_CLEAN


def _parse_flags(argv: list[str]) -> list[str]:
    """Like absl's default parser, but a bad flag is a usage error (exit 2), not exit 1."""
    try:
        return FLAGS(argv)
    except flags.Error as e:
        sys.stderr.write(f"compat-audit: {e}\nPass --helpshort for the flags.\n")
        sys.exit(EXIT_USAGE)


def run() -> None:
    """Console-script entry point (`compat-audit`)."""
    app.run(main, flags_parser=_parse_flags)


if __name__ == "__main__":
    run()
