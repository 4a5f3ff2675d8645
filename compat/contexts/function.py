"""tf.function contexts: trace every case into one tf.function and run it in one call."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf

from compat.contexts.base import (
    Case,
    Context,
    Failed,
    Gradients,
    Outcome,
    Phase,
    grads_outcome,
    input_shape,
    tape_gradients,
    tf_gradients,
)
from compat.contexts.isolation import isolate_cases
from compat.probe import ReturnedUpstreams, returning_upstreams


class FunctionContext(Context):
    """Gradients requested inside a `tf.function`; subclasses choose how."""

    gradients: Callable[[Case, Sequence[Any]], Gradients]
    jit_compile = False
    returns_upstreams = False
    """Capture upstreams as tensors the function returns (probe.returning_upstreams), not by numpy_function."""

    def run(self, cases: Sequence[Case]) -> list[Outcome]:
        outcomes = isolate_cases(cases, range(len(cases)), lambda batch: self._run_batch(cases, batch))
        return [outcomes[index] for index in range(len(cases))]

    def _run_batch(self, cases: Sequence[Case], indices: Sequence[int]) -> tuple[dict[int, Outcome], list[int]]:
        outcomes: dict[int, Outcome] = {}
        signature = [tf.TensorSpec(input_shape(value, cases[index].downstream), tf.as_dtype(value.dtype))
                     for index in indices for value in cases[index].inputs]
        gradients = type(self).gradients
        variables = {index: [tf.Variable(value) for value in cases[index].variables] for index in indices}

        stashes: dict[int, ReturnedUpstreams] = {}
        traced: dict[int, Gradients] = {}

        def body(*flat_inputs):
            graph = tf.compat.v1.get_default_graph()
            results, returned = {}, {}
            position = 0
            for index in indices:
                inputs = flat_inputs[position: position + len(cases[index].inputs)]
                position += len(inputs)
                with returning_upstreams(graph) if self.returns_upstreams else contextlib.nullcontext() as stash:
                    try:
                        traced[index] = gradients(cases[index], [*inputs, *variables[index]])
                        results[str(index)] = traced[index].grads
                    except Exception as exc:  # noqa: BLE001 - a case that cannot be traced is a result.
                        outcomes[index] = Failed(error=exc, phase="build")
                        continue
                if stash is not None:
                    stashes[index] = stash
                    returned[str(index)] = stash.tensors
            return {"grads": results, "upstreams": returned}

        function = tf.function(body, input_signature=signature, autograph=False, jit_compile=self.jit_compile)
        try:
            concrete = function.get_concrete_function()
        except Exception as exc:  # noqa: BLE001
            return {index: outcomes.get(index, Failed(error=exc, phase="build")) for index in indices}, []
        built = [index for index in indices if index not in outcomes]
        try:
            values = concrete(*[value for index in indices for value in cases[index].inputs])
        except Exception as exc:  # noqa: BLE001
            if len(built) > 1:
                return outcomes, built
            phase: Phase = "build" if self.refused_at_compile(exc) else "run"
            outcomes.update({index: Failed(error=exc, phase=phase) for index in built})
            return outcomes, []
        for index in built:
            if index in stashes:
                stashes[index].deliver(values["upstreams"][str(index)])
            outcomes[index] = grads_outcome(values["grads"][str(index)], cases[index].sources, traced[index].variables)
        return outcomes, []


    def refused_at_compile(self, error: BaseException) -> bool:
        """Whether a run-time error is the function's compiler refusing what was traced (not a run failure)."""
        return False


class FunctionTape(FunctionContext):
    name = "function_tape"
    summary = "tf.GradientTape inside tf.function"
    gradients = staticmethod(tape_gradients)


class FunctionGradients(FunctionContext):
    name = "function_gradients"
    summary = "tf.gradients inside tf.function"
    gradients = staticmethod(tf_gradients)
