"""What one side (original or rewritten) computed, and how a child process hands it to the parent: JSON + npz."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, Literal

import numpy as np

from compat.results import Upstream

FORWARD = "forward"
"""The pseudo-scenario holding an entry's forward outputs (the scenarios hold its input gradients)."""

ORIGINAL_CONTEXT = "v1_session"
"""The one context the original runs in, as legacy code expects: a fresh tf.Graph and a Session."""

AttemptStatus = Literal["ok", "error", "skipped"]
Calls = tuple[tuple[Upstream, ...], ...]


@dataclasses.dataclass(frozen=True, eq=False)
class Attempt:
    """One computation of an entry in one context: its forward outputs, or its input gradients in a scenario.

    `calls` holds, per run of an instrumented gradient function, the upstreams it received; None when no
    gradient function of this side could be instrumented (then the upstream is not observable).
    """

    status: AttemptStatus
    message: str = ""
    values: tuple[np.ndarray | None, ...] = ()
    calls: Calls | None = None


@dataclasses.dataclass(frozen=True, eq=False)
class SideResult:
    """Everything one side computed. `error` is set when the side failed as a whole (import, crash, timeout);
    `entry_errors` when one entry could not be built at all; `attempts[(entry, context, scenario)]`."""

    side: str
    error: str = ""
    tensorflow: str = ""
    scenarios: tuple[str, ...] = ()
    entry_errors: dict[str, str] = dataclasses.field(default_factory=dict)
    attempts: dict[tuple[str, str, str], Attempt] = dataclasses.field(default_factory=dict)


def result_paths(directory: str, side: str) -> tuple[str, str]:
    return os.path.join(directory, f"{side}.json"), os.path.join(directory, f"{side}.npz")


class _Arrays:
    """Arrays by key for the npz; bfloat16 is stored widened to float32 (npz cannot hold it) and narrowed back."""

    def __init__(self, stored: Any = None) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self.stored = stored

    def put(self, value: np.ndarray | None) -> dict[str, str] | None:
        if value is None:
            return None
        value = np.asarray(value)
        key = f"a{len(self.arrays)}"
        self.arrays[key] = value.astype(np.float32) if value.dtype.name == "bfloat16" else value
        return {"key": key, "dtype": value.dtype.name}

    def get(self, ref: dict[str, str] | None) -> np.ndarray | None:
        if ref is None:
            return None
        value = self.stored[ref["key"]]
        if ref["dtype"] == "bfloat16":
            import ml_dtypes

            value = value.astype(ml_dtypes.bfloat16)
        return value

    def need(self, ref: dict[str, str] | None) -> np.ndarray:
        value = self.get(ref)
        if value is None:
            raise ValueError("job.json names no array for an input; the parent writes one per input")
        return value


def _savez(path: str, arrays: dict[str, np.ndarray]) -> None:
    np.savez(path, **arrays)  # type: ignore[arg-type]  # numpy's stub types **kwds after the positional bool


def write_side(result: SideResult, directory: str) -> None:
    """Write `result` as <side>.npz then <side>.json (last, atomically: its presence means complete)."""
    arrays = _Arrays()
    attempts = [{"entry": entry, "context": context, "scenario": scenario, "status": attempt.status,
                 "message": attempt.message, "values": [arrays.put(v) for v in attempt.values],
                 "calls": None if attempt.calls is None else [[_upstream_doc(u, arrays) for u in call]
                                                               for call in attempt.calls]}
                for (entry, context, scenario), attempt in result.attempts.items()]
    json_path, npz_path = result_paths(directory, result.side)
    _savez(npz_path, arrays.arrays)
    document = {"side": result.side, "error": result.error, "tensorflow": result.tensorflow,
                "scenarios": list(result.scenarios), "entry_errors": result.entry_errors, "attempts": attempts}
    with open(json_path + ".tmp", "w", encoding="utf-8") as handle:
        json.dump(document, handle)
    os.replace(json_path + ".tmp", json_path)


def read_side(directory: str, side: str) -> SideResult | None:
    """The result a child wrote, or None when it wrote none (it crashed or was killed first)."""
    json_path, npz_path = result_paths(directory, side)
    if not os.path.exists(json_path):
        return None
    with open(json_path, encoding="utf-8") as handle:
        document = json.load(handle)
    with np.load(npz_path, allow_pickle=False) as stored:
        arrays = _Arrays(stored)
        attempts = {(a["entry"], a["context"], a["scenario"]): Attempt(
            status=a["status"], message=a["message"], values=tuple(arrays.get(v) for v in a["values"]),
            calls=None if a["calls"] is None else tuple(tuple(_upstream(u, arrays) for u in call)
                                                        for call in a["calls"]))
            for a in document["attempts"]}
    return SideResult(side=document["side"], error=document["error"], tensorflow=document["tensorflow"],
                      scenarios=tuple(document["scenarios"]), entry_errors=document["entry_errors"],
                      attempts=attempts)


def _upstream_doc(upstream: Upstream, arrays: _Arrays) -> dict[str, Any]:
    return {"kind": upstream.kind, "dtype": upstream.dtype,
            "static_shape": None if upstream.static_shape is None else list(upstream.static_shape),
            "value": arrays.put(upstream.value), "indices": arrays.put(upstream.indices),
            "dense_shape": None if upstream.dense_shape is None else list(upstream.dense_shape)}


def _upstream(doc: dict[str, Any], arrays: _Arrays) -> Upstream:
    return Upstream(kind=doc["kind"], dtype=doc["dtype"],
                    static_shape=None if doc["static_shape"] is None else tuple(doc["static_shape"]),
                    value=arrays.get(doc["value"]), indices=arrays.get(doc["indices"]),
                    dense_shape=None if doc["dense_shape"] is None else tuple(doc["dense_shape"]))


@dataclasses.dataclass(frozen=True, eq=False)
class Job:
    """What the parent asks of both children: the entries, their inputs, the scenarios and the contexts."""

    entries: dict[str, list[tuple[str, list[int]]]]
    inputs: dict[str, tuple[np.ndarray, ...]]
    scenarios: tuple[str, ...] | None
    contexts: tuple[str, ...]


def write_job(job: Job, directory: str) -> None:
    arrays = _Arrays()
    inputs = {entry: [arrays.put(value) for value in values] for entry, values in job.inputs.items()}
    _savez(os.path.join(directory, "inputs.npz"), arrays.arrays)
    document = {"entries": job.entries, "inputs": inputs, "contexts": list(job.contexts),
                "scenarios": None if job.scenarios is None else list(job.scenarios)}
    with open(os.path.join(directory, "job.json"), "w", encoding="utf-8") as handle:
        json.dump(document, handle)


def read_job(directory: str) -> Job:
    with open(os.path.join(directory, "job.json"), encoding="utf-8") as handle:
        document = json.load(handle)
    with np.load(os.path.join(directory, "inputs.npz"), allow_pickle=False) as stored:
        arrays = _Arrays(stored)
        inputs = {entry: tuple(arrays.need(ref) for ref in refs) for entry, refs in document["inputs"].items()}
    entries = {name: [(dtype, list(shape)) for dtype, shape in spec] for name, spec in document["entries"].items()}
    scenarios = document["scenarios"]
    return Job(entries=entries, inputs=inputs, scenarios=None if scenarios is None else tuple(scenarios), contexts=tuple(document["contexts"]))
