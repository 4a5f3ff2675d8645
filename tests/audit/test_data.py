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


def _entries(path: Path) -> set[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return {line.split("\t")[0] for line in lines if line.strip() and not line.startswith("#")}


def test_shipped_data_matches_installed_tensorflow(tmp_path):
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
        # The shipped lists describe the release they were made from; on another release (the nox matrix),
        # that release's own lists are generated and the facts the audit's rules rely on asserted on them.
        proc = subprocess.run([sys.executable, str(REPO / "tools" / "gen_audit_data.py"), "--out", str(tmp_path)],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, f"tools/gen_audit_data.py failed on TensorFlow {installed}: {proc.stderr[-2000:]}"
        ops = _entries(tmp_path / "tf_op_types.txt")
        assert f"from TensorFlow {installed}." in (tmp_path / "tf_op_types.txt").read_text(encoding="utf-8")
        assert {"MatMul", "Sign", "Identity", "IdentityN"} <= ops and "Matmul" not in ops
        assert {"Identity", "Sign"} <= _entries(tmp_path / "tf_gradient_names.txt")
        assert {"get_default_graph", "Session", "placeholder", "py_func"} <= _entries(tmp_path / "tf1_only_apis.txt")
        assert "random.uniform\tRandomUniform" in (tmp_path / "tf_stateful_apis.txt").read_text(encoding="utf-8")
        return
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "gen_audit_data.py"), "--check"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"data files are stale for the installed TensorFlow: {proc.stderr[-2000:]}"
