"""Resolve names in a module to the dotted TensorFlow names they import (`tff.Defun` -> `tensorflow...Defun`)."""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable, Iterable

TF_ROOT = "tensorflow"
TF1_PREFIX = "tensorflow.compat.v1."
_TF_NAMESPACES = ("tensorflow.", "tensorflow.compat.v1.", "tensorflow.compat.v2.")


@dataclasses.dataclass(frozen=True)
class ImportMap:
    """Local name -> fully qualified name, from every `import` in the module (any scope).

    Attributes:
      aliases: e.g. `{"tf": "tensorflow.compat.v1", "tff": "tensorflow.python.framework.function"}`.
      star_modules: modules imported with `from M import *`; unresolved bare names may come from them.
    """

    aliases: dict[str, str]
    star_modules: tuple[str, ...] = ()

    @classmethod
    def from_tree(cls, tree: ast.AST) -> ImportMap:
        return cls.from_statements(n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom))

    @classmethod
    def from_statements(cls, statements: Iterable[ast.stmt]) -> ImportMap:
        """Build from the module's import statements, in source order (later imports win)."""
        aliases: dict[str, str] = {}
        stars: list[str] = []
        for node in statements:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        aliases[alias.asname] = alias.name
                    else:
                        # `import tensorflow.compat.v1` binds `tensorflow`.
                        top = alias.name.split(".", 1)[0]
                        aliases.setdefault(top, top)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    if alias.name == "*":
                        stars.append(node.module)
                    else:
                        aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        return cls(aliases, tuple(stars))

    def local_names_for(self, predicate: Callable[[str], bool]) -> list[str]:
        """Local names whose imported qualname satisfies `predicate` (e.g. aliases of `Defun`)."""
        return [local for local, target in self.aliases.items() if predicate(target)]

    def qualname(self, node: ast.AST) -> str | None:
        """The dotted name an expression refers to, with its root resolved through imports.

        Returns None for anything that is not a `Name`/`Attribute` chain rooted at an imported name
        (or at a bare name that a TensorFlow star import could provide).
        """
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        root = self.aliases.get(node.id)
        if root is None:
            tf_star = next((m for m in self.star_modules if is_tf(m)), None)
            if tf_star is None:
                return None
            root = f"{tf_star}.{node.id}"
        return ".".join([root, *reversed(parts)])


def is_tf(qualname: str | None) -> bool:
    return bool(qualname) and (qualname == TF_ROOT or qualname.startswith(TF_ROOT + "."))


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
