"""After the rewrite: drop what only served the legacy code (graph handles, gradient-name variables, imports)
and point a leftover `tf.get_default_graph()` at `tf.compat.v1`.

The rewritten tree is not parsed again. A module-level statement the rewrite left alone is the original's own node
object, so the original's analysis answers for it; each statement the rewrite changed is analysed on its own, with
the module-level statements that bind the name in question, only when its code names it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import libcst as cst
import libcst.metadata as meta

from compat.audit.imports import is_tf
from compat.rewrite.context import ModuleContext
from compat.rewrite.partial import apply_plan
from compat.rewrite.plan import Plan

_MAX_ROUNDS = 3
_Statement = cst.SimpleStatementLine | cst.BaseCompoundStatement  # what a module's body holds
_GRAPH_CALL = "tensorflow.get_default_graph"


def _module_imports(body: Iterable[cst.BaseStatement], aliases: dict[str, str]) -> dict[str, cst.SimpleStatementLine]:
    """Local name -> the module-level import line binding it (TensorFlow imports only)."""
    found = {}
    for stmt in body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Import | cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
                for alias in small.names:
                    local = alias.evaluated_alias or alias.evaluated_name.split(".")[0]
                    if is_tf(aliases.get(local)):
                        found[local] = stmt
    return found


def _global_scope(ctx: ModuleContext) -> meta.GlobalScope | None:
    scope = ctx.scopes.get(ctx.module)
    return scope if isinstance(scope, meta.GlobalScope) else None


def _referenced(ctx: ModuleContext, name: str) -> bool:
    """Whether a module-level binding of `name` is read anywhere in `ctx`'s module."""
    scope = _global_scope(ctx)
    return scope is not None and any(a.references for a in scope[name])


def used_tf_imports(ctx: ModuleContext) -> set[str]:
    return {name for name in _module_imports(ctx.module.body, ctx.imports.aliases) if _referenced(ctx, name)}


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


def _assigned_name(node: cst.CSTNode) -> str | None:
    """`name` for a line that is exactly `name = value`, else None."""
    if not isinstance(node, cst.SimpleStatementLine) or len(node.body) != 1:
        return None
    assign = node.body[0]
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
        return None
    target = assign.targets[0].target
    return target.value if isinstance(target, cst.Name) else None


def _assigns_one_of(names: set[str], _ctx: ModuleContext, node: cst.CSTNode) -> bool:
    return isinstance(node, cst.SimpleStatementLine) and _assigned_name(node) in names


def _is_graph_attribute(ctx: ModuleContext, node: cst.CSTNode) -> bool:
    """`tf.get_default_graph` where `tf` is TF2's `tensorflow`."""
    return (isinstance(node, cst.Attribute) and node.attr.value == "get_default_graph"
            and isinstance(node.value, cst.Name) and ctx.qualname(node) == _GRAPH_CALL)


def _words(names: Iterable[str], suffix: str = "") -> re.Pattern[str] | None:
    """A pattern finding any of `names` as a whole word (followed by `suffix`), in code or not."""
    ordered = sorted(names)
    return re.compile(r"\b(?:" + "|".join(map(re.escape, ordered)) + r")\b" + suffix) if ordered else None


# `name = ` with the name maybe parenthesised or the line continued, never `name ==`: where an assignment may be.
_ASSIGNED = r"[\s)\\]*=(?!=)"


