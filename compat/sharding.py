"""`--shard=K/N`: a deterministic split of the work units, balanced by recorded durations (stdlib only)."""

from __future__ import annotations

import dataclasses
import hashlib
import heapq
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from compat.regular_files import UnreadableJson, read_json

_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


@dataclasses.dataclass(frozen=True)
class Shard:
    """Shard `index` (1-based) of `count`: the units `split` gives it."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str, flag: str = "shard") -> Shard:
    """`"K/N"` as a Shard; ValueError naming `flag` and saying what a good value is."""
    match = _SHARD.match(text)
    if match is None:
        raise ValueError(f"{flag}={text}: give K/N, shard K (1-based) of N, e.g. {flag}=1/3")
    index, count = int(match[1]), int(match[2])
    if count < 1 or not 1 <= index <= count:
        raise ValueError(f"{flag}={text}: K must be between 1 and N (N >= 1), e.g. {flag}=1/{max(count, 1)}")
    return Shard(index, count)


def split(labels: Sequence[str], count: int, durations: Mapping[str, float] | None = None) -> list[list[int]]:
    """The units (indices into `labels`) of each of `count` shards, each shard's in unit order.

    With `durations` (label -> seconds, from an earlier run), longest unit first onto the least loaded shard
    (ties: the lower shard); a unit with no recorded duration counts as the mean of the recorded ones (1 if
    none). Without, unit i goes to shard i mod count. The same labels and durations give the same split in
    every process, so each shard computes its own part without talking to the others.
    """
    if not durations:
        return [list(range(shard, len(labels), count)) for shard in range(count)]
    known = [durations[label] for label in labels if label in durations]
    default = sum(known) / len(known) if known else 1.0
    weights = [max(0.0, float(durations.get(label, default))) for label in labels]
    order = sorted(range(len(labels)), key=lambda unit: (-weights[unit], unit))
    loads = [(0.0, shard) for shard in range(count)]
    shards: list[list[int]] = [[] for _ in range(count)]
    for unit in order:
        load, shard = heapq.heappop(loads)
        shards[shard].append(unit)
        heapq.heappush(loads, (load + weights[unit], shard))
    return [sorted(units) for units in shards]


def unit_label(spec: str, dtype: str) -> str:
    """How a unit is named in `durations` and in messages."""
    return f"{spec} {dtype}"


def load_durations(path: str | Path, flag: str = "durations", command: str = "compat-check") -> dict[str, float]:
    """unit label -> seconds from a JSON report's `units` (a merged or a shard's report too): compat-check's
    (spec, dtype) units, compat-rewrite's files, compat-verify's contexts.

    Raises:
      ValueError: the file cannot be read or records no durations; the message names the file and `flag`, and
        says to give a report `command` wrote.
    """
    try:
        data = read_json(path)
    except UnreadableJson as exc:
        raise ValueError(f"{flag}={path}: not a readable JSON report ({exc}); give a report written by "
                         f"{command} in its JSON format") from None
    units = data.get("units") if isinstance(data, dict) else None
    if not isinstance(units, list) or not all(_is_unit(unit) for unit in units):
        raise ValueError(f"{flag}={path}: no unit durations in it (\"units\": [{{spec, dtype, seconds}}]); give a "
                         f"JSON report written by this {command} (its JSON format, saved to a file)")
    return {_label(unit): float(unit["seconds"]) for unit in units}


def _label(unit: dict[str, Any]) -> str:
    """A compat-check unit's label, or the file (or context) of a compat-rewrite (compat-verify) report's unit."""
    if "spec" in unit:
        return unit_label(unit["spec"], unit["dtype"])
    return str(unit.get("file", unit.get("context")))


def _is_unit(unit: Any) -> bool:
    named = isinstance(unit, dict) and (
        (isinstance(unit.get("spec"), str) and isinstance(unit.get("dtype"), str))
        or isinstance(unit.get("file"), str) or isinstance(unit.get("context"), str))
    return (named and isinstance(unit.get("seconds"), (int, float))
            and not isinstance(unit.get("seconds"), bool))


def fingerprint(flags: Mapping[str, Any]) -> str:
    """A short hash of the flags that shape a report's cells: equal flags, equal fingerprint."""
    text = json.dumps(dict(flags), sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
