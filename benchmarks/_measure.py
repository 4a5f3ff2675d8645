"""What the benchmarks measure of a command: wall and CPU seconds, and the peak RSS of every process it starts.

Peak RSS per process is the kernel's own high-water mark (`VmHWM` in /proc/<pid>/status), read every
`interval` seconds from each process of the command's tree while it lives: a peak reached in a process's last
interval before it exits can be missed. The largest process's peak is also taken from wait4, which misses
nothing; but Linux carries a process's peak across fork and exec, so a command started straight from a
benchmark that holds gigabytes (check_matrix.py after its one-process part) would report the benchmark's peak
as its own. The command is therefore started by a small launcher process, which times it, waits for it and
reports its wait4 figures: the command's peak is then exact above the launcher's own size (`LAUNCHER_MIB`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
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
    """The largest peak RSS among the command and its waited-for descendants (from wait4; a peak below the
    launcher's size, about `LAUNCHER_MIB`, reads as that size)."""
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


# Started by `measure` in a fresh interpreter: spawns the command, waits for it, and writes its pid, then its exit
# code, wall seconds, CPU seconds and peak RSS (KiB) to the file descriptor given first.
_LAUNCHER = """
import json, os, sys, time
report, command = int(sys.argv[1]), sys.argv[2:]
start = time.perf_counter()
pid = os.posix_spawnp(command[0], command, os.environ)
os.write(report, b"%d\\n" % pid)
_, status, usage = os.wait4(pid, 0)
seconds = time.perf_counter() - start
os.write(report, json.dumps([os.waitstatus_to_exitcode(status), seconds, usage.ru_utime + usage.ru_stime,
                             usage.ru_maxrss]).encode())
"""
LAUNCHER_MIB = 10
"""About the launcher's own RSS when it starts the command: the floor of `largest_rss_mib`."""


def measure(command: Sequence[str], env: Mapping[str, str] | None = None, cwd: str | None = None,
            interval: float = 0.05) -> Measured:
    """Run `command` to completion (through the launcher), sampling its process tree's peak RSS."""
    read_end, write_end = os.pipe()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, os.fdopen(read_end, "rb") as report:
        try:
            launcher = subprocess.Popen([sys.executable, "-I", "-S", "-c", _LAUNCHER, str(write_end), *command],
                                        stdout=out, stderr=err, env=dict(env) if env else None, cwd=cwd,
                                        pass_fds=(write_end,))
        finally:
            os.close(write_end)
        peaks: dict[int, tuple[str, float]] = {}
        command_line = " ".join(command)  # as a forked worker's /proc cmdline reads
        while not (reaped := os.wait4(launcher.pid, os.WNOHANG))[0]:
            for pid, parent in _tree(launcher.pid):
                sample = _peak(pid, command_line) if pid != launcher.pid else None
                if sample is not None:
                    role = "main" if parent == launcher.pid else sample[0]
                    peaks[pid] = (role, max(sample[1], peaks.get(pid, ("", 0.0))[1]))
            time.sleep(interval)
        launcher.returncode = os.waitstatus_to_exitcode(reaped[1])  # reaped here: Popen must not wait again
        lines = report.read().decode().split("\n", 1)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace")
    if len(lines) != 2:
        raise RuntimeError(f"the launcher could not start {list(command)}: {stderr[-2000:]}")
    command_pid = int(lines[0])
    returncode, seconds, cpu_seconds, max_rss_kib = json.loads(lines[1])
    ordered = sorted(peaks.items(), key=lambda item: (item[0] != command_pid, item[0]))
    return Measured(returncode, seconds, cpu_seconds, max_rss_kib / 1024, tuple(value for _, value in ordered),
                    stdout, stderr)


def _tree(root: int) -> list[tuple[int, int]]:
    """(pid, parent pid) of `root` and of its descendants alive now."""
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
    found, todo = [], [(root, 0)]
    while todo:
        pid, parent = todo.pop()
        found.append((pid, parent))
        todo += [(child, pid) for child in children.get(pid, [])]
    return found


def _peak(pid: int, command: str) -> tuple[str, float] | None:
    """(role, VmHWM MiB) of a live process of `command`'s tree, or None when it is gone or is a zombie."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    if "VmHWM" not in fields:
        return None
    return _role(cmdline, command), int(fields["VmHWM"].split()[0]) / 1024


_ROLES = (("resource_tracker", "resource_tracker"), ("saved_model_loader", "saved_model loader"))


def _role(cmdline: str, command: str) -> str:
    """What a process of the tree is, from its command line: multiprocessing's resource tracker, the SavedModel
    loading process a context starts, a worker (spawned by multiprocessing, or forked with the main's command
    line `command`), or else another program some library ran (`uname -p`, `ldconfig`), named by its own."""
    found = next((role for marker, role in _ROLES if marker in cmdline), None)
    if found is not None:
        return found
    if "spawn_main" in cmdline or cmdline.strip() == command.strip():
        return "worker"
    program = cmdline.split(" ", 1)[0].rsplit("/", 1)[-1]
    return f"other ({program or '?'})"
