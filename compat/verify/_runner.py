"""Run both sides in child processes, with a timeout, and turn what they wrote into a VerifyReport."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence

from compat.verify._compare import compare_sides
from compat.verify._entries import Entries, example_inputs, read_entries, validate_entries
from compat.verify._report import VerifyReport
from compat.verify._results import Job, SideResult, read_side, write_job

CONTEXTS: tuple[str, ...] = ("v1_session", "v1_tape", "eager_tape", "function_tape", "function_gradients")
"""The contexts the rewritten side can run in (compat.contexts); the original always runs in a v1 Session."""
DEFAULT_CONTEXTS: tuple[str, ...] = ("v1_session", "eager_tape", "function_tape")
VERIFY_HELP = ("Opt-in: imports and runs the original and the rewritten module (each in a child process) to "
               "compare forward outputs and input gradients; use it only on code you trust.")
"""The sentence a command that offers verification (compat-rewrite --verify) shows in its --help."""
_STDERR_TAIL_LINES = 12


def verify_rewrite(original_path: str, rewritten_source: str, entries: Entries | None = None, *,
                   scenarios: Sequence[str] | None = None, contexts: Sequence[str] = DEFAULT_CONTEXTS,
                   timeout_s: float = 300) -> VerifyReport:
    """Run the original module (as TF1 code, in a v1 Session) and its rewrite (in TF2) on the same inputs.

    This imports and runs both modules, each in its own child process: use it only on code you trust.

    Args:
      original_path: the legacy module's file.
      rewritten_source: the rewritten module's source; it is imported from a temporary file, with the
        original's directory importable.
      entries: function name -> [(dtype, shape) per input]; default: the original's `GRADCOMPAT_ENTRIES`,
        read without running it.
      scenarios: engine scenario names (compat.SCENARIOS); default: all.
      contexts: where the rewrite runs; every cell compares with the original in a v1 Session.
      timeout_s: for both children together; a child still running then is killed and its cells are errors.

    Returns:
      A VerifyReport. Failures of user code (import errors, SystemExit, crashes, timeouts) are `error`
      cells, never exceptions.

    Raises:
      EntriesError: no entries were given and the original declares none (or not as a literal).
      ValueError: an unknown scenario or context; the message lists the valid ones.
      OSError: the original cannot be read.
    """
    with tempfile.TemporaryDirectory(prefix="gradcompat-verify-") as directory:
        rewritten_dir = os.path.join(directory, "rewritten")
        os.mkdir(rewritten_dir)
        rewritten_path = os.path.join(rewritten_dir, os.path.basename(original_path))
        with open(rewritten_path, "w", encoding="utf-8") as handle:
            handle.write(rewritten_source)
        return _verify(original_path, rewritten_path, "<rewritten source>", entries, scenarios, contexts,
                       timeout_s, directory)


def verify_files(original_path: str, rewritten_path: str, entries: Entries | None = None, *,
                 scenarios: Sequence[str] | None = None, contexts: Sequence[str] = DEFAULT_CONTEXTS,
                 timeout_s: float = 300) -> VerifyReport:
    """`verify_rewrite` for a rewritten module already in a file (imported with its own directory importable)."""
    with tempfile.TemporaryDirectory(prefix="gradcompat-verify-") as directory:
        return _verify(original_path, os.path.abspath(rewritten_path), rewritten_path, entries, scenarios,
                       contexts, timeout_s, directory)


def _verify(original_path: str, rewritten_path: str, rewritten_label: str, entries: Entries | None,
            scenarios: Sequence[str] | None, contexts: Sequence[str], timeout_s: float,
            directory: str) -> VerifyReport:
    started = time.monotonic()
    original_path = os.path.abspath(original_path)
    with open(original_path, encoding="utf-8") as handle:
        source = handle.read()
    entries = validate_entries(entries) if entries is not None else read_entries(source, original_path)
    contexts = _check_contexts(contexts)
    if scenarios is not None:
        from compat.scenarios import select_scenarios  # imports TensorFlow: only to check the names here

        select_scenarios(list(scenarios))
    inputs = {name: tuple(example_inputs(name, spec)) for name, spec in entries.items()}
    write_job(Job(entries, inputs, None if scenarios is None else tuple(scenarios), contexts), directory)
    children = {
        "original": _start("original", original_path, directory, ()),
        "rewritten": _start("rewritten", rewritten_path, directory, (os.path.dirname(original_path),)),
    }
    deadline = started + timeout_s
    sides = {side: _finish(side, child, directory, deadline, timeout_s) for side, child in children.items()}
    original, rewritten = sides["original"], sides["rewritten"]
    return VerifyReport(original=original_path, rewritten=rewritten_label, entries=tuple(entries),
                        scenarios=original.scenarios or rewritten.scenarios or tuple(scenarios or ()),
                        contexts=contexts, cells=compare_sides(original, rewritten, tuple(entries), contexts),
                        tensorflow=original.tensorflow or rewritten.tensorflow,
                        elapsed_s=time.monotonic() - started)


def _check_contexts(contexts: Sequence[str]) -> tuple[str, ...]:
    if isinstance(contexts, str):
        contexts = [contexts]
    unknown = [context for context in contexts if context not in CONTEXTS]
    if unknown or not contexts:
        raise ValueError(f"unknown context(s) {unknown or '(none given)'}; choose from {list(CONTEXTS)}")
    return tuple(contexts)


def _package_root() -> str:
    import compat

    return os.path.dirname(os.path.dirname(os.path.abspath(compat.__file__)))


def _start(side: str, module_path: str, directory: str, extra_paths: tuple[str, ...]) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [_package_root(), env.get("PYTHONPATH", "")]))
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    command = [sys.executable, "-m", "compat.verify._child", f"--side={side}", f"--module={module_path}",
               f"--job_dir={directory}", *(f"--path={path}" for path in extra_paths)]
    with open(os.path.join(directory, f"{side}.stderr"), "wb") as stderr:
        # Its own session, so a timeout kills the child and anything user code started, and nothing else.
        return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
                                cwd=directory, env=env, start_new_session=True)


def _finish(side: str, child: subprocess.Popen[bytes], directory: str, deadline: float,
            timeout_s: float) -> SideResult:
    try:
        code = child.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        _kill(child)
        return SideResult(side, error=f"timed out after {timeout_s:g} s (raise timeout_s if the module is just "
                                      f"slow){_stderr_tail(directory, side)}")
    result = read_side(directory, side)
    if result is not None:
        return result
    how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
    return SideResult(side, error=f"the child process {how} before writing its results"
                                  f"{_stderr_tail(directory, side)}")


def _kill(child: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    child.wait()


def _stderr_tail(directory: str, side: str) -> str:
    try:
        with open(os.path.join(directory, f"{side}.stderr"), encoding="utf-8", errors="replace") as handle:
            lines = [line.rstrip() for line in handle if line.strip()]
    except OSError:
        return ""
    tail = lines[-_STDERR_TAIL_LINES:]
    return ("; stderr tail:\n" + "\n".join(tail)) if tail else ""
