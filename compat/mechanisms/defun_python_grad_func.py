"""`function.Defun(..., python_grad_func=...)`: a TF1 function with a Python gradient `(op, *grads)`.

The equivalent hand-written user code (TF1 graph mode):

    from tensorflow.python.framework import function

    def sign_grad(op, dy):
        return 0.5 * dy

    @function.Defun(tf.float32, python_grad_func=sign_grad)
    def sign_ste(x):
        return tf.sign(x)
"""

from __future__ import annotations

from tensorflow.python.framework import function

from compat.mechanisms.base import BuiltOp, Mechanism, dtypes_of, read_variables, unique_name
from compat.probe import Probe


class DefunPythonGradFunc(Mechanism):
    name = "defun_python_grad_func"
    native_contexts = frozenset({"v1_session"})
    summary = "function.Defun(*dtypes, python_grad_func=<(op, *grads)>)"

    def build(self, probe: Probe) -> BuiltOp:
        def python_grad_func(op, *upstreams):
            return probe.call_gradient(tuple(op.inputs), tuple(op.outputs), upstreams)

        @function.Defun(*dtypes_of(probe.spec.sources), python_grad_func=python_grad_func,
                        func_name=unique_name(probe.spec.name))
        def forward_op(*inputs):
            return probe.forward(*inputs)

        def op(*args):
            outputs = forward_op(*read_variables(probe, args))
            return tuple(outputs) if isinstance(outputs, (list, tuple)) else (outputs,)

        return op
