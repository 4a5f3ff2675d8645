"""JSON format: a stable document with a summary and one object per finding."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from compat.audit import RULES, AuditReport, Finding, Severity, audit_paths, render
from compat.releases.schema import SchemaMismatch, check_keywords, validate

SCHEMA = Path(__file__).resolve().parents[3] / "compat" / "reports" / "audit_report.schema.json"
LEGACY = Path(__file__).resolve().parents[3] / "tests" / "data" / "legacy"

SRC = "import tensorflow as tf\ndef f(g):\n    with g.gradient_override_map({'Matmul': 'Identity'}):\n        pass\n"


def test_json_structure(audit_source):
    doc = json.loads(render(audit_source(SRC), "json"))
    assert doc["tool"] == "compat-audit" and doc["tf_data_version"].startswith("2.")
    assert doc["summary"]["files_scanned"] == 1 and doc["summary"]["findings"] == 2
    assert list(doc["summary"]["by_rule"]) == list(RULES)
    first = doc["findings"][0]
    assert set(first) == {"rule", "path", "line", "col", "end_line", "severity", "message", "suggestion"}
    assert [f["rule"] for f in doc["findings"]] == ["GC004", "GC007"]
    assert doc["findings"][1]["severity"] == "error" and "MatMul" in doc["findings"][1]["suggestion"]


def test_non_utf8_file_names_are_text_plus_their_exact_bytes(non_utf8_report):
    text = render(non_utf8_report, "json")
    assert "\\udc" not in text  # no lone surrogates, which strict JSON parsers reject
    finding = next(f for f in json.loads(text)["findings"] if f["path"].endswith(".py") and "caf" in f["path"])
    assert finding["path"].endswith("caf\\xe9.py")
    assert bytes.fromhex(finding["path_bytes_hex"]).endswith(b"caf\xe9.py")
    clean = next(f for f in json.loads(text)["findings"] if f["path"].endswith("later.py"))
    assert "path_bytes_hex" not in clean


def _schema() -> dict:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    check_keywords(schema)  # the standard-library checker can check it too
    return schema


def test_reports_validate_against_the_shipped_schema(audit_source, non_utf8_report, tmp_path):
    """Findings of many rules (the legacy fixtures), a GC000 (binary content) and a file name that is not UTF-8."""
    (tmp_path / "legacy").mkdir()
    for path in LEGACY.glob("*.py"):
        (tmp_path / "legacy" / path.name).write_bytes(path.read_bytes())
    (tmp_path / "binary.py").write_bytes(b"\0\1")
    reports = [audit_source(SRC), non_utf8_report, audit_paths([str(tmp_path)], jobs=1)]
    assert {"GC000", "GC001", "GC003", "GC004"} <= {f.rule for f in reports[2].findings}
    for report in reports:
        document = json.loads(render(report, "json"))
        jsonschema.Draft202012Validator(_schema()).validate(document)
        validate(document, _schema())


def test_the_schema_names_every_rule_and_severity():
    schema = _schema()
    finding = schema["$defs"]["finding"]["properties"]
    assert finding["rule"]["enum"] == list(RULES) == schema["properties"]["summary"]["properties"]["by_rule"][
        "required"]
    assert finding["severity"]["enum"] == [str(severity) for severity in Severity]
    broken = json.loads(render(_report_with_unknown_rule(), "json"))
    with pytest.raises(SchemaMismatch, match=r"\$\.findings\[0\]\.rule: expected one of"):
        validate(broken, schema)


def _report_with_unknown_rule() -> AuditReport:
    finding = Finding("m.py", 1, 1, "GC999", 1, "warning", "a rule this gradcompat does not have")
    return AuditReport((finding,), files_scanned=1, files_parsed=1, files_unreadable=0, lines=1, tf_version="2.21")
