"""Benchmark: compat-audit on the installed TensorFlow package's own source tree, against its targets.

Run: `python benchmarks/audit_speed.py [--skip-upgrade] [--tree=DIR] [--jobs=1,2] [--repeats=5]`.

Every run is the `compat-audit --format=json` command in a child process, as a user runs it (wall time includes
the interpreter's start), timed with wall and CPU seconds and the peak RSS of every process it starts:
- the default audit (only files that name a legacy gradient API in code are parsed; all are read and decoded)
  and `--strict` (every file through CPython's parser and symbol table), each with 1 job and with all usable
  CPUs, `--repeats` times (default 5): the median run is printed and judged, with the best beside it;
- both again on a tree holding 4 copies of the tree's .py files (hard links where possible), to check that
  peak memory stays flat in the number of files;
- the floor: CPython's parser and symbol table alone on every file of the tree, as a bare script with as many
  forked processes as the most jobs (what any syntax check of the whole tree costs on this machine now), and
  `--strict`'s time as a multiple of it;
- one 5 MB one-line file (parsing it would take ~1.7 GiB; the parse limit keeps it to the read);
- `tf_upgrade_v2` on the same tree (unless --skip-upgrade), which parses every file: it is compared with
  `--strict`, which does too. Lines per second count the lines of the files a run parsed (for the default
  run, only the files the pre-filter let through are parsed, so its rate is given as lines read per second).

Targets (all usable CPUs, median run): default <= 1.0 s wall; --strict <= 1.5x the floor timed alongside it (a
bound in seconds judges the machine: on 2 cores the floor alone measured 1.65 s, over a 1.5 s bound); the
largest process's peak RSS on the 4x tree <= 1.25x the 1x tree's. Exit code 0 when every target is met, 1 when
one is missed, 2 on a usage error. Each line carries the load average: on a shared machine, rerun when it is
above the CPU count.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import Measured, load_average, measure  # noqa: E402


def tensorflow_tree() -> str:
    spec = importlib.util.find_spec("tensorflow")  # locates the package without importing it
    if spec is None or not spec.submodule_search_locations:
        sys.exit("tensorflow is not installed; `pip install tensorflow-cpu` or give --tree=DIR")
    return list(spec.submodule_search_locations)[0]


def usable_cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def run_audit(tree: str, jobs: int, strict: bool, output: Path) -> tuple[Measured, dict[str, int]]:
    """`compat-audit --format=json` on `tree`: the measured run and the report's summary."""
    command = [sys.executable, "-m", "compat.apps.audit", "--format=json", f"--output={output}", f"--jobs={jobs}",
               *(["--strict"] if strict else []), tree]
    measured = measure(command, env={**os.environ, "PYTHONPATH": str(_ROOT)})
    if measured.returncode not in (0, 1):  # 1: findings
        sys.exit(f"compat-audit failed (exit {measured.returncode}) on {tree}:\n{measured.stderr[-2000:]}")
    return measured, json.loads(output.read_text())["summary"]


_FRONT_END = """
import multiprocessing, os, symtable, sys, warnings
warnings.simplefilter("ignore")


def check(path):
    with open(path, "rb") as f:
        source = f.read()
    try:
        symtable.symtable(source, path, "exec")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        pass


paths = [os.path.join(d, name) for d, _, names in os.walk(sys.argv[1]) for name in names if name.endswith(".py")]
with multiprocessing.get_context("fork").Pool(int(sys.argv[2])) as pool:
    for _ in pool.imap_unordered(check, paths, chunksize=16):
        pass
"""


def front_end_floor(tree: str, jobs: int) -> Measured:
    """CPython's front end alone on every .py file of `tree` (read, then parser and symbol table, in a pool of
    `jobs` forked processes): the least work a syntax check of the whole tree can do, as a bare script."""
    return measure([sys.executable, "-c", _FRONT_END, tree, str(jobs)])


