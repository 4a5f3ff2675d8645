"""`compat-check --executor=dask`: a check's (spec, dtype) units run on a Dask `distributed` cluster.

Each unit is one task. A worker process imports TensorFlow and loads the specs once (`compat.workers.load_in_worker`,
cached per process), then runs every unit it is given through the one-process code path, so the report is the same
as `--jobs`' local pool. A worker that dies while running a unit (a segfault, `os._exit`, the OOM killer) is
restarted by its nanny and the unit is run once more at the end, alone on the cluster (Dask cannot tell the
unit that crashed its worker from one that was only there); if its worker dies again, its cells say so. On a
cluster this module starts Dask itself never retries (`allowed-failures` 0) and a worker holds only the unit it
runs (`worker-saturation` 1.0): configure a cluster of your own alike. Ctrl-C cancels the tasks and closes the cluster
and its workers.
Without `--scheduler` it starts a `distributed.LocalCluster` of `--jobs` single-threaded worker processes.
Needs `pip install 'gradcompat[dask]'`.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from compat.comparison import DEFAULT_REFERENCE
from compat.workers import Loader, WorkerConfig, Workload, load_in_worker, run_unit, usable_cpus, worker_config

if TYPE_CHECKING:
    from compat.checker import CheckReport, Plan, Progress, UnitResult
    from compat.sharding import Shard

_LOADED: dict[bytes, Any] = {}
"""In a worker process: pickled config -> what `load_in_worker` gave, so specs load once per process."""


class DaskUnavailable(ImportError):
    """`distributed` is not installed; the message says how to install it."""


def require_dask() -> Any:
    """The `distributed` module; DaskUnavailable saying how to install it."""
    # Dask's scheduler, nannies and workers log every start and stop at INFO: only warnings, here and in workers
    # (which read this from the environment they inherit), unless the user configured it.
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "warning")
    try:
        import distributed
    except ImportError:
        raise DaskUnavailable("the Dask executor needs Dask's `distributed`: pip install 'gradcompat[dask]' (or pip "
                              "install distributed)") from None
    return distributed


def check_on_dask(load: Loader, dtypes: Sequence[str] | None = None, variants: Sequence[str] | None = None,
                  reference: str = DEFAULT_REFERENCE, jobs: int | None = None, progress: Progress | None = None,
                  quiet_import: bool = True, loaded: Workload | None = None, shard: Shard | None = None,
                  durations: Mapping[str, float] | None = None, scheduler: str | None = None,
                  references: Sequence[str] | None = None) -> CheckReport:
    """`compat.workers.check_in_workers` with the units sent to a Dask cluster: the one at `scheduler`
    (an address such as tcp://host:8786), else a LocalCluster of `jobs` worker processes (default: the CPUs)."""
    from compat.checker import assemble, plan, shard_units

    specs, scenarios = loaded if loaded is not None else load()
    chosen = plan(scenarios, dtypes, variants, reference, references)
    todo = shard_units(specs, chosen, shard, durations)
    config = worker_config(load, chosen, variants, reference, specs, quiet_import)
    labels = [f"{specs[index].name} {dtype}" for index, dtype in todo]
    if progress:
        progress(0, len(todo), f"connecting to the Dask scheduler at {scheduler}" if scheduler else
                 f"starting a Dask LocalCluster of {jobs or usable_cpus()} workers (each imports TensorFlow)")
    with _client(scheduler, jobs or usable_cpus()) as client:
        results, seconds = _run(client, config, todo, labels, chosen, progress)
    return assemble(specs, chosen, results, todo, seconds, shard)


@contextlib.contextmanager
def _client(scheduler: str | None, workers: int) -> Iterator[Any]:
    """A client of the cluster at `scheduler`, or of a LocalCluster started here and closed on every exit path."""
    distributed = require_dask()
    if scheduler:
        with distributed.Client(scheduler) as client:
            yield client
        return
    import dask

    # One task per worker thread at a time: a worker that dies takes down its running unit only, not units queued
    # behind it, which would count as failed with it (allowed-failures 0: a crashing unit is not run again).
    with dask.config.set({"distributed.scheduler.allowed-failures": 0, "distributed.scheduler.worker-saturation": 1.0,
                          "distributed.worker.daemon": False}):
        cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                           dashboard_address=":0")  # any free port: never one in use
        try:
            with distributed.Client(cluster) as client:
                yield client
        finally:
            cluster.close()


