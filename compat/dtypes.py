"""The dtype axis: casting a spec's float inputs, and the comparison tolerances for each dtype."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import ml_dtypes
import numpy as np

from compat.spec import GradientSpec


@dataclasses.dataclass(frozen=True)
class Tolerance:
    """Two values agree when |a - b| <= atol + rtol * |b| (numpy.isclose), elementwise."""

    rtol: float
    atol: float


DTYPES: dict[str, np.dtype] = {
    "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64),
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
}
"""The dtype axis, default first."""

TOLERANCES: dict[str, Tolerance] = {
    # Mechanisms run the same arithmetic, so values agree far below these bounds; the bounds leave room for
    # graph rewrites (Grappler) that reorder a sum, which moves results by a few units in the last place.
    "float32": Tolerance(rtol=1e-5, atol=1e-6),
    "float64": Tolerance(rtol=1e-12, atol=1e-12),
    "float16": Tolerance(rtol=1e-3, atol=1e-3),
    "bfloat16": Tolerance(rtol=1e-2, atol=1e-2),
}


def tolerance_for(dtype: np.dtype | str) -> Tolerance:
    """The tolerance for a float dtype; exact comparison for everything else (ints, bools)."""
    name = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
    return TOLERANCES.get(name, Tolerance(rtol=0.0, atol=0.0))


def cast_spec(spec: GradientSpec, dtype: str) -> GradientSpec:
    """The spec with its floating-point example inputs cast to `dtype`; other inputs stay as they are."""
    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; choose from {list(DTYPES)}")
    target = DTYPES[dtype]
    if all(value.dtype == target or not _is_float(value.dtype) for value in spec.sources):
        return spec

    def cast(values: Sequence[np.ndarray]) -> list[np.ndarray]:
        return [value.astype(target) if _is_float(value.dtype) else value for value in values]

    return spec.with_inputs(cast(spec.example_inputs), cast(spec.variables))


def _is_float(dtype: np.dtype) -> bool:
    return np.issubdtype(dtype, np.floating) or dtype == DTYPES["bfloat16"]
