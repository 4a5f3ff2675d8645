"""MirroredStrategy contexts over 2 logical CPUs: a tape in `strategy.run` in a `tf.function` (TF2), and the
legacy path, a `tf.compat.v1` graph under `tf.compat.v1.distribute.MirroredStrategy` run by a Session.

Each replica gets its shard of the batch (rows handed out by TensorFlow's distributed dataset), its part of
the scenario's loss, once as it is and once divided by the global batch size; its gradients are reduced with
SUM (`strategy.reduce`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tensorflow as tf

from compat.contexts.base import Case, Context, Failed, Outcome, Refused, symbolic_gradients, tape_gradients
from compat.distribute.devices import LOGICAL_CPUS, use_logical_cpus
from compat.distribute.step import (
    SCALINGS,
    RunValues,
    Traced,
    batch_problem,
    dataset,
    global_batch,
    outcome,
    probe_calls,
    reduce_sum,
    replica_fn,
    run_in_function,
    run_values,
)
from compat.probe import PROBE_COLLECTION
from compat.results import Scaling

DEVICES = tuple(f"/cpu:{index}" for index in range(LOGICAL_CPUS))

__all__ = ["DEVICES", "DistributedContext", "MirroredTape", "MirroredV1"]


class DistributedContext(Context):
    """A context whose replicas each run the case on a shard. Never native (compat/registry.py): a gradient
    function that couples the rows of its upstream (a clip by norm) or is not linear in it (a clip by value, under
    1/global_batch scaling) changes the reduced gradient by design."""

    def unavailable(self) -> str | None:
        return use_logical_cpus()

    def run(self, cases: Sequence[Case]) -> list[Outcome]:
        return [self.run_checked(case) for case in cases]

    def run_checked(self, case: Case) -> Outcome:
        problem = batch_problem(case)
        if problem is not None:
            return Refused(f"not run: {problem}")
        try:
            return self.run_one(case)
        except Exception as exc:  # noqa: BLE001 - a case that fails is a result; the error's type tells when.
            return Failed(error=exc, phase="run" if isinstance(exc, tf.errors.OpError) else "build")

    def run_one(self, case: Case) -> Outcome:
        raise NotImplementedError


class MirroredTape(DistributedContext):
    name = "mirrored_tape"
    summary = "MirroredStrategy on 2 logical CPUs: tf.GradientTape in strategy.run in tf.function, SUM-reduced"

    def run_one(self, case: Case) -> Outcome:
        strategy = tf.distribute.MirroredStrategy(list(DEVICES))
        runs, traced = run_in_function(strategy, case, tape_gradients)
        return outcome(runs, traced.kinds, global_batch(case))


class MirroredV1(DistributedContext):
    name = "mirrored_v1"
    summary = "tf.compat.v1 graph under tf.compat.v1.distribute.MirroredStrategy: tf.compat.v1.gradients, Session"

    def run_one(self, case: Case) -> Outcome:
        graph = tf.Graph()
        traced = Traced()
        with graph.as_default():
            strategy = tf.compat.v1.distribute.MirroredStrategy(list(DEVICES))
            with strategy.scope():
                variables = [tf.Variable(value) for value in case.variables]
            factor = tf.compat.v1.placeholder(tf.float32, [])
            step = replica_fn(case, variables, _v1_gradients, traced)
            iterator = strategy.make_dataset_iterator(dataset(case))
            own, whole, rows, replica = strategy.experimental_run(lambda inputs: step(*inputs, factor), iterator)
            fetches: dict[str, Any] = {
                "own": [strategy.experimental_local_results(value) for value in own],
                "reduced": reduce_sum(strategy, whole),
                "rows": strategy.experimental_local_results(rows),
                "replica": strategy.experimental_local_results(replica),
                "records": tf.compat.v1.get_collection(PROBE_COLLECTION),
            }
            initialize = [iterator.initializer, tf.compat.v1.global_variables_initializer()]
        runs: dict[Scaling, RunValues] = {}
        with tf.compat.v1.Session(graph=graph) as session:
            for scaling in SCALINGS:
                session.run(initialize)  # the iterator hands out its one batch per initialisation
                case.before_run()
                values = session.run(fetches, {factor: 1.0 / global_batch(case) if scaling == "global_batch" else 1.0})
                replicas = [int(r) for r in values["replica"]]
                own_values = [[grads[index] for grads in values["own"]] for index in range(len(replicas))]
                runs[scaling] = run_values(replicas, own_values, values["rows"], values["reduced"], probe_calls(case))
        return outcome(runs, traced.kinds, global_batch(case))


def _v1_gradients(case: Case, inputs: Sequence[Any]) -> Any:
    return symbolic_gradients(case, inputs, tf.compat.v1.gradients)
