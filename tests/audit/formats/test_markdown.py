"""Markdown format: a summary table and each finding with its suggestion in a code block."""

from __future__ import annotations

from compat.audit import render

SRC = "import tensorflow as tf\n@tf.RegisterGradient('A|B')\ndef g(op, grad):\n    return grad\n"


def test_markdown_report(audit_source):
    text = render(audit_source(SRC), "markdown")
    assert text.startswith("# compat-audit report\n")
    assert "| GC003 | RegisterGradient | 1 |" in text
    assert "| GC000 | File could not be read or parsed | 0 |" in text
    assert "### `" in text and "GC003 (warning)" in text
    assert "```python\n@tf.custom_gradient" in text
    assert "'A\\|B'" in text  # pipes escaped outside code blocks


def test_markdown_clean_report_has_no_findings_section(audit_source):
    assert "## Findings" not in render(audit_source("x = 1\n"), "markdown")


def test_non_utf8_file_names_are_escaped_not_a_crash(non_utf8_report):
    render(non_utf8_report, "markdown").encode("utf-8")
    assert "caf\\xe9.py:2:1" in render(non_utf8_report, "markdown")
