"""compat-check as users run it: flags, formats, output files and exit codes."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
from absl import app
from absl.testing import flagsaver

from compat.apps import check


def run_check(tmp_path, *args):
    """Run main() in this process (one TensorFlow import for every test) with the given flags."""
    with flagsaver.flagsaver():
        check.flags.FLAGS.unparse_flags()
        check.flags.FLAGS(["compat-check", *args])
        return check.main(["compat-check"])


def test_json_report_to_a_file(tmp_path):
    output = tmp_path / "out" / "report.json"
    code = run_check(tmp_path, "--specs=scaled_ste", "--scenarios=sum,weighted", "--format=json",
                     f"--output={output}", "--variants=custom_gradient@*,override_map@eager_tape")
    assert code == 0
    report = json.loads(output.read_text())
    assert report["reference"] == "defun_grad_func@v1_session"
    assert "tensorflow" in report and "float32" in report["tolerances"]
    cells = report["cells"]
    assert len(cells) == 2 * 6
    pitfall = next(c for c in cells if c["variant"] == "override_map@eager_tape" and c["scenario"] == "sum")
    assert pitfall["status"] == "not_called" and pitfall["calls"] == 0
    assert {"spec", "scenario", "dtype", "variant", "mechanism", "context", "status", "differences", "calls",
            "upstream"} <= set(pitfall)
    assert not list(tmp_path.glob("out/.*.tmp"))


def test_user_spec_file_with_an_unexpected_difference_exits_1(tmp_path, capsys):
    spec_file = tmp_path / "user_ops.py"
    spec_file.write_text(textwrap.dedent('''
        import numpy as np
        import tensorflow as tf
        import compat

        BRANCHY = compat.GradientSpec(
            "branchy", tf.identity, lambda i, o, u: [u[0] * (2.0 if u[0].shape.rank is None else 1.0)],
            [np.ones((2, 2), np.float32)], op_type="Identity")
    '''))
    code = run_check(tmp_path, f"--specs={spec_file}:BRANCHY", "--scenarios=sum")
    assert code == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "branchy" in out


@pytest.mark.parametrize("flag, expected", [
    ("--specs=no_such_spec", "not a catalogue spec"),
    ("--scenarios=sideways", "unknown scenario"),
    ("--variants=custom_gradient@mars", "unknown variant"),
    ("--dtypes=int8", "unknown dtype"),
])
def test_unknown_names_are_usage_errors_listing_valid_ones(tmp_path, flag, expected):
    with pytest.raises(app.UsageError) as caught:
        run_check(tmp_path, flag)
    assert caught.value.exitcode == 2
    assert expected in str(caught.value)


def test_list_prints_the_registries(tmp_path, capsys):
    assert run_check(tmp_path, "--list") == 0
    out = capsys.readouterr().out
    assert "scaled_ste" in out and "second_order" in out and "* custom_gradient@eager_tape" in out


def test_console_module_exit_code_2_and_help_lists_flags(tmp_path):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    bad = subprocess.run([sys.executable, "-m", "compat.apps.check", "--specs=missing.py:X"], capture_output=True,
                         text=True, cwd=tmp_path, env=env, timeout=120)
    assert bad.returncode == 2
    assert "file 'missing.py' does not exist" in bad.stderr
    unknown_flag = subprocess.run([sys.executable, "-m", "compat.apps.check", "--no_such_flag"], capture_output=True,
                                  text=True, cwd=tmp_path, env=env, timeout=120)
    assert unknown_flag.returncode == 2 and "no_such_flag" in unknown_flag.stderr
