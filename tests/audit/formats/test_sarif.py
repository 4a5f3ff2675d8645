"""SARIF format: valid against the SARIF 2.1.0 schema, with what GitHub code scanning needs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema

from compat.audit import RULES, render
from compat.audit.formats import RenderOptions

SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "data" / "sarif-schema-2.1.0.json").read_text())
SRC = ("import tensorflow as tf\n@tf.RegisterGradient('A b')\ndef g(op, grad):\n    return grad.numpy()\n"
       "def f(g):\n    with g.gradient_override_map({'Matmul': 'Nowhere'}):\n        pass\n")


def _sarif(report, base_dir):
    return json.loads(render(report, "sarif", RenderOptions(base_dir=str(base_dir))))


def test_sarif_validates_against_schema(audit_source, tmp_path):
    doc = _sarif(audit_source(SRC, files={"bad": "print 'x' + Defun"}), tmp_path)
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
    assert doc["version"] == "2.1.0"
    levels = {r["level"] for r in doc["runs"][0]["results"]}
    assert levels == {"error", "warning", "note"}


def test_sarif_rules_and_results_for_code_scanning(audit_source, tmp_path):
    report = audit_source(SRC)
    run = _sarif(report, tmp_path)["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == list(RULES)
    for rule in rules:
        assert {"id", "name", "shortDescription", "fullDescription", "help", "defaultConfiguration"} <= set(rule)
        assert rule["defaultConfiguration"]["level"] in {"error", "warning", "note"}
    result = run["results"][0]
    assert result["ruleId"] == "GC003" and rules[result["ruleIndex"]]["id"] == "GC003"
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "m.py", "uriBaseId": "%SRCROOT%"}
    assert location["region"] == {"startLine": 2, "startColumn": 2, "endLine": 2}
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"].endswith("/")


def test_sarif_paths_outside_base_are_absolute_file_uris(audit_source, tmp_path):
    report = audit_source(SRC)
    elsewhere = tmp_path / "elsewhere"
    os.mkdir(elsewhere)
    uri = _sarif(report, elsewhere)["runs"][0]["results"][0]["locations"][0]["physicalLocation"][
        "artifactLocation"]["uri"]
    assert uri == "../m.py" or uri.startswith("file:///")


def test_non_utf8_file_names_are_percent_encoded_losslessly(non_utf8_report, tmp_path):
    import urllib.parse

    doc = _sarif(non_utf8_report, tmp_path)
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in doc["runs"][0]["results"]]
    assert "caf%E9.py" in uris
    assert urllib.parse.unquote_to_bytes("caf%E9.py") == b"caf\xe9.py"
    assert "\\udc" not in render(non_utf8_report, "sarif", RenderOptions(base_dir=str(tmp_path)))