def _run(client: Any, config: WorkerConfig, todo: Sequence[tuple[int, str]], labels: Sequence[str],
         chosen: Plan, progress: Progress | None) -> tuple[list[UnitResult], list[float]]:
    """Every unit's result and seconds, in `todo` order. Each result is fetched as soon as it is ready and its
    future dropped, so a worker dying later loses nothing the scheduler would have to compute again. A unit whose
    worker died is run again at the end, alone on the cluster: Dask cannot say whether it crashed the worker or was
    only there when another unit did; if its worker dies again, nothing else was running, so its cells say so."""
    distributed = require_dask()
    run, pickled = uuid.uuid4().hex[:8], pickle.dumps(config)
    number_of: dict[str, int] = {}

    def submit(number: int, attempt: int) -> Any:
        future = client.submit(_unit_task, pickled, (config.quiet_import, config.logical_cpus), todo[number],
                               pure=False, retries=0, key=f"gradcompat-{run}-{number}-{attempt}")
        number_of[future.key] = number
        return future

    results: list[UnitResult | None] = [None] * len(todo)
    seconds = [0.0] * len(todo)
    done = 0

    def finish(number: int, outcome: Any) -> None:
        nonlocal done
        index, dtype = todo[number]
        results[number], seconds[number] = _outcome(outcome, config.spec_names[index], dtype, chosen)
        done += 1
        if progress:
            progress(done, len(todo), labels[number])

    pending = distributed.as_completed([submit(number, 0) for number in range(len(todo))], with_results=True,
                                       raise_errors=False)
    killed: list[int] = []
    try:
        for future, outcome in pending:
            number, failed = number_of[future.key], future.status == "error"
            future.release()
            if failed and type(outcome[1]).__name__ == "KilledWorker":
                killed.append(number)
                continue
            finish(number, outcome[1] if failed else outcome)  # a failure is (type, exception, traceback)
        for number in sorted(killed):  # alone now: a death is this unit's
            pending = distributed.as_completed([submit(number, 1)], with_results=True, raise_errors=False)
            for future, outcome in pending:
                failed = future.status == "error"
                future.release()
                finish(number, outcome[1] if failed else outcome)
    except BaseException:
        client.cancel(list(pending.futures))  # Ctrl-C: nothing more runs; the cluster is closed by _client
        raise
    return [result for result in results if result is not None], seconds


def _outcome(outcome: Any, spec: str, dtype: str, chosen: Plan) -> tuple[UnitResult, float]:
    """The unit's result, or its `error` cells when the task failed (its worker died, or could not load)."""
    from compat.checker import broken_spec_cells

    if isinstance(outcome, BaseException):  # KilledWorker, a lost connection...: this unit's cells say so
        outcome = ("failed", f"the Dask worker running this spec failed ({type(outcome).__name__}: {outcome}); it "
                             "may have crashed (a segfault, os._exit, out of memory): run this spec alone with "
                             "jobs=1 to see the whole crash")
    kind, payload = outcome
    if kind == "done":
        result, took = payload
        return result, took
    return (broken_spec_cells(spec, dtype, chosen, payload), []), 0.0


def _unit_task(config: bytes, start: tuple[bool, bool], unit: tuple[int, str]) -> tuple[str, Any]:
    """On a worker: ("done", (result, seconds)) or ("failed", why); the specs load on its first unit only."""
    if config not in _LOADED:
        _LOADED[config] = load_in_worker(config, *start)
    loaded = _LOADED[config]
    if isinstance(loaded, str):
        return "failed", loaded
    specs, chosen = loaded
    return "done", run_unit(specs, chosen, unit)
