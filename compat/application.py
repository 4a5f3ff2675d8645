"""How a spec's op is applied to the sources a context differentiates: composite inputs assembled, `spec.model`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from compat.composite import is_composite

BuiltOp = Callable[..., tuple[Any, ...]]
"""`op(*inputs) -> tuple of outputs`: a spec's forward with its custom gradient attached."""


def as_outputs(outputs: Any) -> tuple[Any, ...]:
    """A forward's result as a tuple of outputs."""
    return tuple(outputs) if isinstance(outputs, (list, tuple)) else (outputs,)


def applied(op: BuiltOp, spec: Any, modelled: bool = True) -> BuiltOp:
    """`op(*inputs, *variables)` called on the sources a context differentiates: ragged and sparse inputs are
    assembled from their values (`compat.RaggedArray`, `compat.SparseArray`), then, with `modelled`, used as
    `spec.model` uses the op: `model(call, *inputs)`, where `call(*xs)` is the op on `xs` (and the variables),
    returning one tensor or a tuple as the forward does."""
    model = spec.model if modelled else None
    examples = spec.example_inputs
    if model is None and not any(is_composite(value) for value in examples):
        return op
    num_inputs = spec.num_inputs

    def used(*sources: Any) -> tuple[Any, ...]:
        inputs = [value.assemble(x) if is_composite(value) else x for value, x in zip(examples, sources, strict=False)]
        variables = sources[num_inputs:]
        if model is None:
            return as_outputs(op(*inputs, *variables))

        def call(*xs: Any) -> Any:
            outputs = as_outputs(op(*xs, *variables))
            return outputs[0] if len(outputs) == 1 else outputs

        return as_outputs(model(call, *inputs))

    return used
