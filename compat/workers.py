"""Run a check's (spec, dtype) units in worker processes, each importing TensorFlow once; merge in report order.

Specs hold user functions, which cannot be sent to another process, so every worker loads the specs itself
with a picklable `load` (e.g. the references given to `--specs`, through compat.loading) and runs the units
it is handed through `compat.checker.check_unit`, the code path of a one-process check. A worker that dies
(a segfault, `os._exit`, the kernel's OOM killer) turns the unit it was running into `error` cells saying
so, with the end of what it wrote to stderr, and a fresh worker takes over the remaining units. A worker's
stderr goes to a file that this process copies to its own stderr after each unit, so what user code prints
is still seen.
"""

from __future__ import annotations

import collections
import dataclasses
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from compat._quiet_import import import_tensorflow_hiding_chatter
from compat.child import describe_exit, stderr_tail
from compat.comparison import DEFAULT_REFERENCE
from compat.registry import needs_logical_cpus

if TYPE_CHECKING:  # this module is imported by every worker before TensorFlow, which it imports quietly
    from compat.checker import CheckReport, Plan, Progress, UnitResult
    from compat.scenarios import Scenario
    from compat.sharding import Shard
    from compat.spec import GradientSpec

Workload = tuple[Sequence["GradientSpec"], Sequence["str | Scenario"] | None]
"""What a loader returns: the specs, and the scenarios (names or Scenario objects; None for all)."""

Loader = Callable[[], Workload]


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


@dataclasses.dataclass(frozen=True)
class WorkerConfig:
    """Everything a worker needs, picklable: how to load the workload and the check's other axes."""

    load: Loader
    dtypes: tuple[str, ...]
    variants: tuple[str, ...] | None
    reference: str
    spec_names: tuple[str, ...]
    quiet_import: bool
    references: tuple[str, ...] | None = None
    logical_cpus: bool = False
    """Whether the variants name a context that needs 2 logical CPUs: the worker splits its CPU before loading."""


def worker_config(load: Loader, chosen: Plan, variants: Sequence[str] | None, reference: str,
                  specs: Sequence[GradientSpec], quiet_import: bool) -> WorkerConfig:
    """What every worker of this check is sent (the process pool's and Dask's alike)."""
    return WorkerConfig(load, chosen.dtypes, tuple(variants) if variants is not None else None, reference,
                        tuple(spec.name for spec in specs), quiet_import, chosen.references,
                        logical_cpus=needs_logical_cpus(variants or ()))


def check_in_workers(load: Loader, dtypes: Sequence[str] | None = None, variants: Sequence[str] | None = None,
                     reference: str = DEFAULT_REFERENCE, jobs: int | None = None, progress: Progress | None = None,
                     quiet_import: bool = True, loaded: Workload | None = None, shard: Shard | None = None,
                     durations: Mapping[str, float] | None = None,
                     references: Sequence[str] | None = None) -> CheckReport:
    """`compat.checker.check(*load(), dtypes, variants, reference, references=references)` with its units spread
    over `jobs` worker processes (default: the usable CPUs), giving the same report as one process.

    `load` must be picklable (a module-level function, or an instance of a module-level class) and return
    the same specs in every process. It also runs here, for the report's axes, unless `loaded` is what it
    returned already. With one job, or one unit, everything runs in this process. `shard`: run only its units
    (`compat.checker.shard_units`, balanced by `durations`: unit label -> seconds).
    """
    from compat.checker import assemble, check_units, plan, shard_units

    specs, scenarios = loaded if loaded is not None else load()
    chosen = plan(scenarios, dtypes, variants, reference, references)
    todo = shard_units(specs, chosen, shard, durations)
    workers = min(jobs or usable_cpus(), len(todo))
    if workers <= 1:
        return check_units(specs, chosen, todo, progress, shard)
    config = worker_config(load, chosen, variants, reference, specs, quiet_import)
    labels = [f"{specs[index].name} {dtype}" for index, dtype in todo]
    pool = _Pool(config, workers)
    results = pool.run(todo, labels, chosen, progress)
    return assemble(specs, chosen, results, todo, pool.seconds, shard)


