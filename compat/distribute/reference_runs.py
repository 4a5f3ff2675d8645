"""The single-device runs a distributed cell is compared with, made in the run stage: each replica's shard
with the reference variant, and the whole batch with the loss divided by the global batch size."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from compat.distribute.compare import References, ShardKey
from compat.downstream import Downstream, scaled
from compat.results import Scaling, VariantResult
from compat.runner import run_matrix
from compat.spec import GradientSpec


def _factor(scaling: Scaling, batch: int) -> float:
    return 1.0 / batch if scaling == "global_batch" else 1.0


def shard_references(spec: GradientSpec, downstreams: dict[str, Downstream], results: Sequence[VariantResult],
                     variant_for: dict[str, str]) -> References:
    """The single-device runs that `results` (distributed cells, by scenario) are compared with, each in the
    variant `variant_for[scenario]`: one run_matrix per (shard, variant), one per variant for the whole batch."""
    wanted: dict[tuple[tuple[int, ...], str], dict[tuple[str, Scaling], Downstream]] = {}
    batch_of: dict[str, int] = {}
    for result in results:
        scenario = result.downstream
        downstream = downstreams[scenario]
        if result.global_batch is None or downstream.shard is None:
            continue
        batch_of[scenario] = result.global_batch
        for record in result.replicas:
            factor = _factor(record.scaling, result.global_batch)
            part = scaled(downstream.shard(np.asarray(record.rows, np.int64)), factor)
            wanted.setdefault((record.rows, variant_for[scenario]), {})[scenario, record.scaling] = part
    shards: dict[ShardKey, VariantResult] = {}
    for (rows, variant), parts in wanted.items():
        index = list(rows)
        shard_spec = spec.with_inputs([value[index] for value in spec.example_inputs])
        results = run_matrix(shard_spec, list(parts.values()), [variant])
        for (scenario, scaling), result in zip(parts, results, strict=True):
            shards[scenario, scaling, rows] = result
    whole: dict[str, VariantResult] = {}
    for variant in sorted(set(variant_for[s] for s in batch_of)):
        names = [s for s in batch_of if variant_for[s] == variant]
        parts_whole = [scaled(downstreams[s], 1.0 / batch_of[s]) for s in names]
        whole.update(zip(names, run_matrix(spec, parts_whole, [variant]), strict=True))
    return References(shards, whole)
