"""Values as strict JSON: non-finite floats and differences, written and read back alike by every report."""

from __future__ import annotations

import math
from typing import Any

from compat.comparison import Difference, Location

NONFINITE: dict[str, float] = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
"""How a non-finite float is written: JSON has no NaN or infinity, so they become these strings."""


def number(value: float) -> float | str:
    """A float as JSON: itself if finite, else "NaN", "Infinity" or "-Infinity"."""
    value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value


def json_float(value: Any) -> float:
    """The float `number` wrote as `value`."""
    return NONFINITE[value] if isinstance(value, str) else float(value)


def difference_dict(difference: Difference) -> dict[str, Any]:
    """`kind`, `detail` (prefixed by where), `where`, `breaking`, then `max_abs`, `max_rel`, `index` if known."""
    data: dict[str, Any] = {**difference.as_dict(), "where": difference.where, "breaking": difference.breaking}
    if difference.max_abs is not None:
        data["max_abs"] = number(difference.max_abs)
    if difference.max_rel is not None:
        data["max_rel"] = number(difference.max_rel)
    if difference.index is not None:
        data["index"] = [int(i) for i in difference.index]
    return data


def difference_from_dict(data: dict[str, Any]) -> Difference:
    """The difference `difference_dict` wrote as `data`."""
    where = data["where"]
    return Difference(kind=data["kind"], location=Location.parse(where),
                      detail=data["detail"].removeprefix(f"{where}: "),
                      max_abs=json_float(data["max_abs"]) if "max_abs" in data else None,
                      max_rel=json_float(data["max_rel"]) if "max_rel" in data else None,
                      index=tuple(data["index"]) if "index" in data else None)
