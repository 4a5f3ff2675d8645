"""One module under rewrite: its CST with positions, parents and scopes, and TensorFlow name resolution."""

from __future__ import annotations

import ast
import keyword
from collections.abc import Iterator

import libcst as cst
import libcst.metadata as meta
from libcst.helpers import get_full_name_for_node

from compat.audit.imports import ImportMap, is_tf, tf_leaf

_TF_MODULES = ("tensorflow", "tensorflow.compat.v1", "tensorflow.compat.v2")
_PUBLIC_PREFIXES = ("tensorflow.compat.v1.", "tensorflow.compat.v2.", "tensorflow.")


class ModuleContext:
    """The parsed module and everything the pattern analyses ask about it."""

    def __init__(self, source: str) -> None:
        self.wrapper = meta.MetadataWrapper(cst.parse_module(source))
        self.module = self.wrapper.module
        self.positions = self.wrapper.resolve(meta.PositionProvider)
        self.parents = self.wrapper.resolve(meta.ParentNodeProvider)
        self.scopes = self.wrapper.resolve(meta.ScopeProvider)
        self.imports = ImportMap.from_tree(ast.parse(source))
        self.used_names = {n.value for n in self.walk(self.module) if isinstance(n, cst.Name)}
        self._taken: set[str] = set()

    # -- the tree ---------------------------------------------------------------------------------
    @staticmethod
    def walk(node: cst.CSTNode, skip_functions: bool = False) -> Iterator[cst.CSTNode]:
        """Every node under `node` (itself included), in source order."""
        stack = [node]
        while stack:
            current = stack.pop()
            yield current
            if skip_functions and current is not node and isinstance(current, cst.FunctionDef | cst.Lambda
                                                                     | cst.ClassDef):
                continue
            stack.extend(reversed(current.children))

    def line(self, node: cst.CSTNode) -> int:
        return self.positions[node].start.line

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.parents.get(node)

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        current = self.parents.get(node)
        while current is not None:
            yield current
            current = self.parents.get(current)

    def statement(self, node: cst.CSTNode) -> cst.BaseStatement:
        """The statement a TODO comment goes above: the innermost simple or compound statement holding `node`."""
        for candidate in (node, *self.ancestors(node)):
            if isinstance(candidate, cst.SimpleStatementLine | cst.BaseCompoundStatement):
                return candidate
        raise ValueError("node outside any statement")

    def enclosing_function(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        return next((a for a in self.ancestors(node) if isinstance(a, cst.FunctionDef)), None)

    # -- names ------------------------------------------------------------------------------------
    def qualname(self, node: cst.CSTNode) -> str | None:
        """`tensorflow.compat.v1.sign` for `tf.sign` (after `import tensorflow.compat.v1 as tf`), else None."""
        if not isinstance(node, cst.Name | cst.Attribute):
            return None
        dotted = get_full_name_for_node(node)
        if not dotted:
            return None
        return self.imports.qualname(ast.parse(dotted, mode="eval").body)

    def tf_leaf(self, node: cst.CSTNode) -> str | None:
        return tf_leaf(self.qualname(node))

    def public_path(self, node: cst.CSTNode) -> str | None:
        """`math.sign` for `tf.math.sign`, `python.ops.math_ops.sign` for `math_ops.sign`; None if not TF."""
        qualname = self.qualname(node)
        if not is_tf(qualname):
            return None
        assert qualname is not None
        return next((qualname[len(p):] for p in _PUBLIC_PREFIXES if qualname.startswith(p)), None)

    def tf_alias(self) -> str | None:
        """The local name of `tensorflow` (or its compat.v1/v2 module), for writing `tf.custom_gradient`."""
        aliases = [local for local, target in self.imports.aliases.items() if target in _TF_MODULES]
        return "tf" if "tf" in aliases else (aliases[0] if aliases else None)

    def fresh(self, base: str, avoid: set[str] | frozenset[str] = frozenset()) -> str:
        """`base`, or `base_2`, ...: a name used nowhere in the module nor in `avoid`, reserved from now on."""
        candidate, n = base, 1
        while (candidate in self.used_names or candidate in self._taken or candidate in avoid
               or keyword.iskeyword(candidate)):
            n += 1
            candidate = f"{base}_{n}"
        self._taken.add(candidate)
        return candidate

    def single_assignment(self, name: cst.Name) -> meta.Assignment | None:
        """The one assignment `name` can refer to where it is used, or None (unbound, or bound several times)."""
        scope = self.scopes.get(name)
        if scope is None:
            return None
        found = [a for a in scope[name.value] if isinstance(a, meta.Assignment)]
        return found[0] if len(found) == 1 else None

    def assigned_value(self, name: cst.Name) -> tuple[meta.Assignment, cst.BaseExpression] | None:
        """(assignment, value) when `name` is bound once, by a plain `name = value` statement."""
        assignment = self.single_assignment(name)
        if assignment is None or not isinstance(assignment.node, cst.Name):
            return None
        target = self.parent(assignment.node)
        assign = self.parent(target) if isinstance(target, cst.AssignTarget) else None
        if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
            return None
        return assignment, assign.value

    def string_value(self, node: cst.BaseExpression) -> str | None:
        """The value of a string literal, or of a name bound once at module level to one."""
        if isinstance(node, cst.SimpleString):
            value = node.evaluated_value
            return value if isinstance(value, str) else None
        if isinstance(node, cst.Name):
            found = self.assigned_value(node)
            if found and isinstance(found[0].scope, meta.GlobalScope) and isinstance(found[1], cst.SimpleString):
                value = found[1].evaluated_value
                return value if isinstance(value, str) else None
        return None

    def is_default_graph_call(self, node: cst.CSTNode) -> bool:
        return (isinstance(node, cst.Call) and not node.args
                and self.tf_leaf(node.func) == "get_default_graph")