class _Tidy:
    """The original module's answers, computed once, for every round of tidying the rewritten tree."""

    def __init__(self, original: ModuleContext, plan: Plan) -> None:
        self.original = original
        self.plan = plan
        self.aliases = original.imports.aliases
        self.globals = _global_scope(original)
        self.was_used = used_tf_imports(original)
        self.texts: dict[cst.CSTNode, str] = {}
        # Contexts of groups of statements, kept for later rounds; each holds its statements, so their ids stay theirs.
        self.analysed: dict[tuple[int, ...], ModuleContext] = {}
        names = plan.graph_handles | plan.key_names
        self.assignments: list[tuple[cst.CSTNode, cst.CSTNode]] = []
        self.graph_attributes: list[tuple[cst.CSTNode, cst.CSTNode]] = []
        for node in original.walk(original.module):
            if _assigned_name(node) in names:
                self.assignments.append((original.top_statement(node), node))
            elif _is_graph_attribute(original, node):
                self.graph_attributes.append((original.top_statement(node), node))

    def text(self, stmt: cst.CSTNode) -> str:
        """A statement's code (statements are immutable: each is generated once)."""
        if stmt not in self.texts:
            self.texts[stmt] = self.original.module.code_for_node(stmt)
        return self.texts[stmt]

    def original_readers(self, name: str) -> Iterator[cst.CSTNode]:
        """The module-level statements of the original reading a module-level binding of `name`."""
        for assignment in self.globals[name] if self.globals is not None else ():
            for access in assignment.references:
                yield self.original.top_statement(access.node)

    def original_binders(self, name: str) -> set[cst.CSTNode]:
        """The module-level statements of the original binding `name` at module level."""
        found = set()
        for assignment in self.globals[name] if self.globals is not None else ():
            node = getattr(assignment, "node", None)
            if isinstance(node, cst.CSTNode):
                found.add(self.original.top_statement(node))
        return found


class _Round:
    """The rewritten tree as it is now: unchanged statements answered by the original, changed ones analysed."""

    def __init__(self, tidy: _Tidy, module: cst.Module) -> None:
        self.tidy = tidy
        self.module = module
        self.present = set(module.body)
        unchanged = set(tidy.original.module.body)
        self.changed = [s for s in module.body if s not in unchanged]
        self._referenced: dict[str, bool] = {}

    def analysed(self, statements: Sequence[_Statement]) -> ModuleContext:
        """A context for these statements of the tree alone, as a module of their own, in the tree's order."""
        key = tuple(id(s) for s in statements)
        if key not in self.tidy.analysed:
            mini = cst.Module(body=statements, header=(), footer=(), default_indent=self.module.default_indent,
                              default_newline=self.module.default_newline)
            self.tidy.analysed[key] = ModuleContext.of_tree(mini, self.tidy.original.imports)
        return self.tidy.analysed[key]

    def changed_naming(self, pattern: re.Pattern[str] | None) -> list[_Statement]:
        return [s for s in self.changed if pattern is not None and pattern.search(self.tidy.text(s))]

    def referenced(self, name: str) -> bool:
        """Whether a module-level binding of `name` is read anywhere in the tree (as `_referenced` on it)."""
        if name not in self._referenced:
            self._referenced[name] = self._find_reader(name)
        return self._referenced[name]

    def _find_reader(self, name: str) -> bool:
        if any(top in self.present for top in self.tidy.original_readers(name)):
            return True
        readers = self.changed_naming(_words([name]))
        if not readers:
            return False
        binders = self.tidy.original_binders(name)
        statements = [s for s in self.module.body if s in binders or s in readers]
        return _referenced(self.analysed(statements), name)

    def candidates(self, names: set[str]) -> Iterator[tuple[ModuleContext, cst.SimpleStatementLine]]:
        """Every `name = value` line for a name in `names`, with a context that analyses it."""
        for top, stmt in self.tidy.assignments:
            if top in self.present and isinstance(stmt, cst.SimpleStatementLine):
                yield self.tidy.original, stmt
        # The changed statements that may hold one, analysed together (one scope analysis): a function's names
        # are its own, and a `global` one is looked up in the whole tree (`dead`).
        yield from self._changed_nodes(_words(names, _ASSIGNED), functools.partial(_assigns_one_of, names))

    def graph_attributes(self) -> Iterator[tuple[ModuleContext, cst.Attribute]]:
        for top, node in self.tidy.graph_attributes:
            if top in self.present and isinstance(node, cst.Attribute):
                yield self.tidy.original, node
        yield from self._changed_nodes(_words(["get_default_graph"]), _is_graph_attribute)

    def _changed_nodes(self, pattern: re.Pattern[str] | None,
                       wanted: Callable[[ModuleContext, cst.CSTNode], bool]) -> Iterator[tuple[ModuleContext, Any]]:
        """(context, node) for each node `wanted` in the changed statements whose code matches `pattern`."""
        statements = self.changed_naming(pattern)
        if statements:
            ctx = self.analysed(statements)
            yield from ((ctx, node) for node in ctx.walk(ctx.module) if wanted(ctx, node))

    def dead(self, ctx: ModuleContext, stmt: cst.SimpleStatementLine, names: set[str], graph: bool) -> bool:
        """`G = tf.get_default_graph()` (graph) or `name = "Flip%d" % n` in a function, now read nowhere."""
        assign = stmt.body[0]
        assert isinstance(assign, cst.Assign)
        target = assign.targets[0].target
        if not isinstance(target, cst.Name) or target.value not in names:
            return False
        if not (ctx.is_default_graph_call(assign.value) if graph else _side_effect_free(assign.value)):
            return False
        scope = ctx.scopes.get(target)
        if scope is None or isinstance(scope, meta.GlobalScope | meta.ClassScope):
            return False
        bindings = scope[target.value]
        if any(isinstance(b.scope, meta.GlobalScope) for b in bindings):  # declared `global`: read anywhere
            return not self.referenced(target.value)
        return not any(b.references for b in bindings)


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


