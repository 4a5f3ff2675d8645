"""Entry points inferred from the original's source, read statically: Defuns and functions holding legacy sites.

Used when a module declares no `GRADCOMPAT_ENTRIES` and none are given: a `Defun(..., grad_func=...)` gives its
input dtypes (decorating a function, or applied to one: `f = Defun(tf.float32, grad_func=g)(fn)`); a
module-level function holding a `gradient_override_map` block or a Defun gives its required
parameters (float32 each). Shapes are left to the original side, which tries a small shape of each rank.
"""

from __future__ import annotations

import ast
import dataclasses

_LEGACY_RULES = frozenset({"GC001", "GC002", "GC004"})
"""Audit rules whose site makes its enclosing function an entry (GC003, RegisterGradient, marks a gradient
function, which is not called directly: the functions whose override maps use it are)."""
_DTYPE_NAMES = frozenset({"float16", "float32", "float64", "bfloat16", "int32", "int64", "bool", "half",
                          "double", "float"})
_ALIASES = {"half": "float16", "double": "float64", "float": "float32"}


@dataclasses.dataclass
class Inferred:
    """Entries with their dtypes (shapes unknown), where each came from, and what could not be an entry."""

    entries: dict[str, list[tuple[str, None]]] = dataclasses.field(default_factory=dict)
    origins: dict[str, str] = dataclasses.field(default_factory=dict)
    not_inferred: dict[str, str] = dataclasses.field(default_factory=dict)
    """Place (a function name or `line N`) -> why it gives no entry and what to declare instead."""
    parameters: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    """Entry -> the names of the parameters its inputs are for (to say what to declare when inference fails)."""


def infer_entries(source: str, path: str) -> Inferred:
    """The entries verify can call in `source` without being told (never runs the code)."""
    from compat.audit import data as tf_data
    from compat.audit.visitor import audit_tree

    tree = ast.parse(source, filename=path)
    inferred = Inferred()
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    for node in functions.values():
        dtypes = _defun_dtypes(node)
        if dtypes is not None:
            _add(inferred, node, dtypes, f"the dtypes of its @Defun({', '.join(dtypes)})")
    applied = _applied_defuns(tree, functions)
    for name, (node, dtypes, line) in applied.items():
        _add(inferred, node, dtypes, f"the dtypes of `{name} = Defun({', '.join(dtypes)}, ...)({node.name})` at "
                                     f"line {line}", name=name)
    lines = sorted({f.line for f in audit_tree(path, tree, source, tf_data.load()).findings
                    if f.rule in _LEGACY_RULES})
    for line in lines:
        owner = _owner(tree, line)
        if isinstance(owner, ast.FunctionDef) and owner.name not in inferred.entries:
            _add(inferred, owner, None, f"its parameters (it holds the legacy site at line {line})")
        elif isinstance(owner, ast.ClassDef) and _instance_call(tree, owner, line) is not None:
            name, method = _instance_call(tree, owner, line)  # type: ignore[misc]
            if name not in inferred.entries:
                _add(inferred, method, None, f"the parameters of {owner.name}.__call__ (`{name} = {owner.name}()` "
                                             f"holds the legacy site at line {line})", name=name, bound=True)
        elif isinstance(owner, ast.ClassDef):
            inferred.not_inferred.setdefault(
                f"class {owner.name}", f"line {line} is in a method: verify calls module-level functions; declare "
                f"a module-level function that builds the object and calls the method, and name it in "
                f"GRADCOMPAT_ENTRIES")
        elif owner is None and not any(line == at for _, _, at in applied.values()):
            inferred.not_inferred.setdefault(
                f"line {line}", "module-level code, not a function verify can call: move it into a function and "
                "name that function in GRADCOMPAT_ENTRIES")
    return inferred


def _add(inferred: Inferred, node: ast.FunctionDef, dtypes: list[str] | None, origin: str, name: str = "",
         bound: bool = False) -> None:
    """An entry `name` (default: the function's) from `node`'s required positional parameters (minus `self` when
    `bound`), or why not."""
    name = name or node.name
    args = node.args
    required = len(args.posonlyargs) + len(args.args) - len(args.defaults) - bound
    if dtypes is None and required == 0:
        inferred.not_inferred[name] = (
            "takes no required positional parameters" + (" (only *args)" if args.vararg else "") +
            f": declare its inputs, e.g. GRADCOMPAT_ENTRIES = {{\"{name}\": [(\"float32\", [3])]}}")
        return
    if dtypes is not None and len(dtypes) != required and args.vararg is None:
        inferred.not_inferred[name] = (
            f"its Defun declares {len(dtypes)} input dtype(s) for {required} parameter(s): declare its inputs")
        return
    inferred.entries[name] = [(dtype, None) for dtype in (dtypes or ["float32"] * required)]
    inferred.origins[name] = f"inferred from {origin}"
    inferred.parameters[name] = [arg.arg for arg in [*args.posonlyargs, *args.args][bound:bound + required]]


def _instance_call(tree: ast.Module, cls: ast.ClassDef, line: int) -> tuple[str, ast.FunctionDef] | None:
    """(`name`, `__call__`) when `line` is in `cls.__call__` and the module binds `name = cls()`: the module-level
    callable real code calls (`flip_gradient = FlipGradientBuilder()`)."""
    method = next((node for node in cls.body if isinstance(node, ast.FunctionDef) and node.name == "__call__"
                   and node.lineno <= line <= (node.end_lineno or node.lineno)), None)
    if method is None:
        return None
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)
                and node.value.func.id == cls.name and not node.value.args and not node.value.keywords):
            return node.targets[0].id, method
    return None


def _defun_dtypes(node: ast.FunctionDef) -> list[str] | None:
    """The dtype names of a `@Defun(tf.float32, ..., grad_func=/python_grad_func=...)` decorator, else None."""
    return next((dtypes for dtypes in map(_gradient_defun_dtypes, node.decorator_list) if dtypes is not None), None)


def _gradient_defun_dtypes(call: ast.expr) -> list[str] | None:
    """The dtype names of `Defun(tf.float32, ..., grad_func=/python_grad_func=...)`, else None."""
    if not (isinstance(call, ast.Call) and _last_name(call.func) == "Defun"):
        return None
    if not any(k.arg in ("grad_func", "python_grad_func") for k in call.keywords):
        return None
    names = [_last_name(arg) for arg in call.args]
    if all(name in _DTYPE_NAMES for name in names) and names:
        return [_ALIASES.get(name, name) for name in names if name is not None]
    return None


def _applied_defuns(tree: ast.Module, functions: dict[str, ast.FunctionDef]
                    ) -> dict[str, tuple[ast.FunctionDef, list[str], int]]:
    """`name = Defun(dtypes..., grad_func=g)(fn)` at module level, fn a module-level function: name -> (fn,
    dtypes, line)."""
    found = {}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Call) and len(node.value.args) == 1 and not node.value.keywords
                and isinstance(node.value.args[0], ast.Name) and node.value.args[0].id in functions):
            continue
        dtypes = _gradient_defun_dtypes(node.value.func)
        if dtypes is not None:
            found[node.targets[0].id] = (functions[node.value.args[0].id], dtypes, node.lineno)
    return found


def _last_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _owner(tree: ast.Module, line: int) -> ast.FunctionDef | ast.ClassDef | None:
    """The module-level function or class whose lines (decorators included) hold `line`."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            if first <= line <= (node.end_lineno or node.lineno):
                return node
    return None
