"""JSON format: a stable document with a summary and one object per finding."""

from __future__ import annotations

import json

from compat.audit import RULES, render

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
