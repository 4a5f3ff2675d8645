"""tools/report_identity.py: every report the apps write is the same as at the commit before issue #28's refactor."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a whole-system run: `pytest --runslow` (CI) runs it

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "tools" / "report_identity.py"
BASE = "e2b697b3276ab57ec8ac3ce52077cf482c4a7be5"
"""The last commit that meant to change what a report says (GC005's rule text in SARIF and markdown; before it,
3cd96bd, the start of issue #28's restructuring). A change meant to alter what a report says moves this to the
commit that makes it, and says so in its message."""


def _tool():
    spec = importlib.util.spec_from_file_location("report_identity", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_differences_name_each_report_that_differs_and_show_where():
    tool = _tool()
    base = {"audit json": b'{"a": 1}\n', "audit text": b"same\n"}
    head = {"audit json": b'{"a": 2}\n', "audit text": b"same\n"}
    (found,) = tool.differences(base, head)
    assert found.startswith("audit json differs:") and '-{"a": 1}' in found and '+{"a": 2}' in found
    assert tool.differences(base, dict(base)) == []


def test_only_a_check_units_seconds_are_masked():
    tool = _tool()
    one = b'{"units": [{"spec": "s", "seconds": 1.5}], "cells": [{"x": 1}]}'
    two = b'{"units": [{"spec": "s", "seconds": 9.0}], "cells": [{"x": 1}]}'
    three = b'{"units": [{"spec": "s", "seconds": 9.0}], "cells": [{"x": 2}]}'
    assert tool._untimed(one) == tool._untimed(two) != tool._untimed(three)


def test_every_report_is_identical_to_the_base_commits():
    known = subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{BASE}^{{commit}}"], capture_output=True)
    if known.returncode != 0:
        pytest.skip(f"commit {BASE} is not in this checkout's git history (a Bazel sandbox, an sdist or a shallow "
                    "clone); the test needs it to export the base")
    done = subprocess.run([sys.executable, str(TOOL), f"--base={BASE}", "--small"], capture_output=True, text=True,
                          timeout=1800)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert done.stdout.strip().endswith(f"reports identical to {BASE}'s")
