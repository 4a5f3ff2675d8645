"""Jacobian contexts: `tape.jacobian` inside a `tf.function`, one gradient per element of the target, by a loop or
by pfor.

TensorFlow asks the gradient function for one row of the Jacobian per element of the target, each with a one-hot
upstream. With `experimental_use_pfor=False` it runs the rows in a `tf.while_loop` (the gradient's Python is traced
once; eagerly it would run once per row, on a persistent tape); with `True` it traces the gradient function once
and pfor vectorizes the rows, running what it cannot vectorize (the probe's `tf.numpy_function`, yours too) in a
`tf.while_loop` once per row, after the traced iteration 0 ran once on its own (it is stateful, so it is not
pruned). A scalar target has one row: the Jacobian is the gradient.

The input gradients reported are the Jacobian contracted with the scenario's `grad_ys` (summed over the target
without them), so they are comparable with every other context's; the upstreams are what each row received.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import tensorflow as tf

from compat.contexts.base import tape_gradients
from compat.contexts.function import FunctionContext


def jacobian_request(use_pfor: bool, tape: Any, target: Any, sources: Sequence[Any], grad_ys: Any) -> list[Any]:
    """`tape.jacobian(target, sources)` contracted with `grad_ys` (ones without them): one gradient per source."""
    jacobians = tape.jacobian(target, list(sources), experimental_use_pfor=use_pfor)
    rank = target.shape.rank
    return [None if jacobian is None else _contracted(jacobian, grad_ys, rank) for jacobian in jacobians]


def _contracted(jacobian: Any, grad_ys: Any, rank: int) -> Any:
    if grad_ys is None:
        return tf.reduce_sum(jacobian, axis=list(range(rank))) if rank else jacobian
    return tf.tensordot(tf.cast(grad_ys, jacobian.dtype), jacobian, axes=rank)


def jacobian_gradients(use_pfor: bool) -> Any:
    """`tape_gradients` asking each tape for `tape.jacobian`, contracted (`jacobian_request`)."""
    return functools.partial(tape_gradients, request=functools.partial(jacobian_request, use_pfor))


class JacobianLoop(FunctionContext):
    name = "jacobian_loop"
    summary = "tape.jacobian(experimental_use_pfor=False) inside tf.function: one one-hot row per call"
    # not native (compat/registry.py): one-hot upstreams, one row per call, by design: every variant is cross
    # opt-in (compat/registry.py): a Jacobian of every scenario costs about 5x a tape's CPU (benchmarks/README.md)
    gradients = jacobian_gradients(use_pfor=False)


class JacobianPfor(FunctionContext):
    name = "jacobian_pfor"
    summary = "tape.jacobian(experimental_use_pfor=True) inside tf.function: the gradient traced once, pfor's rows"
    gradients = jacobian_gradients(use_pfor=True)
