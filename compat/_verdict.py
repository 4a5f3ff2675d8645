"""A check report's verdict line and counts from its cells' statuses, standard library only (merges use it too)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

CELL_STATUSES = ("same", "differs", "not_called", "unsupported", "error", "not_observable")


def verdict_line(unexpected: int, reference: str) -> str:
    """The one-line verdict shared by every format, from the count of unexpected cells."""
    if not unexpected:
        return f"OK: every native variant agrees with {reference}"
    noun = "difference" if unexpected == 1 else "differences"
    return f"FAIL: {unexpected} unexpected {noun} in native variants (cells that disagree with the reference)"


def status_counts(statuses: Iterable[str]) -> dict[str, int]:
    """Cells per status, every status present (zero included), in a fixed order."""
    counts = Counter(statuses)
    return {status: counts.get(status, 0) for status in CELL_STATUSES}


def summary_of(cells: Sequence[tuple[str, bool, bool]], skipped: int) -> dict[str, Any]:
    """The JSON report's `summary` from each cell's (status, native, unexpected)."""
    native = [status for status, is_native, _ in cells if is_native]
    cross = [status for status, is_native, _ in cells if not is_native]
    return {
        "cells": len(cells),
        "unexpected": sum(1 for _, _, unexpected in cells if unexpected),
        "skipped": skipped,
        "by_status": status_counts(status for status, _, _ in cells),
        "native": {"cells": len(native), "by_status": status_counts(native)},
        "cross": {"cells": len(cross), "by_status": status_counts(cross)},
    }
