"""Cheap AST traversal: every statement once, and full expression walks only on lines that matter."""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Iterable, Iterator

_STMT_LIST_FIELDS = ("body", "orelse", "finalbody")


def iter_nodes(roots: Iterable[ast.AST]) -> Iterator[ast.AST]:
    """Every node under `roots` (like `ast.walk`, about twice as fast; order is depth-first)."""
    stack = [r for r in roots if isinstance(r, ast.AST)]
    AST = ast.AST
    while stack:
        node = stack.pop()
        yield node
        for field in node._fields:
            value = getattr(node, field, None)
            if value.__class__ is list:
                stack.extend(v for v in value if isinstance(v, AST))
            elif isinstance(value, AST):
                stack.append(value)


def child_statement_lists(stmt: ast.stmt) -> Iterator[list[ast.stmt]]:
    """The statement lists nested in `stmt`, in source order (body, handlers, cases, else, finally)."""
    body = getattr(stmt, "body", None)
    if body and isinstance(body[0], ast.stmt):
        yield body
    for handler in getattr(stmt, "handlers", ()):
        yield handler.body
    for case in getattr(stmt, "cases", ()):
        yield case.body
    for field in ("orelse", "finalbody"):
        if block := getattr(stmt, field, None):
            yield block


def iter_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement in a module, nested ones included (function, class, if/try/match bodies)."""
    stack = list(reversed(body))
    while stack:
        stmt = stack.pop()
        yield stmt
        stack.extend(reversed([s for child in child_statement_lists(stmt) for s in child]))


def header_expressions(stmt: ast.stmt) -> Iterator[ast.AST]:
    """The parts of a statement that are not nested statement lists (decorators, tests, targets...)."""
    for field in stmt._fields:
        if field in _STMT_LIST_FIELDS or field in ("handlers", "cases"):
            continue
        value = getattr(stmt, field, None)
        if isinstance(value, list):
            yield from (v for v in value if isinstance(v, ast.AST))
        elif isinstance(value, ast.AST):
            yield value
    for handler in getattr(stmt, "handlers", ()):
        if handler.type is not None:
            yield handler.type
    for case in getattr(stmt, "cases", ()):
        yield case.pattern
        if case.guard is not None:
            yield case.guard


class LineSet:
    """Sorted 1-based line numbers where a regex matches, with range queries."""

    def __init__(self, text: str, pattern: re.Pattern[str] | None) -> None:
        lines: list[int] = []
        if pattern is not None:
            pos, line = 0, 1
            for match in pattern.finditer(text):
                line += text.count("\n", pos, match.start())
                pos = match.start()
                if not lines or lines[-1] != line:
                    lines.append(line)
        self.lines = lines

    def __bool__(self) -> bool:
        return bool(self.lines)

    def intersects(self, first: int, last: int) -> bool:
        i = bisect.bisect_left(self.lines, first)
        return i < len(self.lines) and self.lines[i] <= last


def nodes_on_lines(body: list[ast.stmt], lines: LineSet) -> Iterator[ast.AST]:
    """Expression nodes of the statements that span a line in `lines`; other statements are skipped whole."""
    if not lines:
        return
    stack = list(reversed(body))
    while stack:
        stmt = stack.pop()
        first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))])
        if not lines.intersects(first, stmt.end_lineno or stmt.lineno):
            continue
        yield stmt
        yield from iter_nodes(header_expressions(stmt))
        stack.extend(reversed([s for child in child_statement_lists(stmt) for s in child]))
