"""Run both sides in child processes, with a timeout, and turn what they wrote into a VerifyReport."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence

from compat.child import child_env, describe_exit, fatal_or_tail, kill_group, start, wait_until
from compat.errors import UnknownNameError
from compat.registry import BASIC_CONTEXTS, SCENARIO_NAMES, check_names
from compat.verify._compare import compare_sides
from compat.verify._entries import (
    ENTRIES_CONSTANT,
    ENTRIES_EXAMPLE,
    Constant,
    Entries,
    EntriesError,
    declares_entries,
    read_entries,
    validate_entries,
)
from compat.verify._legacy import package_of
from compat.verify._module_files import check_module_file, read_source
from compat.verify._report import VerifyReport
from compat.verify._results import (
    FORWARD,
    Job,
    PlannedInput,
    Resolved,
    SideResult,
    read_resolved,
    read_side,
    write_job,
    write_resolved,
)

CONTEXTS: tuple[str, ...] = BASIC_CONTEXTS
"""The contexts the rewritten side can run in (compat.contexts); the original always runs in a v1 Session."""
DEFAULT_CONTEXTS: tuple[str, ...] = ("v1_session", "eager_tape", "function_tape")
VERIFY_HELP = ("Opt-in: imports and runs the original and the rewritten module (each in a child process) to "
               "compare forward outputs and input gradients; use it only on code you trust.")
"""The sentence a command that offers verification (compat-rewrite --verify) shows in its --help."""


def verify_rewrite(original_path: str, rewritten_source: str, entries: Entries | None = None, *,
                   scenarios: Sequence[str] | None = None, contexts: Sequence[str] = DEFAULT_CONTEXTS,
                   timeout_s: float = 300) -> VerifyReport:
    """Run the original module (as TF1 code, in a v1 Session) and its rewrite (in TF2) on the same inputs.

    This imports and runs both modules, each in its own child process: use it only on code you trust.

    Args:
      original_path: the legacy module's file.
      rewritten_source: the rewritten module's source; it is imported from a temporary file (written in the
        original's encoding), with the original's directory importable and, when the original is in a package,
        as a member of that package (so relative imports work).
      entries: function name -> [(dtype, shape) per input]; default: the original's `GRADCOMPAT_ENTRIES`, read
        without running it, else entries inferred from its source (Defun dtypes, functions holding legacy sites,
        shapes tried per rank by running the original).
      scenarios: engine scenario names (compat.SCENARIOS), and `forward` for the outputs; default: all.
      contexts: where the rewrite runs; every cell compares with the original in a v1 Session.
      timeout_s: for both children together; a child still running then is killed and its cells are errors.

    Returns:
      A VerifyReport. Failures of user code (import errors, SystemExit, crashes, timeouts) are `error`
      cells, never exceptions.

    Raises:
      EntriesError: no entries were given, the original declares none and none can be inferred.
      ValueError: an unknown scenario or context; the message lists the valid ones.
      ModuleFileError: the original is missing, not a regular file (a directory, a FIFO: never opened), or
        cannot be read or decoded; nothing has run.
    """
    _check_contexts(contexts)  # names first: a typo is said before any file is read
    check_scenarios(scenarios)
    with tempfile.TemporaryDirectory(prefix="gradcompat-verify-") as directory:
        rewritten_dir = os.path.join(directory, "rewritten")
        os.mkdir(rewritten_dir)
        rewritten_path = os.path.join(rewritten_dir, os.path.basename(original_path))
        _, encoding = read_source(original_path)
        with open(rewritten_path, "w", encoding=encoding, newline="") as handle:
            handle.write(rewritten_source)
        return _verify(original_path, rewritten_path, "<rewritten source>", entries, scenarios, contexts,
                       timeout_s, directory)


def verify_files(original_path: str, rewritten_path: str, entries: Entries | None = None, *,
                 scenarios: Sequence[str] | None = None, contexts: Sequence[str] = DEFAULT_CONTEXTS,
                 timeout_s: float = 300) -> VerifyReport:
    """`verify_rewrite` for a rewritten module already in a file (imported with its own directory importable);
    ModuleFileError, before anything runs, when either file is missing or not a regular file."""
    _check_contexts(contexts)  # names first: a typo is said before any file is read
    check_scenarios(scenarios)
    check_module_file(original_path, "original")
    check_module_file(rewritten_path, "rewritten")
    with tempfile.TemporaryDirectory(prefix="gradcompat-verify-") as directory:
        return _verify(original_path, os.path.abspath(rewritten_path), rewritten_path, entries, scenarios,
                       contexts, timeout_s, directory)


@dataclasses.dataclass(frozen=True)
class _Plan:
    """The job for both sides, and what the report must say of places that are not entries."""

    job: Job
    not_inferred: dict[str, str]
    parameters: dict[str, list[str]] = dataclasses.field(default_factory=dict)

    def declaration(self, name: str) -> str:
        """What to declare for `name`, its parameters named: a (dtype, shape) per tensor, the value for others."""
        shown = ", ".join(f'("float32", [3]) or <{parameter}>' for parameter in self.parameters.get(name, ()))
        return 'GRADCOMPAT_ENTRIES = {"' + name + '": [' + (shown or '("float32", [3])') + "]}"


def plan_entries(source: str, path: str, entries: Entries | None) -> _Plan:
    """Entries given, else declared (`GRADCOMPAT_ENTRIES`), else inferred; EntriesError when there are none."""
    from compat.verify._infer import infer_entries

    if entries is not None:
        explicit = validate_entries(entries)
        return _Plan(_job(explicit, "given explicitly"), {})
    if declares_entries(source, path):
        return _Plan(_job(read_entries(source, path), f"declared in {ENTRIES_CONSTANT}"), {})
    try:
        inferred = infer_entries(source, path)
    except SyntaxError as exc:
        raise EntriesError(f"{path}:{exc.lineno}: cannot parse the module ({exc.msg}); fix the syntax") from None
    if not inferred.entries:
        places = "".join(f"; {place}: {why}" for place, why in inferred.not_inferred.items())
        raise EntriesError(f"{path}: no {ENTRIES_CONSTANT} and no entry could be inferred (a Defun with "
                           f"grad_func, or a module-level function holding a legacy site){places}; declare the "
                           f"entry points to verify, like {ENTRIES_EXAMPLE}, or pass them explicitly")
    entries_to_infer: dict[str, list[PlannedInput]] = {
        name: [(dtype, None) for dtype, _ in spec] for name, spec in inferred.entries.items()}
    job = Job(entries=entries_to_infer, scenarios=None, contexts=(), origins=inferred.origins)
    return _Plan(job, inferred.not_inferred, inferred.parameters)


def _job(entries: Entries, origin: str) -> Job:
    return Job(entries={name: list(spec) for name, spec in entries.items()}, scenarios=None, contexts=(),
               origins={name: origin for name in entries})


def _verify(original_path: str, rewritten_path: str, rewritten_label: str, entries: Entries | None,
            scenarios: Sequence[str] | None, contexts: Sequence[str], timeout_s: float,
            directory: str) -> VerifyReport:
    started = time.monotonic()
    original_path = os.path.abspath(original_path)
    contexts = _check_contexts(contexts)
    engine_scenarios = check_scenarios(scenarios)
    source, _ = read_source(original_path)
    plan = plan_entries(source, original_path, entries)
    job = dataclasses.replace(plan.job, scenarios=engine_scenarios, contexts=contexts)
    write_job(job, directory)
    if not job.needs_inference:
        write_resolved(Resolved({name: [item if isinstance(item, Constant) else (item[0], list(item[1] or ()))
                                        for item in spec] for name, spec in job.entries.items()}), directory)
    original, rewritten = _run_sides(original_path, rewritten_path, directory, job, timeout_s, started + timeout_s)
    resolved = read_resolved(directory) or Resolved({})
    names = tuple(resolved.inputs)
    notes = {name: "; ".join(filter(None, (resolved.notes.get(name), original.notes.get(name))))
             for name in names if resolved.notes.get(name) or original.notes.get(name)}
    not_verified = {**plan.not_inferred, **{
        name: f"its inputs could not be inferred: {why}; declare them: a (dtype, shape) per tensor argument, the "
              f"value itself for any other (a number of bits, a flag), e.g. {plan.declaration(name)}"
        for name, why in resolved.unresolved.items()}}
    cells = compare_sides(original, rewritten, names, contexts, scenarios)
    if not names and not not_verified:
        not_verified["entries"] = original.error or rewritten.error or "no entry could be run"
    return VerifyReport(original=original_path, rewritten=rewritten_label, entries=names,
                        scenarios=original.scenarios or rewritten.scenarios or tuple(engine_scenarios or ()),
                        contexts=contexts, cells=cells, tensorflow=original.tensorflow or rewritten.tensorflow,
                        elapsed_s=time.monotonic() - started, notes=notes, not_verified=not_verified)


def _run_sides(original_path: str, rewritten_path: str, directory: str, job: Job, timeout_s: float,
               deadline: float) -> tuple[SideResult, SideResult]:
    """Both sides' results; the rewritten side starts once the original has resolved the entries' inputs.
    Both children's groups are killed on every way out (Ctrl-C included)."""
    children: list[subprocess.Popen[bytes]] = []
    with contextlib.ExitStack() as cleanup:
        cleanup.callback(lambda: [kill_group(child) for child in children])
        children.append(_start("original", original_path, directory, (), None, timeout_s, deadline))
        if not job.needs_inference or _wait_for_resolved(directory, children[0], deadline):
            children.append(_start("rewritten", rewritten_path, directory, (os.path.dirname(original_path),),
                                   package_of(original_path), timeout_s, deadline))
        original = _finish("original", children[0], directory, deadline, timeout_s)
        rewritten = (_finish("rewritten", children[1], directory, deadline, timeout_s) if len(children) > 1 else
                     SideResult("rewritten", error="not run: the original side ended before inferring the entries' "
                                                   "inputs"))
    return original, rewritten


