"""The safety net: every legacy site `compat-audit` finds (GC001-GC004) is rewritten or marked TODO.

The pattern analyses follow the usual spellings; the audit resolves more (`RG = tf.RegisterGradient`,
`getattr(g, "gradient_override_map")`, `__import__("tensorflow")...`). Any audit finding on a line no planned
site covers gets a TODO site of its own, so nothing the audit reports is passed over silently.
"""

from __future__ import annotations

import ast
import re

import libcst as cst

from compat.audit import data as tf_data
from compat.audit.findings import Finding
from compat.audit.visitor import audit_tree
from compat.rewrite.context import ModuleContext
from compat.rewrite.plan import Plan
from compat.rewrite.result import PATTERNS

RULE_PATTERNS = {rule: pattern for pattern, rule in PATTERNS.items()}

_WHAT = {
    "GC001": ("a Defun(grad_func=...)", "rewrite the function and its gradient as a @tf.custom_gradient by hand"),
    "GC002": ("a Defun(python_grad_func=...)",
              "rewrite the function and its gradient as a @tf.custom_gradient by hand"),
    "GC003": ("a RegisterGradient", "rewrite the op it overrides as a @tf.custom_gradient by hand"),
    "GC004": ("a gradient_override_map", "rewrite this op as a @tf.custom_gradient by hand"),
}
_WORDS = {"GC001": "Defun", "GC002": "Defun", "GC003": "RegisterGradient", "GC004": "gradient_override_map"}
_MAX_FORM = 60


def legacy_findings(text: str) -> list[Finding]:
    """The audit's GC001-GC004 findings on `text` (per-file rules; never imports TensorFlow)."""
    tree = ast.parse(text)
    result = audit_tree("<rewrite>", tree, text, tf_data.load(), text.count("\n") + 1)
    return [f for f in result.findings if f.rule in RULE_PATTERNS]


class _Elide(cst.CSTTransformer):
    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        return updated.with_changes(args=[cst.Arg(cst.Ellipsis())] if updated.args else [])


def _form(ctx: ModuleContext, call: cst.Call | None) -> str:
    """How the legacy API is spelled at the call, arguments elided: `getattr(...)`, `RG`, `__import__(...).X`."""
    if call is None:
        return "an alias"
    elided = call.func.visit(_Elide())
    assert isinstance(elided, cst.BaseExpression)
    form = " ".join(ctx.module.code_for_node(elided).split())
    return form if len(form) <= _MAX_FORM else form[:_MAX_FORM - 3] + "..."


def reason(rule: str, form: str) -> str:
    """The TODO reason for an unfollowed finding (no line numbers, so a second run finds the same comment)."""
    what, advice = _WHAT[rule]
    return f"compat-audit {rule} finds {what} here in a form the rewriter does not follow ({form}): {advice}"


def _span(ctx: ModuleContext, node: cst.CSTNode) -> tuple[int, int]:
    position = ctx.positions[node]
    start = position.start.line
    for decorator in getattr(node, "decorators", ()):
        start = min(start, ctx.positions[decorator].start.line)
    return start, position.end.line


def _statements(ctx: ModuleContext) -> list[tuple[int, int, int, cst.BaseStatement]]:
    """(start line, end line, depth, statement) for every simple and compound statement."""
    found: list[tuple[int, int, int, cst.BaseStatement]] = []
    stack: list[tuple[cst.CSTNode, int]] = [(ctx.module, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, cst.SimpleStatementLine | cst.BaseCompoundStatement):
            found.append((*_span(ctx, node), depth, node))
            depth += 1
        stack.extend((child, depth) for child in ctx.children(node))
    return found


def _covered(plan: Plan, statements: list[tuple[int, int, int, cst.BaseStatement]]) -> set[int]:
    """Lines the plan accounts for: its sites' lines, and every line of a statement it rewrites or removes."""
    lines = {site.line for site in plan.sites}
    for start, end, _depth, statement in statements:
        if id(statement) in plan.statements:
            lines.update(range(start, end + 1))
    return lines


def _call_at(ctx: ModuleContext, statement: cst.CSTNode, finding: Finding, lines: list[str]) -> cst.Call | None:
    """The call the finding is about, starting at its line and column.

    Calls chained on it (`getattr(g, "m")({...}).__enter__()`) and calls in its callee (`getattr(g, "m")`)
    start there too: the innermost one whose callee names the legacy API is it, else the innermost one.
    """
    line = lines[finding.line - 1] if finding.line <= len(lines) else ""
    column = len(line.encode("utf-8")[:finding.col - 1].decode("utf-8", "ignore"))  # ast columns count bytes
    calls = [n for n in ctx.walk(statement) if isinstance(n, cst.Call) and ctx.positions[n].start.line == finding.line]
    exact = [c for c in calls if ctx.positions[c].start.column == column] or calls
    naming = [c for c in exact if _WORDS[finding.rule] in ctx.code(c.func)]
    return (naming or exact)[-1] if exact else None


def plan_unfollowed(ctx: ModuleContext, plan: Plan, text: str) -> None:
    """Add a TODO site for every GC001-GC004 finding on a line the plan does not cover."""
    findings = legacy_findings(text)
    if not findings:
        return
    statements = _statements(ctx)
    covered = _covered(plan, statements)
    lines = re.split(r"\r\n?|\n", text)  # as ast counts lines (str.splitlines also splits at \f, ...)
    for finding in findings:
        if finding.line in covered:
            continue
        holding = [s for s in statements if s[0] <= finding.line <= s[1]]
        statement = max(holding, key=lambda s: s[2])[3] if holding else ctx.module.body[0]
        form = _form(ctx, _call_at(ctx, statement, finding, lines))
        plan.todo(statement, finding.line, RULE_PATTERNS[finding.rule], reason(finding.rule, form))
