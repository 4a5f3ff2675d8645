"""The eager context: tf.GradientTape on eager tensors, as TF2 code runs by default."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf

from compat.contexts.base import Case, Context, Failed, Gradients, Outcome, Ran, grads_outcome, tape_gradients
from compat.contexts.isolation import run_alone


class EagerTape(Context):
    name = "eager_tape"
    summary = "eager tf.GradientTape"

    def run(self, cases: Sequence[Case]) -> list[Outcome]:
        return [self.run_one(case) for case in cases]

    @staticmethod
    def run_one(case: Case, gradients: Callable[[Case, Sequence[Any]], Gradients] = tape_gradients) -> Ran | Failed:
        """One case, eagerly: its inputs as constants, its variables as tf.Variables, differentiated by `gradients`
        (a tf.GradientTape by default)."""
        return run_alone(case, lambda: _run_eagerly(case, gradients))


def _run_eagerly(case: Case, gradients: Callable[[Case, Sequence[Any]], Gradients]) -> Ran | Failed:
    try:
        sources = [*(tf.constant(value) for value in case.inputs), *(tf.Variable(v) for v in case.variables)]
        computed = gradients(case, sources)
    except Exception as exc:  # noqa: BLE001 - eager builds and runs at once; the error's type tells which.
        return Failed(error=exc, phase="build" if _is_unsupported(exc) else "run")
    return grads_outcome(computed.grads, case.sources, computed.variables)


def _is_unsupported(exc: BaseException) -> bool:
    """Eager raises before running anything when a graph-only API is used: that is not a run failure."""
    return not isinstance(exc, tf.errors.OpError)
