"""Python scopes of one module: which bindings (imports, assignments, defs) a name can refer to at a position."""

from __future__ import annotations

import ast
import bisect
import dataclasses
from collections.abc import Iterator

from compat.audit.traverse import child_statement_lists

Position = tuple[int, int]  # (line, column), as in the AST


@dataclasses.dataclass(frozen=True, eq=False)
class Binding:
    """One statement binding a name.

    Attributes:
      pos: where the binding statement starts.
      imported: the dotted name an import binds (`"tensorflow.compat.v1"`), else None.
      value: the assigned expression (`tf.RegisterGradient` in `RG = tf.RegisterGradient`), else None.
      scope: the scope the binding is in (the value is resolved there).
    """

    pos: Position
    imported: str | None
    value: ast.expr | None
    scope: Scope


@dataclasses.dataclass(eq=False)
class Scope:
    """A module, function or class body: the names bound directly in it, and where it starts and ends."""

    kind: str  # "module", "function" or "class"
    start: Position
    end: Position
    parent: Scope | None
    bindings: dict[str, list[Binding]] = dataclasses.field(default_factory=dict)
    global_names: set[str] = dataclasses.field(default_factory=set)
    nonlocal_names: set[str] = dataclasses.field(default_factory=set)

    def bind(self, name: str, pos: Position, imported: str | None = None, value: ast.expr | None = None) -> None:
        owner = self
        if name in self.global_names:
            owner = self.module()
        elif name in self.nonlocal_names and self.parent is not None:
            owner = self.parent
            while owner.kind == "class" and owner.parent is not None:
                owner = owner.parent
        owner.bindings.setdefault(name, []).append(Binding(pos, imported, value, self))

    def contains(self, pos: Position) -> bool:
        return self.start <= pos <= self.end

    def lookup(self, name: str) -> list[Binding] | None:
        """The bindings `name` refers to from code directly in this scope (Python's LEGB, minus builtins)."""
        scope: Scope | None = self
        direct = True
        while scope is not None:
            if name in scope.global_names:
                scope = self.module()
                direct = True
                continue
            skip = (scope.kind == "class" and not direct) or name in scope.nonlocal_names
            if not skip and name in scope.bindings:
                return scope.bindings[name]
            scope, direct = scope.parent, False
        return None

    def module(self) -> Scope:
        scope = self
        while scope.parent is not None:
            scope = scope.parent
        return scope


def position(node: ast.AST) -> Position:
    """Where `node` starts; (1, 0) for nodes without a location."""
    return (getattr(node, "lineno", 1), getattr(node, "col_offset", 0))


def statement_start(stmt: ast.stmt) -> Position:
    """Where a statement's text starts: its first decorator for a decorated def or class."""
    return min([position(stmt), *(position(d) for d in getattr(stmt, "decorator_list", ()))])


def _end(node: ast.AST) -> Position:
    return (getattr(node, "end_lineno", None) or 1 << 30, getattr(node, "end_col_offset", None) or 0)


def _bind_targets(scope: Scope, targets: list[ast.expr], value: ast.expr | None, pos: Position) -> None:
    for target in targets:
        if isinstance(target, ast.Name):
            scope.bind(target.id, pos, value=value)
        elif isinstance(target, ast.Tuple | ast.List):
            values = value.elts if isinstance(value, ast.Tuple | ast.List) else None
            if values is not None and len(values) != len(target.elts):
                values = None
            for i, element in enumerate(target.elts):
                _bind_targets(scope, [element], values[i] if values else None, pos)


def _bind(scope: Scope, stmt: ast.stmt) -> None:
    pos = position(stmt)
    if isinstance(stmt, ast.Import):
        for alias in stmt.names:
            if alias.asname:
                scope.bind(alias.asname, pos, imported=alias.name)
            else:  # `import tensorflow.compat.v1` binds `tensorflow`.
                top = alias.name.split(".", 1)[0]
                scope.bind(top, pos, imported=top)
    elif isinstance(stmt, ast.ImportFrom):
        for alias in stmt.names:
            if alias.name != "*":
                module = stmt.module if stmt.module and not stmt.level else None
                # A relative import binds a name of the user's own package: opaque, never TensorFlow.
                scope.bind(alias.asname or alias.name, pos, imported=f"{module}.{alias.name}" if module else None)
    elif isinstance(stmt, ast.Assign):
        _bind_targets(scope, stmt.targets, stmt.value, pos)
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        _bind_targets(scope, [stmt.target], stmt.value, pos)
    elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        scope.bind(stmt.name, pos)
    elif isinstance(stmt, ast.Global):
        scope.global_names.update(stmt.names)
    elif isinstance(stmt, ast.Nonlocal):
        scope.nonlocal_names.update(stmt.names)
    # Loop, `with ... as` and `except ... as` targets and parameters are not tracked: a name bound only
    # there keeps resolving through the enclosing scopes (an audit would rather over-report).


class ScopeTree:
    """Every scope of a module, found from a position in O(log n + depth)."""

    def __init__(self, tree: ast.Module) -> None:
        self.root = Scope("module", (0, 0), (1 << 30, 0), None)
        self.scopes: list[Scope] = []
        self.star_modules: list[str] = []
        stack: list[tuple[ast.stmt, Scope]] = [(s, self.root) for s in reversed(tree.body)]
        while stack:
            stmt, scope = stack.pop()
            _bind(scope, stmt)
            if isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level:
                self.star_modules += [stmt.module for a in stmt.names if a.name == "*"]
            inner = scope
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and stmt.body:
                kind = "class" if isinstance(stmt, ast.ClassDef) else "function"
                # Decorators, defaults and bases are evaluated outside: the scope starts at the body.
                inner = Scope(kind, statement_start(stmt.body[0]), _end(stmt), scope)
                self.scopes.append(inner)
            children = [s for body in child_statement_lists(stmt) for s in body]
            stack.extend((s, inner) for s in reversed(children))
        self.scopes.sort(key=lambda s: s.start)
        self._starts = [s.start for s in self.scopes]

    def at(self, pos: Position) -> Scope:
        """The innermost scope containing `pos`: an ancestor-or-self of the last scope starting before it."""
        i = bisect.bisect_right(self._starts, pos) - 1
        scope: Scope | None = self.scopes[i] if i >= 0 else None
        while scope is not None and not scope.contains(pos):
            scope = scope.parent
        return scope or self.root

    def all_bindings(self) -> Iterator[tuple[str, Binding]]:
        for scope in (self.root, *self.scopes):
            for name, bindings in scope.bindings.items():
                for binding in bindings:
                    yield name, binding
