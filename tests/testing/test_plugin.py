"""compat.testing.plugin, run by pytest's own pytester the way a user's suite runs it."""

import configparser
import pathlib
import subprocess
import sys

import pytest

pytest_plugins = ("pytester",)

ROOT = pathlib.Path(__file__).resolve().parents[2]

USER_TESTS = '''
import numpy as np
import tensorflow as tf

import compat

STE = compat.GradientSpec("ste", lambda x: tf.sign(x), lambda i, o, u: [u[0]],
                          [np.array([1.0, -2.0, 3.0], np.float32)])
BRANCH = compat.GradientSpec("shape_branch", tf.identity,
                             lambda i, o, u: [u[0] * (2.0 if u[0].shape.rank is None else 1.0)],
                             [np.ones((2, 2), np.float32)], op_type="Identity")


@compat.testing.parametrize_variants(["custom_gradient@eager_tape", "override_map@eager_tape"])
def test_ste(variant):
    assert compat.testing.run_variant(STE, variant).status in ("ok", "not_called")


def test_passes():
    compat.testing.assert_same_upstream(STE, scenarios=["sum"], variants="custom_gradient@*")


def test_fails_helpfully():
    compat.testing.assert_same_gradients(BRANCH, scenarios=["sum"], variants="custom_gradient@eager_tape")


def test_expected_pitfall():
    compat.testing.assert_same_gradients(STE, scenarios=["sum"], variants="*@eager_tape",
                                         expected={"override_map@eager_tape": "not_called"})


def test_pitfall_gone():
    compat.testing.assert_same_gradients(STE, scenarios=["sum"], variants="*@eager_tape",
                                         expected={"override_map@eager_tape": "not_called",
                                                   "custom_gradient@eager_tape": "not_called"})
'''


@pytest.fixture(name="user_suite")
def user_suite_fixture(pytester):
    pytester.makepyfile(test_user=USER_TESTS)
    return pytester


def test_a_user_test_runs_once_per_variant_with_readable_ids(user_suite, plugin_args):
    result = user_suite.runpytest_inprocess(*plugin_args, "--collect-only", "-q")
    result.stdout.fnmatch_lines(["test_user.py::test_ste[[]override_map@eager_tape[]]",
                                 "test_user.py::test_ste[[]custom_gradient@eager_tape[]]"])
    result = user_suite.runpytest_inprocess(*plugin_args, "-k", "test_ste or test_passes")
    result.assert_outcomes(passed=3)


def test_a_failing_assertion_shows_the_difference_without_gradcompat_frames(user_suite, plugin_args):
    result = user_suite.runpytest_inprocess(*plugin_args, "-k", "test_fails_helpfully")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*spec `shape_branch`, scenario `sum`, dtype float32, variant custom_gradient@eager_tape: "
        "values at input_grad[[]0[]] (reference defun_grad_func@v1_session)",
        "*first at index [[]0, 0[]] (1 here, 2 in the reference)*",
        "*defun_grad_func@v1_session (reference): [[][[]2. 2.[]]*",
    ])
    assert "_assertions.py" not in result.stdout.str() and "_assert_same" not in result.stdout.str()


def test_an_expected_pitfall_passes_and_one_that_no_longer_happens_fails(user_suite, plugin_args):
    result = user_suite.runpytest_inprocess(*plugin_args, "-k", "test_expected_pitfall or test_pitfall_gone")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*no longer shows 1 expected pitfall(s): its behaviour changed; update or remove them in `expected=`:",
        "*expected {'custom_gradient@eager_tape': 'not_called'}, but the cells show: "
        "custom_gradient@eager_tape: ok, no difference",
        "FAILED test_user.py::test_pitfall_gone - AssertionError: TensorFlow *",
    ])


def test_k_selects_one_variant(user_suite, plugin_args):
    result = user_suite.runpytest_inprocess(*plugin_args, "-v", "-k", "test_ste and custom_gradient and eager_tape")
    result.assert_outcomes(passed=1, deselected=5)
    result.stdout.fnmatch_lines(["*test_ste[[]custom_gradient@eager_tape[]] PASSED*"])


def test_the_option_narrows_variants_and_the_marker_alone_parametrises(pytester, plugin_args):
    pytester.makepyfile(test_marked='''
import pytest

@pytest.mark.gradcompat("*@v1_session")
def test_marked(variant):
    assert variant.endswith("@v1_session")
''')
    result = pytester.runpytest_inprocess(*plugin_args, "-v",
                                          "--gradcompat-variants", "custom_gradient@*,override_map@*")
    result.assert_outcomes(passed=2, deselected=2)
    result.stdout.fnmatch_lines(["*test_marked[[]override_map@v1_session[]] PASSED*",
                                 "*test_marked[[]custom_gradient@v1_session[]] PASSED*"])
    result = pytester.runpytest_inprocess(*plugin_args, "--gradcompat-variants", "nope@*")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--gradcompat-variants: variant selection 'nope@[*]' matches no variant*"])


@pytest.mark.parametrize("distributed", [["-n", "2"], ["-n", "0"]], ids=["xdist_2_workers", "xdist_off"])
def test_a_bad_option_is_a_usage_error_with_its_message_under_xdist_too(user_suite, plugin_args, distributed):
    """pytest-xdist's controller collects nothing: the check once ran in its workers only, and the user got an
    INTERNALERROR (`assert not crashitem`) with the message lost."""
    result = user_suite.runpytest_inprocess(*plugin_args, *distributed, "--gradcompat-variants", "nope@*")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --gradcompat-variants: variant selection 'nope@[*]' matches no variant*"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result = user_suite.runpytest_inprocess(*plugin_args, *distributed, "--gradcompat-variants", "*@eager_tape",
                                            "-k", "test_ste")
    result.assert_outcomes(passed=2)


def test_the_marker_and_option_are_listed(pytester, plugin_args):
    result = pytester.runpytest_inprocess(*plugin_args, "--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.gradcompat(selection='native'): run the test once per gradcompat*"])
    result = pytester.runpytest_inprocess(*plugin_args, "--help")
    result.stdout.fnmatch_lines(["*--gradcompat-variants=SELECTION*"])


def test_setup_cfg_registers_the_plugin_entry_point():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    entry_points = config["options.entry_points"]["pytest11"].split("\n")
    assert "gradcompat = compat.testing.plugin" in [line.strip() for line in entry_points]


def test_importing_the_plugin_or_the_package_imports_neither_tensorflow_nor_pytest():
    code = ("import sys, compat.testing; a = 'tensorflow' in sys.modules or 'pytest' in sys.modules; "
            "import compat.testing.plugin; print(a, 'tensorflow' in sys.modules, 'compat.variants' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False", "False"]
