"""The forward-mode context: `tf.autodiff.ForwardAccumulator`, eagerly, one pass per element of the sources.

Forward mode asks no one for an upstream: TensorFlow computes a custom gradient's JVP by running the backward
function with upstreams of its own making (what it hands over is recorded as any other call). A JVP is one
directional derivative, so the input gradients are assembled from one pass per source element, each with a
one-hot tangent: every pass builds and runs the op again, and its calls add up (`calls` is passes x calls per
pass). The JVP of the target contracted with `grad_ys` (summed without them) is the gradient's element; second
order is forward-over-reverse (the JVP of the sum of a tape's first-order gradients, TensorFlow's
Hessian-vector product pattern).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from compat.contexts.base import (
    Case,
    Context,
    Gradients,
    Outcome,
    _described,
    _extra_sources,
    _second_order_target,
    _target_and_grad_ys,
    tape_gradient,
)
from compat.contexts.eager import EagerTape


def _scalar(case: Case, sources: Sequence[Any]) -> Any:
    """What one pass differentiates: the target contracted with `grad_ys`, or the sum of a tape's first-order
    gradients for second order."""
    if case.downstream.order == 2:
        with tf.GradientTape() as tape:
            tape.watch(list(sources))
            target, grad_ys = _target_and_grad_ys(case, sources)
        return _second_order_target(tape_gradient(tape, target, sources, grad_ys))
    target, grad_ys = _target_and_grad_ys(case, sources)
    if grad_ys is None:
        return tf.reduce_sum(target)
    return tf.reduce_sum(target * tf.cast(grad_ys, target.dtype))


def _found_variables(case: Case, inputs: Sequence[Any]) -> list[Any]:
    """The case's extra sources (variables its forward creates), found by running the forward once: forward mode
    must watch them before the op runs. Eagerly the forward creates them once and reuses them afterwards."""
    if case.extra_sources is None:
        return []
    with tf.GradientTape(watch_accessed_variables=True) as watcher:
        _target_and_grad_ys(case, inputs)
    return _extra_sources(case, watcher)


def forward_gradients(case: Case, inputs: Sequence[Any]) -> Gradients:
    """Each source element's derivative of the case's scalar, one ForwardAccumulator pass with a one-hot tangent
    per element; None for a source the scalar does not depend on (TensorFlow's JVP is None there)."""
    sources = [*inputs, *_found_variables(case, inputs)]
    zeros = [tf.zeros_like(tf.convert_to_tensor(source)) for source in sources]
    grads: list[Any] = []
    for position, source in enumerate(sources):
        shape = tuple(source.shape.as_list())
        size = int(np.prod(shape, dtype=np.int64))
        flat: list[Any] = []
        for element in range(size):
            one_hot = tf.reshape(tf.one_hot(element, size, dtype=zeros[position].dtype), shape)
            tangents = [*zeros[:position], one_hot, *zeros[position + 1:]]
            with tf.autodiff.ForwardAccumulator(sources, tangents) as accumulator:
                scalar = _scalar(case, sources)
            flat.append(None if scalar is None else accumulator.jvp(scalar))
        if any(value is None for value in flat):
            grads.append(None)
        else:
            grads.append(tf.reshape(tf.stack(flat), shape) if flat else zeros[position])
    return Gradients(grads, variables=_described(sources[len(inputs):]))


class ForwardAccumulatorContext(Context):
    name = "forward_accumulator"
    summary = "eager tf.autodiff.ForwardAccumulator (forward mode), one pass per source element"
    # not native (compat/registry.py): the backward function runs with upstreams of TensorFlow's own making, by design
    # opt-in (compat/registry.py): one pass per source element: about 4x a tape's CPU (benchmarks/README.md)

    def run(self, cases: Sequence[Case]) -> list[Outcome]:
        return [EagerTape.run_one(case, forward_gradients) for case in cases]
