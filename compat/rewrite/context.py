"""One module under rewrite: its CST with positions, parents and scopes, and TensorFlow name resolution."""

from __future__ import annotations

import ast
import functools
import keyword
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import cast

import libcst as cst
import libcst.metadata as meta
from libcst.helpers import get_full_name_for_node
from libcst.metadata.position_provider import PositionProvidingCodegenState

from compat.audit.imports import ImportMap, is_tf, tf_leaf

_TF_MODULES = ("tensorflow", "tensorflow.compat.v1", "tensorflow.compat.v2")
_PUBLIC_PREFIXES = ("tensorflow.compat.v1.", "tensorflow.compat.v2.", "tensorflow.")
_SCOPE_BREAKS = (cst.FunctionDef, cst.Lambda, cst.ClassDef)


class _Layout(PositionProvidingCodegenState):
    """LibCST's PositionProvider code generation, also noting each node's parent and every node in source order.

    One pass over the tree that writes no code: ParentNodeProvider would visit every node twice more, rebuilding
    each one (LibCST's traversal and `node.children` construct a copy of every node they pass).
    """

    def __init__(self, module: cst.Module, provider: meta.PositionProvider) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline,
                         provider=provider)
        self.parents: dict[cst.CSTNode, cst.CSTNode] = {}
        self.order: list[cst.CSTNode] = []
        self.index: dict[cst.CSTNode, int] = {}
        self.end: list[int] = []  # end[i]: one past the last node of order[i]'s subtree
        self._open: list[int] = []

    def before_codegen(self, node: cst.CSTNode) -> None:
        super().before_codegen(node)
        if self._open:
            self.parents[node] = self.order[self._open[-1]]
        self._open.append(len(self.order))
        self.index[node] = len(self.order)
        self.order.append(node)
        self.end.append(0)

    def after_codegen(self, node: cst.CSTNode) -> None:
        super().after_codegen(node)
        self.end[self._open.pop()] = len(self.order)

    @classmethod
    def of(cls, module: cst.Module) -> _Layout:
        provider = meta.PositionProvider()
        layout = cls(module, provider)
        module._codegen(layout)
        return layout

    @property
    def positions(self) -> Mapping[cst.CSTNode, meta.CodeRange]:
        return cast(Mapping[cst.CSTNode, meta.CodeRange], self.provider._computed)


def walk_tree(node: cst.CSTNode, skip_functions: bool = False) -> Iterator[cst.CSTNode]:
    """Every node under `node` (itself included), in source order, for a node in no `ModuleContext`."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if skip_functions and current is not node and isinstance(current, _SCOPE_BREAKS):
            continue
        stack.extend(reversed(current.children))


class _Walk:
    """`ctx.walk(node)`: every node under `node` (itself included) in source order, from the context's layout when
    `node` is in its tree; `ModuleContext.walk(node)` (no context) works on any node, as `walk_tree`."""

    def __get__(self, ctx: ModuleContext | None, owner: type | None = None) -> Callable[..., Iterator[cst.CSTNode]]:
        return walk_tree if ctx is None else ctx._walk


class ModuleContext:
    """The parsed module and everything the pattern analyses ask about it.

    The module is parsed once; positions and parents come from one code-generation pass, and scopes from one
    ScopeProvider run, on first use (a module whose trigger word is only in prose never needs them).
    """

    def __init__(self, source: str) -> None:
        self._load(cst.parse_module(source), ImportMap.from_tree(ast.parse(source)))

    @classmethod
    def of_tree(cls, module: cst.Module, imports: ImportMap) -> ModuleContext:
        """A context for a tree built in memory (statements of a rewritten module), resolving names with `imports`."""
        ctx = cls.__new__(cls)
        ctx._load(module, imports)
        return ctx

    def _load(self, module: cst.Module, imports: ImportMap) -> None:
        self.module = module
        # A tree parsed or assembled for this context alone: the wrapper need not copy it to keep nodes apart.
        self.wrapper = meta.MetadataWrapper(module, unsafe_skip_copy=True)
        layout = _Layout.of(module)
        self.positions = layout.positions
        self.parents: Mapping[cst.CSTNode, cst.CSTNode] = layout.parents
        self._order, self._start, self._end = layout.order, layout.index, layout.end
        self.imports = imports
        self.used_names = {n.value for n in self._order if isinstance(n, cst.Name)}
        self._taken: set[str] = set()
        self._qualnames: dict[str, str | None] = {}

    @functools.cached_property
    def scopes(self) -> Mapping[cst.CSTNode, meta.Scope | None]:
        return self.wrapper.resolve(meta.ScopeProvider)

    # -- the tree ---------------------------------------------------------------------------------
    walk = _Walk()

    def _walk(self, node: cst.CSTNode, skip_functions: bool = False) -> Iterator[cst.CSTNode]:
        start = self._start.get(node)  # nodes hash by identity
        if start is None:
            yield from walk_tree(node, skip_functions)
            return
        i, end = start, self._end[start]
        while i < end:
            current = self._order[i]
            yield current
            skip = skip_functions and i != start and isinstance(current, _SCOPE_BREAKS)
            i = self._end[i] if skip else i + 1

    def children(self, node: cst.CSTNode) -> list[cst.CSTNode]:
        """`node.children` (in source order), without LibCST rebuilding `node` to list them."""
        start = self._start.get(node)
        if start is None:
            return list(node.children)
        found, i = [], start + 1
        while i < self._end[start]:
            found.append(self._order[i])
            i = self._end[i]
        return found

    def path_ids(self, nodes: Iterable[cst.CSTNode]) -> set[int]:
        """The ids of every ancestor of `nodes`: the nodes a transformer must enter to reach them."""
        found: set[int] = set()
        for node in nodes:
            for ancestor in self.ancestors(node):
                if id(ancestor) in found:
                    break
                found.add(id(ancestor))
        return found

    def path_ids_to(self, ids: Iterable[int]) -> set[int] | None:
        """`path_ids` of the nodes with these ids; None if one of them is not in the tree."""
        nodes = [self._by_id.get(i) for i in ids]
        return None if None in nodes else self.path_ids(n for n in nodes if n is not None)

    @functools.cached_property
    def _by_id(self) -> dict[int, cst.CSTNode]:
        return {id(node): node for node in self._order}

    def top_statement(self, node: cst.CSTNode) -> cst.CSTNode:
        """The module-level statement holding `node` (the module for the module itself, or its header)."""
        current = node
        for ancestor in self.ancestors(node):
            if ancestor is self.module:
                return current
            current = ancestor
        return current

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
        # Resolved as a module-level expression, so the dotted name alone decides the answer.
        if dotted not in self._qualnames:
            self._qualnames[dotted] = self.imports.qualname(ast.parse(dotted, mode="eval").body)
        return self._qualnames[dotted]

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
