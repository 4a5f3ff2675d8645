"""Shared helpers for audit tests: write a source file into tmp_path and audit it."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable

import pytest

from compat.audit import AuditReport, audit_paths


@pytest.fixture
def audit_source(tmp_path) -> Callable[..., AuditReport]:
    """`audit_source(src, name="m.py", **files)` writes the file(s) and audits the directory in-process."""

    def run(src: str = "", name: str = "m.py", **kwargs) -> AuditReport:
        files = {name: src} if src else {}
        files.update({k.replace("__", "/") + ".py": v for k, v in kwargs.pop("files", {}).items()})
        for rel, text in files.items():
            path = tmp_path / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text), encoding="utf-8")
        return audit_paths([str(tmp_path)], jobs=1, **kwargs)

    return run



@pytest.fixture
def non_utf8_report(tmp_path) -> AuditReport:
    """A finding in a file whose name is not UTF-8 (`caf\\xe9.py`, Latin-1 on disk), plus a GC008 naming it."""
    legacy = b"import tensorflow as tf\ntf.RegisterGradient('AGrad')(abs)\n"
    with open(os.path.join(os.fsencode(tmp_path), b"caf\xe9.py"), "wb") as f:
        f.write(legacy)
    (tmp_path / "later.py").write_bytes(legacy)
    return audit_paths([str(tmp_path)], jobs=1)


IF_ELSE_REGISTRATIONS = """
import tensorflow as tf
if tf.__version__ < "2":
    @tf.RegisterGradient("AGrad")
    def first(op, grad):
        return grad
else:
    @tf.RegisterGradient("AGrad")
    def second(op, grad):
        return -grad
"""


@pytest.fixture
def if_else_report(audit_source) -> AuditReport:
    """One gradient name registered in the if arm and in the else arm (lines 4 and 8): only one runs."""
    return audit_source(IF_ELSE_REGISTRATIONS)
