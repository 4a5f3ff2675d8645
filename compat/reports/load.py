"""A CheckReport back from its JSON document, so a merged run renders in every format as the run itself does."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import numpy as np

from compat.json_values import NONFINITE, difference_from_dict, json_float
from compat.results import ReplicaRecord, Upstream, VariantResult

if TYPE_CHECKING:
    from compat.checker import Cell, CheckReport

_RESULT_STATUS = {"same": "ok", "differs": "ok"}
"""A cell's status -> its variant result's (a result that ran is `ok`; the cell says how it compares)."""


class SummarisedArray(ValueError):
    """The document holds an array summarised (more elements than max_array_elements): its values are gone."""


def report_from_dict(data: dict[str, Any]) -> CheckReport:
    """The CheckReport whose JSON rendering (`compat.reports.json_report.as_dict`) is `data`, for rendering again.

    Only what the JSON holds comes back: each variant's first call (the renderers show no other), arrays as the
    dtype they were received in (upstreams) or float64.

    Raises:
      SummarisedArray: an array was written as a summary; write the reports with max_array_elements=0.
    """
    from compat.checker import CheckReport, Skip, UnitTime
    from compat.sharding import Shard

    shard = data.get("shard")
    values = _forward_values(data.get("references"))
    return CheckReport(
        cells=tuple(_cell(cell, values) for cell in data["cells"]),
        skipped=tuple(Skip(s["spec"], s["scenario"], s["reason"]) for s in data["skipped"]),
        reference=data["reference"], specs=tuple(data["specs"]), scenarios=tuple(data["scenarios"]),
        dtypes=tuple(data["dtypes"]), variants=tuple(data["variants"]), tensorflow=data["tensorflow"],
        tolerances={dtype: {k: json_float(v) for k, v in t.items()} for dtype, t in data["tolerances"].items()},
        descriptions=dict(data.get("spec_descriptions", {})),
        scenario_descriptions=dict(data.get("scenario_descriptions", {})),
        units=tuple(UnitTime(u["spec"], u["dtype"], float(u["seconds"])) for u in data.get("units", [])),
        shard=Shard(shard["index"], shard["count"]) if shard else None, run=data.get("run"),
        references=tuple((data.get("references") or {}).get("names", ())))


def _forward_values(references: dict[str, Any] | None) -> dict[tuple[str, str, str, str], Any]:
    """(reference, spec, scenario, dtype) -> the ForwardValue the JSON holds (what the renderers read of it)."""
    from compat.references.base import ForwardValue

    found = {}
    for value in (references or {}).get("values", []):
        key = (value["reference"], value["spec"], value["scenario"], value["dtype"])
        found[key] = ForwardValue(value["reference"], value["spec"], value["scenario"], value["status"],
                                  value["message"], dtype=value["dtype"], reason=value.get("reason", ""))
    return found


def _cell(data: dict[str, Any], values: dict[tuple[str, str, str, str], Any]) -> Cell:
    from compat.checker import Cell
    from compat.references.base import ForwardCheck

    upstream = data["upstream"]
    result = VariantResult(
        spec=data["spec"], variant=data["variant"], mechanism=data["mechanism"], context=data["context"],
        status=cast(Any, _RESULT_STATUS.get(data["status"], data["status"])),
        input_grads=tuple(_array(g) for g in data["input_grads"] or ()),
        upstreams=() if upstream is None else (tuple(_upstream(u) for u in upstream),),
        calls=data["calls"], traces=data["traces"], message=data["message"], downstream=data["scenario"],
        input_grad_kinds=tuple(data["input_grad_kinds"] or ()), violations=tuple(data["violations"]),
        upstream_scale=data["upstream_scale"], replicas=tuple(_replica(r) for r in data["replicas"]),
        scaled_input_grads=tuple(_array(g) for g in data["scaled_input_grads"] or ()),
        global_batch=data["global_batch"])
    differences = tuple(difference_from_dict(d) for d in data["differences"])
    forward = tuple(ForwardCheck(f["reference"], f["status"], f["detail"],
                                 values[f["reference"], data["spec"], data["scenario"], data["dtype"]],
                                 f.get("where", ""), None if "max_abs" not in f else json_float(f["max_abs"]),
                                 f.get("reason", ""))
                    for f in data.get("forward", []))
    return Cell(data["spec"], data["scenario"], data["dtype"], data["variant"], data["native"], data["status"],
                differences, result, data["reference"], data["unexpected"], forward)


def _upstream(data: dict[str, Any]) -> Upstream:
    value = _array(data["value"])
    if value is not None and data["dtype"] is not None:
        value = value.astype(_dtype(data["dtype"]))
    shape, dense = data["static_shape"], data["dense_shape"]
    return Upstream(kind=data["kind"], dtype=data["dtype"], static_shape=None if shape is None else tuple(shape),
                    value=value, indices=_array(data["indices"]),
                    dense_shape=None if dense is None else tuple(dense))


def _replica(data: dict[str, Any]) -> ReplicaRecord:
    first = data["upstream"]
    call = () if first is None else tuple(_upstream(u) for u in first)
    return ReplicaRecord(replica=data["replica"], rows=tuple(data["rows"]), scaling=data["scaling"],
                         upstreams=(call,) * data["calls"],
                         input_grads=tuple(_array(g) for g in data["input_grads"] or ()))


def _array(data: Any) -> np.ndarray | None:
    if data is None:
        return None
    if isinstance(data, dict):
        raise SummarisedArray("an array of more than max_array_elements elements was written as a summary, so "
                              "its values cannot be shown again: write the reports with max_array_elements=0")
    values = _floats(data)
    return np.asarray(values)


def _floats(data: Any) -> Any:
    """Nested lists with JSON's "NaN" / "Infinity" strings turned back into floats."""
    if isinstance(data, list):
        return [_floats(item) for item in data]
    return NONFINITE[data] if isinstance(data, str) else data


def _dtype(name: str) -> np.dtype[Any]:
    try:
        return np.dtype(name)
    except TypeError:  # bfloat16: numpy knows it once ml_dtypes (TensorFlow's dependency) is imported
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, name))
