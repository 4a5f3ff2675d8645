"""Benchmark: the check matrix (`compat.checker.check`) against the same gradients in bare TensorFlow, and
`compat-check` itself in one process and in worker processes.

Run: `python benchmarks/check_matrix.py [--repeats=3] [--dtypes=float32,float16] [--jobs=1,2] [--profile]`.

One process, in this one:
(a) *harness*: `compat.checker.check` on every spec in CATALOGUE (found at run time), all scenarios, all
    variants, the default reference: probes, output signatures, validation, comparison, the report.
(b) *baseline* (benchmarks/baseline/: one module per mechanism group and context group): the same gradient
    computations written as a user would, with no harness: for each spec x dtype
    x context, one tf.Graph + one Session.run (v1 contexts), one eager loop, or one traced tf.function called
    once, holding every mechanism x applicable scenario (Defun + grad_func, Defun + python_grad_func,
    RegisterGradient + gradient_override_map under a fresh name, tf.custom_gradient), the spec's `gradient`
    called directly. What TensorFlow refuses to build (Defun in eager...) is caught and skipped, as the
    harness reports it `unsupported`; a batch that fails at run time is searched for its failing cases by the
    harness's own strategy (see README).

The downstreams (`scenario.downstream(spec)`) and the output dtypes the Defun gradient needs are prepared once,
before timing: a user writes them by hand. Both sides are warmed up once, their order alternates across repeats,
and the target is harness / baseline <= 1.1 (best of repeats; wall and CPU seconds are printed).

Then `compat-check --format=json` in child processes, once per `--jobs` value (default 1 and the usable CPUs):
wall and CPU seconds, the peak RSS of every process (main, workers), how busy the most jobs keep the cores
(CPU seconds of the whole process tree / (wall seconds x jobs), target >= 0.9: the wall-time ratio against
--jobs=1, printed too, also counts each worker's own TensorFlow import, which no scheduling removes), and
whether the two JSON reports are equal. Every timing line carries the load average. Exit code 0 when every
target is met, 1 when one is missed, 2 when the baseline does not implement a mechanism or context of compat.
"""

from __future__ import annotations

