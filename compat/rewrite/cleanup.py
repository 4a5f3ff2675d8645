"""After the rewrite: drop what only served the legacy code (graph handles, gradient-name variables, imports)
and point a leftover `tf.get_default_graph()` at `tf.compat.v1`."""

from __future__ import annotations

import functools

import libcst as cst
import libcst.metadata as meta

from compat.audit.imports import is_tf
from compat.rewrite.apply import ApplyPlan
from compat.rewrite.context import ModuleContext
from compat.rewrite.plan import Plan

_MAX_ROUNDS = 3


def _module_imports(ctx: ModuleContext) -> dict[str, cst.SimpleStatementLine]:
    """Local name -> the module-level import line binding it (TensorFlow imports only)."""
    found = {}
    for stmt in ctx.module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Import | cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
                for alias in small.names:
                    local = alias.evaluated_alias or alias.evaluated_name.split(".")[0]
                    if is_tf(ctx.imports.aliases.get(local)):
                        found[local] = stmt
    return found


def _referenced(ctx: ModuleContext, name: str) -> bool:
    scope = next((s for s in ctx.scopes.values() if isinstance(s, meta.GlobalScope)), None)
    return scope is not None and any(a.references for a in scope[name])


def used_tf_imports(ctx: ModuleContext) -> set[str]:
    return {name for name in _module_imports(ctx) if _referenced(ctx, name)}


def _side_effect_free(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.SimpleString | cst.Integer | cst.Float | cst.Name | cst.ConcatenatedString):
        return True
    if isinstance(node, cst.Attribute):
        return _side_effect_free(node.value)
    if isinstance(node, cst.BinaryOperation):
        return _side_effect_free(node.left) and _side_effect_free(node.right)
    if isinstance(node, cst.Tuple):
        return all(_side_effect_free(e.value) for e in node.elements)
    if isinstance(node, cst.FormattedString):
        return all(isinstance(p, cst.FormattedStringText) or (
            isinstance(p, cst.FormattedStringExpression) and _side_effect_free(p.expression)) for p in node.parts)
    return False


def _dead_assignment(ctx: ModuleContext, stmt: cst.SimpleStatementLine, names: set[str], graph: bool) -> bool:
    """`G = tf.get_default_graph()` (graph) or `name = "Flip%d" % n` in a function, now read nowhere."""
    if len(stmt.body) != 1 or not isinstance(stmt.body[0], cst.Assign) or len(stmt.body[0].targets) != 1:
        return False
    assign = stmt.body[0]
    target = assign.targets[0].target
    if not isinstance(target, cst.Name) or target.value not in names:
        return False
    if not (ctx.is_default_graph_call(assign.value) if graph else _side_effect_free(assign.value)):
        return False
    scope = ctx.scopes.get(target)
    if scope is None or isinstance(scope, meta.GlobalScope | meta.ClassScope):
        return False
    return not any(a.references for a in scope[target.value])


def _without_aliases(stmt: cst.CSTNode, dead: set[str]) -> list[cst.BaseStatement]:
    assert isinstance(stmt, cst.SimpleStatementLine)
    body = []
    for small in stmt.body:
        if isinstance(small, cst.Import | cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
            names = [a for a in small.names
                     if (a.evaluated_alias or a.evaluated_name.split(".")[0]) not in dead]
            if not names:
                continue
            names[-1] = names[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            small = small.with_changes(names=names)
        body.append(small)
    return [stmt.with_changes(body=body)] if body else []


class _CompatV1(cst.CSTTransformer):
    """`tf.get_default_graph` -> `tf.compat.v1.get_default_graph` where `tf` is TF2's `tensorflow`."""

    def __init__(self, ctx: ModuleContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.targets: set[int] = set()
        for node in ctx.walk(ctx.module):
            if (isinstance(node, cst.Attribute) and node.attr.value == "get_default_graph"
                    and ctx.qualname(node) == "tensorflow.get_default_graph"
                    and isinstance(node.value, cst.Name)):
                self.targets.add(id(node))

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        if id(original) not in self.targets:
            return updated
        return updated.with_changes(value=cst.parse_expression(f"{self.ctx.code(original.value)}.compat.v1"))


def tidy(code: str, original: ModuleContext, plan: Plan) -> str:
    """The rewritten `code` without dead legacy helpers, and with TF1-only graph access made explicit."""
    was_used = used_tf_imports(original)
    for _ in range(_MAX_ROUNDS):
        ctx = ModuleContext(code)
        edits = Plan(tf_alias=plan.tf_alias)
        for node in ctx.walk(ctx.module):
            if isinstance(node, cst.SimpleStatementLine) and (
                    _dead_assignment(ctx, node, plan.graph_handles, graph=True)
                    or _dead_assignment(ctx, node, plan.key_names, graph=False)):
                edits.remove(node)
        dead = {name for name, _ in _module_imports(ctx).items() if name in was_used and not _referenced(ctx, name)}
        for stmt in {id(s): s for name, s in _module_imports(ctx).items() if name in dead}.values():
            edits.replace(stmt, functools.partial(_without_aliases, dead=set(dead)))
        if not edits.changes:
            break
        code = ctx.wrapper.visit(ApplyPlan(edits)).code
    ctx = ModuleContext(code)
    return ctx.wrapper.visit(_CompatV1(ctx)).code
