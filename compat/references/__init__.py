"""References that are the forward itself: what a custom gradient changes against the forward's own derivative.

A reference is computed once per (spec, scenario, dtype) and every cell's input gradients are compared with it.
It never makes a cell unexpected: the difference is the information (a straight-through estimator differs
everywhere by design; a numerically stable rewrite should not differ at all). Names and descriptions import
without TensorFlow; the computations load lazily.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from compat.registry import check_names

if TYPE_CHECKING:
    from compat.downstream import Downstream
    from compat.references.base import ForwardValue
    from compat.spec import GradientSpec


@dataclasses.dataclass(frozen=True)
class Reference:
    """A registered reference: its name, what it computes, and `module:function` computing it."""

    name: str
    description: str
    compute: str


_REFERENCES = (
    Reference("autodiff", "TensorFlow's own gradient of the forward, with no custom gradient (an eager "
              "GradientTape, same inputs, dtype and downstream)", "compat.references.autodiff:autodiff"),
    Reference("finite_difference", "central differences of the forward in float64 along 3 seeded random directions "
              "u: v.Ju (v the upstream the scenario hands the op) against the custom gradient's g.u; "
              "`not_differentiable` where the forward is piecewise constant or jumps",
              "compat.references.finite_difference:finite_difference"),
)

REFERENCES: dict[str, Reference] = {reference.name: reference for reference in _REFERENCES}
"""Every reference by name, in report order."""

DEFAULT_REFERENCES: tuple[str, ...] = tuple(REFERENCES)
"""What `compat.check` and `compat-check` compute unless told otherwise (both are cheap: under 10% of a run)."""


def select_references(names: Sequence[str] | None) -> tuple[str, ...]:
    """Validated reference names in registry order; None means the default ones, [] none."""
    if names is None:
        return DEFAULT_REFERENCES
    check_names(names, REFERENCES, "reference", "references")
    return tuple(name for name in REFERENCES if name in names)


def compute(name: str, spec: GradientSpec, downstream: Downstream, dtype: str) -> ForwardValue:
    """The reference `name` for `spec` (already cast to the check's `dtype`) under `downstream`."""
    module_name, _, function = REFERENCES[name].compute.partition(":")
    computed: ForwardValue = getattr(importlib.import_module(module_name), function)(spec, downstream)
    return dataclasses.replace(computed, dtype=dtype)


__all__ = ["DEFAULT_REFERENCES", "REFERENCES", "Reference", "compute", "select_references"]
