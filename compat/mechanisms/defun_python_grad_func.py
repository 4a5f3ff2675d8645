"""`function.Defun(..., python_grad_func=...)`: a TF1 function with a Python gradient `(op, *grads)`.

The equivalent hand-written user code (TF1 graph mode):

    from tensorflow.python.framework import function

    def sign_grad(op, dy):
        return 0.5 * dy

    @function.Defun(tf.float32, python_grad_func=sign_grad)
    def sign_ste(x):
        return tf.sign(x)

Variables the forward creates are captured by the Defun as extra inputs (their handles) after the declared
ones; a legacy python_grad_func returns a gradient for each, which flows to the variable.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from compat.composite import assembled, component, is_composite
from compat.mechanisms.base import BuiltOp, Mechanism, defun_op, unique_name
from compat.probe import LazyTensors, OpTensors, Probe


class DefunPythonGradFunc(Mechanism):
    name = "defun_python_grad_func"
    native_contexts = frozenset({"v1_session"})
    summary = "function.Defun(*dtypes, python_grad_func=<(op, *grads)>)"

    def build(self, probe: Probe) -> BuiltOp:
        num_sources = len(probe.spec.sources)

        def python_grad_func(op, *upstreams):
            # Variables the forward created are captured as extra op inputs: they are not the spec's inputs.
            inputs = _inputs(op, probe.spec.example_inputs, num_sources if probe.spec.takes_variables else None)
            if not probe.spec.takes_variables:
                return [component(g) for g in probe.call_gradient(inputs, OpTensors(op, "outputs"), upstreams)]
            variables = probe.created_variables
            input_grads, variable_grads = probe.call_gradient_with_variables(
                inputs, OpTensors(op, "outputs"), upstreams, variables)
            return [component(g) for g in input_grads] + _by_capture(op, num_sources, variables, variable_grads)

        return defun_op(probe, unique_name(probe.spec.name), python_grad_func=python_grad_func)


def _by_capture(op: Any, num_sources: int, variables: Sequence[Any], grads: list[Any]) -> list[Any]:
    """The variables' gradients as the Defun op's extra inputs want them: the Defun captured each variable (its
    handle, or a read of it when `get_variable` created it in the outer graph) as an input after the declared
    ones, and the gradient for that input flows to the variable (what a legacy python_grad_func returns for
    `op.inputs[i]`). A list of the wrong length is handed over as it is."""
    if len(grads) != len(variables):
        return grads
    paired = list(zip(variables, grads, strict=True))
    return [next((grad for variable, grad in paired if _same(_handle(captured), variable.handle)), None)
            for captured in list(op.inputs)[num_sources:]]


def _handle(captured: Any) -> Any:
    """The variable handle behind a Defun's captured input: the handle itself or what a ReadVariableOp reads, as
    the enclosing graph got it (a tf.function's placeholder for an eager handle is mapped back to that handle)."""
    if captured.op.type == "ReadVariableOp":
        captured = captured.op.inputs[0]
    for external, internal in getattr(captured.graph, "captures", ()):
        if internal is captured:
            return external
    return captured


def _same(handle: Any, variable_handle: Any) -> bool:
    if handle is variable_handle:
        return True
    eager = hasattr(handle, "numpy") or hasattr(variable_handle, "numpy")
    return not eager and handle.graph is variable_handle.graph and handle.name == variable_handle.name


def _inputs(op: Any, examples: Sequence[Any], stop: int | None) -> Sequence[Any]:
    """What the spec's gradient gets as inputs: `op.inputs[:stop]`, ragged and sparse ones rebuilt around their
    values as the forward got them."""
    tensors = OpTensors(op, "inputs", stop=stop)
    if not any(is_composite(example) for example in examples):
        return tensors
    return LazyTensors(lambda: assembled(examples, tensors), "op.inputs")
