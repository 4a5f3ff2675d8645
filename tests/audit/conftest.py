"""Shared helpers for audit tests: write a source file into tmp_path and audit it."""

from __future__ import annotations

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

