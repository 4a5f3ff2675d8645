"""The child process of one compat.verify side: import TensorFlow once, fork one process per entry and context.

    python -m compat.verify._child --side=original|rewritten --module=PATH --job_dir=DIR [--path=DIR ...]
                                   [--package_root=DIR --package=DOTTED] --timeout_s=SECONDS --deadline=MONOTONIC

The original side runs with `tensorflow` seen as `tensorflow.compat.v1` (v2 behaviour disabled) in the
v1_session context only; the rewritten side runs in TF2, in every context the job names. Each (entry, context)
runs in a process forked before any user code was imported (compat.verify._unit), so no state of one reaches
another; a process that dies (a TensorFlow abort, `os._exit`) is run again one scenario at a time, so only the
scenario that kills it loses its cells, which quote the fatal line. The original side first infers the inputs of
entries declared without shapes (resolved.json). Results go to DIR/<side>.json and DIR/<side>.npz; the exit
status is 0 whenever they were written.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from compat._stderr_tail import fatal_or_tail
from compat.verify._entries import (
    SHAPE_CANDIDATES,
    Constant,
    InputSpec,
    constants_of,
    example_inputs,
    tensor_specs,
)
from compat.verify._results import (
    FORWARD,
    ORIGINAL_CONTEXT,
    Attempt,
    Job,
    Resolved,
    SideResult,
    read_job,
    read_resolved,
    read_side,
    write_resolved,
    write_side,
)


@dataclasses.dataclass(frozen=True)
class Died:
    """A unit's process ended without writing its result: how, and the end of what it wrote to stderr."""

    how: str
    timed_out: bool = False

    @property
    def message(self) -> str:
        return f"the process running it {self.how}"

    def attempt(self, doing: str) -> Attempt:
        return Attempt("error", f"while {doing}, {self.message}", died=True)


