"""Eager-tape contexts whose forward runs wrapped: in a `tf.function`, or in `tf.compat.v1.wrap_function`.

The op is built inside the wrapper (a FuncGraph); the loss and the `tf.GradientTape` stay outside, eager, as
in TF2 code that calls a compiled model from a training loop, or migrated TF1 graph code wrapped for TF2.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import tensorflow as tf

from compat.application import BuiltOp
from compat.contexts.base import Case, Context, Outcome
from compat.contexts.eager import EagerTape

Wrapper = Callable[[Callable[..., Any], list[tf.TensorSpec]], Callable[..., Any]]


def wrapped_build(case: Case, wrap: Wrapper) -> Callable[[], BuiltOp]:
    """`case.build`, with the built op traced inside `wrap(fn, signature)` on its first call.

    The op's inputs are arguments of the wrapped function; its variables are captured from outside (as a
    model's weights are), so the eager tape outside watches them.
    """
    num_inputs = len(case.inputs)

    def build() -> BuiltOp:
        op = case.build()

        def call(*sources: Any) -> tuple[Any, ...]:
            inputs, variables = sources[:num_inputs], sources[num_inputs:]
            signature = [tf.TensorSpec(x.shape, x.dtype) for x in inputs]
            wrapped = wrap(lambda *xs: tuple(op(*xs, *variables)), signature)
            return tuple(wrapped(*inputs))

        return call

    return build


class _RetracingWarnings(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if "parallel_for" in record.pathname:
            return False  # pfor logs each op it runs in a while_loop, or fails to convert; the cell says the outcome
        return "triggered tf.function retracing" not in record.getMessage()


@contextlib.contextmanager
def quiet_retracing() -> Iterator[None]:
    """Drops TensorFlow's "N out of the last N calls triggered tf.function retracing" warnings: every case is
    traced anew on purpose (a fresh op per case); and pfor's log of each op it could not vectorize (a Defun under
    `tf.vectorized_map`, whose cell quotes the error). Every other TensorFlow warning still shows."""
    quiet = _RetracingWarnings()
    tf.get_logger().addFilter(quiet)
    try:
        yield
    finally:
        tf.get_logger().removeFilter(quiet)


class WrappedForwardTape(Context):
    """An eager tape over a forward wrapped by `wrap`; subclasses choose the wrapper."""

    wrap: Wrapper

    def run(self, cases: Sequence[Case]) -> list[Outcome]:
        wrap = type(self).wrap
        with quiet_retracing():
            return [EagerTape.run_one(dataclasses.replace(case, build=wrapped_build(case, wrap))) for case in cases]


class OuterTape(WrappedForwardTape):
    name = "outer_tape"
    summary = "eager tf.GradientTape over a forward inside tf.function"
    wrap = staticmethod(lambda fn, signature: tf.function(fn, input_signature=signature, autograph=False))


class WrapFunction(WrappedForwardTape):
    name = "wrap_function"
    summary = "eager tf.GradientTape over legacy graph code in tf.compat.v1.wrap_function"
    wrap = staticmethod(lambda fn, signature: tf.compat.v1.wrap_function(fn, signature))
