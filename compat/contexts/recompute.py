"""Contexts whose forward is wrapped by a TensorFlow transformation, differentiated by an eager tape outside:
`tf.recompute_grad` (gradient checkpointing) and `tf.vectorized_map` over a batch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf

from compat.contexts.wrapped import WrappedForwardTape

VECTORIZED_BATCH = 2
"""Copies of the example inputs `vectorized_map` maps over (its first row is differentiated)."""


def recomputed(fn: Callable[..., Any], signature: list[tf.TensorSpec]) -> Callable[..., Any]:
    """`fn` under `tf.recompute_grad`: its forward runs again, under a tape of its own, when the gradient is asked."""
    return tf.recompute_grad(lambda *xs: list(fn(*xs)))


def vectorized(fn: Callable[..., Any], signature: list[tf.TensorSpec]) -> Callable[..., Any]:
    """`fn` mapped by `tf.vectorized_map` over a batch of `VECTORIZED_BATCH` copies of its inputs; the outputs are
    those of the first row, so the downstream and the gradients are the plain op's."""

    def call(*xs: Any) -> tuple[Any, ...]:
        batch = tuple(tf.stack([x] * VECTORIZED_BATCH) for x in xs)
        outputs = tf.vectorized_map(lambda row: tuple(fn(*row)), batch)
        return tuple(output[0] for output in outputs)

    return call


class RecomputeGrad(WrappedForwardTape):
    name = "recompute_grad"
    summary = "eager tf.GradientTape over the op wrapped by tf.recompute_grad (gradient checkpointing)"
    # Gradient checkpointing has limits of its own: TensorFlow refuses second order through it for an op that reads
    # a variable ("recompute_grad tried to transpose grad of ..."); a limit of checkpointing, not of a migration.
    wrap = staticmethod(recomputed)


class VectorizedMap(WrappedForwardTape):
    name = "vectorized_map"
    summary = "eager tf.GradientTape over tf.vectorized_map of the op over a batch (2 copies of the inputs)"
    # not native (compat/registry.py): pfor rewrites the op's graph: what TensorFlow differentiates is its
    # vectorized forward
    # Opt-in: about 3x a tape's CPU (benchmarks/context_cost.py), and pfor drops every tf.custom_gradient, so in
    # the default variants it would fail each `custom_gradient@*` assertion of users' suites on a known fact.
    wrap = staticmethod(vectorized)