class Side:
    """One side's work: fork a unit process per (entry, context), merge what each wrote."""

    def __init__(self, module: Any, job: Job, directory: str, timeout_s: float, deadline: float,
                 recorder: Any) -> None:
        from compat.scenarios import select_scenarios

        self.module, self.job, self.directory, self.recorder = module, job, directory, recorder
        self.timeout_s, self.deadline = timeout_s, deadline
        self.scenarios = select_scenarios(list(job.scenarios) if job.scenarios is not None else None)
        names = tuple(scenario.name for scenario in self.scenarios)
        import tensorflow as tf

        self.result = SideResult(module.side, tensorflow=tf.__version__, scenarios=names)
        self._units = 0

    @property
    def contexts(self) -> tuple[str, ...]:
        return (ORIGINAL_CONTEXT,) if self.module.side == "original" else self.job.contexts

    def fork(self, unit: Any, inputs: tuple[Any, ...]) -> SideResult | Died:
        """Run `unit` in a forked process; its result, or how it died. At the time limit the unit is killed and
        the whole side fails (`result.error`): nothing more is run."""
        from compat.verify._unit import run_unit

        if self.result.error:
            return Died("was not started: " + self.result.error)
        self._units += 1
        stem = f"{self.module.side}-unit{self._units}"
        stderr_path = os.path.join(self.directory, stem + ".stderr")
        outcome = _forked(lambda: run_unit(self.module, unit, inputs, self.scenarios, self.recorder),
                          self.directory, stem, stderr_path, self.deadline)
        if isinstance(outcome, Died) and outcome.timed_out:
            self.result = dataclasses.replace(self.result, error=f"timed out after {self.timeout_s:g} s while "
                                                                 f"running `{unit.entry}`: {outcome.message}")
        return outcome

    def preflight(self) -> bool:
        """Import the module once in a process of its own: an import that fails or kills the process is the
        side's error, said once (every unit would hit it)."""
        from compat.verify._unit import Unit

        outcome = self.fork(Unit("", "", ()), ())
        if isinstance(outcome, Died) and not self.result.error:
            self.result = dataclasses.replace(self.result, error=f"importing {self.module.path}: {outcome.message}")
        elif isinstance(outcome, SideResult) and outcome.error:
            self.result = dataclasses.replace(self.result, error=outcome.error)
        return not self.result.error

    def run(self, inputs: dict[str, list[InputSpec]]) -> SideResult:
        for entry, spec in inputs.items():
            values = tuple(example_inputs(entry, spec))
            for context in self.contexts:
                if self.result.error:
                    return self.result
                self._run_entry(entry, context, values, constants_of(spec))
        return self.result

    def _run_entry(self, entry: str, context: str, inputs: tuple[Any, ...],
                   constants: tuple[tuple[int, Any], ...]) -> None:
        from compat.verify._unit import Unit

        names = (FORWARD, *self.result.scenarios)
        unit = functools.partial(Unit, entry, context, constants=constants)
        outcome = self.fork(unit(names), inputs)
        if isinstance(outcome, SideResult) and not outcome.split:
            self._merge(outcome)
            return
        # The process died, or the module built ops in the default graph: one scenario per process.
        forward = self.fork(unit((FORWARD,)), inputs)
        if isinstance(forward, Died):
            for name in names:
                self._set(entry, context, name, forward.attempt("computing the outputs"))
            return
        self._merge(forward)
        attempt = forward.attempts.get((entry, context, FORWARD))
        if self.result.error or entry in self.result.entry_errors or attempt is None:
            return
        if attempt.status != "ok":
            for name in names[1:]:
                self._set(entry, context, name, Attempt("error", "computing the outputs failed, so no gradient "
                                                                 f"was taken: {attempt.message}"))
            return
        outputs = tuple((value.dtype.name, tuple(value.shape)) for value in attempt.values if value is not None)
        for name in names[1:]:
            alone = self.fork(unit((name,), outputs), inputs)
            if isinstance(alone, Died):
                self._set(entry, context, name, alone.attempt("taking this gradient"))
            else:
                self._merge(alone)

    def _set(self, entry: str, context: str, scenario: str, attempt: Attempt) -> None:
        self.result.attempts[(entry, context, scenario)] = attempt

    def _merge(self, unit: SideResult) -> None:
        if unit.error and not self.result.error:
            self.result = dataclasses.replace(self.result, error=unit.error)
        self.result.entry_errors.update(unit.entry_errors)
        self.result.attempts.update(unit.attempts)
        self.result.notes.update(unit.notes)


def _forked(compute: Callable[[], SideResult], directory: str, stem: str, stderr_path: str,
            deadline: float) -> SideResult | Died:
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the unit: stderr to its own file, result written, then gone without running any exit code
        code = 1
        try:
            fd = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(fd, 2)
            write_side(compute(), directory, stem)
            code = 0
        except BaseException:  # noqa: BLE001 - reported through the stderr file
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    status = _wait(pid, deadline)
    result = read_side(directory, stem)
    if result is not None:
        return result
    if status is None:
        return Died(f"was still running when the time limit ran out (raise timeout_s if the module is just slow)"
                    f"{fatal_or_tail(stderr_path)}", timed_out=True)
    if os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        return Died(f"was killed by {name}{fatal_or_tail(stderr_path)}")
    return Died(f"exited with code {os.waitstatus_to_exitcode(status)} before writing its results"
                f"{fatal_or_tail(stderr_path)}")


