"""What one side (original or rewritten) computed, and how a child process hands it to the parent: JSON + npz."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, Literal

import numpy as np

from compat.results import Upstream
from compat.verify._entries import Constant, InputSpec

FORWARD = "forward"
"""The pseudo-scenario holding an entry's forward outputs (the scenarios hold its input gradients)."""

ORIGINAL_CONTEXT = "v1_session"
"""The one context the original runs in, as legacy code expects: a fresh tf.Graph and a Session."""

AttemptStatus = Literal["ok", "error", "skipped"]
Calls = tuple[tuple[Upstream, ...], ...]


@dataclasses.dataclass(frozen=True, eq=False)
class Attempt:
    """One computation of an entry in one context: its forward outputs, or its gradients in a scenario.

    `values` are the forward outputs, or the gradients of the inputs followed by those of the tf.Variables the
    entry created or read, named in `variable_names`. `calls` holds, per run of an instrumented gradient
    function, the upstreams it received; None when no gradient function of this side could be instrumented
    (then the upstream is not observable). `refused` is set when TensorFlow refused the combination (no
    gradient defined, not implemented) rather than the code failing; `died` when the process computing it died.
    """

    status: AttemptStatus
    message: str = ""
    values: tuple[np.ndarray | None, ...] = ()
    calls: Calls | None = None
    variable_names: tuple[str, ...] = ()
    refused: bool = False
    died: bool = False
    """The process computing it died (a TensorFlow abort, os._exit): nothing can be said of this cell."""


@dataclasses.dataclass(frozen=True, eq=False)
class SideResult:
    """Everything one side computed. `error` is set when the side failed as a whole (import, crash, timeout);
    `entry_errors` when one entry could not be built at all; `attempts[(entry, context, scenario)]`;
    `notes[entry]`: what the reader of a cell must know (e.g. the forward is random)."""

    side: str
    error: str = ""
    tensorflow: str = ""
    scenarios: tuple[str, ...] = ()
    entry_errors: dict[str, str] = dataclasses.field(default_factory=dict)
    attempts: dict[tuple[str, str, str], Attempt] = dataclasses.field(default_factory=dict)
    notes: dict[str, str] = dataclasses.field(default_factory=dict)
    split: bool = False
    """Set by a unit whose module built ops in the default graph while imported: its scenarios must each run
    in a process of their own, in that graph, as the program would."""


def result_paths(directory: str, stem: str) -> tuple[str, str]:
    return os.path.join(directory, f"{stem}.json"), os.path.join(directory, f"{stem}.npz")


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


def _savez(path: str, arrays: dict[str, np.ndarray]) -> None:
    np.savez(path, **arrays)  # type: ignore[arg-type]  # numpy's stub types **kwds after the positional bool


def write_side(result: SideResult, directory: str, stem: str | None = None) -> None:
    """Write `result` as <stem>.npz then <stem>.json (last, atomically: its presence means complete); the stem
    is the side's name unless given."""
    arrays = _Arrays()
    attempts = [{"entry": entry, "context": context, "scenario": scenario, "status": attempt.status,
                 "message": attempt.message, "values": [arrays.put(v) for v in attempt.values],
                 "variable_names": list(attempt.variable_names), "refused": attempt.refused, "died": attempt.died,
                 "calls": None if attempt.calls is None else [[_upstream_doc(u, arrays) for u in call]
                                                               for call in attempt.calls]}
                for (entry, context, scenario), attempt in result.attempts.items()]
    json_path, npz_path = result_paths(directory, stem or result.side)
    _savez(npz_path, arrays.arrays)
    document = {"side": result.side, "error": result.error, "tensorflow": result.tensorflow,
                "scenarios": list(result.scenarios), "entry_errors": result.entry_errors, "attempts": attempts,
                "notes": result.notes, "split": result.split}
    _write_json(json_path, document)


