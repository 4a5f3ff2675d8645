"""The concrete TF2 rewrite each finding suggests: `tf.custom_gradient` shapes and replacement APIs."""

from __future__ import annotations

import re

from compat.audit.data import TFData

_TAPE_NOTE = (
    "Check with `compat-check`: under a tf.GradientTape (eager or in tf.function) a gradient_override_map "
    "override may be silently ignored, because tapes look gradients up by the real op type."
)
_DEFUN_NOTE = (
    "Check with `compat-check` whether your code relies on Defun behaviour: there unused outputs get zeros, "
    "not None, and IndexedSlices upstreams arrive densified."
)

# Replacement advice for the most common TF1-only names; others get the generic advice.
_TF1_REPLACEMENTS: dict[str, str] = {
    "get_default_graph": "drop graph handles: write the computation as a `tf.function` (TF2 has no default "
    "graph outside one); for gradient overrides use `@tf.custom_gradient`",
    "Session": "call the function eagerly, or wrap it in `tf.function`; no session is needed in TF2",
    "InteractiveSession": "run eagerly; no session is needed in TF2",
    "placeholder": "pass tensors as function arguments (`tf.function(input_signature=[tf.TensorSpec(...)])`)",
    "py_func": "use `tf.py_function` (gradients flow through it; the numpy function gets eager tensors)",
    "Print": "use `tf.print`",
    "global_variables_initializer": "variables initialise on creation in TF2; drop the initializer",
    "variable_scope": "use `tf.Module`/Keras layers to own variables",
    "get_variable": "create `tf.Variable`s owned by a `tf.Module`",
}


def snake(name: str) -> str:
    """`MySignGrad` -> `my_sign_grad`, for naming the suggested function."""
    out = re.sub(r"(?<=[a-z0-9])([A-Z])|(?<=[A-Z])([A-Z][a-z])", r"_\1\2", name).lower()
    out = re.sub(r"\W+", "_", out).strip("_")
    return out or "f"


def forward_call(op_type: str | None, data: TFData) -> str:
    """`tf.sign(x)` for "Sign"; a placeholder when the op type is unknown."""
    if not op_type:
        return "<the forward computation>(x)"
    wrapper = data.op_types.get(op_type)
    if wrapper:
        return f"tf.{wrapper}(x)"
    if op_type in data.op_types:
        return f"tf.raw_ops.{op_type}(...)"
    return f"<the op your code creates as {op_type!r}>(x)"


def custom_gradient_shape(name: str, forward: str, grad_expr: str) -> str:
    return (
        f"@tf.custom_gradient\n"
        f"def {name}(x):\n"
        f"    y = {forward}\n"
        f"    def grad(dy):\n"
        f"        return {grad_expr}\n"
        f"    return y, grad"
    )


def for_registered_gradient(
    grad_name: str | None, fn_name: str | None, op_type: str | None, data: TFData
) -> str:
    """GC003/GC004: a registered `fn(op, grad)` overriding `op_type` becomes a custom_gradient."""
    body = (
        f"<body of {fn_name}(op, grad) with op.inputs[0] -> x, op.outputs[0] -> y, grad -> dy>"
        if fn_name
        else f"<your gradient{f' registered as {grad_name!r}' if grad_name else ''}>(dy)"
    )
    base = snake(op_type or grad_name or "f") + "_with_custom_grad"
    return custom_gradient_shape(base, forward_call(op_type, data), body) + "\n" + _TAPE_NOTE


def for_defun(fn_name: str | None, grad_fn: str, python_grad: bool) -> str:
    """GC001/GC002: a Defun with a gradient becomes a custom_gradient around the same forward body."""
    grad_expr = (
        f"<body of {grad_fn}(op, dy) with op.inputs[0] -> x, op.outputs[0] -> y>"
        if python_grad
        else f"{grad_fn}(x, dy)  # grad_func takes (inputs..., output gradients...)"
    )
    return custom_gradient_shape(fn_name or "f", f"<body of {fn_name or 'the Defun'}>(x)", grad_expr) + (
        "\n" + _DEFUN_NOTE
    )


# What is wrong with a TF1 API in TF2 code, beyond its spelling; others get the generic reason.
_GRAPH_ONLY = "a graph-only API: under eager execution or in tf.function "
_TF1_PROBLEMS: dict[str, str] = {
    "get_default_graph": _GRAPH_ONLY + "it is not the graph a tf.GradientTape records (eagerly, a global graph "
    "no op enters; in tf.function, the function's graph), so gradient overrides set on it are not what the tape "
    "uses",
    "Session": _GRAPH_ONLY + "there is no graph for it to run: it only runs graphs built with eager execution "
    "disabled, and what it computes is never seen by a tf.GradientTape",
    "InteractiveSession": _GRAPH_ONLY + "there is no graph for it to run",
    "placeholder": _GRAPH_ONLY + "it raises eagerly, and a tf.function takes tensors as arguments instead",
}
_TF1_GENERIC = ("a TF1 graph-and-session API: it works with eager execution disabled, and may fail or act on "
                "another graph than the one a tf.GradientTape records under eager execution or in tf.function")


def tf1_api_problem(name: str, via_compat_v1: bool) -> str:
    """GC005's message: what is really wrong (starts with the name as written, `tf.X` or `tf.compat.v1.X`)."""
    problem = _TF1_PROBLEMS.get(name) or _TF1_PROBLEMS.get(name.rsplit(".", 1)[-1]) or _TF1_GENERIC
    if via_compat_v1:
        return f"tf.compat.v1.{name} is {problem}"
    return f"tf.{name} does not exist in TF2 (AttributeError), only as tf.compat.v1.{name}, which is {problem}"


def for_tf1_api(name: str, via_compat_v1: bool) -> str:
    leaf = name.rsplit(".", 1)[-1]
    advice = _TF1_REPLACEMENTS.get(name) or _TF1_REPLACEMENTS.get(leaf)
    if advice is None:
        advice = f"use the TF2 replacement of `tf.{name}`"
    keep = "" if via_compat_v1 else f"; or keep it explicitly as `tf.compat.v1.{name}` while migrating"
    return advice + keep + "."


def for_numpy_call(grad_fn: str) -> str:
    return (
        f"In {grad_fn}, compute with TensorFlow ops on the symbolic tensor (e.g. `tf.where`, `tf.sign`), or "
        f"wrap the NumPy part: `tf.py_function(lambda t: np_fn(t.numpy()), [t], Tout=t.dtype)`."
    )
