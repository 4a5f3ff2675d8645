"""benchmarks/_measure.py names each process of a measured command's tree by what it is."""

import gc
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from _measure import LAUNCHER_MIB, _role, measure  # noqa: E402


def test_roles_tell_workers_from_loaders_and_the_tracker():
    command = "python -m compat.apps.audit --jobs=2 src"
    spawned = "python -B -c from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=8)"
    assert _role(spawned, command) == "worker"
    assert _role(command + " ", command) == "worker"  # a forked worker keeps the command line
    assert _role("python -m compat.contexts.saved_model_loader --serve", command) == "saved_model loader"
    tracker = "python -B -c from multiprocessing.resource_tracker import main;main(7)"
    assert _role(tracker, command) == "resource_tracker"
    # CI once counted a third "worker" of 2 MiB, most likely a short-lived program some library ran (`uname -p`)
    assert _role("/usr/bin/uname -p ", command) == "other (uname)"


def test_a_command_and_its_child_are_each_measured():
    child = "import time; x = bytearray(64 << 20); time.sleep(0.5)"
    parent = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {child!r}])"
    measured = measure([sys.executable, "-c", parent])
    assert measured.returncode == 0
    roles = [role for role, _ in measured.processes]
    assert roles[0] == "main" and roles[1:] == [f"other ({Path(sys.executable).name})"]  # a program it ran
    assert measured.largest_rss_mib >= 64  # the child's 64 MiB, exact from wait4


def test_the_benchmark_s_own_memory_is_not_the_command_s_peak():
    """Linux carries a process's peak RSS across fork and exec: without the launcher, a command started from a
    benchmark holding 300 MiB reported 300 MiB as its own peak."""
    held = bytearray(300 << 20)
    for page in range(0, len(held), 4096):
        held[page] = 1
    measured = measure([sys.executable, "-c", "x = bytearray(32 << 20)"])
    assert measured.returncode == 0
    assert 32 <= measured.largest_rss_mib < 32 + 2 * LAUNCHER_MIB + 20  # the interpreter's own ~10 MiB, not 300


def test_the_launcher_is_reaped_once_and_popen_knows_it():
    """measure() reaps the launcher with wait4; Popen must be told, or it warns "still running" when collected."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert measure([sys.executable, "-c", "import sys; sys.exit(3)"]).returncode == 3
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]
