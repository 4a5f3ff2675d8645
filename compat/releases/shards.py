"""Join the shards of one run (`compat-check --shard=K/N` JSON reports) into the report the whole run writes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from compat._verdict import summary_of, verdict_line
from compat.errors import Error

Loaded = tuple[str | Path, dict[str, Any]]
"""A report's file and its loaded document (`compat.releases.load_report`)."""


class MissingShard(Error, ValueError):
    """Shard `index`/`count` of a run of `command` (of `release`, or None) is not among the reports `given`; the
    message says to run that shard with the same arguments, and a command line says it with its flags."""

    def __init__(self, index: int, count: int, command: str, given: str, release: str | None = None) -> None:
        self.index, self.count, self.command, self.given, self.release = index, count, command, given, release
        super().__init__(f"{self.what()}: run {command}'s shard {index}/{count} with the same arguments, as a "
                         "JSON report, and pass it too")

    def what(self) -> str:
        """`shard K/N [of release R] is missing (given: ...)`: the message without what to do."""
        release = f" of release {self.release}" if self.release is not None else ""
        return f"shard {self.index}/{self.count}{release} is missing (given: {self.given})"

    def __reduce__(self) -> tuple[type[MissingShard], tuple[int, int, str, str, str | None]]:
        return MissingShard, (self.index, self.count, self.command, self.given, self.release)


def join_shards(loaded: Sequence[Loaded]) -> list[Loaded]:
    """Every report as it is, except shards, which are joined per release into one whole report each (placed where
    the release's first shard was).

    Raises:
      ValueError: shards that cannot make one run: a missing or repeated shard, shards of different N, of
        another gradcompat or TensorFlow version or other flags, or units run twice or never; the message
        names the files and says what to do.
    """
    groups: dict[str, list[Loaded]] = {}
    for path, report in loaded:
        if "shard" in report:
            groups.setdefault(report["release"], []).append((path, report))
    joined: list[Loaded] = []
    for path, report in loaded:
        if "shard" not in report:
            joined.append((path, report))
        elif groups[report["release"]][0][0] == path:
            shards = groups[report["release"]]
            joined.append((", ".join(str(p) for p, _ in shards), join_run(shards)))
    return joined


def join_run(shards: Sequence[Loaded]) -> dict[str, Any]:
    """The whole run's report from all N shards of it, identical to what the run unsharded writes (but for each
    unit's seconds): cells and skips in report order, the summary, verdict and exit code of them all."""
    ordered = ordered_shards(shards)
    first = ordered[0][1]
    units = _units(ordered)
    cells: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for _, report in ordered:
        for cell in report["cells"]:
            cells.setdefault((cell["spec"], cell["dtype"]), []).append(cell)
    order = [(spec, dtype) for spec in first["specs"] for dtype in first["dtypes"]]
    merged_cells = [cell for key in order for cell in cells.get(key, [])]
    skipped = [skip for spec in first["specs"] for _, r in ordered for skip in r["skipped"] if skip["spec"] == spec]
    unexpected = sum(1 for cell in merged_cells if cell["unexpected"])
    natives = {cell["variant"] for cell in merged_cells if cell["native"]}
    whole = {key: value for key, value in first.items() if key not in ("shard", "release")}
    whole.update({
        "native_variants": [variant for variant in first["variants"] if variant in natives],
        "exit_code": 1 if unexpected else 0,
        "verdict": verdict_line(unexpected, first["reference"]),
        "summary": summary_of([(c["status"], c["native"], c["unexpected"]) for c in merged_cells], len(skipped)),
        "skipped": skipped,
        "units": [units[key] for key in order if key in units],
        "cells": merged_cells,
    })
    if "references" in first:  # each unit's reference values, in the whole run's unit order
        values: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for _, report in ordered:
            for value in report.get("references", {}).get("values", []):
                values.setdefault((value["spec"], value["dtype"]), []).append(value)
        whole["references"] = {**first["references"], "values": [v for key in order for v in values.get(key, [])]}
    if "release" in first:
        whole["release"] = first["release"]
    return whole