def read_side(directory: str, stem: str) -> SideResult | None:
    """The result a child wrote as <stem>, or None when it wrote none (it crashed or was killed first)."""
    json_path, npz_path = result_paths(directory, stem)
    if not os.path.exists(json_path):
        return None
    with open(json_path, encoding="utf-8") as handle:
        document = json.load(handle)
    with np.load(npz_path, allow_pickle=False) as stored:
        arrays = _Arrays(stored)
        attempts = {(a["entry"], a["context"], a["scenario"]): Attempt(
            status=a["status"], message=a["message"], values=tuple(arrays.get(v) for v in a["values"]),
            variable_names=tuple(a["variable_names"]), refused=a["refused"], died=a["died"],
            calls=None if a["calls"] is None else tuple(tuple(_upstream(u, arrays) for u in call)
                                                        for call in a["calls"]))
            for a in document["attempts"]}
    return SideResult(side=document["side"], error=document["error"], tensorflow=document["tensorflow"],
                      scenarios=tuple(document["scenarios"]), entry_errors=document["entry_errors"],
                      attempts=attempts, notes=document["notes"], split=document["split"])


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


PlannedInput = tuple[str, "list[int] | None"] | Constant
"""(dtype name, shape) of a tensor argument, a shape of None to be inferred by the original side (see
`Job.entries`); or a Constant argument."""


def _input_doc(item: PlannedInput) -> Any:
    return {"constant": item.value} if isinstance(item, Constant) else [item[0], item[1]]


def _input_of(doc: Any) -> Any:
    if isinstance(doc, dict):
        return Constant(doc["constant"])
    return doc[0], None if doc[1] is None else list(doc[1])


@dataclasses.dataclass(frozen=True, eq=False)
class Job:
    """What the parent asks of both children: the entries, the scenarios and the contexts.

    `entries[name]` is one (dtype, shape) per input; a shape of None means "infer it": the original side tries
    a small shape of each rank and writes what it chose into resolved.json, which the rewritten side reads.
    `origins[name]` says where the entry came from (declared, --entries, inferred from a Defun ...).
    """

    entries: dict[str, list[PlannedInput]]
    scenarios: tuple[str, ...] | None
    contexts: tuple[str, ...]
    origins: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def needs_inference(self) -> bool:
        return any(isinstance(item, tuple) and item[1] is None for inputs in self.entries.values() for item in inputs)


def write_job(job: Job, directory: str) -> None:
    entries = {name: [_input_doc(item) for item in inputs] for name, inputs in job.entries.items()}
    document = {"entries": entries, "origins": job.origins, "contexts": list(job.contexts),
                "scenarios": None if job.scenarios is None else list(job.scenarios)}
    _write_json(os.path.join(directory, "job.json"), document)


def read_job(directory: str) -> Job:
    with open(os.path.join(directory, "job.json"), encoding="utf-8") as handle:
        document = json.load(handle)
    entries = {name: [_input_of(item) for item in inputs] for name, inputs in document["entries"].items()}
    scenarios = document["scenarios"]
    return Job(entries=entries, scenarios=None if scenarios is None else tuple(scenarios),
               contexts=tuple(document["contexts"]), origins=document["origins"])


@dataclasses.dataclass(frozen=True)
class Resolved:
    """The entries with every shape known (`inputs`), how each was chosen (`notes`), and the entries whose
    inputs could not be inferred (`unresolved`: name -> why, and what to declare instead)."""

    inputs: dict[str, list[InputSpec]]
    notes: dict[str, str] = dataclasses.field(default_factory=dict)
    unresolved: dict[str, str] = dataclasses.field(default_factory=dict)


RESOLVED_FILE = "resolved.json"


def write_resolved(resolved: Resolved, directory: str) -> None:
    inputs = {name: [_input_doc(item) for item in spec] for name, spec in resolved.inputs.items()}
    document = {"inputs": inputs, "notes": resolved.notes, "unresolved": resolved.unresolved}
    _write_json(os.path.join(directory, RESOLVED_FILE), document)


def read_resolved(directory: str) -> Resolved | None:
    """The resolved entries, or None when they are not written (yet)."""
    try:
        with open(os.path.join(directory, RESOLVED_FILE), encoding="utf-8") as handle:
            document = json.load(handle)
    except FileNotFoundError:
        return None
    inputs = {name: [_input_of(item) for item in spec] for name, spec in document["inputs"].items()}
    return Resolved(inputs, document["notes"], document["unresolved"])


def _write_json(path: str, document: Any) -> None:
    """Atomically: a reader polling for `path` never sees half of it."""
    with open(path + ".tmp", "w", encoding="utf-8") as handle:
        json.dump(document, handle)
    os.replace(path + ".tmp", path)
