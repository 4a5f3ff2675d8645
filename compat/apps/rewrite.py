"""compat-rewrite: migrate legacy custom gradients (Defun, RegisterGradient, override maps) to tf.custom_gradient.

Usage:
  compat-rewrite [--in-place] [--format=text|json] [--verify] [--exclude=GLOB,...] [--nodefault_excludes] PATH...

Without --in-place it prints a unified diff and changes nothing. Never imports TensorFlow (except for --verify).
Exit codes (the first that applies): 3 some files skipped or failed; 4 legacy sites remain TODO (marked
`# TODO(gradcompat)`, for you to migrate by hand; a re-run finds them again); 1 changes proposed or made, every
site rewritten; 0 nothing to do. 2 usage error; 130 Ctrl-C, 128+N stopped by signal N (e.g. 143 SIGTERM): files
written so far are complete, the one being written is left as it was.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import json
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from absl import app, flags

from compat._version import __version__
from compat.apps._common import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_USAGE,
    import_tensorflow_quietly,
    run_app,
)
from compat.apps._progress import progress_on_stderr
from compat.audit.findings import display_path
from compat.audit.walker import DEFAULT_EXCLUDES_HELP
from compat.rewrite import STATUSES, FileResult, rewrite_paths
from compat.rewrite.files import DEFAULT_MAX_FILE_BYTES, _files, write_result
from compat.rewrite.todo import PREFIX as TODO_PREFIX

EXIT_CHANGES = EXIT_FINDINGS
EXIT_INCOMPLETE = 3  # some files were skipped or failed
EXIT_TODO = 4  # legacy sites remain, marked TODO, for the user to migrate by hand
_TODO_MARK = TODO_PREFIX.strip().rstrip(":")  # `# TODO(gradcompat)`

_IN_PLACE = flags.DEFINE_bool(
    "in_place", False, "Write the rewrites into the files (atomically, keeping owner, group and mode); read-only "
    "and hard-linked files are skipped, saying why (exit 3); default: print a unified diff.")
_FORMAT = flags.DEFINE_enum("format", "text", ["text", "json"], "text: the diff and a summary; json: per-file "
                            "and per-site results.")
_VERIFY = flags.DEFINE_bool(
    "verify", False, "Prove each rewritten file equivalent with compat.verify before anything is written: with "
    "--in-place only proven rewrites are written. Opt-in: it imports and RUNS your code (the original in a v1 "
    "Session, the rewrite in TF2, each in a child process). Entry points come from the file's GRADCOMPAT_ENTRIES "
    "or --entries.")
_ENTRIES = flags.DEFINE_string(
    "entries", None, "With --verify, for files that declare no GRADCOMPAT_ENTRIES: the functions to run and their "
    "inputs, e.g. 'model_fn:float32[8,3];ste:float32[3]' (name:dtype[shape],dtype[shape] per input); each file "
    "gets those it defines. Without any, verify infers entries (a Defun's dtypes, the parameters of functions "
    "holding legacy sites) and says what it could not infer.")
_SCENARIOS = flags.DEFINE_list("scenarios", None, "With --verify: the scenarios to compare (`forward` for the outputs, "
                               "engine scenarios as in compat-check --list). Default: all.")
_EXCLUDE = flags.DEFINE_multi_string("exclude", [], "Glob of paths to skip; repeatable or comma-separated.")
_DEFAULT_EXCLUDES = flags.DEFINE_bool("default_excludes", True, DEFAULT_EXCLUDES_HELP)
_MAX_FILE_BYTES = flags.DEFINE_integer("max_file_bytes", DEFAULT_MAX_FILE_BYTES, "Larger files are skipped.",
                                       lower_bound=1)
_PROGRESS = flags.DEFINE_bool("progress", None, "Show a progress bar on stderr (default: only on a terminal).")

# absl spells boolean flags with underscores; accept the documented `--in-place` too.
_ALIASES = {"--in-place": "--in_place", "--noin-place": "--noin_place"}
_STOPPING_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


def _diff(result: FileResult) -> str:
    return "".join(difflib.unified_diff(
        result.original.splitlines(keepends=True), result.rewritten.splitlines(keepends=True),
        fromfile=_shown(result.path, "a"), tofile=_shown(result.path, "b")))


def _shown(path: str, side: str) -> str:
    return path if os.path.isabs(path) else f"{side}/{path}"


def _write_diff(text: str) -> None:
    """The diff on stdout with file names as their exact bytes (as `patch` needs), even those that are not UTF-8."""
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # a text-only stream (a test's capture)
        sys.stdout.write(text)
        return
    sys.stdout.flush()
    buffer.write(text.encode(sys.stdout.encoding or "utf-8", "surrogateescape"))
    buffer.flush()


def _text_line(result: FileResult) -> str:
    sites = ", ".join(f"line {s.line} {s.pattern} {s.outcome}" for s in result.sites)
    reason = f": {result.reason}" if result.reason else ""
    return f"{display_path(result.path)}: {result.status}{' (written)' if result.written else ''}{reason}" + (
        f" [{sites}]" if sites else "")


def _summary(results: Sequence[FileResult]) -> dict[str, Any]:
    counts = {status: sum(1 for r in results if r.status == status) for status in STATUSES}
    sites = [s for r in results for s in r.sites]
    return {"files": len(results), **counts, "sites": len(sites),
            **{f"sites_{outcome}": sum(1 for s in sites if s.outcome == outcome)
               for outcome in ("rewritten", "todo", "skipped")}}


def _summary_line(summary: dict[str, Any]) -> str:
    skipped_sites = f", {summary['sites_skipped']} in skipped files" if summary["sites_skipped"] else ""
    line = (f"compat-rewrite: {summary['files']} files: {summary['rewritten']} rewritten, {summary['todo']} with "
            f"TODO comments only, {summary['unchanged']} unchanged, {summary['skipped']} skipped, "
            f"{summary['failed']} failed; {summary['sites']} legacy sites: {summary['sites_rewritten']} rewritten, "
            f"{summary['sites_todo']} TODO{skipped_sites}\n")
    if summary["sites_todo"]:
        line += (f"compat-rewrite: {summary['sites_todo']} legacy sites are left for you to migrate by hand: see "
                 f"the `{_TODO_MARK}` comments above them (exit {EXIT_TODO} until they are gone)\n")
    return line


def _entries() -> Any:
    """--entries parsed (None when not given); a malformed value, or an unknown --scenarios name, is a usage error
    saying the format."""
    from compat.verify import EntriesError, parse_entries

    try:
        entries = parse_entries(_ENTRIES.value) if _ENTRIES.value is not None else None
    except EntriesError as e:
        raise app.UsageError(f"--entries: {e}", exitcode=EXIT_USAGE) from None
    if _SCENARIOS.value is not None:
        from compat.verify._runner import check_scenarios

        import_tensorflow_quietly()
        try:
            check_scenarios(_SCENARIOS.value)
        except ValueError as e:
            raise app.UsageError(f"--scenarios: {e}", exitcode=EXIT_USAGE) from None
    return entries


def _verify(results: Sequence[FileResult], entries: Any) -> dict[str, Any]:
    """Each proposed rewrite against its file as it is on disk (never yet written)."""
    from compat.verify import verify_rewrite

    reports: dict[str, Any] = {}
    for result in results:
        if result.status == "rewritten" and not result.written:
            try:
                reports[result.path] = verify_rewrite(os.path.abspath(result.path), result.rewritten,
                                                      _entries_for(result.original, entries),
                                                      scenarios=_SCENARIOS.value)
            except Exception as e:  # noqa: BLE001 - one file's failure is its result, not the end of the run
                reports[result.path] = f"verification could not run: {type(e).__name__}: {e}"
    return reports


def _entries_for(source: str, entries: Any) -> Any:
    """The --entries this file defines a module-level function for, unless it declares its own (they win);
    None lets verify read the declaration or infer entries."""
    import ast

    from compat.verify._entries import declares_entries

    if entries is None or declares_entries(source):
        return None
    try:
        defined = {node.name for node in ast.parse(source).body if isinstance(node, ast.FunctionDef)}
    except SyntaxError:
        return None
    return {name: spec for name, spec in entries.items() if name in defined} or None


def _write_proven(results: list[FileResult], verified: dict[str, Any]) -> list[FileResult]:
    """--in-place --verify: write the rewrites verify proved; the others are skipped, their files untouched."""
    written = []
    for result in results:
        if result.path in verified and not _verified(verified[result.path]):
            result = dataclasses.replace(result, status="skipped",
                                         reason="not written: --verify did not prove the rewrite equivalent")
        written.append(write_result(result, _MAX_FILE_BYTES.value))
    return written


def _verify_line(path: str, report: Any) -> str:
    if isinstance(report, str):
        return f"{path}: verify: NOT proven equivalent: {report}\n"
    notes = "".join(f"{path}: verify: note: `{entry}`: {note}\n" for entry, note in report.notes.items())
    if report.ok:
        return f"{path}: verify: equivalent ({report.summary()})\n{notes}"
    return f"{path}: verify: NOT proven equivalent ({report.summary()})\n{report.render_text()}"


def _verified(report: Any) -> bool:
    return not isinstance(report, str) and bool(getattr(report, "ok", False))


def exit_code(results: Sequence[FileResult]) -> int:
    """3 some files skipped or failed; else 4 TODO sites remain; else 1 changes proposed or made; else 0."""
    if any(r.status in ("skipped", "failed") for r in results):
        return EXIT_INCOMPLETE
    if any(s.outcome == "todo" for r in results for s in r.sites):
        return EXIT_TODO
    if any(r.status in ("rewritten", "todo") for r in results):
        return EXIT_CHANGES
    return EXIT_OK


class _Stopped(BaseException):
    """A signal (SIGTERM, SIGHUP) stops the run: raised in its handler, so the file being written is cleaned up."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def _signals_stop_the_run() -> Iterator[None]:
    def stop(signum: int, frame: object) -> None:
        raise _Stopped(signum)

    previous = {signum: signal.signal(signum, stop) for signum in _STOPPING_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _paths(argv: Sequence[str]) -> list[str]:
    paths = list(argv[1:])
    if not paths:
        raise app.UsageError("give at least one file or directory to rewrite, e.g. `compat-rewrite src/`",
                             exitcode=EXIT_USAGE)
    missing = [p for p in paths if not os.path.lexists(p)]
    if missing:
        raise app.UsageError(f"no such file or directory: {', '.join(missing)}", exitcode=EXIT_USAGE)
    if not _VERIFY.value and (_ENTRIES.value is not None or _SCENARIOS.value is not None):
        raise app.UsageError("--entries and --scenarios only apply with --verify (they choose what verify runs)",
                             exitcode=EXIT_USAGE)
    return paths


def _rewrite(paths: list[str], excluded: list[str]) -> list[FileResult]:
    """Every file's result; directories the default excludes kept the walk out of are added to `excluded`."""
    excludes = [p.strip() for value in _EXCLUDE.value for p in value.split(",") if p.strip()]
    defaults = _DEFAULT_EXCLUDES.value
    progress = progress_on_stderr("compat-rewrite", _PROGRESS.value, lines_by_default=False)
    try:
        if progress:
            progress.start(sum(1 for _ in _files(paths, excludes, default_excludes=defaults)), "files")
        return list(rewrite_paths(paths, in_place=_IN_PLACE.value and not _VERIFY.value, excludes=excludes,
                                  default_excludes=defaults, max_file_bytes=_MAX_FILE_BYTES.value,
                                  on_file=(lambda r: progress.advance(r.path)) if progress else None,
                                  on_default_excluded=excluded.append))
    finally:
        if progress:
            progress.close()


def _write_json(results: Sequence[FileResult], summary: dict[str, Any], verified: dict[str, Any],
                excluded: Sequence[str], code: int) -> None:
    document = {"tool": "compat-rewrite", "version": __version__, "in_place": _IN_PLACE.value,
                "summary": summary, "exit_code": code,
                "default_excluded": [display_path(path) for path in excluded],
                "files": [r.as_dict() for r in results]}
    if verified:
        document["verify"] = {display_path(path): _as_json(report) for path, report in verified.items()}
    sys.stdout.write(json.dumps(document, indent=2) + "\n")


def _write_text(results: Sequence[FileResult], verified: dict[str, Any], excluded: Sequence[str]) -> None:
    if not _IN_PLACE.value:
        _write_diff("".join(_diff(r) for r in results if r.status in ("rewritten", "todo")))
    for result in results:
        if result.status != "unchanged" or result.sites:
            sys.stderr.write(_text_line(result) + "\n")
    for path, report in verified.items():
        sys.stderr.write(_verify_line(path, report))
    if excluded:
        shown = ", ".join(display_path(path) for path in excluded)
        sys.stderr.write(f"compat-rewrite: not walked (default excludes; --nodefault_excludes walks them, naming a "
                         f"directory walks it): {shown}\n")


def main(argv: Sequence[str]) -> int:
    paths = _paths(argv)
    entries = _entries() if _VERIFY.value else None
    excluded: list[str] = []
    try:
        with _signals_stop_the_run():
            results = _rewrite(paths, excluded)
            verified = _verify(results, entries) if _VERIFY.value else {}
            if _VERIFY.value and _IN_PLACE.value:
                results = _write_proven(results, verified)
    except _Stopped as stopped:
        sys.stderr.write(f"compat-rewrite: stopped by {signal.Signals(stopped.signum).name}: the files written "
                         "so far are complete, the one being written was left as it was\n")
        return 128 + stopped.signum
    summary = _summary(results)
    unproven = any(not _verified(r) for r in verified.values())
    code = EXIT_INCOMPLETE if unproven else exit_code(results)
    if _FORMAT.value == "json":
        _write_json(results, summary, verified, excluded, code)
    else:
        _write_text(results, verified, excluded)
    sys.stderr.write(_summary_line(summary))
    if unproven:
        sys.stderr.write("compat-rewrite: --verify: some rewrites were not proven equivalent (see above)\n")
    return code


def _as_json(report: Any) -> Any:
    if hasattr(report, "as_dict"):
        return report.as_dict()
    return str(report)


def run() -> None:
    """Console-script entry point (`compat-rewrite`)."""
    sys.argv = [_ALIASES.get(a, a) for a in sys.argv]
    run_app(main, __name__, "compat-rewrite")


if __name__ == "__main__":
    run()
