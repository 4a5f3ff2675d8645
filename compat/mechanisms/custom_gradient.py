"""`@tf.custom_gradient`: the TF2 mechanism, in eager, inside tf.function and in tf.compat.v1 graphs.

The equivalent hand-written user code:

    @tf.custom_gradient
    def sign_ste(x):
        y = tf.sign(x)
        def grad(dy):
            return 0.5 * dy
        return y, grad

A forward with several outputs returns them as a tuple, and `grad(*dys)` receives one upstream each.
"""

from __future__ import annotations

import tensorflow as tf

from compat.mechanisms.base import BuiltOp, Mechanism
from compat.probe import Probe


class CustomGradient(Mechanism):
    name = "custom_gradient"
    native_contexts = None
    summary = "@tf.custom_gradient with an inner grad(*dys)"

    def build(self, probe: Probe) -> BuiltOp:
        @tf.custom_gradient
        def custom_op(*inputs):
            outputs = probe.forward(*inputs)

            def grad(*upstreams):
                return probe.call_gradient(inputs, outputs, upstreams)

            return (outputs[0] if len(outputs) == 1 else outputs), grad

        def op(*inputs):
            outputs = custom_op(*inputs)
            return tuple(outputs) if isinstance(outputs, (list, tuple)) else (outputs,)

        return op
