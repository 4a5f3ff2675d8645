"""The step every distributed context runs: each replica's shard through the op, its part of the loss, its
gradients, and their SUM over replicas, under both loss scalings (`none`, then `global_batch`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from compat.contexts.base import Case, Gradients, Ran, densify
from compat.distribute.devices import LOGICAL_CPUS
from compat.downstream import scaled
from compat.results import ReplicaRecord, Scaling, Upstream, intern_array

SCALINGS: tuple[Scaling, ...] = ("global_batch", "none")
"""Run order: the unscaled run is last, so the probe is left holding its calls (the cell's `upstreams`)."""

GradientsFn = Callable[[Case, Sequence[Any]], Gradients]


def batch_problem(case: Case, replicas: int = LOGICAL_CPUS) -> str | None:
    """Why the case cannot be split into one shard per replica, or None."""
    if case.downstream.shard is None:
        return (f"the downstream `{case.downstream.name}` cannot be split by shard (gradcompat splits only its "
                f"built-in scenarios, whose parts add up to the whole batch's loss); run a built-in scenario")
    sizes = {int(value.shape[0]) if value.ndim else -1 for value in case.inputs}
    if len(sizes) != 1 or min(sizes) < replicas:
        shapes = [list(value.shape) for value in case.inputs]
        return (f"a distributed run splits every input along its first (batch) axis, one shard per replica: "
                f"every input needs the same leading dimension of at least {replicas}; the inputs have shapes "
                f"{shapes}")
    return None


def global_batch(case: Case) -> int:
    return int(case.inputs[0].shape[0])


def dataset(case: Case) -> tf.data.Dataset:
    """The case's inputs as one global batch, with each row's index, so every replica knows its rows."""
    size = global_batch(case)
    rows = np.arange(size, dtype=np.int64)
    return tf.data.Dataset.from_tensor_slices((*case.inputs, rows)).batch(
        size, drop_remainder=not case.downstream.dynamic_batch)


@dataclasses.dataclass
class Traced:
    """What the replicas' traces saw: the form of each gradient (`none`, `dense`, `indexed_slices`)."""

    kinds: list[str] = dataclasses.field(default_factory=list)


def replica_fn(case: Case, variables: Sequence[Any], gradients: GradientsFn, traced: Traced) -> Callable[..., Any]:
    """The function `strategy.run` runs on each replica: `(*shard_inputs, rows, factor)` -> (its gradients,
    the same with each input's gradient scattered into the whole batch's shape, its rows, its replica id). A
    None gradient is returned as zeros and noted in `traced.kinds`."""
    size = global_batch(case)

    def step(*args: Any) -> tuple[list[Any], list[Any], Any, Any]:
        *inputs, rows, factor = args
        downstream = scaled(case.downstream.shard(rows), factor)  # type: ignore[misc]
        sources = [*inputs, *variables]
        grads = gradients(dataclasses.replace(case, downstream=downstream), sources).grads
        traced.kinds = ["none" if g is None else "indexed_slices" if isinstance(g, tf.IndexedSlices) else "dense"
                        for g in grads]
        own = [tf.zeros_like(tf.convert_to_tensor(source)) if g is None else densify(g)
               for g, source in zip(grads, sources, strict=True)]
        whole = [_scatter(g, rows, size) for g in own[: len(inputs)]] + own[len(inputs):]
        replica = tf.distribute.get_replica_context().replica_id_in_sync_group
        return own, whole, rows, tf.identity(replica)

    return step


def _scatter(grad: Any, rows: Any, size: int) -> Any:
    shape = tf.concat([[size], tf.shape(grad, out_type=tf.int64)[1:]], axis=0)
    return tf.scatter_nd(tf.expand_dims(tf.cast(rows, tf.int64), 1), grad, shape)


def reduce_sum(strategy: Any, values: Sequence[Any]) -> list[Any]:
    return [strategy.reduce(tf.distribute.ReduceOp.SUM, value, axis=None) for value in values]


@dataclasses.dataclass(frozen=True)
class ReplicaValues:
    replica: int
    rows: tuple[int, ...]
    grads: tuple[np.ndarray, ...]


@dataclasses.dataclass(frozen=True)
class RunValues:
    """One run (one loss scaling) as this process saw it: its replicas, the reduced gradients, the calls."""

    replicas: tuple[ReplicaValues, ...]
    reduced: tuple[np.ndarray, ...]
    calls: tuple[tuple[int | None, tuple[Upstream, ...]], ...]


def run_values(replica_ids: Sequence[int], own: Sequence[Sequence[Any]], rows: Sequence[Any],
               reduced: Sequence[Any], probe_calls: Sequence[tuple[int | None, tuple[Upstream, ...]]]) -> RunValues:
    """RunValues from fetched values: `own[r]` / `rows[r]` are local replica r's gradients and rows."""
    replicas = tuple(ReplicaValues(int(rid), tuple(int(i) for i in np.asarray(r)),
                                   tuple(_numpy(g) for g in grads))
                     for rid, grads, r in zip(replica_ids, own, rows, strict=True))
    return RunValues(replicas, tuple(_numpy(g) for g in reduced), tuple(probe_calls))


def _numpy(value: Any) -> np.ndarray:
    return intern_array(np.asarray(value.numpy() if hasattr(value, "numpy") else value))


def outcome(runs: dict[Scaling, RunValues], kinds: Sequence[str], size: int) -> Ran:
    """The outcome of both runs: per-replica records, the unscaled reduced gradients as `input_grads`."""
    records = []
    for scaling in ("none", "global_batch"):
        run = runs[scaling]
        for replica in sorted(run.replicas, key=lambda r: r.replica):
            calls = tuple(call for rid, call in run.calls if rid == replica.replica)
            records.append(ReplicaRecord(replica.replica, replica.rows, scaling, calls, _nones(replica.grads, kinds)))
    return Ran(input_grads=_nones(runs["none"].reduced, kinds), input_grad_kinds=tuple(kinds),
               replicas=tuple(records), scaled_input_grads=_nones(runs["global_batch"].reduced, kinds),
               global_batch=size)


def _nones(grads: Sequence[np.ndarray], kinds: Sequence[str]) -> tuple[np.ndarray | None, ...]:
    """Gradients with the zeros that stood in for a None put back to None."""
    return tuple(None if kind == "none" else grad for grad, kind in zip(grads, kinds, strict=True))


def probe_calls(case: Case) -> tuple[tuple[int | None, tuple[Upstream, ...]], ...]:
    probe = case.probe
    if probe is None:
        return ()
    probe.order_calls_by_replica()
    return tuple(zip(probe.call_replicas, probe.calls, strict=True))


def run_in_function(strategy: Any, case: Case, gradients: GradientsFn) -> tuple[dict[Scaling, RunValues], Traced]:
    """Both runs of `case` in one `tf.function` over `strategy.run`, the batch from
    `experimental_distribute_dataset`; raises what TensorFlow raises."""
    size = global_batch(case)
    with strategy.scope():
        variables = [tf.Variable(value) for value in case.variables]
    traced = Traced()
    step = replica_fn(case, variables, gradients, traced)

    @tf.function(autograph=False)
    def train_step(batch: Any, factor: Any) -> Any:
        own, whole, rows, replica = strategy.run(step, args=(*batch, factor))
        return own, reduce_sum(strategy, whole), rows, replica

    batch = next(iter(strategy.experimental_distribute_dataset(dataset(case))))
    runs: dict[Scaling, RunValues] = {}
    for scaling in SCALINGS:
        case.before_run()
        factor = tf.constant(1.0 / size if scaling == "global_batch" else 1.0, tf.float32)
        own, reduced, rows, replica = train_step(batch, factor)
        replica_ids = [int(r) for r in strategy.experimental_local_results(replica)]
        local = [strategy.experimental_local_results(value) for value in own]
        per_replica = [[values[index] for values in local] for index in range(len(replica_ids))]
        runs[scaling] = run_values(replica_ids, per_replica, strategy.experimental_local_results(rows), reduced,
                                   probe_calls(case))
    return runs, traced
