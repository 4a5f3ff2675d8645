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
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tensorflow as tf

from compat.mechanisms.base import BuiltOp, Mechanism, as_outputs
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
            def custom_op(*inputs):
                reads = tuple(tf.convert_to_tensor(variable) for variable in variables)
                outputs = probe.forward(*inputs, *reads)

                def grad(*upstreams, **kwargs):
                    grads = probe.call_gradient((*inputs, *reads), outputs, upstreams)
                    if not variables:
                        return grads
                    return grads[:num_inputs], _in_order(variables, grads[num_inputs:], kwargs.get("variables"))

                return (outputs[0] if len(outputs) == 1 else outputs), grad

            return as_outputs(custom_op(*inputs))

        return op


def _in_order(variables: Sequence[Any], grads: list[Any], wanted: Sequence[Any] | None) -> list[Any]:
    """The spec's variable gradients (in `variables` order) in the order TensorFlow lists the variables; a
    gradient list of the wrong length is handed over as it is, for TensorFlow to judge."""
    if len(grads) != len(variables):
        return grads
    by_ref = {variable.ref(): g for variable, g in zip(variables, grads, strict=True)}
    return [by_ref[v.ref()] for v in wanted or ()]
