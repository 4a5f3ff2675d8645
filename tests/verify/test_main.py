"""`compat-verify` (and `python -m compat.verify`): says it runs your code, usage errors exit 2; importing is cheap."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = str(Path(__file__).absolute().parent.parent.parent)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=120)


def test_help_says_it_imports_your_code_and_exits_0():
    for command in (("-m", "compat.verify"), ("-m", "compat.apps.verify")):
        done = _run(*command, "--help")
        assert done.returncode == 0 and "imports and runs both modules" in done.stdout


def test_usage_errors_exit_2_with_one_line_naming_the_program(tmp_path):
    (tmp_path / "ops.py").write_text("x = 1\n")
    ops = str(tmp_path / "ops.py")
    for args, message in [((ops,), "ORIGINAL.py REWRITTEN.py"), ((ops, ops, "--bogus"), "Unknown command line flag"),
                          ((ops, ops), "GRADCOMPAT_ENTRIES"), ((ops, ops, "--scenarios=summ"), "unknown scenario"),
                          ((ops, ops, "--entries=f:float32[100000,100000]"), "10,000,000,000 elements"),
                          ((ops, str(tmp_path / "gone.py")), "gone.py: no such file (the rewritten module)"),
                          ((str(tmp_path), ops), "a directory, not a module (the original module)")]:
        done = _run("-m", "compat.apps.verify", *args)
        assert done.returncode == 2 and done.stderr.startswith("compat-verify: ") and message in done.stderr, done
        assert "oneDNN" not in done.stderr and "Traceback" not in done.stderr


def test_importing_compat_verify_imports_no_tensorflow():
    code = "import sys, compat.verify, compat.verify._runner; print('tensorflow' in sys.modules)"
    assert _run("-c", code).stdout.strip() == "False"


def test_an_unknown_name_or_a_bad_entry_names_the_flag_it_came_from(tmp_path):
    (tmp_path / "ops.py").write_text("x = 1\n")
    ops = str(tmp_path / "ops.py")
    for flag, said in [("--scenarios=summ", "--scenarios: unknown scenario(s) ['summ'] (did you mean `sum`?)"),
                       ("--contexts=eager_tap", "--contexts: unknown context(s) ['eager_tap']"),
                       ("--entries=f:float32[3];f:float32[2]", "--entries: entry `f` is given twice")]:
        done = _run("-m", "compat.apps.verify", ops, ops, flag)
        assert done.returncode == 2 and said in done.stderr, done.stderr