def check_scenarios(scenarios: Sequence[str] | None) -> tuple[str, ...] | None:
    """The engine scenarios named (`forward` is the outputs row, always computed); ValueError for unknown ones."""
    if scenarios is None:
        return None
    if isinstance(scenarios, str):
        scenarios = [scenarios]
    engine = [name for name in scenarios if name != FORWARD]
    try:
        return check_names(engine, SCENARIO_NAMES, "scenario", "scenarios")
    except UnknownNameError as exc:
        raise UnknownNameError(f"{exc} (or `{FORWARD}` for the outputs)", exc.argument) from None


def _check_contexts(contexts: Sequence[str]) -> tuple[str, ...]:
    if isinstance(contexts, str):
        contexts = [contexts]
    if not contexts:
        raise UnknownNameError(f"contexts: none given; choose from {list(CONTEXTS)}", "contexts")
    return check_names(contexts, CONTEXTS, "context", "contexts")


def _start(side: str, module_path: str, directory: str, extra_paths: tuple[str, ...],
           package: tuple[str, str] | None, timeout_s: float, deadline: float) -> subprocess.Popen[bytes]:
    env = child_env(TF_CPP_MIN_LOG_LEVEL=os.environ.get("TF_CPP_MIN_LOG_LEVEL", "3"))
    command = [sys.executable, "-m", "compat.verify._child", f"--side={side}", f"--module={module_path}",
               f"--job_dir={directory}", f"--timeout_s={timeout_s}", f"--deadline={deadline!r}",
               *(f"--path={path}" for path in extra_paths)]
    if package is not None:
        command += [f"--package_root={package[0]}", f"--package={package[1]}"]
    with open(os.path.join(directory, f"{side}.stderr"), "wb") as stderr:
        # Its own session, so a timeout kills the child and anything user code started, and nothing else.
        return start(command, stdout=subprocess.DEVNULL, stderr=stderr, cwd=directory, env=env)


def _wait_for_resolved(directory: str, child: subprocess.Popen[bytes], deadline: float) -> bool:
    """Wait until the original side has inferred the entries' inputs; False if it ended or time ran out first."""
    while read_resolved(directory) is None:
        if child.poll() is not None or time.monotonic() >= deadline:
            return read_resolved(directory) is not None
        time.sleep(0.05)
    return True


_GRACE_S = 3.0
"""How long past the deadline a side may take to write what it has (its units are killed a second before)."""


def _finish(side: str, child: subprocess.Popen[bytes], directory: str, deadline: float,
            timeout_s: float) -> SideResult:
    code = wait_until(child, deadline + _GRACE_S)
    if code is None:
        return SideResult(side, error=f"timed out after {timeout_s:g} s (raise timeout_s if the module is just "
                                      f"slow){fatal_or_tail(_stderr_path(directory, side))}")
    result = read_side(directory, side)
    if result is not None:
        return result
    return SideResult(side, error=f"the child process {describe_exit(code)} before writing its results"
                                  f"{fatal_or_tail(_stderr_path(directory, side))}")


def _stderr_path(directory: str, side: str) -> str:
    return os.path.join(directory, f"{side}.stderr")
