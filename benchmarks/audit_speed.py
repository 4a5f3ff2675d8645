"""Benchmark: compat-audit vs tf_upgrade_v2 on the installed TensorFlow package's own source tree.

Run: `python benchmarks/audit_speed.py [--skip-upgrade] [--skip-tree] [--jobs N]`. Prints files, lines, seconds,
lines/s, the speed ratio, and peak RSS (children included); first, the peak RSS of auditing one 5 MB one-line file
(parsing it would take ~1.7 GiB; the parse limit keeps it to the read). Neither step imports TensorFlow here.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from compat.audit import audit_paths  # noqa: E402


def tensorflow_tree() -> str:
    spec = importlib.util.find_spec("tensorflow")  # locates the package without importing it
    if spec is None or not spec.submodule_search_locations:
        sys.exit("tensorflow is not installed; `pip install tensorflow-cpu` to run this benchmark")
    return list(spec.submodule_search_locations)[0]


def peak_rss_mib() -> tuple[float, float]:
    """(this process, largest child) peak resident set size in MiB (ru_maxrss is KiB on Linux)."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return own, children


def run_audit(tree: str, jobs: int | None) -> tuple[int, int, float, int]:
    start = time.perf_counter()
    report = audit_paths([tree], jobs=jobs)
    seconds = time.perf_counter() - start
    return report.files_scanned, report.lines, seconds, len(report.findings)


def big_file_case(megabytes: int = 5) -> tuple[float, float, str]:
    """(seconds, peak RSS MiB, outcome) of auditing one `megabytes` MB one-line file in a fresh process."""
    script = ("import sys\nfrom compat.audit import audit_paths\nr = audit_paths([sys.argv[1]], jobs=1)\n"
              "print(', '.join(f'{f.rule}: {f.message[:90]}' for f in r.findings) or 'no findings')\n")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "oneline.py")
        with open(path, "w") as f:
            f.write("import tensorflow as tf  # RegisterGradient\nx = [" + "1, " * (megabytes * 10**6 // 3) + "]\n")
        start = time.perf_counter()
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
        proc = subprocess.Popen([sys.executable, "-c", script, path], stdout=subprocess.PIPE, text=True, env=env)
        out = proc.stdout.read() if proc.stdout else ""
        _, _, usage = os.wait4(proc.pid, 0)  # this child's own peak, not the largest child so far
        proc.returncode = 0
    return time.perf_counter() - start, usage.ru_maxrss / 1024, out.strip()


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=None, help="audit worker processes (default: CPUs)")
    parser.add_argument("--skip-upgrade", action="store_true", help="time compat-audit only")
    parser.add_argument("--timeout", type=float, default=1800, help="tf_upgrade_v2 time limit (s)")
    parser.add_argument("--skip-tree", action="store_true", help="only the 5 MB file case")
    args = parser.parse_args()
    seconds, rss, outcome = big_file_case()
    print(f"5 MB one-line file: {seconds:.2f} s, peak RSS {rss:.0f} MiB; {outcome}")
    if args.skip_tree:
        return
    tree = tensorflow_tree()
    print(f"tree: {tree} ({os.cpu_count()} CPUs)")
    run_audit(tree, args.jobs)  # warm the page cache so both tools read from memory
    files, lines, seconds, findings = run_audit(tree, args.jobs)
    rate = lines / seconds
    print(f"compat-audit : {files} files, {lines} lines, {seconds:.2f} s, {rate:,.0f} lines/s, "
          f"{findings} findings")
    own, children = peak_rss_mib()
    print(f"peak RSS     : {own:.0f} MiB (audit process), {children:.0f} MiB (largest worker)")
    if args.skip_upgrade:
        return
    up_seconds, up_files, up_lines, status = run_tf_upgrade_v2(tree, args.timeout)
    up_rate = up_lines / up_seconds if up_seconds else 0.0
    print(f"tf_upgrade_v2: {up_files} files, {up_lines} lines (the part it survived), {up_seconds:.2f} s, "
          f"{up_rate:,.0f} lines/s; {status}")
    if up_rate:
        print(f"ratio        : compat-audit is {rate / up_rate:.1f}x tf_upgrade_v2's lines per second")
    own, children = peak_rss_mib()
    print(f"peak RSS     : {children:.0f} MiB (largest child, tf_upgrade_v2 included)")


if __name__ == "__main__":
    main()
