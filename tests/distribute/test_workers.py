"""The multi-worker launcher: free loopback ports, TF_CONFIG, and workers killed when the job overruns."""

import json
import subprocess

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
