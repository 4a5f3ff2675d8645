"""Built-in gradient names an override map may borrow (`{"Sign": "Identity"}`), written out as TF2 code.

Only gradients whose TensorFlow definition is a pure function of the upstream are listed: `Identity` returns
the upstream unchanged (`_IdGrad`), `Neg` returns it negated (`_NegGrad`). Any other name is left with a TODO.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable


@dataclasses.dataclass(frozen=True)
class BuiltinGradient:
    """`expression(dy)` is the gradient for the single input of a single-output op, as source code."""

    name: str
    expression: Callable[[str], str]
    tf_source: str


BUILTIN_GRADIENTS: dict[str, BuiltinGradient] = {
    g.name: g
    for g in (
        BuiltinGradient("Identity", lambda dy: dy, "tensorflow/python/ops/array_grad.py: _IdGrad"),
        BuiltinGradient("Neg", lambda dy: f"-{dy}", "tensorflow/python/ops/math_grad.py: _NegGrad"),
    )
}


def lookup(name: str) -> BuiltinGradient | None:
    return BUILTIN_GRADIENTS.get(name)
