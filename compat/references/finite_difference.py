"""The `finite_difference` reference: central differences of the forward's loss in float64 along seeded directions.

As JAX's `check_grads` and torch's `gradcheck` fast mode do, the custom gradient is checked by a directional
derivative, v.Ju: the forward (the spec's model) is evaluated at x + hu and x - hu for a seeded random unit
direction u over every floating-point input and variable, Ju = (f(x + hu) - f(x - hu)) / 2h, and v is the upstream
the downstream hands the op (TensorFlow's autodiff of the downstream alone at f(x), its grad_ys included); v.Ju is
compared with g.u, g being the cell's input gradients. Two steps tell a smooth forward (the quotients settle)
from a piecewise-constant one (Ju exactly zero at both: sign, round) and from a jump or kink within the steps
(they do not settle); those are `not_differentiable` wherever the custom gradient says otherwise, never guessed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from compat.composite import is_composite
from compat.downstream import Downstream
from compat.dtypes import cast_spec
from compat.exceptions import describe_exception
from compat.mechanisms.base import applied
from compat.probe import UserCodeError, user_exception
from compat.references.autodiff import ForwardProbe
from compat.references.base import Direction, DirectionKind, ForwardValue
from compat.spec import GradientSpec

SEED = 20261204
DIRECTIONS = 3
STEPS = (1e-3, 1e-5)
"""Steps h, relative to the inputs' root mean square (at least 1): the quotient at the last one is the derivative."""
SETTLED = 1e-4
"""Quotients at the two steps settle when they agree to this relative tolerance (a smooth forward's truncation
error at h = 1e-3 is about 1e-7 of its third derivative; a jump crossed by the larger step moves it 100-fold)."""


def finite_difference(spec: GradientSpec, downstream: Downstream) -> ForwardValue:
    """The directional derivatives v.Ju of `spec`'s forward under `downstream`, in float64."""
    common: dict[str, Any] = dict(reference="finite_difference", spec=spec.name, scenario=downstream.name)
    if downstream.order != 1:
        return ForwardValue(status="not_applicable", message="a second-order cell's gradient is the gradient of "
                            "a gradient, not of the forward's loss: finite differences of the forward do not apply",
                            reason="second order", **common)
    wide = cast_spec(spec, "float64")
    moving = [_is_float(value) for value in wide.sources]
    if not any(moving):
        return ForwardValue(status="not_applicable", message="no floating-point input or variable to move along",
                            reason="no float input", **common)
    probe = ForwardProbe(wide, "finite_difference")
    try:
        forward = _forward(probe, wide)
        v = _upstream(forward, wide.sources, downstream)
        directions = tuple(_direction(forward, v, wide.sources, u) for u in _directions(wide.sources, moving))
    except UserCodeError as exc:
        return ForwardValue(status="error", message=str(exc), **common)
    except Exception as exc:  # noqa: BLE001 - the forward or loss failing in float64 is the reference's failure
        if not user_exception(exc):
            raise
        return ForwardValue(status="error", message=f"{probe.where}: the forward failed in float64: "
                            f"{describe_exception(exc)}", **common)
    return ForwardValue(status="ok", directions=directions, **common)


def _is_float(value: np.ndarray) -> bool:
    return value.dtype.kind == "f"


Forward = Callable[[Sequence[np.ndarray]], tuple[Any, ...]]


def _forward(probe: ForwardProbe, spec: GradientSpec) -> Forward:
    """The model's outputs (tensors) at the given sources, eagerly."""
    probe.start_build()
    op = applied(probe.plain_forward, spec)
    return lambda sources: tuple(op(*(tf.constant(np.asarray(value)) for value in sources)))


def _upstream(forward: Forward, sources: Sequence[np.ndarray], downstream: Downstream) -> list[np.ndarray | None]:
    """v = d(loss)/d(outputs) at the example inputs, by TensorFlow's autodiff of the downstream alone (its grad_ys
    included): what a custom gradient receives, so only the forward is differenced (v.Ju, as torch's gradcheck
    fast mode). A downstream that stops the gradient gives v = None: the loss moves, no gradient flows."""
    outputs = forward(sources)
    with tf.GradientTape() as tape:
        tape.watch([output for output in outputs if output.dtype.is_floating])  # others: no gradient, a warning
        target = downstream.loss(*outputs)
    seed = downstream.output_gradients(target) if downstream.output_gradients is not None else None
    grads = tape.gradient(target, list(outputs), output_gradients=seed,
                          unconnected_gradients=tf.UnconnectedGradients.NONE)
    return [None if grad is None or not outputs[i].dtype.is_floating
            else np.asarray(tf.convert_to_tensor(grad).numpy(), np.float64) for i, grad in enumerate(grads)]


def _directions(sources: Sequence[np.ndarray], moving: Sequence[bool]) -> list[tuple[np.ndarray | None, ...]]:
    """DIRECTIONS seeded unit directions over the floating-point sources (None for the others)."""
    rng = np.random.default_rng(SEED)
    found = []
    for _ in range(DIRECTIONS):
        parts = [rng.standard_normal(value.shape) if move else None
                 for value, move in zip(sources, moving, strict=True)]
        norm = np.sqrt(sum(float(np.sum(part**2)) for part in parts if part is not None)) or 1.0
        found.append(tuple(None if part is None else part / norm for part in parts))
    return found


def _direction(forward: Forward, v: Sequence[np.ndarray | None], sources: Sequence[np.ndarray],
               u: tuple[np.ndarray | None, ...]) -> Direction:
    values = [np.asarray(value) for value in sources if _is_float(value) and value.size]
    scale = max(1.0, float(np.sqrt(np.mean(np.concatenate([x.ravel() for x in values]) ** 2)))) if values else 1.0
    steps = tuple(step * scale for step in STEPS)
    quotients, flat = [], True
    for h in steps:
        ahead, behind = forward(_moved(sources, u, h)), forward(_moved(sources, u, -h))
        total = 0.0
        for weight, plus, minus in zip(v, ahead, behind, strict=True):
            if weight is None:
                continue
            ju = (np.asarray(plus.numpy(), np.float64) - np.asarray(minus.numpy(), np.float64)) / (2 * h)
            flat = flat and not np.any(ju)
            total += float(np.sum(weight * ju))
        quotients.append(total)
    kind: DirectionKind = "flat" if flat and any(weight is not None for weight in v) else _kind(quotients)
    return Direction(u, steps, tuple(quotients), kind)


def _moved(sources: Sequence[np.ndarray], u: Sequence[np.ndarray | None], h: float) -> list[np.ndarray]:
    """The sources moved by h * u (a ragged or sparse input keeps its structure: only its values move)."""
    moved = []
    for value, part in zip(sources, u, strict=True):
        if part is None:
            moved.append(value)
            continue
        shifted = np.asarray(value, np.float64) + h * part
        moved.append(_like(value, shifted))
    return moved


def _like(value: np.ndarray, shifted: np.ndarray) -> np.ndarray:
    if is_composite(value):
        copy = value.copy()
        copy[...] = shifted
        return copy
    return shifted


def _kind(quotients: Sequence[float]) -> DirectionKind:
    low, high = quotients[0], quotients[-1]
    if not (np.isfinite(low) and np.isfinite(high)) or abs(low - high) > SETTLED * (abs(low) + abs(high)) + 1e-12:
        return "unsettled"
    return "smooth"
