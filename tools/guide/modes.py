"""The guide's answer to "is `grad` always ones?" under Jacobians and forward mode, from a run of the opt-in
contexts `jacobian_loop`, `jacobian_pfor` and `forward_accumulator` on the straight-through estimator."""

from __future__ import annotations

import functools

from compat.checker import Cell, CheckReport, check
from tools.guide.run import cells, straight_through
from tools.guide.tables import upstream_text

JACOBIANS = ("jacobian_loop", "jacobian_pfor")
FORWARD = "forward_accumulator"
SCALAR, VECTOR = "weighted", "grad_ys"
"""A scalar target (`reduce_sum(y * w)`) and the output itself as the target (its Jacobian has one row per element)."""


@functools.cache
def modes_report() -> CheckReport:
    """`tf.custom_gradient` under the Jacobian and forward-mode contexts, two scenarios (a few seconds)."""
    variants = [f"custom_gradient@{context}" for context in (*JACOBIANS, FORWARD, "eager_tape")]
    return check([straight_through()], scenarios=[SCALAR, VECTOR], variants=variants)


def _calls(cell: Cell | None) -> list[str]:
    if cell is None or not cell.result.upstreams:
        return []
    return [upstream_text(call[0]) for call in cell.result.upstreams]


def _listed(calls: list[str]) -> str:
    return ", ".join(f"`{call}`" for call in calls)


def _times(count: int) -> str:
    return {1: "once", 2: "twice"}.get(count, f"{count} times")


def jacobians_and_forward_mode(report: CheckReport, spec: str = "ste") -> str:
    """What `tf.custom_gradient` receives under tape.jacobian (loop, pfor) and ForwardAccumulator."""
    by_key = cells(report, spec)
    tape = _calls(by_key.get((SCALAR, "custom_gradient@eager_tape")))
    loop = _calls(by_key.get((VECTOR, "custom_gradient@jacobian_loop")))
    pfor = _calls(by_key.get((VECTOR, "custom_gradient@jacobian_pfor")))
    scalar = {c: _calls(by_key.get((SCALAR, f"custom_gradient@{c}"))) for c in JACOBIANS}
    forward = {s: _calls(by_key.get((s, f"custom_gradient@{FORWARD}"))) for s in (SCALAR, VECTOR)}
    size = len(straight_through().example_inputs[0])
    extra = (f"; with pfor {_times(len(pfor))}, the first row replayed before the others (pfor traces your "
             "function once, so its Python runs once, and runs what it cannot vectorize, a `tf.numpy_function` "
             "such as gradcompat's probe, once per row, after the traced row ran on its own)") if pfor != loop else ""
    forward_values = sorted({call for calls in forward.values() for call in calls})
    alike = "in both scenarios" if len(forward_values) == 1 else f"in `{SCALAR}` and `{VECTOR}`"
    return (f"**Not under a Jacobian either, and not in forward mode.** `tape.jacobian(y, x)` (the `{VECTOR}` "
            f"scenario, y of {size} elements; opt-in contexts `jacobian_loop` and `jacobian_pfor`) calls your gradient "
            f"function once per element of y, each time with a one-hot row: {_listed(loop)} in a loop{extra}. "
            f"The Jacobian of a scalar (`{SCALAR}`) is the gradient: {_times(len(scalar['jacobian_loop']))} in a "
            f"loop and {_times(len(scalar['jacobian_pfor']))} with pfor, with the tape's upstream "
            f"{_listed(tape)}. `tf.autodiff.ForwardAccumulator` (`{FORWARD}`, one JVP per input element) calls it "
            f"once per JVP with an upstream of TensorFlow's own making, {_listed(forward_values)} {alike} (the tape "
            f"hands over {_listed(tape)} in `{SCALAR}`): a gradient function that reads its upstream's values does "
            "not see the downstream there.")
