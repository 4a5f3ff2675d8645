"""What a reference computed (ForwardValue) and how one cell's input gradients compare with it (ForwardCheck)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Literal

import numpy as np

from compat.comparison import Location, compare_arrays
from compat.dtypes import Tolerance
from compat.results import VariantResult

ValueStatus = Literal["ok", "not_differentiable", "not_applicable", "error"]
CheckStatus = Literal["same", "differs", "not_differentiable", "not_applicable", "not_compared", "error"]
CHECK_STATUSES: tuple[CheckStatus, ...] = ("same", "differs", "not_differentiable", "not_applicable",
                                           "not_compared", "error")
"""`same`/`differs`: the cell's gradient against the forward's derivative; `not_differentiable`: the forward has no
derivative to compare with there (no gradient registered, an integer op, piecewise constant, a jump);
`not_applicable`: the reference does not apply to the scenario (finite differences of a second-order gradient);
`not_compared`: the cell computed no gradient (error, unsupported); `error`: the reference itself failed."""

DirectionKind = Literal["smooth", "flat", "unsettled"]

FD_TOLERANCES: dict[str, Tolerance] = {
    # |g.u - fd| <= atol + rtol * (sum |g| |u| + |fd|): the custom gradient's precision in its dtype bounds the
    # agreement, the float64 difference quotient being far more accurate (1e-8 relative at the steps used).
    "float64": Tolerance(rtol=1e-6, atol=1e-9),
    "float32": Tolerance(rtol=1e-4, atol=1e-6),
    "float16": Tolerance(rtol=1e-2, atol=1e-3),
    "bfloat16": Tolerance(rtol=5e-2, atol=1e-2),
}
"""Finite-difference tolerances by the dtype the custom gradient was computed in."""


@dataclasses.dataclass(frozen=True, eq=False)
class Direction:
    """One seeded direction u (per source: an array, or None for a non-float source) and the central difference
    quotients of the loss along it at each step: `kind` says whether they settle (`smooth`), are exactly zero
    (`flat`: the forward is constant there) or do not settle (`unsettled`: a jump or kink within the steps)."""

    u: tuple[np.ndarray | None, ...]
    steps: tuple[float, ...]
    quotients: tuple[float, ...]
    kind: DirectionKind

    @property
    def derivative(self) -> float:
        """The finite-difference directional derivative: the quotient at the smallest step."""
        return self.quotients[-1]


@dataclasses.dataclass(frozen=True, eq=False)
class ForwardValue:
    """A reference's answer for one (spec, scenario, dtype): TensorFlow's gradient of the forward
    (`input_grads`, autodiff) or the directional derivatives (`directions`, finite differences)."""

    reference: str
    spec: str
    scenario: str
    status: ValueStatus
    message: str = ""
    input_grads: tuple[np.ndarray | None, ...] = ()
    directions: tuple[Direction, ...] = ()
    dtype: str = ""
    reason: str = ""
    """Why it is `not_differentiable` or `not_applicable`, in a few words (`no gradient registered`)."""


@dataclasses.dataclass(frozen=True, eq=False)
class ForwardCheck:
    """One cell's input gradients against one reference; `value` is what the reference computed (shared by the
    cells of a scenario)."""

    reference: str
    status: CheckStatus
    detail: str
    value: ForwardValue
    where: str = ""
    max_abs: float | None = None
    reason: str = ""
    """Why it is `not_differentiable` or `not_applicable`, in a few words (`piecewise constant`)."""


def check_cell(value: ForwardValue, result: VariantResult, dtype: str) -> ForwardCheck:
    """Compare a cell's input gradients with the reference `value`; `dtype` is the cell's (its compute dtype
    under mixed precision), which sets the tolerance."""
    if not result.input_grads:
        return ForwardCheck(value.reference, "not_compared", f"the cell computed no gradient ({result.status})",
                            value)
    if value.status != "ok":
        return ForwardCheck(value.reference, value.status, value.message, value, reason=value.reason)
    if value.directions:
        return _check_directions(value, result.input_grads, dtype)
    return _check_grads(value, result.input_grads, dtype)


def _check_grads(value: ForwardValue, grads: Sequence[np.ndarray | None], dtype: str) -> ForwardCheck:
    if len(grads) != len(value.input_grads):
        return ForwardCheck(value.reference, "differs", f"{len(grads)} input gradients here, "
                            f"{len(value.input_grads)} from {value.reference}", value)
    for index, (mine, theirs) in enumerate(zip(grads, value.input_grads, strict=True)):
        if theirs is None and mine is not None and np.any(np.asarray(mine, np.float64)):
            return ForwardCheck(value.reference, "not_differentiable", f"TensorFlow has no gradient of the forward "
                                f"for input {index} (None: an integer op, tf.stop_gradient or no path from it), the "
                                f"custom gradient gives nonzero values", value, f"input_grad[{index}]",
                                reason="TensorFlow's gradient is None")
    worst: ForwardCheck | None = None
    for index, (mine, theirs) in enumerate(zip(grads, value.input_grads, strict=True)):
        mine, theirs = _zeros_for_none(mine, theirs)
        if mine is None or theirs is None:
            continue
        if dtype == "float16" and theirs.dtype.kind == "f":
            mine, theirs = mine.astype(np.float16), theirs.astype(np.float16)
        for difference in compare_arrays(Location("input_grad", index), mine, theirs.astype(mine.dtype, copy=False)):
            detail = difference.detail.replace("in the reference", f"from {value.reference}")
            if worst is None or (difference.max_abs or 0.0) > (worst.max_abs or 0.0):
                worst = ForwardCheck(value.reference, "differs", f"{difference.where}: {detail}", value,
                                     difference.where, difference.max_abs)
    return worst or ForwardCheck(value.reference, "same", "", value)


def _zeros_for_none(mine: np.ndarray | None, theirs: np.ndarray | None) -> tuple[np.ndarray | None, ...]:
    """None is no gradient, i.e. zeros, for the values (where the other side has a shape to give them)."""
    if mine is None and theirs is not None:
        return np.zeros_like(theirs), theirs
    if theirs is None and mine is not None:
        return mine, np.zeros_like(mine)
    return mine, theirs


def directional(grads: Sequence[np.ndarray | None], u: Sequence[np.ndarray | None]) -> tuple[float, float]:
    """(g.u, sum |g| |u|) over every source with both a gradient and a direction (None: zero)."""
    total, scale = 0.0, 0.0
    for grad, part in zip(grads, u, strict=False):
        if grad is None or part is None or np.shape(grad) != part.shape:
            continue
        wide = np.asarray(grad, np.float64)
        total += float(np.sum(wide * part))
        scale += float(np.sum(np.abs(wide) * np.abs(part)))
    return total, scale


def _check_directions(value: ForwardValue, grads: Sequence[np.ndarray | None], dtype: str) -> ForwardCheck:
    tolerance = FD_TOLERANCES.get(dtype, FD_TOLERANCES["float32"])
    worst: ForwardCheck | None = None
    for index, direction in enumerate(value.directions):
        mine, scale = directional(grads, direction.u)
        fd = direction.derivative
        where = f"direction[{index}]"
        error = abs(mine - fd)
        if error <= tolerance.atol + tolerance.rtol * (scale + abs(fd)):
            continue
        if direction.kind != "smooth":
            return ForwardCheck(value.reference, "not_differentiable", f"{where}: {_why(direction)}; the custom "
                                f"gradient's g.u is {mine:.6g}: a finite difference cannot check it there", value,
                                where, reason="piecewise constant" if direction.kind == "flat" else "a jump or kink")
        detail = (f"{where}: g.u is {mine:.6g}, the forward's finite difference {fd:.6g} (abs error {error:.3g}, "
                  f"rel {error / max(abs(fd), 1e-300):.3g})")
        if worst is None or error > (worst.max_abs or 0.0):
            worst = ForwardCheck(value.reference, "differs", detail, value, where, error)
    return worst or ForwardCheck(value.reference, "same", "", value)


def _why(direction: Direction) -> str:
    steps = ", ".join(f"{q:.6g} at h={h:g}" for h, q in zip(direction.steps, direction.quotients, strict=True))
    if direction.kind == "flat":
        return (f"the forward is piecewise constant along it (f(x + hu) equals f(x - hu) exactly at every step: "
                f"v.Ju is {steps}), so its derivative is 0 almost everywhere")
    return f"the difference quotient does not settle ({steps}): the forward jumps or kinks within the steps"
