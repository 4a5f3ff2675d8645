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
        feed = {p: v for _, _, _, case_feed in built.values() for p, v in case_feed.items()}
        try:
            values = session.run({key: (fetch, anchors) for key, (_, fetch, anchors, _) in built.items()}, feed)
        except Exception:  # noqa: BLE001 - as the harness: run each alone to keep the others.
            values = {}
            for key, (_, fetch, anchors, case_feed) in built.items():
                with contextlib.suppress(Exception):
                    values[key] = session.run((fetch, anchors), case_feed)
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
    fails, the failing cases are found as the harness finds them (compat/contexts/function.py)."""
    failed = _run_traced(cases, compute, out, jit_compile)
    if failed:
        _settle(failed, lambda batch: _run_traced(batch, compute, out, jit_compile))


def _run_traced(cases: Sequence[BaselineCase], compute: Callable[..., tuple[list, list]], out: Grads,
                jit_compile: bool) -> list[BaselineCase]:
    """Trace and run `cases` in one tf.function; the cases that traced, when several did and the run failed."""
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
        return [cases[index] for index in traced] if len(traced) > 1 else []
    for index, grads in values.items():
        out[cases[int(index)].key] = [None if g is None else g.numpy() for g in grads]
    return []


def _settle(failed: list[BaselineCase], run: Callable[[list[BaselineCase]], list[BaselineCase]]) -> None:
    """The harness's search for the failing cases of a failed batch: split by variant; halve one variant;
    when both halves fail, run each case alone."""
    groups: dict[str, list[BaselineCase]] = {}
    for case in failed:
        groups.setdefault(case.key[3], []).append(case)
    middle = len(failed) // 2
    parts = list(groups.values()) if len(groups) > 1 else [failed[:middle], failed[middle:]]
    still_failing = [part_failed for part_failed in (run(part) for part in parts) if part_failed]
    if len(groups) == 1 and len(still_failing) == 2:
        for case in (*still_failing[0], *still_failing[1]):
            run([case])
        return
    for part_failed in still_failing:
        _settle(part_failed, run)


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
