"""Merge per-release compat-check JSON reports into one release × spec × scenario × dtype × variant matrix."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

MATRIX_SCHEMA_VERSION = 1
_RELEASE_IN_NAME = re.compile(r"tf-?(?P<release>[0-9]+\.[0-9]+|nightly)")
_DEFAULT_TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}


def skip_record(release: str, reason: str) -> dict[str, Any]:
    """What a release that could not run writes instead of its report (`check-tf2.13.json` holds this)."""
    return {"tool": "compat-check", "release": release, "release_skipped": reason}


def load_report(path: str | Path) -> dict[str, Any]:
    """One release's JSON report (or skip record), with `release` set from the report or the file name.

    Raises:
      ValueError: the file is not a compat-check JSON report; the message names it and says how to make one.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a readable JSON report ({exc}); make one with "
                         f"`compat-check --format=json --output={path}`") from None
    if not isinstance(data, dict) or data.get("tool") != "compat-check":
        raise ValueError(f"{path}: not a compat-check report (no \"tool\": \"compat-check\"); make one with "
                         f"`compat-check --format=json --output={path}`")
    if "release" not in data:
        match = _RELEASE_IN_NAME.search(path.name)
        data["release"] = match["release"] if match else ".".join(str(data.get("tensorflow", "?")).split(".")[:2])
    return data


def merge(reports: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The matrix document: releases (ran or skipped, with the reason), every row's per-release cells, the rows
    whose status or values change between the releases that ran, and a summary of what changed.

    A row is (spec, scenario, dtype, variant); a cell there holds the release's status, the upstream values its
    gradient function saw (first call), the input gradients and the difference kinds against the reference.
    Values are compared with the dtype's tolerances from the reports (numpy.isclose rules).
    """
    ran = [r for r in reports if "release_skipped" not in r]
    releases = [{"release": r["release"], "tensorflow": r.get("tensorflow"),
                 "status": "skipped" if "release_skipped" in r else "ran", "reason": r.get("release_skipped", ""),
                 "exit_code": r.get("exit_code"), "verdict": r.get("verdict", "")} for r in reports]
    tolerances = {dtype: tol for r in ran for dtype, tol in r.get("tolerances", {}).items()}
    rows: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for report in ran:
        for cell in report.get("cells", []):
            key = (cell["spec"], cell["scenario"], cell["dtype"], cell["variant"])
            row = rows.setdefault(key, {"spec": key[0], "scenario": key[1], "dtype": key[2], "variant": key[3],
                                        "native": cell.get("native", False), "cells": {}})
            row["cells"][report["release"]] = _cell(cell)
    names = [r["release"] for r in ran]
    for row in rows.values():
        row["changes"] = _changes(row["cells"], names, tolerances.get(row["dtype"], _DEFAULT_TOLERANCE))
        row["changed"] = bool(row["changes"])
    changed = [row for row in rows.values() if row["changed"]]
    by_aspect: dict[str, int] = {}
    for row in changed:
        for aspect in dict.fromkeys(c["aspect"] for c in row["changes"]):
            by_aspect[aspect] = by_aspect.get(aspect, 0) + 1
    return {
        "tool": "compat-matrix",
        "schema_version": MATRIX_SCHEMA_VERSION,
        "releases": releases,
        "specs": list(dict.fromkeys(k[0] for k in rows)),
        "scenarios": list(dict.fromkeys(k[1] for k in rows)),
        "dtypes": list(dict.fromkeys(k[2] for k in rows)),
        "variants": list(dict.fromkeys(k[3] for k in rows)),
        "summary": {"releases_ran": len(ran), "releases_skipped": len(reports) - len(ran), "rows": len(rows),
                    "changed": len(changed), "changed_by_aspect": by_aspect,
                    "changed_specs": sorted({row["spec"] for row in changed})},
        "rows": list(rows.values()),
    }


def _cell(cell: dict[str, Any]) -> dict[str, Any]:
    return {"status": cell["status"], "unexpected": cell.get("unexpected", False),
            "kinds": sorted({d["kind"] for d in cell.get("differences", [])}),
            "calls": cell.get("calls"), "upstream": cell.get("upstream"),
            "input_grads": cell.get("input_grads"), "message": cell.get("message", "")}


def _changes(cells: dict[str, dict[str, Any]], releases: list[str], tolerance: dict[str, Any]) -> list[dict[str, Any]]:
    """Each aspect (presence, status, difference kinds, calls, upstream, input_grads) that is not the same in
    every release that ran, with its value per release."""
    present = [r for r in releases if r in cells]
    if len(present) < len(releases):
        return [{"aspect": "presence", "releases": {r: r in cells for r in releases}}]
    changes = []
    for aspect in ("status", "kinds", "calls"):
        values = {r: cells[r][aspect] for r in releases}
        if len({json.dumps(v) for v in values.values()}) > 1:
            changes.append({"aspect": aspect, "releases": values})
    for aspect in ("upstream", "input_grads"):
        first = cells[releases[0]][aspect]
        if any(not close(first, cells[r][aspect], tolerance) for r in releases[1:]):
            changes.append({"aspect": aspect, "releases": {r: cells[r][aspect] for r in releases}})
    return changes


def close(a: Any, b: Any, tolerance: dict[str, Any]) -> bool:
    """Two JSON values equal, numbers within numpy.isclose(rtol, atol) and non-finite strings equal."""
    if isinstance(a, bool) or isinstance(b, bool) or not (isinstance(a, (int, float)) and isinstance(b, (int, float))):
        if isinstance(a, list) and isinstance(b, list):
            return len(a) == len(b) and all(close(x, y, tolerance) for x, y in zip(a, b))
        if isinstance(a, dict) and isinstance(b, dict):
            return a.keys() == b.keys() and all(close(a[k], b[k], tolerance) for k in a)
        return bool(a == b)
    return math.isclose(a, b, rel_tol=0.0, abs_tol=0.0) or abs(a - b) <= tolerance["atol"] + tolerance["rtol"] * abs(b)
