"""Launch the multi-worker job: 2 local worker processes on loopback, bounded in time, always cleaned up."""

from __future__ import annotations

import json
import os
import pickle
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any

from compat.child import child_env, kill_group, start, stderr_tail

WORKERS = 2
STARTUP_SECONDS = 120.0
"""Time for both workers to import TensorFlow and form the cluster (gRPC servers, collectives)."""
SECONDS_PER_CASE = 20.0


class WorkersFailed(Exception):
    """The worker processes did not finish (timeout, crash): every case of the job is reported with this."""


def free_ports(count: int) -> list[int]:
    """Ports free on 127.0.0.1 now (the OS picks them; another process could still take one before a worker
    binds it, which then fails the job with the worker's message)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def tf_config(ports: list[int], index: int) -> str:
    return json.dumps({"cluster": {"worker": [f"127.0.0.1:{port}" for port in ports]},
                       "task": {"type": "worker", "index": index}})


def run_job(job: list[dict[str, Any]], timeout: float | None = None) -> list[list[dict[str, Any]]]:
    """Run `job` (one dict per case) on every worker; per worker, one result dict per case.

    Raises WorkersFailed if a worker exits non-zero or the job overruns `timeout` (default: startup plus a
    budget per case). The workers are killed (their whole process group) on every way out of here,
    Ctrl-C included.
    """
    limit = timeout if timeout is not None else STARTUP_SECONDS + SECONDS_PER_CASE * len(job)
    ports = free_ports(WORKERS)
    with tempfile.TemporaryDirectory(prefix="gradcompat-workers-") as workdir:
        job_path = os.path.join(workdir, "job.pickle")
        with open(job_path, "wb") as out:
            pickle.dump(job, out)
        processes: list[subprocess.Popen[bytes]] = []
        logs = []
        try:
            for index in range(WORKERS):
                log = open(os.path.join(workdir, f"worker{index}.log"), "wb")  # noqa: SIM115 - closed below
                logs.append(log)
                env = child_env(TF_CONFIG=tf_config(ports, index), TF_CPP_MIN_LOG_LEVEL="3")
                processes.append(start(
                    [sys.executable, "-m", "compat.distribute._worker", job_path,
                     os.path.join(workdir, f"worker{index}.pickle")],
                    env=env, stdin=None, stdout=log, stderr=subprocess.STDOUT))
            _wait(processes, limit, workdir)
            results = []
            for index in range(WORKERS):
                with open(os.path.join(workdir, f"worker{index}.pickle"), "rb") as found:
                    results.append(pickle.load(found))  # noqa: S301 - written by our own worker just now
            return results
        finally:
            for process in processes:
                kill_group(process)
            for log in logs:
                log.close()


def _wait(processes: list[subprocess.Popen[bytes]], limit: float, workdir: str) -> None:
    deadline = time.monotonic() + limit
    while any(process.poll() is None for process in processes):
        failed = [i for i, p in enumerate(processes) if p.returncode not in (None, 0)]
        if failed or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    problems = []
    for index, process in enumerate(processes):
        if process.returncode is None:
            problems.append(f"worker {index} did not finish within {limit:.0f} s")
        elif process.returncode:
            problems.append(f"worker {index} exited with {process.returncode}: {_tail(workdir, index)}")
    if problems:
        raise WorkersFailed("; ".join(problems))


def _tail(workdir: str, index: int) -> str:
    return " | ".join(stderr_tail(os.path.join(workdir, f"worker{index}.log")))
