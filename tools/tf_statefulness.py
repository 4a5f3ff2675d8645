"""Which public TensorFlow functions may create stateful ops (random, variables, I/O...), from TensorFlow itself.

Used by tools/gen_audit_data.py (it imports TensorFlow; the rewriter reads the generated file). Stateful op types
come from the op registry: `op_def.is_stateful`, or an input of reference type (a TF1 variable, queue or reader
it reads or writes), except ops that run functions (`If`, `While`, `StatefulPartitionedCall`...), stateful only
through the functions they run, which are classified on their own. A public function may create an op type when
its Python source, or the source of any TensorFlow function or class it names (transitively), calls the
generated wrapper of that op; calls TensorFlow dispatches at run time (methods of objects) are not followed, so
every function the source analysis finds stateless is also called in a throwaway v1 graph with a few argument
patterns, and the stateful ops it really creates are added (this is how `get_variable` is found).
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
import types
import warnings
from collections.abc import Callable, Iterable
from typing import Any

_GEN_OP = re.compile(r'_apply_op_helper\(\s*"(\w+)"')
_SKIPPED_NAMESPACES = frozenset({"raw_ops", "compat", "keras", "estimator"})  # raw_ops: one function per op type
_TRACED_MODULES = "tensorflow.python.ops."  # graph-building code only: tracing never runs file or config code


def _op_defs() -> list[Any]:
    import tensorflow  # noqa: F401 - loads the op registry
    from tensorflow.core.framework import op_def_pb2
    from tensorflow.python.client import pywrap_tf_session as c_api

    op_list = op_def_pb2.OpList()
    op_list.ParseFromString(c_api.TF_GetBuffer(c_api.TF_GetAllOpList()))
    return list(op_list.op)


def stateful_op_types() -> frozenset[str]:
    """Op types that are stateful themselves (see the module docstring)."""
    runs_functions = ("func", "list(func)")
    return frozenset(op.name for op in _op_defs()
                     if (op.is_stateful or any(arg.is_ref for arg in op.input_arg))
                     and not any(attr.type in runs_functions for attr in op.attr))


def public_functions() -> dict[str, Callable[..., Any]]:
    """`random.uniform`, `compat.v1.random_uniform`... -> the function (classes and `raw_ops` left out)."""
    import tensorflow as tf

    found: dict[str, Callable[..., Any]] = {}
    seen: set[int] = set()

    def walk(module: types.ModuleType, prefix: str) -> None:
        seen.add(id(module))
        for name in sorted(dir(module)):
            try:
                value = getattr(module, name)
            except Exception:  # noqa: BLE001 - lazily loaded namespaces (Keras 3) refuse some attributes
                continue
            if name.startswith("_"):
                continue
            if isinstance(value, types.ModuleType):
                module_name = vars(value).get("__name__", "")
                if module_name.startswith("tensorflow._api.") and name not in _SKIPPED_NAMESPACES \
                        and id(value) not in seen:
                    walk(value, f"{prefix}{name}.")
            elif callable(value) and not isinstance(value, type):
                found[prefix + name] = value

    walk(tf, "")
    walk(tf.compat.v1, "compat.v1.")
    return found


def _target(value: object) -> object:
    """The function behind TensorFlow's decorators (dispatch, deprecation) and bound methods."""
    from tensorflow.python.util import tf_decorator

    try:
        value = tf_decorator.unwrap(value)[1]
        value = inspect.unwrap(value) if callable(value) else value  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 - objects with odd __wrapped__ chains: keep what we have
        pass
    return value.__func__ if isinstance(value, types.MethodType) else value


def _owner(function: types.FunctionType) -> type | None:
    """The class a method is defined in (to follow `self.method`), if it is reachable by name."""
    parts = function.__qualname__.split(".")
    if len(parts) < 2 or "<locals>" in parts:
        return None
    owner: object = function.__globals__.get(parts[0])
    for part in parts[1:-1]:
        owner = getattr(owner, part, None)
    return owner if isinstance(owner, type) else None


