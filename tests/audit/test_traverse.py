"""Traversal helpers: every statement once, in source order, and only the lines that matter."""

from __future__ import annotations

import ast
import re

from compat.audit.traverse import LineSet, child_statement_lists, iter_statements, nodes_on_lines

SRC = """\
if a:
    x = 1
elif b:
    x = 2
else:
    x = 3
try:
    y = 1
except E:
    y = 2
else:
    y = 3
finally:
    y = 4
"""


def _lines(nodes) -> list[int]:
    return [n.lineno for n in nodes if isinstance(n, ast.stmt)]


def test_statements_come_in_source_order():
    assert _lines(iter_statements(ast.parse(SRC).body)) == [1, 2, 3, 4, 6, 7, 8, 10, 12, 14]


def test_nodes_on_lines_come_in_source_order():
    tree = ast.parse(SRC)
    assert _lines(nodes_on_lines(tree.body, LineSet(SRC, re.compile(r"\d")))) == [1, 2, 3, 4, 6, 7, 8, 10, 12, 14]


def test_child_statement_lists_of_try_are_body_handlers_else_finally():
    stmt = ast.parse(SRC).body[1]
    assert [body[0].lineno for body in child_statement_lists(stmt)] == [8, 10, 12, 14]