def _removals(tidy: _Tidy, now: _Round) -> tuple[Plan, set[int]]:
    """This round's edits (dead handles, gradient-name variables and imports) and the ids of their ancestors."""
    plan, edits, opened = tidy.plan, Plan(tf_alias=tidy.plan.tf_alias), set()
    for ctx, stmt in now.candidates(plan.graph_handles | plan.key_names):
        if now.dead(ctx, stmt, plan.graph_handles, graph=True) or now.dead(ctx, stmt, plan.key_names, graph=False):
            edits.remove(stmt)
            opened |= ctx.path_ids([stmt])
    imports = _module_imports(now.module.body, tidy.aliases)
    dead = {name for name in imports if name in tidy.was_used and not now.referenced(name)}
    for stmt in {id(s): s for name, s in imports.items() if name in dead}.values():
        edits.replace(stmt, functools.partial(_without_aliases, dead=set(dead)))
    return edits, opened


class _CompatV1(cst.CSTTransformer):
    """`tf.get_default_graph` -> `tf.compat.v1.get_default_graph`, entering only the paths to `targets`."""

    def __init__(self, targets: list[tuple[ModuleContext, cst.Attribute]]) -> None:
        super().__init__()
        self.targets = {id(node) for _, node in targets}
        self.open = set().union(*(ctx.path_ids([node]) for ctx, node in targets))

    def on_visit(self, node: cst.CSTNode) -> bool:
        return isinstance(node, cst.Module) or id(node) in self.open

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        if id(original) not in self.targets:
            return updated
        base = cst.Module(body=[]).code_for_node(original.value)
        return updated.with_changes(value=cst.parse_expression(f"{base}.compat.v1"))


def tidy(module: cst.Module, original: ModuleContext, plan: Plan) -> str:
    """The code of the rewritten `module` without dead legacy helpers, and with TF1-only graph access explicit.

    Args:
      module: the tree `original.module` became (`partial.apply_plan`: unchanged statements are its own objects).
      original: the module before the rewrite.
      plan: the rewrite's plan (its graph handles and gradient-name variables may now be dead).
    """
    state = _Tidy(original, plan)
    for _ in range(_MAX_ROUNDS):
        edits, opened = _removals(state, _Round(state, module))
        if not edits.changes:
            break
        module = apply_plan(module, edits, opened)
    targets = list(_Round(state, module).graph_attributes())
    if targets:
        result = module.visit(_CompatV1(targets))
        assert isinstance(result, cst.Module)
        module = result
    return module.code
