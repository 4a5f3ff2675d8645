"""`gradient_override_map`: TF1's override map as a context manager that TF2 honours while a graph is built.

`with tf.get_default_graph().gradient_override_map({"Relu": "GuidedReLU"}):` still sets each op's gradient in a
graph (a `tf.function` being traced, a `tf.compat.v1` graph), but a `tf.GradientTape` looks gradients up by op
type and ignores it (inside that `tf.function`, `model.fit`'s train step included), and eagerly no graph is built
at all. This context manager enters the map where ops are built, and records each overridden op again on the
tapes with the overridden gradient, so graph gradients and tapes agree; eagerly it raises, never computing plain
gradients silently. For code you can call yourself, `compat.override_gradients(fn, ...)` also works eagerly.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from compat.gradient_override import GradientFunction, GradientOverrideError, check_nested, checked_map


@contextlib.contextmanager
def gradient_override_map(gradients: Mapping[str, str | GradientFunction], *,
                          require_match: bool = True) -> Iterator[dict[str, str]]:
    """The TF2 drop-in for `with tf.get_default_graph().gradient_override_map(gradients):`.

        @contextlib.contextmanager
        def guided_relu():  # tensorpack's, migrated
            with compat.gradient_override_map({"Relu": "GuidedReLU"}):
                yield

    Args:
      gradients: op type -> a gradient name registered with `tf.RegisterGradient`, or the legacy gradient
        function `(op, *grads)` itself. It runs in graph mode and may read `op.inputs`, `op.outputs`, `op.get_attr`.
      require_match: raise if the block builds no op of an overridden type (nothing would be overridden).

    Yields:
      The map entered: op type -> registered gradient name.

    Raises:
      ValueError: as `compat.override_gradients` (unknown op type, unregistered gradient name, empty map).
      GradientOverrideError: entered eagerly (no graph is built, so no op can carry the override: build the code
        in a `tf.function`, or use `compat.override_gradients`); an op of an overridden type was built in a graph
        of its own (a `tf.cond`/`tf.while_loop` branch, a nested `tf.function`) where the map does not reach; or,
        with `require_match`, none was built.
    """
    import tensorflow as tf

    gradient_map = checked_map(gradients, "gradient_override_map")
    shown = f"gradient_override_map({gradient_map!r})"
    if tf.executing_eagerly():
        raise GradientOverrideError(
            f"{shown}: entered eagerly, where ops run at once, no graph carries the map, and a tape computes the ops' "
            "own gradients: enter it while a tf.function is traced (or in a tf.compat.v1 graph), or wrap the code "
            "that builds the ops with compat.override_gradients(fn, ...), which also works eagerly")
    graph = tf.compat.v1.get_default_graph()
    before = len(graph.get_operations())
    functions = _function_names(graph)
    with graph.gradient_override_map(gradient_map):
        yield gradient_map
    built = graph.get_operations()[before:]
    check_nested(graph, gradient_map, shown, skip=functions)
    overridden = [op for op in built if op.type in gradient_map]
    if require_match and not overridden:
        raise GradientOverrideError(
            f"{shown}: the block built no op of type {', '.join(sorted(gradient_map))}, so nothing is overridden "
            "(a Keras model builds its ops when called, not when created): enter the map around the call, or pass "
            "require_match=False")
    _record_on_tapes(overridden, gradient_map)


def _function_names(graph: Any) -> frozenset[str]:
    return frozenset(f.signature.name for f in graph.as_graph_def().library.function)


def _record_on_tapes(operations: Sequence[Any], gradient_map: Mapping[str, str]) -> None:
    """Record each op again on the active tapes, with its overridden gradient: a tape keeps the last record of a
    tensor, and looks the gradient up by op type otherwise (ignoring the map)."""
    from tensorflow.python.framework import ops

    record = _record_module()
    if not record.could_possibly_record():
        return
    for op in operations:
        gradient = ops._gradient_registry.lookup(gradient_map[op.type])
        record.record_operation(op.type, list(op.outputs), list(op.inputs), _backward(op, gradient))


def _backward(op: Any, gradient: GradientFunction) -> Any:
    def backward(*grads: Any) -> list[Any]:
        import tensorflow as tf

        # TF1's graph gradients hand zeros, not None, for outputs that get no gradient.
        upstream = [tf.zeros_like(out) if g is None else g for g, out in zip(grads, op.outputs, strict=True)]
        result = gradient(op, *upstream)
        return list(result) if isinstance(result, list | tuple) else [result]
    return backward


def _record_module() -> Any:
    try:
        from tensorflow.python.eager import record  # TensorFlow 2.13+
    except ImportError:  # 2.12
        from tensorflow.python.eager import tape as record
    return record
