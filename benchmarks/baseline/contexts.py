"""The baseline's execution contexts: v1 graphs, eager, tf.function (and XLA), wrapped ops, mixed precision."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from baseline.gradients import tape_fn
from baseline.mechanisms import Op
from compat.contexts.isolation import isolate
from compat.downstream import Downstream


@dataclasses.dataclass(frozen=True)
class BaselineCase:
    key: tuple[str, str, str, str]  # spec, scenario, dtype, variant: as the harness's cells
    op: Callable[[], Op]
    inputs: tuple[np.ndarray, ...]
    variables: tuple[np.ndarray, ...]
    downstream: Downstream


Grads = dict[tuple[str, str, str, str], list[np.ndarray | None]]


def signature_shape(value: np.ndarray, downstream: Downstream) -> list[int | None]:
    return [None, *value.shape[1:]] if downstream.dynamic_batch and value.ndim else list(value.shape)


def _unflatten(grads: Sequence[Any], values: Sequence[Any]) -> list[Any]:
    it = iter(values)
    return [None if g is None else next(it) for g in grads]


def run_graph(cases: Sequence[BaselineCase], compute: Callable[..., tuple[list, list]], out: Grads) -> None:
    """One tf.Graph holding every case, one Session.run fetching every gradient."""
    graph, built = tf.Graph(), {}
    with graph.as_default():
        for case in cases:
            try:
                placeholders = [tf.compat.v1.placeholder(v.dtype, signature_shape(v, case.downstream))
                                for v in case.inputs]
                variables = [tf.Variable(v) for v in case.variables]
                grads, anchors = compute(case.op(), [*placeholders, *variables], case.downstream)
            except Exception:  # noqa: BLE001 - TensorFlow refuses this combination: skip it, as the harness does.
                continue
            built[case.key] = (grads, [g for g in grads if g is not None], anchors,
                               dict(zip(placeholders, case.inputs, strict=True)))
        initialize = tf.compat.v1.global_variables_initializer()
    with tf.compat.v1.Session(graph=graph) as session:
        session.run(initialize)

        def attempt(keys: list[Any]) -> tuple[dict[Any, Any], list[Any]]:
            feed = {p: v for key in keys for p, v in built[key][3].items()}
            try:
                return session.run({key: built[key][1:3] for key in keys}, feed), []
            except Exception:  # noqa: BLE001 - as the harness: find the failing cases, keep the others.
                return {}, keys if len(keys) > 1 else []

        values = isolate(list(built), attempt, variant=lambda key: key[3])
    for key, value in values.items():
        out[key] = _unflatten(built[key][0], value[0])


def run_eager(cases: Sequence[BaselineCase], compute: Callable[..., tuple[list, list]], out: Grads) -> None:
    for case in cases:
        try:
            sources = [*(tf.constant(v) for v in case.inputs), *(tf.Variable(v) for v in case.variables)]
            grads, _ = compute(case.op(), sources, case.downstream)
        except Exception:  # noqa: BLE001 - e.g. Defun called eagerly.
            continue
        out[case.key] = [None if g is None else g.numpy() for g in grads]


def run_function(cases: Sequence[BaselineCase], compute: Callable[..., tuple[list, list]], out: Grads,
                 jit_compile: bool = False) -> None:
    """Every case traced into one tf.function (XLA-compiled with `jit_compile`), called once; when that run
    fails, the failing cases are found by the harness's own search (compat.contexts.isolation)."""

    def attempt(indices: list[int]) -> tuple[dict[int, None], list[int]]:
        failed = _run_traced([all_cases[index] for index in indices], compute, out, jit_compile)
        return {}, [indices[position] for position in failed]

    all_cases = list(cases)
    isolate(range(len(all_cases)), attempt, variant=lambda index: all_cases[index].key[3])