def ordered_shards(shards: Sequence[Loaded], command: str = "compat-check") -> list[Loaded]:
    """All N shards of one run in index order; ValueError naming the file whose N, version or flags differ from
    the first shard's, or a repeated or missing shard, and saying how to rerun it with `command`."""
    _same_run(shards, command)
    return _complete(shards, command)


_SAME = (("version", "gradcompat version", "run every shard with the same gradcompat"),
         ("tensorflow", "TensorFlow version", "run every shard in the same environment"),
         ("run", "flags", "run every shard with the same {flags}, only the shard differing"))
_CHECK_ARGUMENTS = "specs, scenarios, variants, dtypes, reference, loss and max_array_elements"
_OTHER = "arguments (paths too)"


def _same_run(shards: Sequence[Loaded], command: str) -> None:
    """Raise ValueError naming the file whose N, version or flags differ from the first shard's."""
    first_path, first = shards[0]
    for path, report in shards[1:]:
        if report["shard"]["count"] != first["shard"]["count"]:
            raise ValueError(f"{path} is shard {_name(report)} but {first_path} is shard {_name(first)}: shards of "
                             f"one run share N; rerun one of them as shard K/{first['shard']['count']}")
        for key, what, fix in _SAME:
            if report.get(key) != first.get(key):
                raise ValueError(f"{path}: its {what} ({_shown(key, report)}) is not {first_path}'s "
                                 f"({_shown(key, first)}): shards of other runs cannot be merged; "
                                 + fix.format(flags=_CHECK_ARGUMENTS if command == "compat-check" else _OTHER))


def _shown(key: str, report: dict[str, Any]) -> str:
    value = report.get(key)
    return str(value.get("flags")) if key == "run" and isinstance(value, dict) else str(value)


def _name(report: dict[str, Any]) -> str:
    return f"{report['shard']['index']}/{report['shard']['count']}"


def _complete(shards: Sequence[Loaded], command: str) -> list[Loaded]:
    """The shards in index order; ValueError naming a repeated or a missing shard."""
    count = shards[0][1]["shard"]["count"]
    by_index: dict[int, Loaded] = {}
    for path, report in shards:
        index = report["shard"]["index"]
        if index > count:
            raise ValueError(f"{path}: shard {_name(report)} does not exist: K must be at most N")
        if index in by_index:
            raise ValueError(f"{by_index[index][0]} and {path} are both shard {_name(report)}: pass each shard once")
        by_index[index] = (path, report)
    missing = [index for index in range(1, count + 1) if index not in by_index]
    if missing:
        given = ", ".join(str(path) for path, _ in shards)
        raise MissingShard(missing[0], count, command, given, shards[0][1].get("release"))
    return [by_index[index] for index in sorted(by_index)]


def _units(ordered: Sequence[Loaded]) -> dict[tuple[str, str], dict[str, Any]]:
    """Each unit's record by (spec, dtype); ValueError if a unit is in two shards or in none."""
    owner: dict[tuple[str, str], str | Path] = {}
    units: dict[tuple[str, str], dict[str, Any]] = {}
    for path, report in ordered:
        if "units" not in report:
            raise ValueError(f"{path}: a shard report without \"units\"; it was not written by a sharded run of this "
                             "gradcompat's compat-check: make it again with this gradcompat")
        for unit in report["units"]:
            key = (unit["spec"], unit["dtype"])
            if key in owner:
                raise ValueError(f"{owner[key]} and {path} both ran {' '.join(key)}: the shards split the units "
                                 "differently; give every shard the same durations file (or none)")
            owner[key], units[key] = path, unit
    first = ordered[0][1]
    for spec in first["specs"]:
        for dtype in first["dtypes"]:
            if (spec, dtype) not in units:
                raise ValueError(f"no shard ran {spec} {dtype} (given: {', '.join(str(p) for p, _ in ordered)}): "
                                 "the shards split the units differently; give every shard the same "
                                 "durations file (or none)")
    return units
