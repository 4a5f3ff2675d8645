"""`override_gradients`: a TF1 `gradient_override_map` around code you cannot rewrite, honoured by TF2 tapes.

Guided backprop and saliency code overrides `Relu` for a whole model (`with g.gradient_override_map({"Relu":
"GuidedReLU"}): model = load_model(...)`). TF2 tapes look gradients up by op type and ignore such a map, but
a map entered inside a `tf.function` is honoured by whatever differentiates that function from outside (an eager
tape, a tape or `tf.gradients` in another `tf.function`, `model.fit`, a v1 Session): its gradient is built from
its graph, where every overridden op carries the override. `override_gradients` runs your function that way and
checks each trace, raising where the map cannot reach an op (a `tf.cond`/`tf.while_loop` branch, a nested
`tf.function`) or a tape inside the function would ignore it, so it never silently gives plain gradients.
"""

from __future__ import annotations

import difflib
import functools
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from compat.errors import Error

GradientFunction = Callable[..., Any]
"""A legacy gradient function `(op, *grads) -> gradient(s) of op's inputs`, as `tf.RegisterGradient` takes."""

_NAME_PREFIX = "gradcompat_override"
_TAPE_SCOPE = "gradient_tape"  # the name scope GradientTape.gradient builds its ops in
_registered: dict[GradientFunction, str] = {}
_lock = threading.Lock()


class GradientOverrideError(Error, RuntimeError):
    """The override cannot be honoured as asked: raised at the call that traces the function, saying why."""


class GradientOverride:
    """A function whose calls build their ops under a gradient override map, inside a `tf.function`.

    Calls go to `tf.function(fn)`: the map is entered in its graph, and each new trace is checked (see
    `override_gradients`). Attributes: `fn` (the wrapped function or model), `gradient_map` (op type -> the
    registered gradient name used), `function` (the `tf.function`).
    """

    def __init__(self, fn: Callable[..., Any], gradient_map: Mapping[str, str], *, require_match: bool,
                 jit_compile: bool | None, reduce_retracing: bool) -> None:
        import tensorflow as tf

        self.fn = fn
        self.gradient_map = dict(gradient_map)
        self.require_match = require_match
        self.function = tf.function(self._traced, autograph=False, jit_compile=jit_compile,
                                    reduce_retracing=reduce_retracing)
        functools.update_wrapper(self, fn, updated=())  # type: ignore[arg-type]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)

    def __repr__(self) -> str:
        return f"override_gradients({_name(self.fn)}, {self.gradient_map!r})"

    def _traced(self, *args: Any, **kwargs: Any) -> Any:
        import tensorflow as tf

        if tf.executing_eagerly():
            raise GradientOverrideError(
                f"override_gradients({_name(self.fn)}): the function runs eagerly (tf.config.run_functions_eagerly"
                "(True)), where a tape ignores the override map and would compute the ops' own gradients: call "
                "tf.config.run_functions_eagerly(False) before taking gradients")
        graph = tf.compat.v1.get_default_graph()
        with graph.gradient_override_map(self.gradient_map):
            result = self.fn(*args, **kwargs)
        check_graph(graph, self.gradient_map, _name(self.fn), self.require_match)
        return result


def override_gradients(fn: Callable[..., Any], gradients: Mapping[str, str | GradientFunction], *,
                       require_match: bool = True, jit_compile: bool | None = None,
                       reduce_retracing: bool = False) -> GradientOverride:
    """`fn` (a function, a Keras model) whose ops of the given types get the given gradients, under any tape.

    The TF2 form of `with tf.get_default_graph().gradient_override_map(gradients): y = fn(x)`:

        guided = compat.override_gradients(model, {"Relu": "GuidedReLU"})  # or {"Relu": guided_relu_grad}
        with tf.GradientTape() as tape:
            tape.watch(images)
            saliency = tape.gradient(tf.reduce_max(guided(images), axis=1), images)

    Args:
      fn: called as `fn(*args, **kwargs)` inside a `tf.function`, whose graph holds the map: Python side effects
        run once per trace, variables are created on the first trace only (build a Keras model first).
      gradients: op type (`"Relu"`) -> a gradient name registered with `tf.RegisterGradient`, or the legacy
        gradient function itself `(op, *grads)`, registered here under a fresh name. It runs in graph mode, so
        it may read `op.inputs`, `op.outputs` and `op.get_attr(...)` as in TF1.
      require_match: raise if a trace creates no op of an overridden type (nothing would be overridden).
      jit_compile, reduce_retracing: passed to `tf.function`.

    Returns:
      A callable `GradientOverride`. Differentiated from outside (an eager `tf.GradientTape`, a tape or
      `tf.gradients` in another `tf.function`, `model.fit` of a Keras model calling it, `tf.compat.v1.gradients`
      in a v1 graph), the overridden ops use the given gradients.

    Raises:
      ValueError: `gradients` is empty, names an op type TensorFlow does not know, or an unregistered gradient.
      GradientOverrideError: (when a call traces `fn`) functions run eagerly (`tf.config.run_functions_eagerly`,
        where tapes ignore the map); an op of an overridden type is built in a graph of its own
        (a `tf.cond` or `tf.while_loop` branch, a nested `tf.function`, a Keras RNN's loop), where the map does
        not reach; a `tf.GradientTape` inside `fn` takes gradients, which ignore the map; or, with
        `require_match`, no op of an overridden type was built.
    """
    if not callable(fn):
        raise TypeError(f"override_gradients: `fn` must be callable (a function or a Keras model), got "
                        f"{type(fn).__name__}")
    gradient_map = checked_map(gradients, "override_gradients")
    return GradientOverride(fn, gradient_map, require_match=require_match, jit_compile=jit_compile,
                            reduce_retracing=reduce_retracing)


