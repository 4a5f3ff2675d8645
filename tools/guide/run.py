"""The one check run the guide's tables and sentences are read from: a straight-through estimator and a
multi-output op with an integer output, float32, every scenario and variant."""

from __future__ import annotations

import functools

import numpy as np

from compat.catalogue import multi_output_int
from compat.checker import Cell, CheckReport, check
from compat.spec import GradientSpec

STE_INPUT = np.array([1.0, -2.0, 3.0], np.float32)


def straight_through() -> GradientSpec:
    """sign forward, identity gradient, on [1, -2, 3]: the gradient returns its upstream, so what it receives
    is what it passes on."""
    import tensorflow as tf

    return GradientSpec("ste", tf.sign, lambda inputs, outputs, upstreams: [tf.convert_to_tensor(upstreams[0])],
                        [STE_INPUT], op_type="Sign", description="sign forward, straight-through gradient")


GUIDE_OPT_IN = ("vectorized_map",)
"""Opt-in contexts the guide's run covers as well: cheap on its two specs, and where a migration surprises."""


@functools.cache
def guide_report() -> CheckReport:
    """The run (about 20 s on 2 busy cores), cached for the process: the default variants and those of
    `GUIDE_OPT_IN`."""
    from compat.mechanisms import MECHANISMS
    from compat.variants import VARIANTS

    variants = [*VARIANTS, *(f"{m}@{c}" for c in GUIDE_OPT_IN for m in MECHANISMS)]
    return check([straight_through(), multi_output_int()], variants=variants)


def cells(report: CheckReport, spec: str) -> dict[tuple[str, str], Cell]:
    """(scenario, variant) -> cell for one spec."""
    return {(c.scenario, c.variant): c for c in report.cells if c.spec == spec}