def _wait(pid: int, deadline: float) -> int | None:
    """The wait status of `pid`, or None when it was killed at the deadline."""
    pause = 0.002
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if time.monotonic() >= deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def resolve_entries(side: Side, job: Job) -> Resolved:
    """The inputs of every entry; an entry without shapes gets the first candidate shape its forward accepts
    in the original (each try in a process of its own)."""
    from compat.verify._unit import Unit

    resolved = Resolved(inputs={})
    for entry, spec in job.entries.items():
        if not any(isinstance(item, tuple) and item[1] is None for item in spec):
            resolved.inputs[entry] = [item if isinstance(item, Constant) else (item[0], list(item[1] or ()))
                                      for item in spec]
            continue
        tried: dict[str, list[str]] = {}
        for shape in SHAPE_CANDIDATES:
            candidate: list[InputSpec] = [item if isinstance(item, Constant) else (item[0], list(shape))
                                          for item in spec]
            unit = Unit(entry, ORIGINAL_CONTEXT, (FORWARD,), constants=constants_of(candidate))
            outcome = side.fork(unit, tuple(example_inputs(entry, candidate)))
            attempt = outcome.attempts.get((entry, ORIGINAL_CONTEXT, FORWARD)) if isinstance(outcome, SideResult) \
                else None
            shown = ", ".join(f"{item[0]}{item[1]}" for item in tensor_specs(candidate))
            if attempt is not None and attempt.status == "ok":
                resolved.inputs[entry] = candidate
                resolved.notes[entry] = (f"inputs inferred: {shown}, the first of ranks 1-4 the original's forward "
                                         f"accepts ({job.origins.get(entry, 'inferred')})")
                break
            why = outcome.message if isinstance(outcome, Died) else (
                outcome.error or outcome.entry_errors.get(entry) or (attempt.message if attempt else "no result"))
            tried.setdefault(why.splitlines()[0], []).append(shown)
        else:
            resolved.unresolved[entry] = "; ".join(f"tried {' and '.join(shapes)}: {why}"
                                                   for why, shapes in tried.items())
    return resolved


def _setup(side: str) -> Any:
    """Import TensorFlow and gradcompat, swap in the legacy TensorFlow for the original, instrument it."""
    import tensorflow  # noqa: F401 - imported before forking: the point of this process

    import compat.contexts  # noqa: F401 - gradcompat's modules bind the real TF2 module before the swap
    from compat.verify._legacy import install_legacy_tensorflow
    from compat.verify._record import Recorder, instrument_custom_gradient, instrument_legacy

    recorder = Recorder()
    if side == "original":
        install_legacy_tensorflow()
        instrument_legacy(recorder)
    else:
        instrument_custom_gradient(recorder)
    return recorder


def run_side(args: argparse.Namespace) -> SideResult:
    from compat.verify._unit import Module

    job = read_job(args.job_dir)
    recorder = _setup(args.side)
    package = (args.package_root, args.package) if args.package else None
    module = Module(args.side, args.module, tuple(args.path), package)
    # The parent's deadline (CLOCK_MONOTONIC is one clock for every process), less a second to write the results.
    deadline = args.deadline - 1.0 if args.deadline else time.monotonic() + args.timeout_s
    side = Side(module, job, args.job_dir, args.timeout_s, deadline, recorder)
    if not side.preflight():
        if read_resolved(args.job_dir) is None:
            unresolved = {name: "the original could not be imported" for name in job.entries}
            write_resolved(Resolved({}, unresolved=unresolved), args.job_dir)
        return side.result
    resolved = read_resolved(args.job_dir)
    if resolved is None:
        if args.side != "original":
            return dataclasses.replace(side.result, error="the entries' inputs were never resolved (resolved.json)")
        resolved = resolve_entries(side, job)
        write_resolved(resolved, args.job_dir)
    return side.run(resolved.inputs)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m compat.verify._child", description=__doc__.splitlines()[0])
    parser.add_argument("--side", choices=("original", "rewritten"), required=True)
    parser.add_argument("--module", required=True, help="the module file to import")
    parser.add_argument("--job_dir", required=True, help="holds job.json; results are written here")
    parser.add_argument("--path", action="append", default=[], help="another directory to make importable")
    parser.add_argument("--package_root", default="", help="with --package: the directory holding the package")
    parser.add_argument("--package", default="", help="import the module as a member of this dotted package")
    parser.add_argument("--timeout_s", type=float, default=300.0, help="the time limit, as the messages say it")
    parser.add_argument("--deadline", type=float, default=0.0, help="time.monotonic() at which the limit runs out")
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    write_side(run_side(args), args.job_dir)
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # threads user code started must not keep a finished child alive
