"""Markdown: a summary table, then each finding with its suggested TF2 rewrite (for PRs and issues)."""

from __future__ import annotations

from typing import Any

from compat.audit.engine import AuditReport
from compat.audit.findings import display_path
from compat.audit.rules import RULES


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(report: AuditReport, options: Any = None) -> str:
    out = [
        "# compat-audit report",
        "",
        f"{report.files_scanned} files ({report.lines} lines) scanned, {report.files_parsed} parsed, "
        f"{report.files_unreadable} with GC000; {len(report.findings)} findings "
        f"(op-type data from TensorFlow {report.tf_version}).",
        "",
        "| rule | name | findings |",
        "| --- | --- | ---: |",
    ]
    out += [f"| {rid} | {RULES[rid].short} | {n} |" for rid, n in report.counts.items()]
    if report.findings:
        out += ["", "## Findings", ""]
    for f in report.findings:
        out += [f"### `{display_path(f.path)}:{f.line}:{f.col}` {f.rule} ({f.severity})", "", _cell(f.message), ""]
        if f.suggestion:
            out += ["<details><summary>suggestion</summary>", "", "```python", f.suggestion, "```", "",
                    "</details>", ""]
    return "\n".join(out).rstrip("\n") + "\n"
