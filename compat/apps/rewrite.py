"""compat-rewrite: migrate legacy custom gradients (Defun, RegisterGradient, gradient_override_map) to tf.custom_gradient.

Usage:
  compat-rewrite [--in-place] [--format=text|json] [--verify] [--exclude=GLOB,...] PATH...

Without --in-place it prints a unified diff and changes nothing. Exit codes: 0 nothing to do, 1 changes proposed
or made, 2 usage error, 3 some files skipped or failed. Never imports TensorFlow (except for --verify).
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from absl import app, flags

from compat._version import __version__
from compat.apps._common import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_USAGE,
    ProgressBar,
    import_tensorflow_quietly,
    run_app,
    wants_progress,
)
from compat.rewrite import FileResult, rewrite_paths
from compat.rewrite.files import DEFAULT_MAX_FILE_BYTES, _files, write_result

EXIT_CHANGES = EXIT_FINDINGS
EXIT_INCOMPLETE = 3  # some files were skipped or failed

_IN_PLACE = flags.DEFINE_bool("in_place", False, "Write the rewrites into the files (atomically); default: print "
                              "a unified diff.")
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
_MAX_FILE_BYTES = flags.DEFINE_integer("max_file_bytes", DEFAULT_MAX_FILE_BYTES, "Larger files are skipped.",
                                       lower_bound=1)
_PROGRESS = flags.DEFINE_bool("progress", None, "Show a progress bar on stderr (default: only on a terminal).")

# absl spells boolean flags with underscores; accept the documented `--in-place` too.
_ALIASES = {"--in-place": "--in_place", "--noin-place": "--noin_place"}


def _diff(result: FileResult) -> str:
    return "".join(difflib.unified_diff(
        result.original.splitlines(keepends=True), result.rewritten.splitlines(keepends=True),
        fromfile=_shown(result.path, "a"), tofile=_shown(result.path, "b")))


def _shown(path: str, side: str) -> str:
    return path if os.path.isabs(path) else f"{side}/{path}"


def _text_line(result: FileResult) -> str:
    sites = ", ".join(f"line {s.line} {s.pattern} {s.outcome}" for s in result.sites)
    reason = f": {result.reason}" if result.reason else ""
    return f"{result.path}: {result.status}{' (written)' if result.written else ''}{reason}" + (
        f" [{sites}]" if sites else "")


def _summary(results: Sequence[FileResult]) -> dict[str, Any]:
    counts = {status: sum(1 for r in results if r.status == status)
              for status in ("rewritten", "unchanged", "skipped", "failed")}
    sites = [s for r in results for s in r.sites]
    return {"files": len(results), **counts, "sites": len(sites),
            "sites_rewritten": sum(1 for s in sites if s.outcome == "rewritten"),
            "sites_todo": sum(1 for s in sites if s.outcome == "todo")}


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
    if any(r.status in ("skipped", "failed") for r in results):
        return EXIT_INCOMPLETE
    if any(r.status == "rewritten" for r in results):
        return EXIT_CHANGES
    return EXIT_OK


def main(argv: Sequence[str]) -> int:
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
    entries = _entries() if _VERIFY.value else None
    excludes = [p.strip() for value in _EXCLUDE.value for p in value.split(",") if p.strip()]
    bar = ProgressBar(sum(1 for _ in _files(paths, excludes)), "files") if wants_progress(_PROGRESS.value) else None
    results = list(rewrite_paths(paths, in_place=_IN_PLACE.value and not _VERIFY.value, excludes=excludes,
                                 max_file_bytes=_MAX_FILE_BYTES.value,
                                 on_file=(lambda r: bar.advance(r.path)) if bar else None))
    if bar is not None:
        bar.close()
    verified = _verify(results, entries) if _VERIFY.value else {}
    if _VERIFY.value and _IN_PLACE.value:
        results = _write_proven(results, verified)
    summary = _summary(results)
    if _FORMAT.value == "json":
        document = {"tool": "compat-rewrite", "version": __version__, "in_place": _IN_PLACE.value,
                    "summary": summary, "exit_code": exit_code(results),
                    "files": [r.as_dict() for r in results]}
        if verified:
            document["verify"] = {path: _as_json(report) for path, report in verified.items()}
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    else:
        if not _IN_PLACE.value:
            sys.stdout.write("".join(_diff(r) for r in results if r.status == "rewritten"))
        for result in results:
            if result.status != "unchanged" or result.sites:
                sys.stderr.write(_text_line(result) + "\n")
        for path, report in verified.items():
            sys.stderr.write(_verify_line(path, report))
    sys.stderr.write(f"compat-rewrite: {summary['files']} files: {summary['rewritten']} rewritten, "
                     f"{summary['unchanged']} unchanged, {summary['skipped']} skipped, {summary['failed']} failed; "
                     f"{summary['sites']} legacy sites: {summary['sites_rewritten']} rewritten, "
                     f"{summary['sites_todo']} TODO\n")
    code = exit_code(results)
    if any(not _verified(r) for r in verified.values()):
        sys.stderr.write("compat-rewrite: --verify: some rewrites were not proven equivalent (see above)\n")
        code = EXIT_INCOMPLETE
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
