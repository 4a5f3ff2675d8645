"""Each legacy module rewrites to its golden file exactly, the golden is a fixed point, and everything parses.

Regenerate after an intended change with `PYTHONPATH=. python tools/update_rewrite_goldens.py`, then review the
diff of tests/data/legacy_expected/: the goldens are the spec.
"""

from __future__ import annotations

import ast

from compat.audit import audit_file
from compat.rewrite import rewrite_source


def _read(runner, folder: str, name: str) -> str:
    return (getattr(runner, folder) / f"{name}.py").read_text(encoding="utf-8")


def test_rewrite_equals_golden(runner, corpus_name: str) -> None:
    result = rewrite_source(_read(runner, "LEGACY", corpus_name), f"{corpus_name}.py")
    assert result.text == _read(runner, "EXPECTED", corpus_name), (
        f"{corpus_name}.py: rewrite differs from its golden; if intended, run tools/update_rewrite_goldens.py "
        "and review the diff")


def test_golden_is_a_fixed_point(runner, corpus_name: str) -> None:
    golden = _read(runner, "EXPECTED", corpus_name)
    again = rewrite_source(golden, f"{corpus_name}.py")
    assert again.text == golden
    assert again.sites == ()


def test_golden_parses_and_the_audit_finds_no_legacy_pattern(runner, corpus_name: str) -> None:
    golden = _read(runner, "EXPECTED", corpus_name)
    ast.parse(golden)
    assert "TODO(gradcompat)" not in golden
    findings = audit_file(str(runner.EXPECTED / f"{corpus_name}.py")).findings
    assert not [f for f in findings if f.rule in ("GC000", "GC001", "GC002", "GC003", "GC004", "GC005")], findings


def test_every_audit_finding_is_a_site(runner, corpus_name: str) -> None:
    path = runner.LEGACY / f"{corpus_name}.py"
    findings = audit_file(str(path)).findings
    legacy_lines = {f.line for f in findings if f.rule in ("GC001", "GC002", "GC003", "GC004")}
    sites = rewrite_source(path.read_text(encoding="utf-8")).sites
    assert legacy_lines == {s.line for s in sites}
    assert all(s.outcome == "rewritten" for s in sites)
