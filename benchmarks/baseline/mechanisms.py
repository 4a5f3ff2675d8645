"""The baseline's mechanisms: each legacy and TF2 way to attach a gradient, as plain user code."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf
from tensorflow.python.framework import function

from compat.spec import GradientSpec

Op = Callable[..., tuple[Any, ...]]
OpBuilder = Callable[[GradientSpec, Sequence[tf.DType]], Op]

# --------------------------------------------------------------------------------------------- the baseline
# Plain user code, one builder per mechanism (compare the docstrings of compat/mechanisms/*.py).

_fresh = itertools.count()


def _fresh_name(spec: GradientSpec) -> str:
    """TensorFlow's gradient registry is global: every registration needs a name never used before."""
    return f"bench_{re.sub(r'[^A-Za-z0-9_]', '_', spec.name)}_{next(_fresh)}"


def _as_tuple(outputs: Any) -> tuple[Any, ...]:
    return tuple(outputs) if isinstance(outputs, (list, tuple)) else (outputs,)


def _dtypes(spec: GradientSpec) -> list[tf.DType]:
    return [tf.as_dtype(value.dtype) for value in spec.sources]


def _read(spec: GradientSpec, args: Sequence[Any]) -> tuple[Any, ...]:
    """`op(*inputs, *variables)` arguments with each tf.Variable read, as legacy code passes them in."""
    return (*args[: spec.num_inputs], *(tf.convert_to_tensor(v) for v in args[spec.num_inputs:]))


def defun_grad_func(spec: GradientSpec, output_dtypes: Sequence[tf.DType]) -> Op:
    num_inputs, name = len(spec.sources), _fresh_name(spec)

    @function.Defun(*_dtypes(spec), *output_dtypes, func_name=f"{name}_grad")
    def grad(*args):
        inputs, upstreams = args[:num_inputs], args[num_inputs:]
        grads = spec.gradient(inputs, _as_tuple(spec.forward(*inputs)), upstreams)
        return [tf.zeros_like(x) if g is None else tf.convert_to_tensor(g) for x, g in zip(inputs, grads, strict=True)]

    @function.Defun(*_dtypes(spec), grad_func=grad, func_name=name)
    def forward(*inputs):
        return spec.forward(*inputs)

    return lambda *args: _as_tuple(forward(*_read(spec, args)))


def defun_python_grad_func(spec: GradientSpec, output_dtypes: Sequence[tf.DType]) -> Op:
    def grad(op, *upstreams):
        return spec.gradient(tuple(op.inputs), tuple(op.outputs), upstreams)

    @function.Defun(*_dtypes(spec), python_grad_func=grad, func_name=_fresh_name(spec))
    def forward(*inputs):
        return spec.forward(*inputs)

    return lambda *args: _as_tuple(forward(*_read(spec, args)))


def override_map(spec: GradientSpec, output_dtypes: Sequence[tf.DType]) -> Op:
    name, op_type, num_inputs = _fresh_name(spec), spec.op_type, len(spec.sources)
    if op_type is not None:
        @tf.RegisterGradient(name)
        def _grad(op, *upstreams):
            return spec.gradient(tuple(op.inputs), tuple(op.outputs), upstreams)

        def op(*args):
            inputs = _read(spec, args)
            with tf.compat.v1.get_default_graph().gradient_override_map({op_type: name}):
                return _as_tuple(spec.forward(*inputs))

        return op

    @tf.RegisterGradient(name)
    def _wrapped_grad(op, *upstreams):
        num_outputs = len(op.inputs) - num_inputs
        inputs, outputs = tuple(op.inputs[num_outputs:]), tuple(op.inputs[:num_outputs])
        return [None] * num_outputs + list(spec.gradient(inputs, outputs, upstreams[:num_outputs]))

    def wrapped(*args):
        inputs = _read(spec, args)
        outputs = _as_tuple(spec.forward(*inputs))
        with tf.compat.v1.get_default_graph().gradient_override_map({"IdentityN": name}):
            return tuple(tf.identity_n([*outputs, *inputs])[: len(outputs)])

    return wrapped


def custom_gradient(spec: GradientSpec, output_dtypes: Sequence[tf.DType]) -> Op:
    num_inputs = spec.num_inputs

    def op(*args):
        inputs, variables = args[:num_inputs], args[num_inputs:]

        @tf.custom_gradient
        def custom_op(*inputs):
            reads = tuple(tf.convert_to_tensor(v) for v in variables)
            outputs = _as_tuple(spec.forward(*inputs, *reads))

            def grad(*upstreams, **kwargs):  # the `variables=` path when the forward reads tf.Variables
                grads = list(spec.gradient((*inputs, *reads), outputs, upstreams))
                if not variables:
                    return grads
                by_ref = {v.ref(): g for v, g in zip(variables, grads[num_inputs:], strict=True)}
                return grads[:num_inputs], [by_ref[v.ref()] for v in kwargs.get("variables") or ()]

            return (outputs[0] if len(outputs) == 1 else outputs), grad

        return _as_tuple(custom_op(*inputs))

    return op


BASELINE_MECHANISMS: dict[str, OpBuilder] = {
    "defun_grad_func": defun_grad_func,
    "defun_python_grad_func": defun_python_grad_func,
    "override_map": override_map,
    "custom_gradient": custom_gradient,
}