def copies_of(tree: str, copies: int, into: Path) -> str:
    """A directory holding `copies` copies of `tree`'s .py files (hard links, or copies across devices)."""
    for copy in range(copies):
        for dirpath, _, names in os.walk(tree):
            relative = os.path.relpath(dirpath, tree)
            for name in names:
                if name.endswith(".py"):
                    target = into / f"copy{copy}" / relative / name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    try:
                        os.link(os.path.join(dirpath, name), target)
                    except OSError:
                        shutil.copyfile(os.path.join(dirpath, name), target)
    return str(into)


def big_file_case(megabytes: int = 5) -> Measured:
    """compat-audit on one `megabytes` MB one-line file, in a child process."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "oneline.py")
        with open(path, "w") as f:
            # It names the API in code, so the pre-filter sends it to the parser, which the parse limit refuses.
            f.write("from tensorflow import RegisterGradient\nx = [" + "1, " * (megabytes * 10**6 // 3) + "]\n")
        return measure([sys.executable, "-m", "compat.apps.audit", "--jobs=1", path],
                       env={**os.environ, "PYTHONPATH": str(_ROOT)})


def run_tf_upgrade_v2(tree: str, timeout: float) -> tuple[float, int, int, str]:
    """Seconds, files and lines tf_upgrade_v2 processed (or the part it survived), and how it ended."""
    exe = shutil.which("tf_upgrade_v2") or str(Path(sys.executable).parent / "tf_upgrade_v2")
    with tempfile.TemporaryDirectory() as tmp:
        out, report = os.path.join(tmp, "out"), os.path.join(tmp, "report.txt")
        start = time.perf_counter()
        try:
            proc = subprocess.run([exe, "--intree", tree, "--outtree", out, "--reportfile", report,
                                   "--copyotherfiles", "False"],
                                  capture_output=True, text=True, timeout=timeout)
            status = "finished" if proc.returncode == 0 else f"aborted (exit {proc.returncode}): " + (
                proc.stderr.strip().splitlines() or ["?"])[-1][:200]
        except subprocess.TimeoutExpired:
            status = f"stopped after the {timeout:.0f}s timeout"
        seconds = time.perf_counter() - start
        files = lines = 0
        for dirpath, _, names in os.walk(out):
            for name in names:
                if name.endswith(".py"):
                    files += 1
                    with open(os.path.join(dirpath, name), "rb") as f:
                        lines += sum(1 for _ in f)
    return seconds, files, lines, status


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", default=None, help="the tree to audit (default: the installed TensorFlow)")
    parser.add_argument("--jobs", default=None, help="comma-separated --jobs values (default: 1 and the usable CPUs)")
    parser.add_argument("--default-target", type=float, default=1.0, help="default audit, all CPUs: max wall s")
    parser.add_argument("--strict-ratio", type=float, default=1.5,
                        help="--strict audit, all CPUs: max wall as a multiple of the floor timed alongside it")
    parser.add_argument("--rss-growth", type=float, default=1.25, help="max peak-RSS ratio, 4x tree / 1x tree")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per configuration; the median is judged")
    parser.add_argument("--skip-upgrade", action="store_true", help="do not run tf_upgrade_v2")
    parser.add_argument("--skip-big-file", action="store_true", help="do not audit the 5 MB one-line file")
    parser.add_argument("--timeout", type=float, default=1800, help="tf_upgrade_v2 time limit (s)")
    args = parser.parse_args()
    try:
        all_jobs = sorted({int(j) for j in args.jobs.split(",")}) if args.jobs else sorted({1, usable_cpus()})
    except ValueError:
        parser.error(f"--jobs={args.jobs}: give comma-separated worker counts, e.g. --jobs=1,2")
    if args.repeats < 1:
        parser.error(f"--repeats={args.repeats}: give at least 1")
    if not all_jobs or min(all_jobs) < 1:
        parser.error(f"--jobs={args.jobs}: every value must be at least 1")
    tree = args.tree or tensorflow_tree()
    if not os.path.isdir(tree):
        parser.error(f"--tree={tree}: not a directory")
    most = max(all_jobs)
    print(f"tree: {tree}; {usable_cpus()} usable CPUs; {load_average()}", flush=True)
    missed: list[str] = []
    if not args.skip_big_file:
        big = big_file_case()
        last = (big.stdout.strip().splitlines() or ["?"])[-1][:160]
        print(f"5 MB one-line file: {big.seconds:.2f} s, peak RSS {big.largest_rss_mib:.0f} MiB, exit "
              f"{big.returncode}; {last}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        output = Path(tmp) / "report.json"
        run_audit(tree, most, False, output)  # warm the page cache so every run reads from memory
        results: dict[tuple[bool, int], tuple[Measured, dict[str, int]]] = {}
        floors: list[float] = []
        for strict in (False, True):
            for jobs in all_jobs:
                runs = []
                for _ in range(args.repeats):
                    runs.append(run_audit(tree, jobs, strict, output))
                    if strict and jobs == most:  # alternated with --strict, so both see the machine alike
                        floors.append(front_end_floor(tree, most).seconds)
                runs.sort(key=lambda run: run[0].seconds)
                measured, summary = results[strict, jobs] = runs[len(runs) // 2]  # the median run
                best = runs[0][0].seconds
                lines = summary["lines"]
                rate = (f"{lines / measured.seconds:,.0f} lines parsed/s" if strict else
                        f"{lines / measured.seconds:,.0f} lines read/s ({summary['files_parsed']} of "
                        f"{summary['files_scanned']} files parsed)")
                print(f"compat-audit {'--strict' if strict else 'default '} --jobs={jobs}: {summary['files_scanned']} "
                      f"files, {lines} lines, median of {len(runs)} {measured.seconds:.2f} s wall (best {best:.2f}), "
                      f"{measured.cpu_seconds:.2f} s CPU, {rate}; peak RSS MiB {measured.rss_line()}; "
                      f"{load_average()}", flush=True)
        floors.sort()
        floor = floors[len(floors) // 2]
        print(f"floor: CPython's parser and symbol table alone on every file, {most} processes, as a bare script: "
              f"median of {len(floors)} {floor:.2f} s wall (best {floors[0]:.2f}); compat-audit --strict "
              f"--jobs={most} takes {results[True, most][0].seconds / floor:.2f}x that; {load_average()}", flush=True)
        default_seconds, strict_seconds = results[False, most][0].seconds, results[True, most][0].seconds
        if default_seconds > args.default_target:
            missed.append(f"default audit {default_seconds:.2f} s > {args.default_target:.2f} s")
        if strict_seconds > args.strict_ratio * floor:
            missed.append(f"--strict audit {strict_seconds:.2f} s > {args.strict_ratio}x the floor's {floor:.2f} s")
        four = copies_of(tree, 4, Path(tmp) / "tree4x")
        for strict in (False, True):
            measured, summary = run_audit(four, most, strict, output)
            one = results[strict, most][0]
            growth = measured.largest_rss_mib / one.largest_rss_mib
            print(f"4x tree {'--strict' if strict else 'default '} --jobs={most}: {summary['files_scanned']} files, "
                  f"{measured.seconds:.2f} s wall; peak RSS MiB {measured.rss_line()}; largest {growth:.2f}x the 1x "
                  f"tree's; {load_average()}", flush=True)
            if growth > args.rss_growth:
                missed.append(f"{'--strict' if strict else 'default'} peak RSS grows {growth:.2f}x on 4x the files")
    if not args.skip_upgrade:
        up_seconds, up_files, up_lines, status = run_tf_upgrade_v2(tree, args.timeout)
        up_rate = up_lines / up_seconds if up_seconds else 0.0
        print(f"tf_upgrade_v2: {up_files} files, {up_lines} lines parsed (the part it survived), {up_seconds:.2f} s, "
              f"{up_rate:,.0f} lines/s; {status}; {load_average()}")
        strict_run, strict_summary = results[True, most]
        if up_rate:
            print(f"ratio: compat-audit --strict parses {strict_summary['lines'] / strict_run.seconds / up_rate:.1f}x "
                  f"tf_upgrade_v2's lines per second")
    print(f"targets: default <= {args.default_target} s, --strict <= {args.strict_ratio}x the floor (--jobs={most}); "
          "peak RSS "
          f"on 4x the tree <= {args.rss_growth}x: {'MISS: ' + '; '.join(missed) if missed else 'PASS'}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
