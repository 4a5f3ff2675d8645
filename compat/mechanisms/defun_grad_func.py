"""`function.Defun(..., grad_func=...)`: a TF1 function whose gradient is another Defun.

The equivalent hand-written user code (TF1 graph mode):

    import tensorflow as tf
from tensorflow.python.framework import function

    @function.Defun(tf.float32, tf.float32)          # (*inputs, *dys)
    def sign_grad(x, dy):
        return 0.5 * dy

    @function.Defun(tf.float32, grad_func=sign_grad)
    def sign_ste(x):
        return tf.sign(x)

The gradient Defun receives the forward inputs then one dense upstream per output, and must return a
tensor per input: where the spec's gradient returns None, this mechanism returns zeros, as a user must.
Variables the forward reads are read outside and passed in as extra arguments, as Defun users do. The
gradient Defun is not handed the forward's outputs: where the spec's gradient uses them, they are computed
again from the inputs inside it, as its users must; where it does not, the forward does not run there.
"""

from __future__ import annotations

import tensorflow as tf
from tensorflow.python.framework import function

from compat.composite import assembled, component
from compat.mechanisms.base import BuiltOp, Mechanism, defun_op, dtypes_of, output_dtypes, unique_name
from compat.probe import LazyTensors, Probe


class DefunGradFunc(Mechanism):
    name = "defun_grad_func"
    native_contexts = frozenset({"v1_session"})
    summary = "function.Defun(*dtypes, grad_func=<Defun of (*inputs, *dys)>)"

    def build(self, probe: Probe) -> BuiltOp:
        input_dtypes = dtypes_of(probe.spec.sources)
        num_inputs = len(input_dtypes)
        base = unique_name(probe.spec.name)

        @function.Defun(*input_dtypes, *output_dtypes(probe), func_name=f"{base}_grad")
        def grad_func(*args):
            inputs, upstreams = tuple(assembled(probe.spec.example_inputs, args[:num_inputs])), args[num_inputs:]
            # A grad_func is not handed the outputs: computed again from the inputs, only if the gradient uses them.
            outputs = LazyTensors(lambda: probe.forward(*inputs), "the forward's outputs")
            if not probe.spec.takes_variables:
                return [component(g) for g in probe.call_gradient(inputs, outputs, upstreams, none_as_zeros=True)]
            # The declared grad_func cannot take the variables the forward captures: TensorFlow says so at run time.
            input_grads, _ = probe.call_gradient_with_variables(inputs, outputs, upstreams, probe.created_variables)
            return [component(tf.zeros_like(x) if g is None else g) for x, g in zip(inputs, input_grads, strict=False)]

        return defun_op(probe, base, grad_func=grad_func)
