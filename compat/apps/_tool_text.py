"""The text compat-rewrite and compat-verify write, and compat-merge writes for their shards, from their JSON."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from compat.rewrite.report import EXIT_TODO, File, verified
from compat.rewrite.todo import PREFIX as TODO_PREFIX

TODO_MARK = TODO_PREFIX.strip().rstrip(":")  # `# TODO(gradcompat)`


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


def rewrite_text(document: Mapping[str, Any]) -> tuple[str, str]:
    """(stdout, stderr) of `compat-rewrite` (text format) for the run whose JSON document this is."""
    out = "".join(document.get("diffs", {}).values()) if not document["in_place"] else ""
    err = "".join(file_line(f) + "\n" for f in document["files"] if f["status"] != "unchanged" or f["sites"])
    for path, report in document.get("verify", {}).items():
        err += verify_line(path, report if isinstance(report, str) else _verify_report(report))
    if document["default_excluded"]:
        err += (f"compat-rewrite: not walked (default excludes; --nodefault_excludes walks them, naming a directory "
                f"walks it): {', '.join(document['default_excluded'])}\n")
    err += summary_line(document["summary"])
    return out, err + not_proven_line(document)


def _verify_report(document: dict[str, Any]) -> Any:
    from compat.verify import VerifyReport  # numpy and ml_dtypes: only when a run verified (compat-rewrite starts fast)

    return VerifyReport.from_json(document)


def not_proven_line(document: Mapping[str, Any]) -> str:
    """The closing line when some file's --verify did not prove its rewrite, else ""."""
    if any(not verified(r) for r in document.get("verify", {}).values()):
        return "compat-rewrite: --verify: some rewrites were not proven equivalent (see above)\n"
    return ""


def tool_text(document: dict[str, Any], fmt: str) -> tuple[str, str]:
    """(stdout, stderr) of the tool that wrote `document`, in its text (`table`) or JSON format."""
    from compat.reports.merged_tools import REWRITE, TOOLS

    if fmt == "json":
        return json.dumps(document, indent=2) + "\n", ""
    if fmt != "table":
        raise ValueError(f"format {fmt!r}: {TOOLS[document['tool']]} reports merge to text ('table') or 'json'")
    if document["tool"] == REWRITE:
        return rewrite_text(document)
    return _verify_report(document).render_text(), ""
