"""The multi-worker launcher: free loopback ports, TF_CONFIG, workers killed when the job overruns, bounded errors."""

import json
import subprocess
import sys

import pytest

from compat.distribute import workers


def test_tf_config_names_both_workers_on_loopback():
    ports = workers.free_ports(2)
    config = json.loads(workers.tf_config(ports, 1))
    assert config == {"cluster": {"worker": [f"127.0.0.1:{p}" for p in ports]}, "task": {"type": "worker", "index": 1}}
    assert len(set(ports)) == 2


def test_workers_are_killed_when_the_job_overruns(monkeypatch):
    started = []
    real = subprocess.Popen

    def popen(*args, **kwargs):
        process = real(["sleep", "60"], **{k: v for k, v in kwargs.items() if k != "env"})
        started.append(process)
        return process

    monkeypatch.setattr(workers.subprocess, "Popen", popen)
    with pytest.raises(workers.WorkersFailed, match="did not finish within"):
        workers.run_job([{}], timeout=0.5)
    assert len(started) == 2 and all(p.returncode is not None for p in started)


def test_a_worker_writing_20_mb_and_dying_fails_the_job_with_a_bounded_message(monkeypatch):
    real = subprocess.Popen
    noisy = "import sys; sys.stderr.write('x' * 20_000_000 + '\\nthe last words\\n'); sys.exit(3)"

    def popen(*args, **kwargs):
        return real([sys.executable, "-c", noisy], **{k: v for k, v in kwargs.items() if k != "env"})

    monkeypatch.setattr(workers.subprocess, "Popen", popen)
    with pytest.raises(workers.WorkersFailed) as failed:
        workers.run_job([{}], timeout=60)
    assert "worker 0 exited with 3: the last words" in str(failed.value)
    assert len(str(failed.value)) < 2_000
