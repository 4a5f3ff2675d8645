"""Text format: `path:line:col: GC00X severity: message` lines, optional indented suggestions, and the summary line."""

from __future__ import annotations

import re

from compat.audit import render
from compat.audit.formats import RenderOptions
from compat.audit.formats.text import summary

SRC = "import tensorflow as tf\n@tf.RegisterGradient('AGrad')\ndef g(op, grad):\n    return grad\n"


def test_one_line_per_finding(audit_source):
    report = audit_source(SRC, files={"b": "x = \xff"})
    lines = render(report, "text").splitlines()
    assert len(lines) == len(report.findings) == 1
    assert re.fullmatch(r".*/m\.py:2:2: GC003 warning: RegisterGradient\('AGrad'\) on 'g': .*", lines[0])


def test_suggestions_are_indented_under_their_finding(audit_source):
    lines = render(audit_source(SRC), "text", RenderOptions(suggestions=True)).splitlines()
    assert "GC003" in lines[0]
    assert lines[1] == "    @tf.custom_gradient" and all(line.startswith("    ") for line in lines[1:])


def test_summary_counts_files_and_rules(audit_source):
    text = summary(audit_source(SRC))
    assert "1 files" in text and "0 with GC000" in text and "GC003: 1" in text


def test_non_utf8_file_names_are_escaped_not_a_crash(non_utf8_report):
    text = render(non_utf8_report, "text")
    text.encode("utf-8")  # would raise on the raw name's surrogate
    assert "caf\\xe9.py:2:1: GC003" in text and "first at " in text and "caf\\xe9.py:2" in text
