"""Distributed cells against single-device runs: each replica with the reference variant on its shard, the
reduced gradient with the reference on the whole batch, for each loss scaling.

Pure: the single-device runs come in as values (`References`, made in the run stage by
`compat.distribute.reference_runs`); nothing here runs TensorFlow or imports the runner."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from compat.comparison import Difference, Part, compare
from compat.results import ReplicaRecord, Scaling, Status, VariantResult

ShardKey = tuple[str, Scaling, tuple[int, ...]]
"""(scenario, loss scaling, the shard's rows)."""


@dataclasses.dataclass(frozen=True)
class References:
    """Single-device runs of one variant (the cell's reference): per shard, and on the whole batch with the
    loss divided by the global batch size (the unscaled whole-batch run is the ordinary reference cell)."""

    shards: dict[ShardKey, VariantResult]
    scaled: dict[str, VariantResult]


def compare_distributed(result: VariantResult, reference: VariantResult, refs: References) -> tuple[Difference, ...]:
    """Every difference of a distributed cell: its status and contract against the reference; per replica and
    loss scaling, its calls, upstreams and gradients against the reference on that shard; the reduced
    gradients against the reference on the whole batch (unscaled, and with the loss / global batch)."""
    top = dataclasses.replace(result, upstreams=(), calls=0, input_grads=())
    differences = list(compare(top, reference))
    reduced = dataclasses.replace(top, input_grads=result.input_grads, violations=())
    differences += _in_part(Part(None), compare(reduced, reference))
    for record in result.replicas:
        shard = refs.shards.get((result.downstream, record.scaling, record.rows))
        if shard is not None:
            part = Part(record.replica, record.rows, record.scaling == "global_batch")
            differences += _in_part(part, compare(_as_result(result, record), shard))
    scaled_reference = refs.scaled.get(result.downstream)
    if scaled_reference is not None and result.scaled_input_grads:
        reduced = dataclasses.replace(reduced, input_grads=result.scaled_input_grads)
        differences += _in_part(Part(None, global_batch=True), compare(reduced, scaled_reference))
    return tuple(differences)


def _as_result(result: VariantResult, record: ReplicaRecord) -> VariantResult:
    """One replica's record as a result of its own (its status follows whether it was called)."""
    status: Status = result.status if result.status != "ok" or record.upstreams else "not_called"
    return dataclasses.replace(result, status=status, upstreams=record.upstreams, calls=len(record.upstreams),
                               input_grads=record.input_grads, violations=())


def _in_part(part: Part, differences: Sequence[Difference]) -> list[Difference]:
    """Differences of a part, located in it; its status is the cell's, reported once, so left out."""
    return [dataclasses.replace(d, location=dataclasses.replace(d.location, part=part)) for d in differences
            if d.location.aspect != "status" and d.kind != "contract"]
