"""Merge per-release compat-check JSON reports into one release × spec × scenario × dtype × variant matrix."""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from compat._version import __version__ as _VERSION
from compat.regular_files import UnreadableJson, read_json
from compat.releases.schema import SchemaMismatch, validate

MATRIX_SCHEMA_VERSION = 1
_RELEASE_IN_NAME = re.compile(r"tf-?(?P<release>[0-9]+\.[0-9]+|nightly)")
_DEFAULT_TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}
_SCHEMA_PATH = Path(__file__).resolve().parent.parent / "reports" / "check_report.schema.json"


def skip_record(release: str, reason: str) -> dict[str, Any]:
    """What a release that could not run writes instead of its report (`check-tf2.13.json` holds this)."""
    return {"tool": "compat-check", "release": release, "release_skipped": reason}


def load_report(path: str | Path) -> dict[str, Any]:
    """One release's JSON report (or skip record), checked against its schema, with `release` set from the
    report or the file name.

    Raises:
      ValueError: the file is not a compat-check JSON report, or breaks its schema; the message names the file,
        the JSON path and what is wrong, and says how to make a good one.
    """
    path = Path(path)
    remake = f"make one as a compat-check JSON report (JSON format, written to {path})"
    data = _read_json(path, remake)
    if not isinstance(data, dict) or data.get("tool") != "compat-check":
        raise ValueError(f"{path}: not a compat-check report (no \"tool\": \"compat-check\"); {remake}")
    try:
        if "release_skipped" in data:
            validate(data, SKIP_RECORD_SCHEMA)
        else:
            given = {key: data.pop(key) for key in ("release",) if key in data}
            validate(given, {"properties": {"release": _RELEASE}})
            validate(data, check_report_schema())
            data.update(given)
            _unique_cells(data)
    except SchemaMismatch as exc:
        raise ValueError(f"{path}: {exc}; this is not what compat-check {_VERSION} writes: {remake}") from None
    if "release" not in data:
        match = _RELEASE_IN_NAME.search(path.name)
        data["release"] = match["release"] if match else ".".join(str(data.get("tensorflow", "?")).split(".")[:2])
    return data


_RELEASE = {"type": "string", "pattern": "^[^\\s]+$", "description": "a release name such as \"2.12\""}
SKIP_RECORD_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "required": ["tool", "release", "release_skipped"],
    "properties": {"tool": {"const": "compat-check"}, "release": _RELEASE, "release_skipped": {"type": "string"}},
}
"""What `skip_record` writes (and nox, for a release that cannot be installed)."""


@functools.cache
def check_report_schema() -> dict[str, Any]:
    """`compat/reports/check_report.schema.json`, read without importing compat.reports (numpy)."""
    schema: dict[str, Any] = json.loads(_SCHEMA_PATH.read_text(encoding="utf-8"))
    return schema


def _read_json(path: Path, remake: str) -> Any:
    try:
        return read_json(path)
    except UnreadableJson as exc:
        raise ValueError(f"{path}: not a readable JSON report ({exc}); {remake}") from None


def _unique_cells(report: dict[str, Any]) -> None:
    """Raise SchemaMismatch if two cells are the same (spec, scenario, dtype, variant): one would hide the other."""
    seen: dict[tuple[str, str, str, str], int] = {}
    for index, cell in enumerate(report["cells"]):
        key = (cell["spec"], cell["scenario"], cell["dtype"], cell["variant"])
        if key in seen:
            raise SchemaMismatch(f"$.cells[{index}]", f"the same spec, scenario, dtype and variant as "
                                                      f"$.cells[{seen[key]}] ({', '.join(key)})")
        seen[key] = index


def distinct_releases(paths: Sequence[str | Path], reports: Sequence[dict[str, Any]]) -> None:
    """Raise ValueError naming both files if two reports are of the same release: the later would silently
    replace the earlier in every row."""
    first: dict[str, str | Path] = {}
    for path, report in zip(paths, reports, strict=True):
        release = report["release"]
        if release in first:
            raise ValueError(f"{first[release]} and {path} are both release {release}: pass one report per "
                             "release (a report's release is its \"release\" key, else tfX.Y in its file name, "
                             "else its TensorFlow version)")
        first[release] = path


def merge(reports: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The matrix document: releases (ran or skipped, with the reason), every row's per-release cells, the rows
    whose status or values change between the releases that ran, and a summary of what changed.

    A row is (spec, scenario, dtype, variant); a cell there holds the release's status, the upstream values its
    gradient function saw (first call), the input gradients and the difference kinds against the reference.
    Values are compared with the dtype's tolerances from the reports (numpy.isclose rules). Two reports of
    one release are a ValueError (`distinct_releases` names their files).
    """
    every = [r["release"] for r in reports]
    twice = sorted({name for name in every if every.count(name) > 1})
    if twice:
        raise ValueError(f"release {twice[0]} appears in {every.count(twice[0])} reports: merge one per release")
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
            "input_grads": cell.get("input_grads"), "message": cell.get("message", ""),
            "forward": {f["reference"]: f["status"] for f in cell.get("forward", [])}}


def _changes(cells: dict[str, dict[str, Any]], releases: list[str], tolerance: dict[str, Any]) -> list[dict[str, Any]]:
    """Each aspect (presence, status, difference kinds, calls, upstream, input_grads, forward: the cell against
    each reference that is the forward itself) that is not the same in every release that ran, with its value per
    release. `forward` is compared only where every release computed the same references (a report made with
    `--references=` has none)."""
    present = [r for r in releases if r in cells]
    if len(present) < len(releases):
        return [{"aspect": "presence", "releases": {r: r in cells for r in releases}}]
    changes = []
    for aspect in ("status", "kinds", "calls"):
        values = {r: cells[r][aspect] for r in releases}
        if len({json.dumps(v) for v in values.values()}) > 1:
            changes.append({"aspect": aspect, "releases": values})
    forward = {r: cells[r].get("forward", {}) for r in releases}
    if len({tuple(v) for v in forward.values()}) == 1 and len({json.dumps(v) for v in forward.values()}) > 1:
        changes.append({"aspect": "forward", "releases": forward})
    for aspect in ("upstream", "input_grads"):
        first = cells[releases[0]][aspect]
        if any(not close(first, cells[r][aspect], tolerance) for r in releases[1:]):
            changes.append({"aspect": aspect, "releases": {r: cells[r][aspect] for r in releases}})
    return changes


def close(a: Any, b: Any, tolerance: dict[str, Any]) -> bool:
    """Two JSON values equal, numbers within numpy.isclose(rtol, atol) and non-finite strings equal."""
    if isinstance(a, bool) or isinstance(b, bool) or not (isinstance(a, (int, float)) and isinstance(b, (int, float))):
        if isinstance(a, list) and isinstance(b, list):
            return len(a) == len(b) and all(close(x, y, tolerance) for x, y in zip(a, b, strict=True))
        if isinstance(a, dict) and isinstance(b, dict):
            return a.keys() == b.keys() and all(close(a[k], b[k], tolerance) for k in a)
        return bool(a == b)
    return math.isclose(a, b, rel_tol=0.0, abs_tol=0.0) or abs(a - b) <= tolerance["atol"] + tolerance["rtol"] * abs(b)
