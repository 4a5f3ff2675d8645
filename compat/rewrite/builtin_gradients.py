"""Built-in gradient names an override map may borrow (`{"Sign": "Identity"}`), written out as TF2 code.

Only gradients whose TensorFlow definition is a pure function of the upstream (and the inputs' shapes) are
listed: `Identity` returns the upstream unchanged (`_IdGrad`), `Neg` returns it negated (`_NegGrad`), `Add` hands
it to both inputs, summed over the axes each was broadcast along (`_AddGrad`; TTQ's `{"Mul": "Add"}`). Any other
name is left with a TODO.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

Expression = Callable[[str, tuple[str, ...], str], str]
"""(upstream, input names, tensorflow alias) -> the source of the gradient(s) for those inputs."""


def _broadcast_sums(dy: str, xs: tuple[str, ...], tf: str) -> str:
    axes = f"{tf}.raw_ops.BroadcastGradientArgs(s0={tf}.shape({xs[0]}), s1={tf}.shape({xs[1]}))"
    return ", ".join(f"{tf}.reshape({tf}.reduce_sum({dy}, {axes}[{i}]), {tf}.shape({x}))" for i, x in enumerate(xs))


@dataclasses.dataclass(frozen=True)
class BuiltinGradient:
    """`expression(dy, inputs, tf)` is the gradient for the `inputs` of a single-output op, as source code."""

    name: str
    expression: Expression
    tf_source: str
    inputs: int = 1


BUILTIN_GRADIENTS: dict[str, BuiltinGradient] = {
    g.name: g
    for g in (
        BuiltinGradient("Identity", lambda dy, xs, tf: dy, "tensorflow/python/ops/array_grad.py: _IdGrad"),
        BuiltinGradient("Neg", lambda dy, xs, tf: f"-{dy}", "tensorflow/python/ops/math_grad.py: _NegGrad"),
        BuiltinGradient("Add", _broadcast_sums, "tensorflow/python/ops/math_grad.py: _AddGrad", inputs=2),
    )
}


def lookup(name: str) -> BuiltinGradient | None:
    return BUILTIN_GRADIENTS.get(name)
