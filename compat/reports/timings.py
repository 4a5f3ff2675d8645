"""A JSON report's wall times (per-unit seconds, elapsed time) zeroed, to compare two runs of the same work."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any


def without_timings(document: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a compat-check, compat-rewrite or compat-verify JSON report whose wall times are 0.

    The times are each unit's `seconds` (check and rewrite), `elapsed_s` (verify), and the `elapsed_s` of each
    compat-verify report a rewrite embeds under `verify`; every other field is what the run computed, kept as is.
    Example: `without_timings(json.loads(a)) == without_timings(json.loads(b))` for two runs of one check.
    """
    untimed = copy.deepcopy(dict(document))
    for unit in untimed.get("units", []):
        if "seconds" in unit:
            unit["seconds"] = 0
    if "elapsed_s" in untimed:
        untimed["elapsed_s"] = 0
    for embedded in (untimed.get("verify") or {}).values():
        if isinstance(embedded, dict) and "elapsed_s" in embedded:
            embedded["elapsed_s"] = 0
    return untimed
