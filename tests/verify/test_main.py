"""`python -m compat.verify`: says it runs your code, rejects bad usage with exit 2; importing it is cheap."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = str(Path(__file__).absolute().parent.parent.parent)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=60)


def test_help_says_it_imports_your_code_and_bad_usage_exits_2(tmp_path):
    assert "imports and runs both modules" in _run("-m", "compat.verify", "--help").stdout
    (tmp_path / "ops.py").write_text("x = 1\n")
    usage = _run("-m", "compat.verify", str(tmp_path / "ops.py"))
    assert usage.returncode == 2 and "ORIGINAL.py REWRITTEN.py" in usage.stderr
    no_entries = _run("-m", "compat.verify", str(tmp_path / "ops.py"), str(tmp_path / "ops.py"))
    assert no_entries.returncode == 2 and "GRADCOMPAT_ENTRIES" in no_entries.stderr


def test_importing_compat_verify_imports_no_tensorflow():
    code = "import sys, compat.verify, compat.verify._runner; print('tensorflow' in sys.modules)"
    assert _run("-c", code).stdout.strip() == "False"
