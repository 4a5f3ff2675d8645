"""`compat-check --loss`: a user's downstream as a scenario, from an expression or a `file.py:NAME` callable."""

from __future__ import annotations

import ast
import builtins
import importlib.util
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

LOSS_SCENARIO = "custom"

_FILE_REFERENCE = re.compile(r"^(?P<path>.+\.py):(?P<name>[A-Za-z_]\w*)$")
_NAMES = ("y", "outputs", "tf", "np")
_BUILTINS = {name: getattr(builtins, name) for name in
             ("abs", "min", "max", "sum", "len", "range", "float", "int", "tuple", "list", "enumerate", "zip")}


class LossError(ValueError):
    """`--loss` names no usable loss; the message quotes it and says what is accepted."""


def parse_loss(text: str) -> Callable[..., Any]:
    """`loss(*outputs)` from `--loss`: `path/to/file.py:NAME` (a callable, or a compat.Downstream), else a
    Python expression in `y` (the first output) and `outputs` (all of them) with `tf` and `np` in scope.

    The expression is Python code and runs as such (it is not sandboxed): pass only expressions you would run.
    """
    match = _FILE_REFERENCE.match(text.strip())
    if match:
        return _from_file(text, Path(match["path"]), match["name"])
    return _from_expression(text)


def _from_expression(text: str) -> Callable[..., Any]:
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise LossError(f"--loss {text!r}: not a Python expression ({exc.msg}); write one in y and outputs, e.g. "
                        "--loss='tf.reduce_sum(y * 3.0)', or name a callable as path/to/file.py:NAME") from None
    bound = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}
    bound |= {arg.arg for node in ast.walk(tree) if isinstance(node, ast.Lambda) for arg in node.args.args}
    unknown = sorted({node.id for node in ast.walk(tree) if isinstance(node, ast.Name)
                      and node.id not in (*_NAMES, *_BUILTINS, *bound)})
    if unknown:
        raise LossError(f"--loss {text!r}: unknown name(s) {', '.join(unknown)}; the expression can use y (the first "
                        f"output), outputs (all of them), tf and np")
    code = compile(tree, "--loss", "eval")

    def loss(*outputs: Any) -> Any:
        import numpy as np
        import tensorflow as tf

        scope = {"__builtins__": _BUILTINS, "tf": tf, "np": np, "y": outputs[0], "outputs": outputs}
        return eval(code, scope)  # noqa: S307 - the user's own expression, documented as code that runs

    loss.__name__ = LOSS_SCENARIO
    return loss


def _from_file(text: str, path: Path, name: str) -> Callable[..., Any]:
    if not path.is_file():
        raise LossError(f"--loss {text!r}: no file {str(path)!r}")
    module_spec = importlib.util.spec_from_file_location(f"_compat_loss_{path.stem}", path)
    if module_spec is None or module_spec.loader is None:
        raise LossError(f"--loss {text!r}: cannot import {str(path)!r}")
    module = importlib.util.module_from_spec(module_spec)
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:  # the user's file: whatever it raises is reported, named
        raise LossError(f"--loss {text!r}: importing {str(path)!r} failed: {type(exc).__name__}: {exc}") from None
    value = getattr(module, name, None)
    if value is None:
        raise LossError(f"--loss {text!r}: {str(path)!r} defines no {name!r}")
    if not callable(value) and not _is_downstream(value):
        raise LossError(f"--loss {text!r}: {name} is a {type(value).__name__}, not a callable loss(*outputs)")
    return value  # type: ignore[no-any-return]


def _is_downstream(value: Any) -> bool:
    from compat.downstream import Downstream

    return isinstance(value, Downstream)


def try_loss(text: str, loss: Any, specs: Any) -> None:
    """Build the loss once on each spec's outputs (placeholders in a scratch graph) so that a loss that cannot
    work fails now, as a usage error naming it, not as error cells."""
    import tensorflow as tf

    from compat.downstream import as_downstream
    from compat.signature import output_signature

    downstream = as_downstream(loss)
    for spec in specs:
        try:
            signature = output_signature(spec)
        except Exception:  # noqa: BLE001 - a broken spec is reported, named, by the check itself
            continue
        if None in signature.shapes:
            continue
        with tf.Graph().as_default():
            outputs = [tf.compat.v1.placeholder(dtype, shape) for dtype, shape in
                       zip(signature.dtypes, signature.shapes, strict=True)]
            try:
                downstream.loss(*outputs)
            except Exception as exc:  # the user's expression or callable
                raise LossError(f"--loss {text!r} fails on the outputs of spec `{spec.name}`: "
                                f"{type(exc).__name__}: {exc}") from None
