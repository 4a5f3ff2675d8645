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

from compat.mechanisms.base import BuiltOp, Mechanism, defun_op, unique_name
from compat.probe import OpTensors, Probe


class DefunPythonGradFunc(Mechanism):
    name = "defun_python_grad_func"
    native_contexts = frozenset({"v1_session"})
    summary = "function.Defun(*dtypes, python_grad_func=<(op, *grads)>)"

    def build(self, probe: Probe) -> BuiltOp:
        def python_grad_func(op, *upstreams):
            return probe.call_gradient(OpTensors(op, "inputs"), OpTensors(op, "outputs"), upstreams)

        return defun_op(probe, unique_name(probe.spec.name), python_grad_func=python_grad_func)
