"""The baseline's gradient computations: tf.gradients / v1 gradients and tapes, nested for second order."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf

from baseline.mechanisms import Op
from compat.downstream import Downstream


def _dense(grads: Sequence[Any]) -> list[Any]:
    return [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]


def _second_order_target(grads: Sequence[Any]) -> Any:
    terms = [tf.reduce_sum(tf.cast(g, tf.float32)) for g in grads if g is not None]
    return tf.add_n(terms) if terms else None


def gradients_fn(gradients: Callable[..., list[Any]]) -> Callable[..., tuple[list[Any], list[Any]]]:
    """Input gradients (and, for second order, the first-order ones) with tf.gradients or v1 gradients."""

    def compute(op: Op, inputs: list[Any], downstream: Downstream) -> tuple[list[Any], list[Any]]:
        target = downstream.loss(*op(*inputs))
        grad_ys = downstream.output_gradients(target) if downstream.output_gradients else None
        first = _dense(gradients(target, inputs, grad_ys=grad_ys))
        if downstream.order == 1:
            return first, []
        total = _second_order_target(first)
        second = [None] * len(inputs) if total is None else _dense(gradients(total, inputs))
        return second, [g for g in first if g is not None]

    return compute


def tape_fn(op: Op, inputs: list[Any], downstream: Downstream) -> tuple[list[Any], list[Any]]:
    """Input gradients with tf.GradientTape, nested for second order."""
    second_order = downstream.order == 2
    with (tf.GradientTape() if second_order else contextlib.nullcontext()) as outer:
        if second_order:
            outer.watch(inputs)
        with tf.GradientTape() as tape:
            tape.watch(inputs)
            target = downstream.loss(*op(*inputs))
            grad_ys = downstream.output_gradients(target) if downstream.output_gradients else None
        first = _dense(tape.gradient(target, inputs, output_gradients=grad_ys))
        if not second_order:
            return first, []
        total = _second_order_target(first)
    second = [None] * len(inputs) if total is None else _dense(outer.gradient(total, inputs))
    return second, [g for g in first if g is not None]
