"""SARIF 2.1.0 for GitHub code scanning: rules in `tool.driver.rules`, results with relative URIs."""

from __future__ import annotations

import json
import os
import pathlib
import urllib.parse
from typing import Any

from compat._version import __version__
from compat.audit.engine import AuditReport
from compat.audit.rules import RULES

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
_SRCROOT = "%SRCROOT%"


def _rule(rule_id: str) -> dict[str, Any]:
    rule = RULES[rule_id]
    return {
        "id": rule.id,
        "name": rule.name,
        "shortDescription": {"text": rule.short},
        "fullDescription": {"text": rule.description},
        "help": {"text": rule.help, "markdown": rule.help},
        "defaultConfiguration": {"level": str(rule.severity)},
    }


def _location(path: str, base_dir: str) -> dict[str, Any]:
    absolute = os.path.abspath(path)
    rel = os.path.relpath(absolute, os.path.abspath(base_dir))
    if rel.startswith(".."):
        return {"uri": pathlib.Path(absolute).as_uri()}
    # Percent-encode the name's bytes: lossless for names that are not UTF-8 (RFC 3986), never a crash.
    return {"uri": urllib.parse.quote(os.fsencode(rel.replace(os.sep, "/"))), "uriBaseId": _SRCROOT}


def as_dict(report: AuditReport, base_dir: str = ".") -> dict[str, Any]:
    rule_ids = list(RULES)
    results = []
    for f in report.findings:
        text = f.message + (f"\n\nSuggestion:\n{f.suggestion}" if f.suggestion else "")
        results.append({
            "ruleId": f.rule,
            "ruleIndex": rule_ids.index(f.rule),
            "level": f.severity,
            "message": {"text": text},
            "locations": [{
                "physicalLocation": {
                    "artifactLocation": _location(f.path, base_dir),
                    "region": {"startLine": f.line, "startColumn": f.col, "endLine": max(f.end_line, f.line)},
                },
            }],
        })
    base_uri = pathlib.Path(os.path.abspath(base_dir)).as_uri().rstrip("/") + "/"
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "compat-audit",
                "informationUri": "https://pypi.org/project/gradcompat/",
                "version": __version__,
                "rules": [_rule(r) for r in rule_ids],
            }},
            "originalUriBaseIds": {_SRCROOT: {"uri": base_uri}},
            "results": results,
            "properties": {
                "filesScanned": report.files_scanned,
                "filesUnreadable": report.files_unreadable,
                "tfDataVersion": report.tf_version,
            },
        }],
    }


def render(report: AuditReport, options: Any = None) -> str:
    return json.dumps(as_dict(report, getattr(options, "base_dir", ".")), indent=2) + "\n"
