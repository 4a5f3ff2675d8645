"""The safety net: whatever `compat-audit` finds (GC001-GC004) is rewritten or marked TODO, whatever its spelling."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from compat.rewrite import rewrite_source
from compat.rewrite.result import PATTERNS
from compat.rewrite.todo import PREFIX
from compat.rewrite.unfollowed import legacy_findings

LEGACY = Path(__file__).resolve().parents[1] / "data" / "legacy"

ISSUE_EXAMPLE = '''\
import tensorflow as tf

RG = tf.RegisterGradient


@RG("HalfGrad")
def _half(op, grad):
    return 0.5 * grad


def half_identity(x):
    g = tf.get_default_graph()
    with getattr(g, "gradient_override_map")({"Identity": "HalfGrad"}):
        return tf.identity(x)
'''

# Spellings the pattern analyses do not follow but the audit resolves.
ODD_FORMS = {
    "issue_example": ISSUE_EXAMPLE,
    "dunder_import": """
        @__import__("tensorflow").RegisterGradient("Twice")
        def _twice(op, grad):
            return 2.0 * grad
        """,
    "assigned_map_method": """
        import tensorflow as tf
        @tf.RegisterGradient("QuarterGrad")
        def _quarter(op, grad):
            return 0.25 * grad
        def quarter_identity(x):
            g = tf.get_default_graph()
            gom = g.gradient_override_map
            with gom({"Identity": "QuarterGrad"}):
                return tf.identity(x)
        """,
    "getattr_register_multiline_decorator": """
        import tensorflow as tf
        Twice = getattr(tf, "RegisterGradient")
        @Twice(
            "Multi")
        def _m(op, grad):
            return grad
        """,
    "map_entered_by_hand_on_one_line": """
        import tensorflow as tf
        def f(x):
            g = tf.get_default_graph()
            if x is not None: getattr(g, "gradient_override_map")({"Identity": "Multi"}).__enter__()
            return tf.identity(x)
        """,
    "map_in_a_multiline_with": """
        import tensorflow as tf
        def f(x):
            g = tf.get_default_graph()
            with tf.name_scope("a"), (
                    getattr(g, "gradient_override_map")({"Identity": "Multi"})):
                return tf.identity(x)
        """,
    "defun_alias": """
        import tensorflow as tf
        from tensorflow.python.framework import function
        D = function.Defun
        def _g(x, dy):
            return dy
        @D(tf.float32, grad_func=_g)
        def ident(x):
            return x
        """,
    "non_ascii_before_the_call": """
        import tensorflow as tf
        RG = tf.RegisterGradient
        s = "ééé"; RG("Élan")(lambda op, grad: grad)
        """,
}


def _source(name: str) -> str:
    return textwrap.dedent(ODD_FORMS[name]).lstrip("\n")


def _todos_above(text: str, line: int) -> list[str]:
    """The TODO comments directly above 1-based `line` of `text`."""
    lines = text.splitlines()
    found = []
    for i in range(line - 2, -1, -1):
        stripped = lines[i].strip()
        if not stripped.startswith(PREFIX):
            break
        found.append(stripped[len(PREFIX):])
    return found


def test_issue_example_marks_the_getattr_map() -> None:
    result = rewrite_source(ISSUE_EXAMPLE)
    assert [(s.line, s.pattern, s.outcome) for s in result.sites] == [
        (6, "register_gradient", "todo"), (13, "override_map", "todo")]
    reason = result.sites[1].reason
    assert reason == ("compat-audit GC004 finds a gradient_override_map here in a form the rewriter does not "
                      "follow (getattr(...)): rewrite this op as a @tf.custom_gradient by hand")
    lines = result.text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.lstrip().startswith("with getattr("))
    assert lines[at - 1] == "    " + PREFIX + reason
    assert ast.dump(ast.parse(result.text)).count("gradient_override_map") == 1  # the map itself is unchanged


def test_dunder_import_register_gradient() -> None:
    result = rewrite_source(_source("dunder_import"))
    assert [(s.line, s.pattern, s.outcome) for s in result.sites] == [(1, "register_gradient", "todo")]
    assert "GC003" in result.sites[0].reason and "(__import__(...).RegisterGradient)" in result.sites[0].reason
    assert result.text.startswith(PREFIX)
    assert "import tensorflow" not in result.text.split("@")[0]  # nothing rewritten: no import added


def test_assigned_map_method() -> None:
    source = _source("assigned_map_method")
    result = rewrite_source(source)
    map_line = source.splitlines().index("    with gom({\"Identity\": \"QuarterGrad\"}):") + 1
    site = next(s for s in result.sites if s.line == map_line)
    assert (site.pattern, site.outcome) == ("override_map", "todo")
    assert "GC004" in site.reason and "(gom)" in site.reason
    assert _todos_above(result.text, result.text.splitlines().index("    with gom({\"Identity\": \"QuarterGrad\"}):")
                        + 1) == [site.reason]


def test_map_entered_by_hand_names_the_map_call_not_the_chain() -> None:
    result = rewrite_source(_source("map_entered_by_hand_on_one_line"))
    (site,) = result.sites
    assert "(getattr(...))" in site.reason
    assert result.text.splitlines()[3].strip() == PREFIX + site.reason  # above the `if` holding it


def test_multiline_with_gets_its_todo_above_the_with() -> None:
    result = rewrite_source(_source("map_in_a_multiline_with"))
    (site,) = result.sites
    assert site.line == 5
    assert result.text.splitlines()[3] == "    " + PREFIX + site.reason
    assert result.text.splitlines()[4].lstrip().startswith("with tf.name_scope")


@pytest.mark.parametrize("name", sorted(ODD_FORMS))
def test_rewriting_the_output_again_adds_nothing(name: str) -> None:
    once = rewrite_source(_source(name))
    twice = rewrite_source(once.text)
    assert twice.text == once.text
    assert [(s.pattern, s.outcome, s.reason) for s in twice.sites] == [
        (s.pattern, s.outcome, s.reason) for s in once.sites]


def _corpus() -> list[tuple[str, str]]:
    files = [(p.name, p.read_text(encoding="utf-8")) for p in sorted(LEGACY.glob("*.py"))]
    assert files, LEGACY
    return files + [(name, _source(name)) for name in sorted(ODD_FORMS)]


@pytest.mark.parametrize(("name", "source"), _corpus(), ids=[n for n, _ in _corpus()])
def test_every_audit_finding_has_a_site(name: str, source: str) -> None:
    findings = legacy_findings(source)
    assert findings, f"{name}: the audit finds no legacy pattern"
    result = rewrite_source(source)
    lines = {s.line for s in result.sites}
    for finding in findings:
        assert finding.line in lines, f"{name}:{finding.line}: {finding.rule} has no site"


@pytest.mark.parametrize(("name", "source"), _corpus(), ids=[n for n, _ in _corpus()])
def test_audit_and_rewriter_agree_on_patterns(name: str, source: str) -> None:
    """Each site reports the audit rule found at its line (Defun's two rules share a line only by accident)."""
    rules = {(f.line, f.rule) for f in legacy_findings(source)}
    for site in rewrite_source(source).sites:
        assert (site.line, PATTERNS[site.pattern]) in rules, f"{name}: {site}"


def test_safety_net_never_imports_tensorflow() -> None:
    code = ("import sys\nfrom compat.rewrite import rewrite_source\n"
            f"rewrite_source({ISSUE_EXAMPLE!r})\n"
            "assert not any(m == 'tensorflow' or m.startswith('tensorflow.') for m in sys.modules)\n")
    root = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-c", code], check=True, cwd=root, env={"PYTHONPATH": str(root)})
