"""Plain text: one `path:line:col: GC00X severity: message` line per finding (grep- and editor-friendly)."""

from __future__ import annotations

from typing import Any

from compat.audit.engine import AuditReport
from compat.audit.findings import display_path


def render(report: AuditReport, options: Any) -> str:
    out = []
    for f in report.findings:
        out.append(f"{display_path(f.path)}:{f.line}:{f.col}: {f.rule} {f.severity}: {f.message}")
        if getattr(options, "suggestions", False) and f.suggestion:
            out.extend("    " + line for line in f.suggestion.splitlines())
    return "".join(line + "\n" for line in out)


def summary(report: AuditReport) -> str:
    """One line for stderr: files, GC000 files, and findings per rule (only rules that fired)."""
    per_rule = ", ".join(f"{rule}: {n}" for rule, n in report.counts.items() if n) or "none"
    return (f"compat-audit: {report.files_scanned} files ({report.lines} lines) scanned, "
            f"{report.files_parsed} parsed, {report.files_unreadable} with GC000; "
            f"{len(report.findings)} findings ({per_rule})")
