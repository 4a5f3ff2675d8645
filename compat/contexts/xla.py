"""XLA contexts: gradients requested inside `tf.function(jit_compile=True)`, as compiled TF2 training steps.

XLA cannot compile a `tf.numpy_function`, so the probe hands each gradient function's upstreams back as extra
outputs of the compiled function (`compat.probe.returning_upstreams`); one compiled run is one call.
"""

from __future__ import annotations

import tensorflow as tf

from compat.contexts.base import tape_gradients, tf_gradients
from compat.contexts.function import FunctionContext

_COMPILE_REFUSALS = ("unsupported operations when trying to compile", "OpKernel for XLA", "XLA compilation",
                     "could not be compiled", "No registered")


class XlaContext(FunctionContext):
    jit_compile = True
    returns_upstreams = True

    def refused_at_compile(self, error: BaseException) -> bool:
        return isinstance(error, tf.errors.OpError) and any(text in str(error) for text in _COMPILE_REFUSALS)


class XlaTape(XlaContext):
    name = "xla_tape"
    summary = "tf.GradientTape inside tf.function(jit_compile=True)"
    gradients = staticmethod(tape_gradients)


class XlaGradients(XlaContext):
    name = "xla_gradients"
    summary = "tf.gradients inside tf.function(jit_compile=True)"
    gradients = staticmethod(tf_gradients)
