"""Scopes: which bindings a name refers to at a position (functions, classes, global, nonlocal)."""

from __future__ import annotations

import ast

from compat.audit.scopes import ScopeTree, position

SRC = """\
import tensorflow as tf
def f(x=tf):
    import numpy as tf
    def inner():
        nonlocal tf
        return tf
    return tf
class C:
    tf = 1
    def m(self):
        return tf
def g():
    global tf
    tf = 2
    return tf
"""


def _bound_at(tree: ast.Module, scopes: ScopeTree, line: int) -> list[str | None]:
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "tf" and n.lineno == line)
    bindings = scopes.at(position(node)).lookup("tf")
    return [b.imported or (ast.unparse(b.value) if b.value else None) for b in bindings or ()]


def test_lookup_follows_python_scoping():
    tree = ast.parse(SRC)
    scopes = ScopeTree(tree)
    assert _bound_at(tree, scopes, 2) == ["tensorflow", "2"]  # a default is evaluated outside the function
    assert _bound_at(tree, scopes, 6) == ["numpy"]  # nonlocal: the enclosing function's binding
    assert _bound_at(tree, scopes, 7) == ["numpy"]
    assert _bound_at(tree, scopes, 11) == ["tensorflow", "2"]  # the class body does not enclose m
    assert _bound_at(tree, scopes, 15) == ["tensorflow", "2"]  # global: the module's bindings


def test_scope_at_a_position_is_the_innermost():
    tree = ast.parse(SRC)
    scopes = ScopeTree(tree)
    assert scopes.at((6, 15)).kind == "function" and scopes.at((6, 15)).start == (5, 8)
    assert scopes.at((9, 4)).kind == "class"
    assert scopes.at((1, 0)) is scopes.root