def _run_traced(cases: Sequence[BaselineCase], compute: Callable[..., tuple[list, list]], out: Grads,
                jit_compile: bool) -> list[int]:
    """Trace and run `cases` in one tf.function; the positions of those that traced, when several did and the run
    failed."""
    variables = [[tf.Variable(v) for v in case.variables] for case in cases]  # created once, outside
    traced: list[int] = []

    def body(*flat):
        results, position = {}, 0
        for index, case in enumerate(cases):
            inputs = list(flat[position: position + len(case.inputs)])
            position += len(case.inputs)
            with contextlib.suppress(Exception):  # TensorFlow refuses to trace this combination.
                results[str(index)] = compute(case.op(), [*inputs, *variables[index]], case.downstream)[0]
                traced.append(index)
        return results

    signature = [tf.TensorSpec(signature_shape(v, case.downstream), tf.as_dtype(v.dtype))
                 for case in cases for v in case.inputs]
    try:
        concrete = tf.function(body, input_signature=signature, autograph=False,
                               jit_compile=jit_compile).get_concrete_function()
    except Exception:  # noqa: BLE001 - nothing traced
        return []
    try:
        values = concrete(*[v for case in cases for v in case.inputs])
    except Exception:  # noqa: BLE001 - one of them fails at run time (or XLA refuses it)
        return traced if len(traced) > 1 else []
    for index, grads in values.items():
        out[cases[int(index)].key] = [None if g is None else g.numpy() for g in grads]
    return []


def wrapped_op(case: BaselineCase, wrap: Callable[[Callable[..., Any], list[tf.TensorSpec]], Any]) -> Callable[[], Op]:
    """The case's op traced inside `wrap(fn, signature)` (tf.function or wrap_function) at its first call;
    the variables are captured from outside, as a model's weights are."""
    def build() -> Op:
        op = case.op()

        def call(*sources):
            inputs, variables = sources[:len(case.inputs)], sources[len(case.inputs):]
            signature = [tf.TensorSpec(x.shape, x.dtype) for x in inputs]
            return tuple(wrap(lambda *xs: tuple(op(*xs, *variables)), signature)(*inputs))

        return call

    return build


def run_wrapped_eager(cases: Sequence[BaselineCase], wrap: Callable[..., Any], out: Grads) -> None:
    """An eager tape over each case's op wrapped by `wrap`."""
    run_eager([dataclasses.replace(case, op=wrapped_op(case, wrap)) for case in cases], tape_fn, out)


def run_mixed_precision(cases: Sequence[BaselineCase], out: Grads) -> None:
    """Each op in a Keras mixed_float16 layer, the loss scaled from 2**15 and halved while gradients overflow."""
    import keras  # noqa: PLC0415 - the harness's mixed_precision context needs it too

    class OpLayer(keras.layers.Layer):
        def __init__(self, op, **kwargs):
            super().__init__(**kwargs)
            self.op = op

        def call(self, *inputs):
            return tuple(self.op(*inputs))

    for case in cases:
        scale = 2.0**15
        while True:
            def op(*sources, case=case):
                built, n = case.op(), len(case.inputs)
                outputs = OpLayer(lambda *xs: built(*xs, *sources[n:]), dtype="mixed_float16")(*sources[:n])
                return tuple(tf.cast(o, tf.float32) if o.dtype == tf.float16 else o for o in outputs)

            scaled = dataclasses.replace(case.downstream, loss=lambda *o, d=case.downstream, s=scale: d.loss(*o) * s)
            try:
                sources = [*(tf.constant(v) for v in case.inputs), *(tf.Variable(v) for v in case.variables)]
                grads, _ = tape_fn(op, sources, scaled)
            except Exception:  # noqa: BLE001 - e.g. Defun called eagerly.
                break
            values = [None if g is None else g.numpy() / scale for g in grads]
            if scale <= 1.0 or all(v is None or np.all(np.isfinite(v)) for v in values):
                out[case.key] = values
                break
            scale /= 2.0
