"""Which exclusive arms (if/else, match cases, except/else) a position is in: one run takes only one of them."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence

from compat.audit.scopes import Position, position, statement_start
from compat.audit.traverse import child_statement_lists

# (line, column) of the branching statement, and the arm's index in it.
Arm = tuple[int, int, int]
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def _span(body: list[ast.stmt]) -> tuple[Position, Position]:
    last = body[-1]
    return statement_start(body[0]), (last.end_lineno or last.lineno, last.end_col_offset or 0)


def _arms(stmt: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists of `stmt` of which at most one runs (try bodies run before a handler: not arms)."""
    if isinstance(stmt, ast.If):
        return [stmt.body, stmt.orelse]
    if isinstance(stmt, ast.Match):
        return [case.body for case in stmt.cases]
    if isinstance(stmt, ast.Try | ast.TryStar):
        return [h.body for h in stmt.handlers] + [stmt.orelse]
    return []


class BranchMap:
    """The exclusive arms of a module. Conditionals inside a loop are left out: each iteration may take another arm."""

    def __init__(self, tree: ast.Module) -> None:
        self.arms: list[tuple[Position, Position, Arm]] = []
        stack: list[tuple[ast.stmt, bool]] = [(s, False) for s in tree.body]
        while stack:
            stmt, in_loop = stack.pop()
            if not in_loop:
                line, col = position(stmt)
                for i, body in enumerate(_arms(stmt)):
                    if body:
                        self.arms.append((*_span(body), (line, col, i)))
            in_loop = in_loop or isinstance(stmt, _LOOPS)
            stack.extend((s, in_loop) for body in child_statement_lists(stmt) for s in body)

    def at(self, node: ast.AST) -> tuple[Arm, ...]:
        pos = position(node)
        return tuple(arm for start, end, arm in self.arms if start <= pos <= end)


def exclusive(a: Iterable[Arm], b: Sequence[Arm]) -> bool:
    """Whether two places lie in different arms of one branching statement (so never both run)."""
    arm_of = {(line, col): i for line, col, i in a}
    return any(arm_of.get((line, col), i) != i for line, col, i in b)
