"""compat-rewrite's report as plain values: its JSON document's summary and exit code, and its text from the JSON."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from compat.rewrite.result import OUTCOMES, STATUSES
from compat.rewrite.todo import PREFIX as TODO_PREFIX

EXIT_OK = 0
EXIT_CHANGES = 1
EXIT_INCOMPLETE = 3  # some files were skipped or failed
EXIT_TODO = 4  # legacy sites remain, marked TODO, for the user to migrate by hand
TODO_MARK = TODO_PREFIX.strip().rstrip(":")  # `# TODO(gradcompat)`

File = Mapping[str, Any]
"""One file's result as `FileResult.as_dict()` gives it."""


def summary_of(files: Sequence[File]) -> dict[str, Any]:
    """The counts of files per status and of sites per outcome."""
    counts = {status: sum(1 for f in files if f["status"] == status) for status in STATUSES}
    sites = [s for f in files for s in f["sites"]]
    return {"files": len(files), **counts, "sites": len(sites),
            **{f"sites_{outcome}": sum(1 for s in sites if s["outcome"] == outcome) for outcome in OUTCOMES}}


def verified(report: Any) -> bool:
    """Whether a file's verify result (a VerifyReport, its JSON, or why it could not run) proved the rewrite."""
    if isinstance(report, Mapping):
        return bool(report.get("ok"))
    return not isinstance(report, str) and bool(getattr(report, "ok", False))


def exit_code_of(files: Sequence[File], verify: Mapping[str, Any] | None = None) -> int:
    """3 some files skipped or failed, or a rewrite --verify did not prove; else 4 TODO sites remain; else 1
    changes proposed or made; else 0 (every site is `kept`, valid TF2 as it is, or there is none)."""
    if any(f["status"] in ("skipped", "failed") for f in files) or any(
            not verified(r) for r in (verify or {}).values()):
        return EXIT_INCOMPLETE
    if any(s["outcome"] == "todo" for f in files for s in f["sites"]):
        return EXIT_TODO
    if any(f["status"] in ("rewritten", "todo") for f in files):
        return EXIT_CHANGES
    return EXIT_OK


def file_line(file: File) -> str:
    sites = ", ".join(f"line {s['line']} {s['pattern']} {s['outcome']}" for s in file["sites"])
    reason = f": {file['reason']}" if file["reason"] else ""
    return f"{file['path']}: {file['status']}{' (written)' if file['written'] else ''}{reason}" + (
        f" [{sites}]" if sites else "")


def summary_line(summary: Mapping[str, Any]) -> str:
    skipped_sites = f", {summary['sites_skipped']} in skipped files" if summary["sites_skipped"] else ""
    line = (f"compat-rewrite: {summary['files']} files: {summary['rewritten']} rewritten, {summary['todo']} with "
            f"TODO comments only, {summary['unchanged']} unchanged, {summary['skipped']} skipped, "
            f"{summary['failed']} failed; {summary['sites']} legacy sites: {summary['sites_rewritten']} rewritten, "
            f"{summary['sites_kept']} kept (valid TF2 as they are), {summary['sites_todo']} TODO{skipped_sites}\n")
    if summary["sites_todo"]:
        line += (f"compat-rewrite: {summary['sites_todo']} legacy sites are left for you to migrate by hand: see "
                 f"the `{TODO_MARK}` comments above them (exit {EXIT_TODO} until they are gone)\n")
    return line


def verify_line(path: str, report: Any) -> str:
    """A file's verify result (a VerifyReport, or why it could not run) as compat-rewrite shows it."""
    if isinstance(report, str):
        return f"{path}: verify: NOT proven equivalent: {report}\n"
    notes = "".join(f"{path}: verify: note: `{entry}`: {note}\n" for entry, note in report.notes.items())
    if report.ok:
        return f"{path}: verify: equivalent ({report.summary()})\n{notes}"
    return f"{path}: verify: NOT proven equivalent ({report.summary()})\n{report.render_text()}"


def render_text(document: Mapping[str, Any], verify_report: Callable[[dict[str, Any]], Any]) -> tuple[str, str]:
    """(stdout, stderr) of `compat-rewrite` (text format) for the run whose JSON document this is;
    `verify_report` makes a file's VerifyReport from its JSON (`compat.verify.VerifyReport.from_json`: passed in,
    so that the rewriter does not import the runtime parts)."""
    out = "".join(document.get("diffs", {}).values()) if not document["in_place"] else ""
    err = "".join(file_line(f) + "\n" for f in document["files"] if f["status"] != "unchanged" or f["sites"])
    for path, report in document.get("verify", {}).items():
        err += verify_line(path, report if isinstance(report, str) else verify_report(report))
    if document["default_excluded"]:
        err += (f"compat-rewrite: not walked (default excludes; --nodefault_excludes walks them, naming a directory "
                f"walks it): {', '.join(document['default_excluded'])}\n")
    err += summary_line(document["summary"])
    if any(not verified(r) for r in document.get("verify", {}).values()):
        err += "compat-rewrite: --verify: some rewrites were not proven equivalent (see above)\n"
    return out, err
