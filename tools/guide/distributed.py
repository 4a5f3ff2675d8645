"""The guide's "distributed custom gradients" section, from a run of the mirrored contexts on 2 logical CPUs:
what each replica's gradient function receives, and whether the reduced gradient is the whole batch's."""

from __future__ import annotations

import functools

from compat.catalogue import clip_by_norm
from compat.checker import Cell, CheckReport, check
from compat.comparison import Difference, Part
from tools.guide.run import straight_through
from tools.guide.tables import markdown_table, upstream_text

VARIANTS = ("custom_gradient@mirrored_tape", "custom_gradient@mirrored_v1", "override_map@mirrored_v1")
SCENARIOS = ("sum", "mean", "weighted", "gather")


@functools.cache
def distributed_report() -> CheckReport:
    """The run (the straight-through estimator and a clip by norm; about 40 s on 2 busy cores), cached.

    The process must have 2 logical CPUs (compat.distribute.use_logical_cpus() before any TensorFlow op), or
    every cell is `unsupported` saying so."""
    return check([straight_through(), clip_by_norm()], scenarios=list(SCENARIOS), variants=list(VARIANTS))


def _cells(report: CheckReport, spec: str, variant: str) -> dict[str, Cell]:
    return {c.scenario: c for c in report.cells if c.spec == spec and c.variant == variant}


def replica_upstreams(report: CheckReport, spec: str = "ste", variant: str = VARIANTS[0]) -> str:
    """Rows: scenarios; columns: what each replica received (for its shard's rows), unscaled and with the loss
    divided by the global batch size."""
    cells = _cells(report, spec, variant)
    header = ["scenario", "replica 0", "replica 1", "replica 0, loss / batch", "replica 1, loss / batch"]
    rows = []
    for scenario in SCENARIOS:
        cell = cells.get(scenario)
        if cell is None:
            continue
        if not cell.result.replicas:
            rows.append([f"`{scenario}`", cell.status.replace("_", " "), "", "", ""])
            continue
        by_key = {(r.scaling, r.replica): r for r in cell.result.replicas}
        row = [f"`{scenario}`"]
        for scaling in ("none", "global_batch"):
            for replica in (0, 1):
                record = by_key.get((scaling, replica))
                first = record.upstreams[0][0] if record is not None and record.upstreams else None
                row.append("not called" if first is None else upstream_text(first))
        rows.append(row)
    return markdown_table(header, rows)


def reduced_verdicts(report: CheckReport) -> str:
    """Rows: spec x variant; columns per scenario: does the SUM-reduced gradient match the single-device whole
    batch, unscaled/with the loss divided by the global batch size on both sides?"""
    header = ["spec", "variant", *(f"`{s}`" for s in SCENARIOS)]
    rows = []
    for spec in report.specs:
        for variant in VARIANTS:
            cells = _cells(report, spec, variant)
            rows.append([f"`{spec}`", f"`{variant}`", *(_verdict(cells.get(s)) for s in SCENARIOS)])
    return markdown_table(header, rows)


def _verdict(cell: Cell | None) -> str:
    if cell is None:
        return ""
    if not cell.result.replicas:
        return cell.status.replace("_", " ")
    reduced = [(d.location.aspect, part) for d in cell.differences if d.breaking and (part := _reduced(d))]
    plain = any(aspect in ("input_grad", "input_grads") and not part.global_batch for aspect, part in reduced)
    scaled = any(part.global_batch for _, part in reduced)
    return f"{_differs(plain)}/{_differs(scaled)}"


def _differs(found: bool) -> str:
    return "differs" if found else "same"


def _reduced(difference: Difference) -> Part | None:
    """The part of the reduced gradients a difference is in, or None (a replica's, or the whole cell's)."""
    part = difference.location.part
    return part if part is not None and part.replica is None else None


def _in_a_replica(difference: Difference) -> bool:
    part = difference.location.part
    return part is not None and part.replica is not None


def summary(report: CheckReport) -> str:
    """One paragraph: per replica calls, what the replica receives, and which gradients change when reduced."""
    ste = _cells(report, "ste", VARIANTS[0]).get("weighted")
    calls = len(ste.result.replicas) // 2 if ste is not None else 0
    changed = sorted({c.spec for c in report.cells if c.result.replicas and any(
        d.breaking and _reduced(d) is not None for d in c.differences)})
    per_replica = sorted({c.spec for c in report.cells if any(
        d.breaking and _in_a_replica(d) for d in c.differences)})
    shards = "; ".join(f"replica {r.replica} rows {list(r.rows)}" for r in ste.result.replicas
                       if r.scaling == "none") if ste is not None else ""
    agree = ("Each replica agrees with a single-device run on its shard" if not per_replica else
             f"Each replica agrees with a single-device run on its shard except for {_ticks(per_replica)}")
    reduced = ("the gradients reduced with SUM equal the single-device whole batch for every spec" if not changed else
               f"the gradients reduced with SUM differ from the single-device whole batch for {_ticks(changed)} (a "
               "gradient that looks at the whole upstream, like a clip by norm, sees only a shard)")
    return (f"Under `MirroredStrategy` your gradient function runs once per replica ({calls} here), each time on its "
            f"replica's shard ({shards}): its upstream holds only that shard's rows, divided by the global batch size "
            f"when the loss is. {agree}; {reduced}.")


def _ticks(names: list[str]) -> str:
    return ", ".join(f"`{name}`" for name in names)