class _Worker:
    """One worker process and the unit it is running (None when idle)."""

    def __init__(self, context: Any, config: WorkerConfig, started: list[_Worker]) -> None:
        self.connection, child = context.Pipe()
        handle, self.stderr_path = tempfile.mkstemp(prefix="gradcompat-worker-", suffix=".stderr")
        os.close(handle)
        self.stderr_shown = 0  # bytes of it copied to this process's stderr
        self.unit_start = 0  # where the running unit's stderr begins
        # Pickled here, unpickled by the worker once it has imported TensorFlow quietly (loading may import it).
        self.process = context.Process(
            target=_serve, args=(child, pickle.dumps(config), (config.quiet_import, config.logical_cpus),
                                 self.stderr_path),
            name="gradcompat-worker")
        self.unit: int | None = None
        self.unit_started = 0.0  # time.perf_counter() when the running unit was sent
        # Listed before it starts: a Ctrl-C between its start and its caller's bookkeeping must still kill it,
        # or multiprocessing joins it at exit while it waits for work that never comes (a hang).
        started.append(self)
        self.process.start()
        child.close()

    def stop(self, kill: bool) -> None:
        if self.process.pid is None:  # interrupted before it started
            self.connection.close()
            _remove(self.stderr_path)
            return
        if kill and self.process.is_alive():
            self.process.kill()
        elif self.process.is_alive():
            try:
                self.connection.send(None)
            except OSError:
                pass
        self.process.join(timeout=None if kill else 10)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.connection.close()
        self.show_stderr()
        _remove(self.stderr_path)  # stopped twice: an idle worker is stopped when the work runs out, then at the end

    def show_stderr(self) -> None:
        """Copy what the worker wrote to stderr since the last call to this process's stderr, in chunks."""
        try:
            with open(self.stderr_path, "rb") as written:
                written.seek(self.stderr_shown)
                while chunk := written.read(1 << 16):
                    buffer = getattr(sys.stderr, "buffer", None)  # a test's captured stderr takes only text
                    if buffer is not None:
                        sys.stderr.flush()
                        buffer.write(chunk)
                    else:
                        sys.stderr.write(chunk.decode("utf-8", errors="replace"))
                    self.stderr_shown = written.tell()
                sys.stderr.flush()
        except (OSError, ValueError):  # no file any more, or stderr closed
            pass

    def stderr_end(self) -> str:
        """The end of what the worker wrote to stderr while running its unit, for a message; "" if nothing."""
        lines = stderr_tail(self.stderr_path, self.unit_start)
        return f"; its stderr ended with: {' | '.join(lines)}" if lines else ""


class _Pool:
    """Hands units to idle workers, collects results by unit, replaces workers that die."""

    def __init__(self, config: WorkerConfig, size: int) -> None:
        self.config, self.size = config, size
        self.context = multiprocessing.get_context("spawn")
        self.todo: Sequence[tuple[int, str]] = ()
        self.seconds: list[float] = []
        """After `run`: the seconds each unit took in its worker (from being sent to its end if the worker died)."""

    def run(self, todo: Sequence[tuple[int, str]], labels: Sequence[str], chosen: Plan,
            progress: Progress | None) -> list[UnitResult]:
        self.todo = todo
        self.seconds = [0.0] * len(todo)
        results: dict[int, UnitResult] = {}
        pending = collections.deque(range(len(todo)))
        workers: list[_Worker] = []
        started: list[_Worker] = []  # every worker ever started, for the cleanup on Ctrl-C or an error
        if progress:
            progress(0, len(todo), f"starting {self.size} workers (each imports TensorFlow)")
        try:
            for _ in range(self.size):
                workers.append(self._start(pending, started))
            while len(results) < len(todo):
                busy = [worker for worker in workers if worker.unit is not None]
                ready = multiprocessing.connection.wait(
                    [worker.connection for worker in busy] + [worker.process.sentinel for worker in busy])
                for worker in busy:
                    if worker.connection not in ready and worker.process.sentinel not in ready:
                        continue
                    unit = worker.unit
                    assert unit is not None
                    result, took = self._receive(worker, todo[unit], chosen)
                    self.seconds[unit] = took if took is not None else time.perf_counter() - worker.unit_started
                    worker.show_stderr()
                    results[unit] = result
                    if progress:
                        progress(len(results), len(todo), labels[unit])
                    worker.unit = None
                    if worker.process.is_alive() or not pending:
                        self._assign(worker, pending)
                    else:  # it died: a fresh one takes the remaining units
                        worker.stop(kill=True)
                        workers[workers.index(worker)] = self._start(pending, started)
        except BaseException:
            for worker in started:
                worker.stop(kill=True)
            raise
        for worker in workers:
            worker.stop(kill=False)
        return [results[unit] for unit in range(len(todo))]

    def _start(self, pending: collections.deque[int], started: list[_Worker]) -> _Worker:
        worker = _Worker(self.context, self.config, started)
        self._assign(worker, pending)
        return worker

    def _assign(self, worker: _Worker, pending: collections.deque[int]) -> None:
        if pending and worker.process.is_alive():
            worker.unit = pending.popleft()
            worker.unit_start = _size(worker.stderr_path)
            worker.unit_started = time.perf_counter()
            try:
                worker.connection.send(self.todo[worker.unit])
            except OSError:
                pass  # it died meanwhile: its sentinel says so
        elif worker.process.is_alive():
            worker.stop(kill=False)

    def _receive(self, worker: _Worker, unit: tuple[int, str], chosen: Plan) -> tuple[UnitResult, float | None]:
        """The unit's result and the seconds the worker took to run it (None when it did not say)."""
        from compat.checker import broken_spec_cells

        index, dtype = unit
        name = self.config.spec_names[index]
        try:
            if worker.connection.poll():
                kind, payload = worker.connection.recv()
                if kind == "done":
                    result, took = payload
                    return result, took
                return (broken_spec_cells(name, dtype, chosen, payload), []), None
        except Exception:  # noqa: BLE001 - it died while sending: what it sent is lost
            pass
        worker.process.join()
        return (broken_spec_cells(name, dtype, chosen, f"the worker process running this spec "
                                                       f"{_death(worker.process.exitcode)}{worker.stderr_end()}"),
                []), None


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _death(code: int | None) -> str:
    if code is not None and code < 0:
        hint = " (the system may have run out of memory)" if -code == signal.SIGKILL else ""
        return f"{describe_exit(code)}{hint}; run this spec alone with jobs=1 to see the whole crash"
    return (f"exited with code {code} before returning its result (user code called os._exit, or the "
            f"process crashed); run this spec alone with jobs=1 to see the whole crash")


