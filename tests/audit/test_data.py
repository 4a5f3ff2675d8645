"""The shipped TensorFlow data files: loadable without TF, and in agreement with the installed TF."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from compat.audit import data

REPO = Path(__file__).resolve().parents[2]


def test_data_loads_and_names_its_tensorflow_version():
    tf_data = data.load()
    assert tf_data.version.count(".") == 2
    assert {"MatMul", "Sign", "Identity", "IdentityN"} <= set(tf_data.op_types)
    assert "Matmul" not in tf_data.op_types
    assert tf_data.op_types["Sign"] == "sign"
    assert {"Identity", "Sign"} <= tf_data.gradient_names
    assert {"get_default_graph", "Session", "placeholder", "py_func"} <= tf_data.tf1_only_apis
    assert "function" not in tf_data.tf1_only_apis and "RegisterGradient" not in tf_data.tf1_only_apis


def test_shipped_data_matches_installed_tensorflow():
    """The only audit test that imports TensorFlow (in a subprocess, to keep this process TF-free)."""
    pytest.importorskip("tensorflow")
    from importlib.metadata import PackageNotFoundError, version

    installed = None
    for distribution in ("tensorflow-cpu", "tensorflow"):
        try:
            installed = version(distribution)
            break
        except PackageNotFoundError:
            continue
    if installed != data.load().version:
        # The nox matrix runs older releases; the shipped lists describe the release they were made from.
        pytest.skip(f"data generated from TensorFlow {data.load().version}, installed {installed}: "
                    f"regenerate with tools/gen_audit_data.py to compare")
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "gen_audit_data.py"), "--check"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"data files are stale for the installed TensorFlow: {proc.stderr[-2000:]}"
