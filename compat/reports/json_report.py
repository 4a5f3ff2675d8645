"""JSON: the whole check report as one document, validated by `check_report.schema.json`."""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from compat._verdict import status_counts as _status_counts
from compat._verdict import summary_of, verdict_line
from compat._version import __version__
from compat.json_values import difference_dict, number
from compat.reports.view import FULL, View

if TYPE_CHECKING:
    from compat.checker import Cell, CheckReport
    from compat.references.base import ForwardCheck, ForwardValue
    from compat.results import ReplicaRecord, Upstream

SCHEMA_PATH = Path(__file__).with_name("check_report.schema.json")
SCHEMA_VERSION = 2
DEFAULT_MAX_ARRAY_ELEMENTS = 1000
"""Arrays with more elements are summarised (shape, dtype, min/max/mean, first values, sha256), not embedded:
a report of a 2,000,000-element input would otherwise take gigabytes. `--max_array_elements=0` embeds all."""
_FIRST_VALUES = 10


def as_dict(report: CheckReport, max_array_elements: int = DEFAULT_MAX_ARRAY_ELEMENTS) -> dict[str, Any]:
    """The report as plain JSON values; the contract is `check_report.schema.json` (schema_version 2).

    Top level, in this order:
      tool, version: "compat-check" and the gradcompat version; schema_version: 1.
      tensorflow: the TensorFlow version that ran the check.
      run (compat-check): {flags: the flags that shaped the cells, fingerprint: their hash}.
      shard (compat-check --shard=K/N only): {index: K, count: N}; the report holds that shard's units only.
      reference: the variant every cell is compared with (a cell's own `reference` can be a fallback).
      tolerances: dtype -> {rtol, atol}, numpy.isclose bounds used to compare values.
      specs, scenarios, dtypes, variants: the axes, in run order; native_variants: the subset used as documented.
      spec_descriptions: spec name -> its description (specs without one are absent);
      scenario_descriptions: scenario name -> what its downstream does.
      exit_code: 0 when no native variant disagrees unexpectedly, 1 otherwise; verdict: the one-line verdict.
      summary: {cells, unexpected, skipped, by_status, native: {cells, by_status}, cross: {cells, by_status}},
        every by_status holding all five statuses (zero included).
      skipped: [{spec, scenario, reason}] scenarios that do not apply to a spec.
      units: [{spec, dtype, seconds}] the units checked, in report order, with how long each took.
      cells: one object per cell, in run order (spec, dtype, scenario, variant):
        spec, scenario, dtype, variant, mechanism, context, native, reference,
        status: same | differs | not_called | unsupported | error; unexpected: a native, breaking difference;
        differences: [{kind, detail, where, breaking, max_abs?, max_rel?, index?}] (optional keys only if known);
        violations: how the gradient function broke its contract (wrong dtype or shape), TensorFlow's
          reaction being the cell's status;
        calls, traces: how often the gradient function ran and was built; message: why it did not run ("" if ok);
        upstream: null if the gradient function never ran, else one object per forward output for its first
          call: {kind: none|dense|indexed_slices, dtype, static_shape (list with null for unknown dimensions,
          or null for unknown rank), value, indices, dense_shape};
        input_grads: null when TensorFlow produced none, else one entry per input (nested lists, or null);
        input_grad_kinds: the form TensorFlow returned each in (none, dense, indexed_slices; dense values above);
        forward: [{reference, status, detail, where?, max_abs?}] the cell's gradient against each reference that is
          the forward itself (same | differs | not_differentiable | not_applicable | not_compared | error).
      references (when any was computed): {names, tolerances: finite_difference's by dtype, values: [{reference,
        spec, scenario, dtype, status: ok | not_differentiable | not_applicable | error, message, input_grads?
        (autodiff), directions? (finite_difference: [{steps, quotients, kind: smooth | flat | unsettled}])}]}.
    Arrays are nested lists of JSON numbers (every float dtype, bfloat16 and float16 included, as float64);
    one with more than `max_array_elements` elements (0: no limit) is a summary object instead:
    {summary: true, dtype, shape, size, min, max, mean, first: the first values in C order, sha256 of the
    array's bytes in C order and its own dtype}.
    NaN and infinities, which JSON cannot hold, are the strings "NaN", "Infinity" and "-Infinity"; null
    always means absent, never a value.
    """
    data: dict[str, Any] = {
        "tool": "compat-check",
        "version": __version__,
        "schema_version": SCHEMA_VERSION,
        "tensorflow": report.tensorflow,
        **({"run": {"flags": dict(report.run["flags"]), "fingerprint": report.run["fingerprint"]}}
           if report.run is not None else {}),
        **({"shard": {"index": report.shard.index, "count": report.shard.count}} if report.shard else {}),
        "reference": report.reference,
        "tolerances": {dtype: {"rtol": number(t["rtol"]), "atol": number(t["atol"])}
                       for dtype, t in report.tolerances.items()},
        "specs": list(report.specs),
        "spec_descriptions": dict(report.descriptions),
        "scenarios": list(report.scenarios),
        "scenario_descriptions": dict(report.scenario_descriptions),
        "dtypes": list(report.dtypes),
        "variants": list(report.variants),
        "native_variants": native_variants(report),
        "exit_code": report.exit_code,
        "verdict": verdict(report),
        "summary": summary(report),
        "skipped": [{"spec": s.spec, "scenario": s.scenario, "reason": s.reason} for s in report.skipped],
        "units": [{"spec": u.spec, "dtype": u.dtype, "seconds": round(u.seconds, 3)} for u in report.units],
        "cells": [cell_dict(cell, max_array_elements) for cell in report.cells],
    }
    if report.references:
        data["references"] = references_dict(report, max_array_elements)
    return data


