"""The multi_worker context: MultiWorkerMirroredStrategy over 2 local worker processes on loopback.

Each worker (`compat.distribute._worker`, TF_CONFIG with free 127.0.0.1 ports) holds one replica, loads the
spec again from its `source`, and runs the same step as `mirrored_tape` (a tape in `strategy.run` in a
`tf.function`, the batch from `experimental_distribute_dataset`, gradients all-reduced with SUM). On a real
cluster the same step runs with TF_CONFIG naming the cluster's hosts (see README, "Distributed").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tensorflow as tf

from compat.contexts.base import Case, Failed, Outcome, Refused
from compat.distribute.mirrored import DistributedContext
from compat.distribute.step import SCALINGS, RunValues, batch_problem, global_batch, outcome
from compat.distribute.workers import WORKERS, WorkersFailed, run_job
from compat.results import Scaling
from compat.scenarios import SCENARIOS


class WorkerError(Exception):
    """An exception a worker raised, by its type's name and message."""


class MultiWorker(DistributedContext):
    name = "multi_worker"
    summary = "MultiWorkerMirroredStrategy, 2 local worker processes on loopback: tape in strategy.run, SUM"

    def unavailable(self) -> str | None:
        return None  # each worker holds one CPU replica: no logical devices needed

    def run(self, cases: Sequence[Case]) -> list[Outcome]:
        outcomes: dict[int, Outcome] = {}
        job: list[dict[str, Any]] = []
        indices: list[int] = []
        for index, case in enumerate(cases):
            problem = _problem(case)
            if problem is not None:
                outcomes[index] = Refused(f"not run: {problem}")
                continue
            assert case.probe is not None
            spec = case.probe.spec
            job.append({"source": spec.source, "spec": spec.name, "variant": case.probe.variant,
                        "scenario": case.downstream.name, "inputs": list(case.inputs),
                        "variables": list(case.variables)})
            indices.append(index)
        if job:
            try:
                per_worker = run_job(job)
            except WorkersFailed as exc:
                outcomes.update({index: Failed(error=exc, phase="run") for index in indices})
            else:
                for position, index in enumerate(indices):
                    outcomes[index] = _merge(cases[index], [worker[position] for worker in per_worker])
        return [outcomes[index] for index in range(len(cases))]


def _problem(case: Case) -> str | None:
    if case.probe is None or not case.probe.spec.source:
        return ("multi_worker runs the spec in worker processes, which load it by its reference: pass it as a "
                "catalogue name or path/to/file.py:NAME, as compat.load_specs and compat-check's spec list take it")
    if case.downstream.name not in SCENARIOS:
        return f"the downstream `{case.downstream.name}` is not a built-in scenario the workers can rebuild"
    return batch_problem(case, WORKERS)


def _merge(case: Case, records: list[dict[str, Any]]) -> Outcome:
    """One Outcome from every worker's records of a case; the probe gets the workers' calls and facts."""
    probe = case.probe
    assert probe is not None
    probe.traces = sum(record.get("traces", 0) for record in records)
    for record in records:
        for problem in record.get("violations", ()):
            probe.note_violation(problem)
        if record.get("user_error"):
            probe.fail(record["user_error"])
    errors = [record["error"] for record in records if "error" in record]
    if errors or probe.error is not None or any("runs" not in record for record in records):
        name, message, phase = errors[0] if errors else ("WorkerError", "a worker failed", "run")
        return Failed(error=_exception(name, message), phase="build" if phase == "build" else "run")
    runs: dict[Scaling, RunValues] = {}
    for scaling in SCALINGS:
        parts = [record["runs"][scaling] for record in records]
        runs[scaling] = RunValues(tuple(r for part in parts for r in part.replicas), parts[0].reduced,
                                  tuple(call for part in parts for call in part.calls))
    case.before_run()
    for replica, call in runs["none"].calls:
        probe.record_call(call, replica)
    return outcome(runs, records[0]["kinds"], global_batch(case))


def _exception(name: str, message: str) -> BaseException:
    """The worker's exception as the same tf.errors class where it is one (so refusals classify alike)."""
    error_class = getattr(tf.errors, name, None)
    if isinstance(error_class, type) and issubclass(error_class, tf.errors.OpError):
        return error_class(None, None, message)
    return WorkerError(f"{name}: {message}")