def _serve(connection: Any, pickled_config: bytes, start: tuple[bool, bool], stderr_path: str) -> None:
    """A worker's loop: load once, then run each unit it is sent until it is sent None."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it kills the workers
    _stderr_to(stderr_path)
    loaded = load_in_worker(pickled_config, *start)
    while True:
        try:
            unit = connection.recv()
        except (EOFError, OSError):
            return
        if unit is None:
            return
        if isinstance(loaded, str):
            connection.send(("failed", loaded))
            continue
        specs, chosen = loaded
        result, took = run_unit(specs, chosen, unit)
        try:
            connection.send(("done", (result, took)))
        except Exception as exc:  # noqa: BLE001 - e.g. a result that cannot be pickled
            connection.send(("failed", f"the worker process could not send its result: {type(exc).__name__}: {exc}"))


def run_unit(specs: Sequence[GradientSpec], chosen: Plan, unit: tuple[int, str]) -> tuple[UnitResult, float]:
    """One unit's result and the seconds it took."""
    from compat.checker import check_unit

    index, dtype = unit
    start = time.perf_counter()
    result = check_unit(specs[index], dtype, chosen)
    return result, time.perf_counter() - start


def load_in_worker(pickled_config: bytes, quiet_import: bool,
                   logical_cpus: bool = False) -> tuple[Sequence[GradientSpec], Plan] | str:
    """In a worker process: import TensorFlow (quietly if asked) and split the CPU into logical CPUs if asked
    (before anything can run an op), then unpickle the config (loading may import TensorFlow), load the specs
    and plan the check; or what went wrong, for the cells of every unit it is sent."""
    try:
        _import_tensorflow(quiet_import)
        if logical_cpus:
            from compat.distribute import use_logical_cpus

            use_logical_cpus()  # if it cannot, the distributed cells say why (unsupported), as with jobs=1
        from compat.checker import plan

        config: WorkerConfig = pickle.loads(pickled_config)
        specs, scenarios = config.load()
        names = tuple(spec.name for spec in specs)
        if names != config.spec_names:
            return (f"the worker process loaded specs {list(names)}, not {list(config.spec_names)}: spec "
                    f"loading must give the same specs in every process (or run with jobs=1)")
        return specs, plan(scenarios, config.dtypes, config.variants, config.reference, config.references)
    except BaseException as exc:  # noqa: BLE001 - reported as the cells of every unit this worker is sent
        what = f"SystemExit({exc.code!r})" if isinstance(exc, SystemExit) else f"{type(exc).__name__}: {exc}"
        return f"the worker process could not load the specs: {what}"


def _stderr_to(path: str) -> None:
    """Send this process's stderr (fd 2: Python's and C++'s) to `path`, which the parent reads."""
    sys.stderr.flush()
    handle = os.open(path, os.O_WRONLY | os.O_APPEND)
    os.dup2(handle, 2)
    os.close(handle)


def _import_tensorflow(quiet: bool) -> None:
    """Import TensorFlow, its start-up chatter (printed from C++ whatever the log level) hidden when `quiet`."""
    if not quiet:
        import tensorflow  # noqa: F401

        return
    import_tensorflow_hiding_chatter()