def render(report: CheckReport, max_array_elements: int = DEFAULT_MAX_ARRAY_ELEMENTS, view: View = FULL) -> str:
    """The whole report whatever `view` says: JSON is for programs, which filter it themselves."""
    return json.dumps(as_dict(report, max_array_elements), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def verdict(report: CheckReport) -> str:
    """The one-line verdict shared by every format."""
    return verdict_line(len(report.unexpected), report.reference)


def status_counts(cells: Any) -> dict[str, int]:
    """Cells per status, every status present (zero included), in a fixed order."""
    return _status_counts(cell.status for cell in cells)


def summary(report: CheckReport) -> dict[str, Any]:
    return summary_of([(cell.status, cell.native, cell.unexpected) for cell in report.cells], len(report.skipped))


def cell_dict(cell: Cell, max_array_elements: int = DEFAULT_MAX_ARRAY_ELEMENTS) -> dict[str, Any]:
    result = cell.result
    limit = max_array_elements
    return {
        "spec": cell.spec,
        "scenario": cell.scenario,
        "dtype": cell.dtype,
        "variant": cell.variant,
        "mechanism": cell.mechanism,
        "context": cell.context,
        "native": cell.native,
        "reference": cell.reference,
        "status": cell.status,
        "unexpected": cell.unexpected,
        "differences": [difference_dict(d) for d in cell.differences],
        "violations": list(result.violations),
        "calls": result.calls,
        "traces": result.traces,
        "upstream_scale": result.upstream_scale,
        "message": result.message,
        "upstream": None if result.upstream is None else [upstream_dict(u, limit) for u in result.upstream],
        "input_grads": None if not result.input_grads else [array(grad, limit) for grad in result.input_grads],
        "input_grad_kinds": list(result.input_grad_kinds) if result.input_grads else None,
        "replicas": [replica_dict(record, limit) for record in result.replicas],
        "global_batch": result.global_batch,
        "scaled_input_grads": None if not result.scaled_input_grads else [
            array(grad, limit) for grad in result.scaled_input_grads],
        "forward": [forward_check_dict(checked) for checked in cell.forward],
    }


def forward_check_dict(checked: ForwardCheck) -> dict[str, Any]:
    data: dict[str, Any] = {"reference": checked.reference, "status": checked.status, "detail": checked.detail}
    if checked.where:
        data["where"] = checked.where
    if checked.max_abs is not None:
        data["max_abs"] = number(checked.max_abs)
    if checked.reason:
        data["reason"] = checked.reason
    return data


def references_dict(report: CheckReport, max_array_elements: int = DEFAULT_MAX_ARRAY_ELEMENTS) -> dict[str, Any]:
    """The references computed, finite differences' tolerances, and each (reference, spec, scenario, dtype) value."""
    from compat.references.base import FD_TOLERANCES

    return {
        "names": list(report.references),
        "tolerances": {dtype: {"rtol": number(t.rtol), "atol": number(t.atol)} for dtype, t in FD_TOLERANCES.items()},
        "values": [forward_value_dict(value, max_array_elements) for value in report.forward_values],
    }


def forward_value_dict(value: ForwardValue, max_array_elements: int = DEFAULT_MAX_ARRAY_ELEMENTS) -> dict[str, Any]:
    data: dict[str, Any] = {"reference": value.reference, "spec": value.spec, "scenario": value.scenario,
                            "dtype": value.dtype, "status": value.status, "message": value.message}
    if value.reason:
        data["reason"] = value.reason
    if value.input_grads:
        data["input_grads"] = [array(grad, max_array_elements) for grad in value.input_grads]
    if value.directions:
        data["directions"] = [{"steps": [number(h) for h in d.steps], "quotients": [number(q) for q in d.quotients],
                               "kind": d.kind} for d in value.directions]
    return data


def replica_dict(record: ReplicaRecord, max_array_elements: int = DEFAULT_MAX_ARRAY_ELEMENTS) -> dict[str, Any]:
    first = record.upstreams[0] if record.upstreams else None
    return {
        "replica": record.replica,
        "rows": list(record.rows),
        "scaling": record.scaling,
        "calls": len(record.upstreams),
        "upstream": None if first is None else [upstream_dict(u, max_array_elements) for u in first],
        "input_grads": None if not record.input_grads else [array(g, max_array_elements) for g in record.input_grads],
    }


def upstream_dict(upstream: Upstream, max_array_elements: int = DEFAULT_MAX_ARRAY_ELEMENTS) -> dict[str, Any]:
    return {
        "kind": upstream.kind,
        "dtype": upstream.dtype,
        "static_shape": None if upstream.static_shape is None else list(upstream.static_shape),
        "value": array(upstream.value, max_array_elements),
        "indices": array(upstream.indices, max_array_elements),
        "dense_shape": None if upstream.dense_shape is None else [int(d) for d in upstream.dense_shape],
    }


def array(value: np.ndarray | None, max_elements: int = 0) -> Any:
    """A numpy array as nested lists of JSON numbers (non-finite floats as strings), or None; with more than
    `max_elements` elements (0: no limit), a summary object instead."""
    if value is None:
        return None
    value = np.asarray(value)
    if max_elements and value.size > max_elements:
        return array_summary(value)
    if value.dtype.kind in "biu":
        return value.tolist()
    if value.dtype.kind == "c":
        return _nested(np.asarray(value, str))
    return _nested(value.astype(np.float64))


def array_summary(value: np.ndarray) -> dict[str, Any]:
    """What a large array is, without its elements: enough to see it differs and to check it elsewhere."""
    contiguous = np.ascontiguousarray(value)
    numeric = contiguous.dtype.kind in "biuf" or contiguous.dtype.name == "bfloat16"
    wide = contiguous.astype(np.float64) if numeric else None
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN array's min/max/mean are NaN: say nothing
        stats = {name: (None if wide is None or not wide.size else number(getattr(np, f"nan{name}")(wide)))
                 for name in ("min", "max", "mean")}
    return {
        "summary": True,
        "dtype": str(contiguous.dtype),
        "shape": [int(d) for d in contiguous.shape],
        "size": int(contiguous.size),
        **stats,
        "first": array(contiguous.reshape(-1)[:_FIRST_VALUES]),
        "sha256": hashlib.sha256(contiguous.tobytes()).hexdigest(),
    }


def _nested(value: np.ndarray) -> Any:
    if value.ndim == 0:
        item = value.item()
        return number(item) if isinstance(item, float) else item
    return [_nested(row) for row in value]


def native_variants(report: CheckReport) -> list[str]:
    """The report's variants that are native (their mechanism used as documented), in column order."""
    natives = {cell.variant for cell in report.cells if cell.native}
    return [variant for variant in report.variants if variant in natives]
