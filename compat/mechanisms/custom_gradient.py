"""`@tf.custom_gradient`: the TF2 mechanism, in eager, inside tf.function and in tf.compat.v1 graphs.

The equivalent hand-written user code:

    @tf.custom_gradient
    def sign_ste(x):
        y = tf.sign(x)
        def grad(dy):
            return 0.5 * dy
        return y, grad

A forward with several outputs returns them as a tuple, and `grad(*dys)` receives one upstream each.
A forward that reads tf.Variables uses the `variables=` path:

    def grad(dy, variables=None):
        return input_grads, [gradient for each variable in `variables`]

A spec whose gradient takes `variables` gets TensorFlow's own list (the variables the forward created or read);
otherwise the inner grad takes no `variables`, and TensorFlow refuses a forward that uses variables, as it
refuses such user code.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf

from compat.application import BuiltOp, as_outputs
from compat.composite import component, is_sparse_tensor, rebuild
from compat.mechanisms.base import Mechanism
from compat.probe import Probe


class CustomGradient(Mechanism):
    name = "custom_gradient"
    native_contexts = None
    summary = "@tf.custom_gradient with an inner grad(*dys)"

    def build(self, probe: Probe) -> BuiltOp:
        num_inputs = probe.spec.num_inputs

        def op(*args):
            inputs, variables = args[:num_inputs], args[num_inputs:]

            @tf.custom_gradient
            def custom_op(*passed):
                inner = tuple(rebuild(x, p) if is_sparse_tensor(x) else p for x, p in zip(inputs, passed, strict=True))
                reads = tuple(tf.convert_to_tensor(variable) for variable in variables)
                outputs = probe.forward(*inner, *reads)
                return (outputs[0] if len(outputs) == 1 else outputs), _grad(probe, inner, variables, reads, outputs)

            # tf.custom_gradient refuses a SparseTensor argument ("Type SparseTensor is not supported as a gradient
            # source"): TF2 code passes its values and rebuilds it inside, as here.
            return as_outputs(custom_op(*(x.values if is_sparse_tensor(x) else x for x in inputs)))

        return op


def _grad(probe: Probe, inputs: Sequence[Any], variables: Sequence[Any], reads: Sequence[Any],
          outputs: Sequence[Any]) -> Callable[..., Any]:
    """The inner `grad` a user writes: `grad(*dys, variables=None)` when the spec's gradient takes the variables
    the forward created (TensorFlow hands them over); with the spec's `variables=` values, the reads are extra
    inputs whose gradients go to TensorFlow's `variables`; otherwise `grad(*dys)`, so TensorFlow raises what it
    raises for a forward that uses variables its grad does not accept. A SparseTensor input's gradient is handed
    over as its values' (the values are what was passed)."""
    num_inputs = len(inputs)

    def passed(grads: list[Any]) -> list[Any]:
        return [component(g) if index < num_inputs and is_sparse_tensor(inputs[index]) else g
                for index, g in enumerate(grads)]

    if probe.spec.takes_variables:
        def grad_with_variables(*upstreams: Any, variables: Sequence[Any] | None = None) -> Any:
            input_grads, variable_grads = probe.call_gradient_with_variables(inputs, outputs, upstreams,
                                                                             variables or ())
            return passed(input_grads), variable_grads
        return grad_with_variables
    if variables:
        def grad_of_reads(*upstreams: Any, **kwargs: Any) -> Any:
            grads = probe.call_gradient((*inputs, *reads), outputs, upstreams)
            return passed(grads[:num_inputs]), _in_order(variables, grads[num_inputs:], kwargs.get("variables"))
        return grad_of_reads

    def grad(*upstreams: Any) -> Any:
        return passed(probe.call_gradient(inputs, outputs, upstreams))
    return grad


def _in_order(variables: Sequence[Any], grads: list[Any], wanted: Sequence[Any] | None) -> list[Any]:
    """The spec's variable gradients (in `variables` order) in the order TensorFlow lists the variables; a
    gradient list of the wrong length is handed over as it is, for TensorFlow to judge."""
    if len(grads) != len(variables):
        return grads
    by_ref = {variable.ref(): g for variable, g in zip(variables, grads, strict=True)}
    return [by_ref[v.ref()] for v in wanted or ()]