def _resolve(node: ast.expr, names: dict[str, Any], owner: type | None, first_arg: str | None) -> object:
    """The object a name or dotted attribute in a function's source refers to, or None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    if owner is not None and parts and node.id == first_arg:
        value: object = owner
    elif node.id in names:
        value = names[node.id]
    else:
        return None
    for part in reversed(parts):
        try:
            value = inspect.getattr_static(value, part) if isinstance(value, type) else getattr(value, part)
        except Exception:  # noqa: BLE001 - attributes computed at run time
            return None
        value = value.__func__ if isinstance(value, staticmethod | classmethod) else value
        value = value.fget if isinstance(value, property) else value
    return value


class CallGraph:
    """TensorFlow functions and classes, what each names, and the op types each creates directly."""

    def __init__(self) -> None:
        self.edges: dict[object, set[object]] = {}
        self.direct: dict[object, frozenset[str]] = {}
        self.unreadable: set[object] = set()

    @staticmethod
    def node(value: object) -> object | None:
        value = _target(value)
        module = getattr(value, "__module__", None) or ""
        if isinstance(value, type | types.FunctionType) and module.startswith("tensorflow."):
            return value
        return None

    def build(self, roots: Iterable[object]) -> None:
        todo = [n for n in map(self.node, roots) if n is not None]
        while todo:
            current = todo.pop()
            if current in self.edges:
                continue
            self.edges[current], self.direct[current] = self._scan(current)
            todo.extend(c for c in self.edges[current] if c not in self.edges)

    def _scan(self, value: object) -> tuple[set[object], frozenset[str]]:
        if isinstance(value, type):
            members = [vars(value).get(m) for m in ("__init__", "__new__", "__call__")]
            return {n for n in map(self.node, filter(None, members)) if n is not None}, frozenset()
        assert isinstance(value, types.FunctionType)
        try:
            source = textwrap.dedent(inspect.getsource(value))
            tree = ast.parse(source)
        except (OSError, TypeError, SyntaxError):
            self.unreadable.add(value)
            return set(), frozenset()
        if value.__module__.rsplit(".", 1)[-1].startswith("gen_"):
            return set(), frozenset(_GEN_OP.findall(source))
        names = dict(value.__globals__)
        for var, cell in zip(value.__code__.co_freevars, value.__closure__ or (), strict=True):
            try:
                names[var] = cell.cell_contents
            except ValueError:  # an empty cell
                pass
        owner, args = _owner(value), value.__code__.co_varnames[:1]
        callees: set[object] = set()
        for sub in ast.walk(tree):
            if isinstance(sub, ast.Name | ast.Attribute) and isinstance(sub.ctx, ast.Load):
                found = self.node(_resolve(sub, names, owner, args[0] if args else None))
                if found is not None and found is not value:
                    callees.add(found)
        return callees, frozenset()

    def reachable(self, interesting: frozenset[str]) -> dict[object, frozenset[str]]:
        """Node -> the `interesting` op types it may create, through any chain of names (a fixpoint)."""
        reach = {n: set(ops & interesting) for n, ops in self.direct.items()}
        changed = True
        while changed:
            changed = False
            for current, callees in self.edges.items():
                mine, before = reach[current], len(reach[current])
                for callee in callees:
                    mine |= reach[callee]
                changed = changed or len(mine) != before
        return {n: frozenset(ops) for n, ops in reach.items()}


def _traced(function: Callable[..., Any], stateful: frozenset[str]) -> frozenset[str]:
    """Stateful op types `function` creates in a v1 graph, called as f(x), f(shape), f(name, shape), f(x, x)."""
    import tensorflow as tf

    found: set[str] = set()
    for pattern in range(4):
        graph = tf.Graph()
        with graph.as_default(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            x = tf.compat.v1.placeholder(tf.float32, [2, 3])
            args = ((x,), ([2, 3],), ("gradcompat_probe", [2, 3]), (x, x))[pattern]
            try:
                function(*args)
            except Exception:  # noqa: BLE001 - most functions refuse these arguments; nothing to learn then
                pass
            found |= {op.type for op in graph.get_operations()} & stateful
    return frozenset(found)


def api_statefulness() -> dict[str, frozenset[str]]:
    """Public function -> the stateful op types it may create (empty: stateless). Functions without Python
    source are left out: the rewriter treats what the data does not list as possibly stateful."""
    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")
    stateful = stateful_op_types()
    functions = public_functions()
    graph = CallGraph()
    graph.build(functions.values())
    reach = graph.reachable(stateful)
    result: dict[str, frozenset[str]] = {}
    for path, function in sorted(functions.items()):
        node = graph.node(function)
        if node is None or node in graph.unreadable:
            continue
        ops = reach[node]
        if not ops and (getattr(node, "__module__", "") or "").startswith(_TRACED_MODULES):
            ops = _traced(function, stateful)
        result[path] = ops
    return result