import cProfile
import gc
import io
import json
import os
import pstats
import re
import resource
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(_ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from _measure import Measured, load_average, measure  # noqa: E402
from absl import app, flags, logging  # noqa: E402
from baseline.contexts import Grads  # noqa: E402
from baseline.mechanisms import BASELINE_MECHANISMS  # noqa: E402
from baseline.plan import BASELINE_CONTEXTS, SAVED_CONTEXTS, plan, run_baseline  # noqa: E402
from baseline.saved_model import SYMBOLIC  # noqa: E402

from compat.catalogue import CATALOGUE  # noqa: E402
from compat.checker import CheckReport, check  # noqa: E402
from compat.contexts import CONTEXTS  # noqa: E402
from compat.dtypes import DTYPES  # noqa: E402
from compat.mechanisms import MECHANISMS  # noqa: E402
from compat.reports.timings import without_timings  # noqa: E402
from compat.scenarios import SCENARIOS  # noqa: E402
from compat.workers import usable_cpus  # noqa: E402

_REPEATS = flags.DEFINE_integer("repeats", 3, "Timed runs of each side; best and median are reported.",
                                lower_bound=1)
_DTYPES = flags.DEFINE_list("dtypes", ["float32"], f"The dtype axis, from {list(DTYPES)}.")
_SPECS = flags.DEFINE_list("specs", None, "Catalogue specs to run (default: the whole catalogue).")
_SCENARIOS = flags.DEFINE_list("scenarios", None, "Scenarios to run (default: all).")
_TARGET = flags.DEFINE_float("target", 1.1, "The one-process harness / baseline ratio to stay under.")
_ONE_PROCESS = flags.DEFINE_bool("one_process", True, "Time the harness against the baseline in this process.")
_APP = flags.DEFINE_bool("app", True, "Time compat-check itself in child processes, once per --jobs value.")
_JOBS = flags.DEFINE_list("jobs", None, "compat-check --jobs values to time (default: 1 and the usable CPUs).")
_APP_REPEATS = flags.DEFINE_integer("app_repeats", 1, "Timed compat-check runs per --jobs value (order alternates).",
                                    lower_bound=1)
_APP_BUSY = flags.DEFINE_float("app_busy", 0.9, "How busy compat-check --jobs=<most> must keep its cores: CPU "
                               "seconds / (wall seconds x jobs), at least.")
_PROFILE = flags.DEFINE_bool("profile", False, "After timing, run the harness once under cProfile and print "
                             "where its time goes.")
_VERIFY = flags.DEFINE_bool("verify", True, "Check (untimed) that the baseline computed the harness's gradients.")


# ---------------------------------------------------------------------------------------------- the harness

def run_harness(names: Sequence[str], scenarios: Sequence[str], dtypes: Sequence[str]) -> CheckReport:
    # Without the references that are the forward itself: the baseline computes only the cells' gradients (what the
    # references add is timed by benchmarks/references.py).
    return check([CATALOGUE[name]() for name in names], scenarios=scenarios, dtypes=dtypes, references=[])


# ------------------------------------------------------------------------------------------------ reporting

def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _same_grads(mine: Sequence[Any] | None, theirs: Sequence[Any]) -> bool:
    return mine is not None and len(mine) == len(theirs) and all(
        (a is None) == (b is None) and (a is None or np.allclose(
            np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=1e-3, atol=1e-3, equal_nan=True))
        for a, b in zip(mine, theirs, strict=True))


_LOADER_DISAGREED = "tf.gradients inside a tf.function disagreed with the eager tape"


def verify(report: CheckReport, grads: Grads) -> tuple[bool, str]:
    """Whether the baseline computed what the harness computed (same cells ran, same input gradients; in the
    saved_model contexts, tf.gradients computed the same wherever the harness reports no disagreement with the
    tape), and a line saying so."""
    ran = {(c.spec, c.scenario, c.dtype, c.variant): c for c in report.cells
           if c.result.status in ("ok", "not_called", "not_observable")}
    refused = {(c.spec, c.scenario, c.dtype, c.variant) for c in report.cells if c.result.status == "unsupported"}
    tape = {key: value for key, value in grads.items() if not key[3].endswith(SYMBOLIC)}
    mismatched = [key for key, cell in ran.items() if not _same_grads(tape.get(key), cell.result.input_grads)]
    extra = sorted(set(tape) - set(ran))
    agreeing = [key for key, cell in ran.items()
                if cell.context in SAVED_CONTEXTS and _LOADER_DISAGREED not in cell.result.message]
    symbolic_mismatched = [key for key in agreeing if not _same_grads(
        grads.get((*key[:3], key[3] + SYMBOLIC)), ran[key].result.input_grads)]
    line = (f"verify: harness ran {len(ran)} cells (+{len(refused)} unsupported, "
            f"{len(report.cells) - len(ran) - len(refused)} error); baseline ran {len(tape)}; "
            f"{len(ran) - len(mismatched)} match, {len(mismatched)} differ, {len(extra)} only in the baseline; "
            f"tf.gradients in the loading process: {len(agreeing) - len(symbolic_mismatched)} of {len(agreeing)} "
            f"saved cells match")
    for key in (mismatched + extra + symbolic_mismatched)[:8]:
        line += f"\n  differs: {'/'.join(key)} harness={ran.get(key) and ran[key].result.status}"
    return not (mismatched or extra or symbolic_mismatched), line


def profile_harness(names: Sequence[str], scenarios: Sequence[str], dtypes: Sequence[str]) -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    run_harness(names, scenarios, dtypes)
    profiler.disable()
    stream = io.StringIO()
    stats = pstats.Stats(profiler, stream=stream).strip_dirs().sort_stats("cumulative")
    stats.print_stats(40)
    return stream.getvalue()


def _timed_side(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """(wall s, this process's CPU s, result) of one side."""
    gc.collect()
    start, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return time.perf_counter() - start, time.process_time() - cpu, result


def run_app(jobs: int, names: Sequence[str], scenarios: Sequence[str], dtypes: Sequence[str],
            output: Path) -> Measured:
    """`compat-check --format=json` in a child process, as a user runs it, with `--jobs`."""
    command = [sys.executable, "-m", "compat.apps.check", "--format=json", f"--output={output}", f"--jobs={jobs}",
               f"--dtypes={','.join(dtypes)}"]
    if list(names) != list(CATALOGUE):
        command.append(f"--specs={','.join(names)}")
    if list(scenarios) != list(SCENARIOS):
        command.append(f"--scenarios={','.join(scenarios)}")
    env = {**os.environ, "PYTHONPATH": str(_ROOT), "TF_CPP_MIN_LOG_LEVEL": "3"}
    return measure(command, env=env)


_NUMBERED = re.compile(r"\d+")


def _numbers_masked(value: Any) -> Any:
    """`value` with every number in its strings masked; a string holding a message cut at its length limit
    ("...", also inside a difference's detail: "...)") is kept to its first 300 characters, since numbers of
    another length move the cut."""
    if isinstance(value, str):
        masked = _NUMBERED.sub("#", re.sub(r"_\d+\b", "", value))  # Keras: `op_layer`, then `op_layer_1`
        return masked[:300] if "..." in value else masked
    if isinstance(value, dict):
        return {key: _numbers_masked(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_numbers_masked(item) for item in value]
    return value


def compare_reports(one: Path, many: Path) -> tuple[bool, str]:
    """(acceptable, what differs) between the --jobs=1 and --jobs=N JSON reports.

    Names numbered per process (TensorFlow's traced functions, `__inference_body_67728`; the Defun names
    gradcompat makes, `gc_scaled_ste_30`) differ with what ran before in that process: cells whose messages
    differ only in such numbers are counted apart; each unit's seconds are not compared; any other difference is a
    failure.
    """
    a, b = (without_timings(json.loads(path.read_text())) for path in (one, many))
    other = sorted(key for key in a if key != "cells" and a[key] != b.get(key))
    if other or len(a["cells"]) != len(b["cells"]):
        return False, f"reports differ: {other or 'the number of cells'}"
    pairs = [(x, y) for x, y in zip(a["cells"], b["cells"], strict=True) if x != y]
    differing = [x for x, y in pairs if _numbers_masked(x) != _numbers_masked(y)]
    if differing:
        first = differing[0]
        return False, (f"{len(differing)} cells differ, e.g. {first['spec']}/{first['scenario']}/{first['variant']}")
    if pairs:
        return True, (f"equal, except {len(pairs)} of {len(a['cells'])} cells whose messages differ only in a "
                      f"name numbered per process")
    return True, f"equal ({len(a['cells'])} cells)"


def main(argv: Sequence[str]) -> int:
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments {argv[1:]}; this benchmark takes only flags (see --help)",
                             exitcode=2)
    dtypes, names, scenarios = _DTYPES.value, _SPECS.value or list(CATALOGUE), _SCENARIOS.value or list(SCENARIOS)
    choices = (("dtype", dtypes, DTYPES), ("spec", names, CATALOGUE), ("scenario", scenarios, SCENARIOS))
    for what, given, known in choices:
        unknown = [name for name in given if name not in known]
        if unknown:
            raise app.UsageError(f"unknown {what}(s) {unknown}; choose from {list(known)}", exitcode=2)
    # The baseline is written per mechanism and context: a new one in compat must be added here too.
    missing = [name for name in (*MECHANISMS, *CONTEXTS) if name not in (*BASELINE_MECHANISMS, *BASELINE_CONTEXTS)]
    if missing:
        print(f"refusing to run: the baseline does not implement {missing} (compat has mechanisms "
              f"{list(MECHANISMS)} and contexts {list(CONTEXTS)}); add each to BASELINE_MECHANISMS "
              f"(benchmarks/baseline/mechanisms.py) or BASELINE_CONTEXTS (benchmarks/baseline/plan.py)",
              file=sys.stderr)
        return 2
    if list(BASELINE_MECHANISMS) != list(MECHANISMS) or list(BASELINE_CONTEXTS) != list(CONTEXTS):
        raise app.UsageError(f"the baseline covers mechanisms {list(BASELINE_MECHANISMS)} and contexts "
                             f"{list(BASELINE_CONTEXTS)} but compat has {list(MECHANISMS)} and {list(CONTEXTS)}; "
                             "keep them in compat's registry order in benchmarks/baseline/")
    all_jobs = [int(j) for j in _JOBS.value] if _JOBS.value else sorted({1, usable_cpus()})
    # The baseline's SavedModel saving, Keras fits and retraced wrappers log and warn on every case; the
    # harness silences the same messages, so they would only bury the timings.
    logging.set_verbosity(logging.ERROR)
    tf.get_logger().setLevel("ERROR")
    warnings.filterwarnings("ignore", message="Gradients do not exist for variables")
    print(f"TensorFlow {tf.__version__}, numpy {np.__version__}, Python {sys.version.split()[0]}; specs {names}; "
          f"scenarios {'all' if scenarios == list(SCENARIOS) else scenarios}; dtypes {dtypes}; "
          f"{usable_cpus()} usable CPUs; {load_average()}", flush=True)

    rows: list[tuple[str, str]] = []
    verdicts: list[bool] = []
    if _ONE_PROCESS.value:
        plans = plan(names, scenarios, dtypes)
        warm_up, _, _ = _timed_side(lambda: (run_harness(names, scenarios, dtypes[:1]), run_baseline(plans[:1])))
        print(f"warm-up (harness on the specs in {dtypes[0]}, baseline on one spec): {warm_up:.2f} s", flush=True)
        times: dict[str, list[tuple[float, float]]] = {"harness": [], "baseline": []}
        report: CheckReport | None = None
        grads: Grads = {}
        for repeat in range(_REPEATS.value):
            for side in ("harness", "baseline") if repeat % 2 == 0 else ("baseline", "harness"):
                if side == "harness":
                    seconds, cpu, report = _timed_side(lambda: run_harness(names, scenarios, dtypes))
                else:
                    seconds, cpu, grads = _timed_side(lambda: run_baseline(plans))
                times[side].append((seconds, cpu))
                print(f"  repeat {repeat + 1} {side:8s} {seconds:7.2f} s wall, {cpu:7.2f} s CPU; {load_average()}",
                      flush=True)
        assert report is not None
        best_h, best_b = min(t[0] for t in times["harness"]), min(t[0] for t in times["baseline"])
        med_h = statistics.median(t[0] for t in times["harness"])
        med_b = statistics.median(t[0] for t in times["baseline"])
        cpu_h, cpu_b = min(t[1] for t in times["harness"]), min(t[1] for t in times["baseline"])
        ratio, target = best_h / best_b, _TARGET.value
        verdicts.append(ratio <= target)
        rows += [
            ("specs x dtypes (units)", f"{len(report.specs)} x {len(report.dtypes)}"),
            ("cells (spec x scenario x dtype x variant)", f"{len(report.cells)}"),
            ("baseline computations", f"{sum(len(p.downstreams) for p in plans) * len(MECHANISMS) * len(CONTEXTS)}"),
            ("one process: harness s   (best / median; best CPU)", f"{best_h:.2f} / {med_h:.2f}; {cpu_h:.2f}"),
            ("one process: baseline s  (best / median; best CPU)", f"{best_b:.2f} / {med_b:.2f}; {cpu_b:.2f}"),
            ("ratio harness/baseline (best / median; CPU)",
             f"{ratio:.2f} / {med_h / med_b:.2f}; {cpu_h / cpu_b:.2f}"),
            ("target", f"<= {target:.2f}: {'PASS' if ratio <= target else 'MISS'}"),
            ("peak RSS MiB of this process (both sides, all repeats)", f"{peak_rss_mib():.0f}"),
        ]
        if _VERIFY.value:
            verified, line = verify(report, grads)
            verdicts.append(verified)  # a baseline that computed something else makes the ratio meaningless
            rows.append(("verify", line))
    if _APP.value:
        with tempfile.TemporaryDirectory() as tmp:
            runs: dict[int, list[Measured]] = {jobs: [] for jobs in all_jobs}
            for repeat in range(_APP_REPEATS.value):
                for jobs in all_jobs if repeat % 2 == 0 else all_jobs[::-1]:
                    measured = run_app(jobs, names, scenarios, dtypes, Path(tmp) / f"jobs{jobs}.json")
                    runs[jobs].append(measured)
                    print(f"  compat-check --jobs={jobs}: {measured.seconds:.2f} s wall, {measured.cpu_seconds:.2f} s "
                          f"CPU, exit {measured.returncode}; {load_average()}", flush=True)
                    if measured.returncode not in (0, 1):
                        print(f"compat-check --jobs={jobs} failed (exit {measured.returncode}):\n"
                              f"{measured.stderr[-2000:]}", file=sys.stderr)
                        return 1
            for jobs, measured_runs in runs.items():
                best = min(measured_runs, key=lambda m: m.seconds)
                rows.append((f"compat-check --jobs={jobs} s (best wall; CPU)",
                             f"{best.seconds:.2f}; {best.cpu_seconds:.2f}"))
                rows.append(("  peak RSS MiB per process", best.rss_line()))
            one, many = min(all_jobs), max(all_jobs)
            if one != many:
                app_ratio = min(m.seconds for m in runs[many]) / min(m.seconds for m in runs[one])
                same, how = compare_reports(Path(tmp) / f"jobs{one}.json", Path(tmp) / f"jobs{many}.json")
                verdicts.append(same)
                rows += [
                    (f"ratio --jobs={many} / --jobs={one} (wall)", f"{app_ratio:.2f}"),
                    (f"report --jobs={many} vs --jobs={one}", ("" if same else "MISS: ") + how),
                ]
            busiest = min(runs[many], key=lambda m: m.seconds)
            busy = busiest.cpu_seconds / (busiest.seconds * many)
            verdicts.append(busy >= _APP_BUSY.value)
            rows += [(f"cores busy, --jobs={many} (CPU / (wall x {many}))", f"{busy:.2f}"),
                     ("target", f">= {_APP_BUSY.value:.2f}: {'PASS' if busy >= _APP_BUSY.value else 'MISS'}")]
    width = max(len(name) for name, _ in rows) if rows else 0
    print()
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    print(f"result: {'PASS' if all(verdicts) else 'MISS'}; {load_average()}")
    if _PROFILE.value:
        print(profile_harness(names, scenarios, dtypes))
    return 0 if all(verdicts) else 1


if __name__ == "__main__":
    app.run(main)
