"""Resolve names in a module to the dotted TensorFlow names they import (`tff.Defun` -> `tensorflow...Defun`)."""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable
from typing import TypeGuard

from compat.audit.scopes import Binding, ScopeTree, position

TF_ROOT = "tensorflow"
TF1_PREFIX = "tensorflow.compat.v1."
_IMPORT_MODULE = "importlib.import_module"


class ImportMap:
    """Resolves expressions to the dotted names they refer to, through imports and aliases, scope by scope.

    Follows `import`/`from ... import` (any scope), assignments (`RG = tf.RegisterGradient`),
    `getattr(tf, "RegisterGradient")`, `__import__("tensorflow")` and `importlib.import_module("...")`.
    A name is looked up in the scope of the expression using it (function, enclosing functions, module),
    so a function-local `import numpy as tf` does not change what `tf` means elsewhere. When one scope
    binds a name several times (`try: import tensorflow as tf` / `except ImportError: tf = None`), a
    TensorFlow binding wins, the latest before the use first.
    """

    def __init__(self, scopes: ScopeTree) -> None:
        self.scopes = scopes
        self.star_modules = tuple(scopes.star_modules)
        self._resolved: dict[int, str | None] = {}
        self._resolving: set[int] = set()

    @classmethod
    def from_tree(cls, tree: ast.Module) -> ImportMap:
        return cls(ScopeTree(tree))

    @property
    def aliases(self) -> dict[str, str]:
        """Module-level names that resolve to a dotted name (imports and aliases of them), the last binding of
        each winning: `{"tf": "tensorflow.compat.v1", "RG": "tensorflow.RegisterGradient"}`. For tools that
        rewrite a module's imports; use `qualname` to resolve a name where it is used."""
        found: dict[str, str] = {}
        for name, bindings in self.scopes.root.bindings.items():
            for binding in bindings:
                resolved = self._binding(binding)
                if resolved is not None:
                    found[name] = resolved
        return found

    def local_names_for(self, predicate: Callable[[str], bool]) -> list[str]:
        """Names bound anywhere to a dotted name satisfying `predicate` (e.g. every alias of `Defun`)."""
        return sorted({name for name, q in self._resolved_bindings if predicate(q)})

    @functools.cached_property
    def _resolved_bindings(self) -> list[tuple[str, str]]:
        """(name, dotted name) of every binding that resolves: asked several times per module, built once."""
        return [(name, q) for name, b in self.scopes.all_bindings() if (q := self._binding(b))]

    def assigned_value(self, node: ast.Name) -> ast.expr | None:
        """The expression last assigned to the name `node` uses, in its scope (None if not an assignment)."""
        bindings = self.scopes.at(position(node)).lookup(node.id)
        values = [b.value for b in bindings or () if b.value is not None]
        return values[-1] if values else None

    def qualname(self, node: ast.AST) -> str | None:
        """The dotted name an expression refers to, with its root resolved through imports and aliases.

        Returns None for anything that is not a `Name`/`Attribute` chain (or `getattr`/`__import__` call)
        rooted at an imported name (or at a bare name that a TensorFlow star import could provide).
        """
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Call):
            root = self._call_qualname(node)
        elif isinstance(node, ast.Name):
            root = self._name(node)
        else:
            return None
        return ".".join([root, *reversed(parts)]) if root else None

    def _name(self, node: ast.Name) -> str | None:
        bindings = self.scopes.at(position(node)).lookup(node.id)
        if bindings is None:
            tf_star = next((m for m in self.star_modules if is_tf(m)), None)
            return f"{tf_star}.{node.id}" if tf_star else None
        resolved = [(b.pos, self._binding(b)) for b in bindings]
        tf_bound = [(pos, q) for pos, q in resolved if is_tf(q)] or resolved
        before = [q for pos, q in tf_bound if pos <= position(node)]
        return before[-1] if before else tf_bound[-1][1]

    def _binding(self, binding: Binding) -> str | None:
        key = id(binding)
        if key not in self._resolved:
            if key in self._resolving:  # `a = a.b`: a cycle resolves to nothing
                return None
            self._resolving.add(key)
            self._resolved[key] = binding.imported if binding.value is None else self.qualname(binding.value)
            self._resolving.discard(key)
        return self._resolved[key]

    def _call_qualname(self, call: ast.Call) -> str | None:
        """`getattr(X, "name")` -> X's name + ".name"; `__import__("tensorflow")` -> `tensorflow`."""
        func = call.func
        literal = _str(call.args[1]) if len(call.args) > 1 else None
        if isinstance(func, ast.Name) and func.id == "getattr" and literal and self._is_builtin(func):
            base = self.qualname(call.args[0])
            return f"{base}.{literal}" if base else None
        module = _str(call.args[0]) if call.args else None
        if module is None:
            return None
        if isinstance(func, ast.Name) and func.id == "__import__" and self._is_builtin(func):
            fromlist = call.args[3] if len(call.args) > 3 else next(
                (k.value for k in call.keywords if k.arg == "fromlist"), None)
            # __import__("a.b") returns package `a`, unless a non-empty fromlist asks for `a.b` itself.
            wants_leaf = isinstance(fromlist, ast.List | ast.Tuple) and bool(fromlist.elts)
            return module if wants_leaf else module.split(".", 1)[0]
        if self.qualname(func) == _IMPORT_MODULE:
            return module
        return None

    def _is_builtin(self, node: ast.Name) -> bool:
        return self.scopes.at(position(node)).lookup(node.id) is None


def _str(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def is_tf(qualname: str | None) -> TypeGuard[str]:
    return qualname is not None and (qualname == TF_ROOT or qualname.startswith(TF_ROOT + "."))


def tf_leaf(qualname: str | None) -> str | None:
    """`RegisterGradient` for any TensorFlow path ending in it, else None."""
    if not is_tf(qualname):
        return None
    return qualname.rsplit(".", 1)[-1]


def tf_public_name(qualname: str | None) -> tuple[str, bool] | None:
    """(`Session`, is_compat_v1) for `tensorflow.Session` / `tensorflow.compat.v1.Session`, else None."""
    if not is_tf(qualname):
        return None
    if qualname.startswith(TF1_PREFIX):
        return qualname[len(TF1_PREFIX):], True
    if qualname.startswith("tensorflow.compat.") or qualname.startswith("tensorflow.python."):
        return None
    return qualname[len("tensorflow."):], False