def checked_map(gradients: object, who: str) -> dict[str, str]:
    """op type -> registered gradient name, from what the user passed to `who`; ValueError saying what is wrong."""
    if not isinstance(gradients, Mapping) or not gradients:
        raise ValueError(f"{who}: `gradients` must be a non-empty mapping of op type to gradient, e.g. "
                         "{'Relu': 'GuidedReLU'}")
    return {_checked_op_type(op_type, who): _registered_name(op_type, gradient, who)
            for op_type, gradient in gradients.items()}


def _checked_op_type(op_type: object, who: str) -> str:
    from tensorflow.python.framework import op_def_registry

    if not isinstance(op_type, str) or op_def_registry.get(op_type) is None:
        known = _known_op_types()
        close = difflib.get_close_matches(str(op_type), known, n=1) if isinstance(op_type, str) else []
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"{who}: {op_type!r} is not an op type TensorFlow knows{hint}: the keys are op "
                         "types as in `op.type` (`Relu`, `MatMul`); load a custom op's library first")
    return op_type


def _known_op_types() -> list[str]:
    from compat.audit import data

    return sorted(data.load().op_types)


def _registered_name(op_type: str, gradient: str | GradientFunction, who: str) -> str:
    from tensorflow.python.framework import ops

    if isinstance(gradient, str):
        try:
            ops._gradient_registry.lookup(gradient)
        except LookupError:
            raise ValueError(f"{who}: the gradient for {op_type!r}, {gradient!r}, is not registered: "
                             f"register it first (`@tf.RegisterGradient({gradient!r})`, by importing the module "
                             "that does) or pass the gradient function itself") from None
        return gradient
    if not callable(gradient):
        raise ValueError(f"{who}: the gradient for {op_type!r} must be a registered gradient name or "
                         f"a function (op, *grads), got {type(gradient).__name__}")
    return _register(gradient)


def _register(gradient: GradientFunction) -> str:
    """The name `gradient` is registered under: once per function, however many overrides use it."""
    import tensorflow as tf

    with _lock:
        if gradient not in _registered:
            name = f"{_NAME_PREFIX}_{len(_registered)}_{getattr(gradient, '__name__', 'gradient')}"
            tf.RegisterGradient(name)(gradient)
            _registered[gradient] = name
        return _registered[gradient]


def check_graph(graph: Any, gradient_map: Mapping[str, str], what: str, require_match: bool) -> None:
    """Raise GradientOverrideError if the map, entered in `graph` around `what`, is not honoured everywhere."""
    operations = graph.get_operations()
    functions = graph.as_graph_def().library.function
    overridden = [op for op in operations if op.type in gradient_map]
    check_nested(graph, gradient_map, f"override_gradients({what})")
    tapes = _tape_ops(operations, functions)
    if tapes and overridden:
        raise GradientOverrideError(
            f"override_gradients({what}): a tf.GradientTape inside the function takes gradients (`{tapes[0]}`), "
            "and a tape looks gradients up by op type, ignoring the override map: take the gradient outside the "
            "overridden function, with the tape around the call")
    if require_match and not overridden:
        raise GradientOverrideError(
            f"override_gradients({what}): no op of type {', '.join(sorted(gradient_map))} was built, so nothing "
            "is overridden: check the op types (print [op.type for op in tf.function(fn).get_concrete_function("
            "...).graph.get_operations()]), or pass require_match=False")


def check_nested(graph: Any, gradient_map: Mapping[str, str], what: str, skip: frozenset[str] = frozenset()) -> None:
    """Raise GradientOverrideError if a function of `graph` (not named in `skip`) builds an op of an overridden
    type without the override: a branch or a nested tf.function, where the map does not reach."""
    nested = sorted({f"{node.op} in `{function.signature.name}`"
                     for function in graph.as_graph_def().library.function if function.signature.name not in skip
                     for node in function.node_def
                     if node.op in gradient_map and "_gradient_op_type" not in node.attr})
    if nested:
        raise GradientOverrideError(
            f"{what}: {', '.join(nested[:5])}{' ...' if len(nested) > 5 else ''} is built in a graph of its own "
            "(a tf.cond or tf.while_loop branch, a Keras RNN's loop, or a nested tf.function), where the override "
            "map does not reach: its gradient would be the op's own. Wrap that op in a @tf.custom_gradient "
            "instead, or pass the plain Python function of a nested tf.function")


def _tape_ops(operations: Iterable[Any], functions: Iterable[Any]) -> list[str]:
    names = [op.name for op in operations] + [node.name for f in functions for node in f.node_def]
    return [name for name in names if _TAPE_SCOPE in name.split("/")[:-1]]


def _name(fn: Callable[..., Any]) -> str:
    return str(getattr(fn, "__qualname__", None) or getattr(fn, "name", None) or type(fn).__name__)
