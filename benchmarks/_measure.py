"""What the benchmarks measure of a command: wall and CPU seconds, and the peak RSS of every process it starts.

Peak RSS per process is the kernel's own high-water mark (`VmHWM` in /proc/<pid>/status), read every
`interval` seconds from each process of the command's tree while it lives: a peak reached in a process's last
interval before it exits can be missed. The largest process's peak is also taken from wait4 (exact: the
kernel keeps the maximum over the command and every descendant it waited for).
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path


@dataclasses.dataclass(frozen=True)
class Measured:
    """One run of a command."""

    returncode: int
    seconds: float
    cpu_seconds: float
    """User + system CPU of the command and every descendant it waited for."""
    largest_rss_mib: float
    """The largest peak RSS among the command and its waited-for descendants (exact, from wait4)."""
    processes: tuple[tuple[str, float], ...]
    """(role, peak RSS MiB) of every process seen in the command's tree, the command first."""
    stdout: str
    stderr: str

    def rss_line(self) -> str:
        """`main 612, worker 540, worker 538 (largest 612; sum 1690)` in MiB."""
        shown = ", ".join(f"{role} {mib:.0f}" for role, mib in self.processes)
        total = sum(mib for _, mib in self.processes)
        return f"{shown} (largest {self.largest_rss_mib:.0f}; sum {total:.0f})"


def load_average() -> str:
    """`uptime`'s load averages (1, 5, 15 min) and the CPU count, to read every measurement against."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} CPUs"


def measure(command: Sequence[str], env: Mapping[str, str] | None = None, cwd: str | None = None,
            interval: float = 0.05) -> Measured:
    """Run `command` to completion, sampling its process tree's peak RSS."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        process = subprocess.Popen(list(command), stdout=out, stderr=err, env=dict(env) if env else None, cwd=cwd)
        peaks: dict[int, tuple[str, float]] = {}
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            for child in _tree(process.pid):
                sample = _peak(child)
                if sample is not None:
                    role = "main" if child == process.pid else sample[0]
                    peaks[child] = (role, max(sample[1], peaks.get(child, ("", 0.0))[1]))
            time.sleep(interval)
        seconds = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        ordered = sorted(peaks.items(), key=lambda item: (item[0] != process.pid, item[0]))
        return Measured(process.returncode, seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024,
                        tuple(value for _, value in ordered), out.read().decode("utf-8", "replace"),
                        err.read().decode("utf-8", "replace"))


def _tree(root: int) -> list[int]:
    """`root` and its descendants alive now."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def _peak(pid: int) -> tuple[str, float] | None:
    """(role, VmHWM MiB) of a live process, or None when it is gone or is a zombie."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    if "VmHWM" not in fields:
        return None
    return _role(cmdline), int(fields["VmHWM"].split()[0]) / 1024


_ROLES = (("resource_tracker", "resource_tracker"), ("saved_model_loader", "saved_model loader"))


def _role(cmdline: str) -> str:
    """What a process of the tree is, from its command line: multiprocessing's resource tracker, the SavedModel
    loading process a context starts, or else a worker (spawned, or forked with the main's command line)."""
    return next((role for marker, role in _ROLES if marker in cmdline), "worker")
