"""benchmarks/check_matrix.py exits 0 when its targets are met, 1 when one is missed, 2 on a usage error."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import compat

pytestmark = pytest.mark.slow  # a whole-system run: `pytest --runslow` (CI) runs it

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "check_matrix.py"
# Two sources and second order: the sum of first-order gradients is an add_n the baseline once took outside
# its tape, and its saved_model loader got None where the harness got the eager values.
TINY = ["--specs=two_input_mul", "--scenarios=second_order", "--repeats=1"]


def _run(*args):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=600)


def test_met_targets_exit_0_and_every_process_is_measured():
    done = _run("--specs=sign_ste,scaled_ste", "--scenarios=sum", "--noone_process", "--jobs=1,2",
                "--app_busy=0")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "result: PASS" in done.stdout and "load average" in done.stdout
    busy = r"^cores busy, --jobs=2 \(CPU / \(wall x 2\)\) +\d+\.\d\d$"
    assert re.search(busy, done.stdout, re.MULTILINE), done.stdout
    cells = 2 * len(compat.VARIANTS)  # two specs, one scenario, one dtype
    line = next(line for line in done.stdout.splitlines() if line.startswith("report --jobs=2"))
    # tf.keras 2 (TF 2.12) names its layers per process (op_layer_1): such messages are the only allowed difference
    assert re.search(rf"equal( \({cells} cells\)|, except \d+ of {cells} cells whose messages differ only in a name "
                     r"numbered per process)$", line), line
    workers_line = next(line for line in done.stdout.splitlines() if "worker" in line and "peak RSS" in line)
    assert workers_line.count("worker ") == 2  # the main process and both workers, each with its own peak


def test_a_missed_target_exits_1_and_a_usage_error_2():
    missed = _run(*TINY, "--noapp", "--target=0")
    assert missed.returncode == 1, missed.stdout + missed.stderr
    assert "MISS" in missed.stdout
    verified = re.search(r"(\d+) match, (\d+) differ, (\d+) only in the baseline; tf.gradients in the loading "
                         r"process: (\d+) of (\d+) saved cells match", missed.stdout)
    assert verified, missed.stdout
    matched, differ, extra, symbolic, saved = map(int, verified.groups())
    assert matched > 0 and differ == extra == 0 and symbolic == saved > 0, verified.group(0)
    unknown = _run("--specs=no_such_spec")
    assert unknown.returncode == 2 and "unknown spec(s) ['no_such_spec']" in unknown.stderr


def test_reports_equal_but_for_per_process_numbers_that_move_a_cut(tmp_path):
    cut = "LookupError: No gradient for operation'gradients/gc_scaled_ste_{}_grad/SymbolicGradient' " + "x" * 600

    def report(number, status):
        message = cut.format(number)[:420] + "..."
        cell = {"spec": "scaled_ste", "scenario": "second_order", "variant": "defun_grad_func@v1_session",
                "message": message, "differences": [{"kind": status, "detail": f"status: {status} ({message})"}]}
        return json.dumps({"summary": {"cells": 1}, "cells": [cell]})

    (tmp_path / "one.json").write_text(report(12, "unsupported"))
    (tmp_path / "many.json").write_text(report(552, "unsupported"))
    (tmp_path / "other.json").write_text(report(552, "error"))
    code = ("import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); import check_matrix; "
            "print(check_matrix.compare_reports(Path(sys.argv[2]), Path(sys.argv[3])))")
    for other, expected in (("many.json", "(True, 'equal, except 1 of 1 cells"), ("other.json", "(False, '1 cells")):
        done = subprocess.run([sys.executable, "-c", code, str(SCRIPT.parent), str(tmp_path / "one.json"),
                               str(tmp_path / other)], capture_output=True, text=True, timeout=300,
                              env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
        assert done.stdout.startswith(expected), done.stdout + done.stderr
