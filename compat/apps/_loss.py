"""`compat-check --loss`: a user's downstream as a scenario, from an expression or a `file.py:NAME` callable."""

from __future__ import annotations

import ast
import builtins
import importlib.util
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from compat.apps._output import _special_kind
from compat.errors import Error

LOSS_SCENARIO = "custom"

_FILE_REFERENCE = re.compile(r"^(?P<path>.+\.py):(?P<name>[A-Za-z_]\w*)$")
_NAMES = ("y", "outputs", "tf", "np")
_BUILTINS = {name: getattr(builtins, name) for name in
             ("abs", "min", "max", "sum", "len", "range", "float", "int", "tuple", "list", "enumerate", "zip")}


class LossError(Error, ValueError):
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
    from compat.exceptions import describe_exception
    from compat.probe import user_exception

    problem = _not_a_python_file(path)
    if problem:
        raise LossError(f"--loss {text!r}: {problem}")
    module_spec = importlib.util.spec_from_file_location(f"_compat_loss_{path.stem}", path)
    if module_spec is None or module_spec.loader is None:
        raise LossError(f"--loss {text!r}: cannot import {str(path)!r}")
    module = importlib.util.module_from_spec(module_spec)
    try:
        module_spec.loader.exec_module(module)
    except BaseException as exc:  # the user's file: whatever it raises (sys.exit too) is reported, named
        if not user_exception(exc):
            raise
        raise LossError(f"--loss {text!r}: importing {str(path)!r} failed: {describe_exception(exc)}") from None
    value = getattr(module, name, None)
    if value is None:
        raise LossError(f"--loss {text!r}: {str(path)!r} defines no {name!r}")
    if not callable(value) and not _is_downstream(value):
        raise LossError(f"--loss {text!r}: {name} is a {type(value).__name__}, not a callable loss(*outputs)")
    return value  # type: ignore[no-any-return]


def _not_a_python_file(path: Path) -> str | None:
    """Why `path` cannot be imported, found without opening it (a FIFO would block the open), or None."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return f"no file {str(path)!r}"
    except OSError as exc:
        return f"cannot use {str(path)!r} ({exc.strerror or exc})"
    if stat.S_ISDIR(mode):
        return f"{str(path)!r} is a directory; name a Python file, path/to/file.py:NAME"
    if not stat.S_ISREG(mode):
        kind = _special_kind(mode) or "socket or another special file"
        return (f"{str(path)!r} is a {kind}, not a regular file, so it was not opened; name a Python file, "
                "path/to/file.py:NAME")
    return None


def _is_downstream(value: Any) -> bool:
    from compat.downstream import Downstream

    return isinstance(value, Downstream)


def try_loss(text: str, loss: Any, specs: Any) -> None:
    """Build the loss once on each spec's outputs (placeholders in a scratch graph) so that a loss that cannot
    work fails now, as a usage error naming it, not as error cells: one that raises or exits, returns no float
    tensor, or does not depend on the outputs (it would check nothing)."""
    import tensorflow as tf

    from compat.downstream import as_downstream
    from compat.exceptions import describe_exception
    from compat.probe import user_exception
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
                target = downstream.loss(*outputs)
            except BaseException as exc:  # the user's expression or callable; sys.exit and os._exit too
                if not user_exception(exc):
                    raise
                raise LossError(f"--loss {text!r} fails on the outputs of spec `{spec.name}`: "
                                f"{describe_exception(exc)}") from None
            problem = _unusable(target, outputs)
        if problem:
            raise LossError(f"--loss {text!r} on the outputs of spec `{spec.name}` {problem}")


def _unusable(target: Any, outputs: list[Any]) -> str | None:
    """Why a loss's value cannot be checked (not float tensors, or none depends on the outputs), or None."""
    import tensorflow as tf

    example = "a loss is a float tensor computed from y or outputs, e.g. --loss='tf.reduce_sum(y * 3.0)'"
    parts = tf.nest.flatten(target)
    if not parts or not all(isinstance(part, (tf.Tensor, tf.Variable)) for part in parts):
        shown = repr(target) if len(repr(target)) <= 40 else repr(target)[:39] + "…"
        return f"returns {shown} ({type(target).__name__}), not a tensor; {example}"
    wrong = [part.dtype.name for part in parts if not part.dtype.is_floating]
    if wrong:
        return f"returns a tensor of dtype {wrong[0]}, not a float one; cast it, e.g. tf.cast(..., y.dtype)"
    floats = [output for output in outputs if output.dtype.is_floating]
    try:
        grads = tf.gradients(parts, floats) if floats else []
    except Exception:  # noqa: BLE001 - TensorFlow's own refusal is shown in the cells, as it would be in training
        return None
    if all(grad is None for grad in grads):
        return f"does not depend on them: no gradient reaches them, so no gradient function would run; {example}"
    return None
