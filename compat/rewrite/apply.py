"""Carry out a `Plan` in one pass over the tree: replace calls and statements, dissolve override blocks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import libcst as cst
import libcst.metadata as meta

from compat.rewrite.grad_body import binding_names
from compat.rewrite.plan import Plan
from compat.rewrite.todo import leading_lines, with_todos

_PASS = cst.SimpleStatementLine(body=[cst.Pass()])


def _tidy_blank_lines(lines: Sequence[cst.EmptyLine], max_blank: int, first: bool) -> list[cst.EmptyLine]:
    """At most `max_blank` blank lines in a row, and none before the first statement of a block."""
    tidy: list[cst.EmptyLine] = []
    run = 0
    for line in lines:
        if line.comment is None:
            run += 1
            if run > max_blank or (first and len(tidy) == 0):
                continue
        else:
            run = 0
        tidy.append(line)
    return tidy


def _as_lines(body: cst.BaseSuite) -> list[cst.BaseStatement]:
    if isinstance(body, cst.IndentedBlock):
        return list(body.body)
    assert isinstance(body, cst.SimpleStatementSuite)
    return [cst.SimpleStatementLine(body=list(body.body))]


def _is_import(stmt: cst.BaseStatement) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(s, cst.Import | cst.ImportFrom) for s in stmt.body)


def _is_docstring(stmt: cst.BaseStatement) -> bool:
    return (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)
            and isinstance(stmt.body[0].value, cst.SimpleString | cst.ConcatenatedString))


def _with_blank_lines(stmt: cst.BaseStatement, count: int) -> cst.BaseStatement:
    """`stmt` preceded by at least `count` blank lines."""
    lines = list(leading_lines(stmt))
    blanks = 0
    for line in lines:
        if line.comment is not None:
            break
        blanks += 1
    if blanks >= count:
        return stmt
    return stmt.with_changes(leading_lines=[cst.EmptyLine(indent=False)] * (count - blanks) + lines)


def _free_names(statements: Sequence[cst.BaseStatement]) -> set[str]:
    """Names `statements` read that they do not bind themselves (nor are builtins): module names they need."""
    module = cst.Module(body=[s for s in statements
                              if isinstance(s, cst.SimpleStatementLine | cst.BaseCompoundStatement)])
    scopes = meta.MetadataWrapper(module).resolve(meta.ScopeProvider)
    return {access.node.value for scope in set(scopes.values()) if scope is not None for access in scope.accesses
            if not access.referents and isinstance(access.node, cst.Name)}


def _insertion_point(body: Sequence[cst.BaseStatement], new: Sequence[cst.BaseStatement]) -> int:
    """Where module-level `new` statements go: after the imports (and docstring) at the top, and after the first
    binding of every module name they read (an import in `try:`, or after a call, binds `tf` later)."""
    at = 0
    for i, stmt in enumerate(body):
        if isinstance(stmt, cst.FunctionDef | cst.ClassDef):
            break
        if _is_import(stmt) or (i == 0 and _is_docstring(stmt)):
            at = i + 1
    needed = _free_names(new)
    for i, stmt in enumerate(body):
        if not needed:
            break
        bound = needed & set(binding_names(stmt))
        if bound:
            at, needed = max(at, i + 1), needed - bound
    return at


class ApplyPlan(cst.CSTTransformer):
    """Apply `plan` to the tree it was made for (`wrapper.visit(ApplyPlan(plan))`)."""

    def __init__(self, plan: Plan) -> None:
        super().__init__()
        self.plan = plan
        # Placeholders standing for removed statements, and blocks emptied by removals; the nodes are kept so
        # their ids are never reused by new nodes.
        self._removed: dict[int, cst.CSTNode] = {}
        self._emptied: dict[int, cst.CSTNode] = {}
        self._hoisted: dict[int, list[cst.BaseStatement]] = {}
        # LibCST keeps the comments above a module's first statement in the module's header, not on it.
        self._header: tuple[int, Sequence[cst.EmptyLine]] = (0, ())

    def visit_Module(self, node: cst.Module) -> bool:
        if node.body:
            self._header = (id(node.body[0]), node.header)
        return True

    # -- calls and override blocks ----------------------------------------------------------------
    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        edit = self.plan.calls.get(id(original))
        if edit is None:
            return updated
        by_keyword = {a.keyword.value: a for a in updated.args if a.keyword is not None}
        args = [updated.args[t] if isinstance(t, int) else by_keyword[t] for t in edit.tensor_args]
        args = [a.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT,
                               comma=cst.MaybeSentinel.DEFAULT if i == len(args) - 1 else
                               (a.comma if isinstance(a.comma, cst.Comma) else cst.Comma(
                                   whitespace_after=cst.SimpleWhitespace(" "))))
                for i, a in enumerate(args)]
        return cst.Call(func=cst.parse_expression(edit.function), args=args, lpar=updated.lpar, rpar=updated.rpar,
                        whitespace_before_args=updated.whitespace_before_args)

    def leave_BinaryOperation(self, original: cst.BinaryOperation,
                              updated: cst.BinaryOperation) -> cst.BaseExpression:
        edit = self.plan.calls.get(id(original))  # `a * b` under an override of Mul: `helper(a, b)`
        if edit is None:
            return updated
        return cst.Call(func=cst.parse_expression(edit.function), lpar=updated.lpar, rpar=updated.rpar,
                        args=[cst.Arg(updated.left, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
                              cst.Arg(updated.right)])

    def _unwrap(self, original: cst.With, updated: cst.With) -> list[cst.BaseStatement]:
        drop = self.plan.unwraps[id(original)]
        items = [item for i, item in enumerate(updated.items) if i not in drop]
        if items:
            items[-1] = items[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            return [updated.with_changes(items=items)]
        body = _as_lines(updated.body)
        header = getattr(updated.body, "header", None)
        carried = list(leading_lines(updated))
        if header is not None and header.comment is not None:
            carried.append(cst.EmptyLine(comment=header.comment))
        body[0] = body[0].with_changes(leading_lines=[*carried, *leading_lines(body[0])])
        return body

    # -- statements -------------------------------------------------------------------------------
    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode) -> Any:
        if not isinstance(original, cst.BaseStatement) or not isinstance(updated, cst.BaseStatement):
            return super().on_leave(original, updated)  # type: ignore[return-value]
        key = id(original)
        new: list[cst.BaseStatement]
        if key in self.plan.statements:
            new = list(self.plan.statements[key](updated))
        elif key in self.plan.unwraps and isinstance(original, cst.With) and isinstance(updated, cst.With):
            new = self._unwrap(original, updated)
        else:
            new = [updated]
        if key in self.plan.hoists:
            self._hoisted.setdefault(self.plan.hoists[key], []).extend(new)
            new = []
        if key in self._hoisted:
            body = getattr(updated, "body", None)
            keep = not (body is not None and id(body) in self._emptied and not getattr(updated, "orelse", None))
            hoisted = self._hoisted.pop(key)
            if hoisted and not keep:
                hoisted[0] = hoisted[0].with_changes(leading_lines=[*leading_lines(updated),
                                                                    *leading_lines(hoisted[0])])
            if keep and new:
                new[0] = _with_blank_lines(new[0], 1)
            new = hoisted + (new if keep else [])
        if key in self.plan.todos and new:
            new[0] = with_todos(new[0], self.plan.todos[key], self._header[1] if key == self._header[0] else ())
        if not new:
            placeholder = _PASS.with_changes(leading_lines=leading_lines(updated))
            self._removed[id(placeholder)] = placeholder
            return placeholder
        return new[0] if len(new) == 1 else cst.FlattenSentinel(new)

    def _drop_placeholders(self, body: Sequence[cst.BaseStatement], max_blank: int) -> list[cst.BaseStatement]:
        """The body without placeholders; their blank lines and comments move to the next statement."""
        kept: list[cst.BaseStatement] = []
        carried: list[cst.EmptyLine] = []
        for stmt in body:
            if id(stmt) in self._removed:
                carried.extend(leading_lines(stmt))
                continue
            if carried or not kept:
                lines = _tidy_blank_lines([*carried, *leading_lines(stmt)], max_blank, first=not kept)
                stmt = stmt.with_changes(leading_lines=lines)
                carried = []
            kept.append(stmt)
        return kept

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
        if not any(id(s) in self._removed for s in updated.body):
            return updated
        kept = self._drop_placeholders(updated.body, max_blank=1)
        if kept:
            return updated.with_changes(body=kept)
        block = updated.with_changes(body=[_PASS])
        self._emptied[id(block)] = block
        return block

    def leave_Module(self, original: cst.Module, updated: cst.Module) -> cst.Module:
        body: list[Any] = self._drop_placeholders(updated.body, max_blank=2) if any(
            id(s) in self._removed for s in updated.body) else list(updated.body)
        extra: list[Any] = []
        if self.plan.add_tf_import:
            extra.append(cst.parse_statement(f"import tensorflow as {self.plan.tf_alias}\n"))
        if self.plan.compat_alias is not None:
            alias = self.plan.compat_alias
            extra.append(cst.parse_statement("import compat\n" if alias == "compat" else f"import compat as {alias}\n"))
        extra += [_with_blank_lines(h, 2) for h in self.plan.helpers]
        if extra:
            at = _insertion_point(body, extra)
            if at < len(body):
                body[at] = _with_blank_lines(body[at], 2)
            body = [*body[:at], *extra, *body[at:]]
        return updated.with_changes(body=body)
