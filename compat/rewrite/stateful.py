"""Whether calling a forward again gives the same value: its calls checked against TensorFlow's stateful ops.

The rewrite reads `op.outputs` by calling the forward again, which is the TF1 output only if the forward is
deterministic and has no effect. `compat/data/tf_stateful_apis.txt` (generated from TensorFlow's op registry by
tools/gen_audit_data.py) says which public TensorFlow functions may create stateful ops; a call it does not
list as stateless (a user function, a method, another library, an unlisted TensorFlow name) may be random too.
"""

from __future__ import annotations

import builtins
import functools
from importlib import resources

import libcst as cst
import libcst.metadata as meta

from compat.audit.imports import is_tf
from compat.rewrite import tf_ops
from compat.rewrite.context import ModuleContext

DATA_FILE = "tf_stateful_apis.txt"
# Builtins that compute a value from their arguments and nothing else.
_PURE_BUILTINS = frozenset({"abs", "all", "any", "bool", "dict", "divmod", "enumerate", "float", "int", "isinstance",
                            "len", "list", "max", "min", "pow", "range", "reversed", "round", "set", "sorted", "str",
                            "sum", "tuple", "zip"})
# Methods of tf.Tensor / tf.TensorShape that read static shape information and create no op.
_SHAPE_METHODS = frozenset({"get_shape", "as_list", "set_shape"})


@functools.cache
def stateful_apis() -> dict[str, tuple[str, ...]]:
    """Public function (`random.uniform`, `compat.v1.random_uniform`) -> stateful op types it may create."""
    text = resources.files("compat").joinpath("data", DATA_FILE).read_text(encoding="utf-8")
    found: dict[str, tuple[str, ...]] = {}
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            path, _, ops = line.partition("\t")
            found[path] = tuple(ops.split(",")) if ops else ()
    return found


def _api_key(qualname: str) -> str:
    """`tensorflow.random.uniform` -> `random.uniform`; compat.v2 is the TF2 namespace, compat.v1 keeps its prefix."""
    for prefix in ("tensorflow.compat.v2.", "tensorflow."):
        if qualname.startswith(prefix):
            return qualname[len(prefix):]
    return qualname


def _tf_call(ctx: ModuleContext, call: cst.Call, qualname: str) -> str | None:
    shown = ctx.code(call.func)
    path = ctx.public_path(call.func)
    if path is not None and path in tf_ops.WRAPPERS:
        return None  # checked against TensorFlow: creates only its (stateless) op types
    ops = stateful_apis().get(_api_key(qualname))
    if ops is None:
        return (f"`{shown}` is not a TensorFlow function gradcompat knows to be free of random or stateful ops "
                f"(compat/data/{DATA_FILE})")
    if ops:
        return f"`{shown}` may create {', '.join(ops[:3])}{'...' if len(ops) > 3 else ''} (stateful ops)"
    return None


def _is_builtin(ctx: ModuleContext, name: cst.Name) -> bool:
    scope = ctx.scopes.get(name)
    if scope is None or name.value not in vars(builtins):
        return False
    return all(isinstance(a, meta.BuiltinAssignment) for a in scope[name.value])


def _other_call(ctx: ModuleContext, call: cst.Call) -> str | None:
    func = call.func
    if isinstance(func, cst.Name) and func.value in _PURE_BUILTINS and _is_builtin(ctx, func):
        return None
    if isinstance(func, cst.Attribute) and func.attr.value in _SHAPE_METHODS:
        return None
    return f"`{ctx.code(func)}` is not TensorFlow, so gradcompat cannot tell whether it is random or stateful"


def _function_value(ctx: ModuleContext, name: cst.Name) -> str | None:
    """A function or class of this file passed on as a value (`tf.map_fn(noise, x)`): it may be random."""
    assignment = ctx.single_assignment(name)
    if assignment is not None and isinstance(assignment.node, cst.FunctionDef | cst.ClassDef | cst.Lambda):
        return f"`{name.value}` is a function of this file, so gradcompat cannot tell whether it is random or stateful"
    return None


def nondeterministic_call(ctx: ModuleContext, node: cst.CSTNode) -> str | None:
    """Why calling the code in `node` again may give another value or effect, for the first call that may; else None.

    TensorFlow functions are looked up in the generated data, Python operators create stateless ops, a few pure
    builtins and shape methods are allowed; anything else (user functions, methods, other libraries) may be
    random.
    """
    for sub in ctx.walk(node):
        if isinstance(sub, cst.Call):
            qualname = ctx.qualname(sub.func)
            why = _tf_call(ctx, sub, qualname) if qualname is not None and is_tf(qualname) else _other_call(ctx, sub)
        elif isinstance(sub, cst.Name) and not isinstance(ctx.parent(sub), cst.Call | cst.FunctionDef | cst.Param):
            why = _function_value(ctx, sub)
        else:
            continue
        if why is not None:
            return why
    return None
