"""JSON: `{"tool", "version", "tf_data_version", "summary", "findings": [...]}`, one object per finding."""

from __future__ import annotations

import json
from typing import Any

from compat._version import __version__
from compat.audit.engine import AuditReport


def as_dict(report: AuditReport) -> dict[str, Any]:
    return {
        "tool": "compat-audit",
        "version": __version__,
        "tf_data_version": report.tf_version,
        "summary": {
            "files_scanned": report.files_scanned,
            "files_parsed": report.files_parsed,
            "files_unreadable": report.files_unreadable,
            "lines": report.lines,
            "findings": len(report.findings),
            "by_rule": dict(report.counts),
        },
        "findings": [f.as_dict() for f in report.findings],
    }


def render(report: AuditReport, options: Any = None) -> str:
    return json.dumps(as_dict(report), indent=2) + "\n"
