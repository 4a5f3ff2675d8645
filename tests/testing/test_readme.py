"""The README's compat.testing examples run as written: the pytest one through pytester, the absl one in unittest."""

import importlib
import pathlib
import re
import unittest

import compat

pytest_plugins = ("pytester",)

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def _example(first_line: str) -> str:
    """The README's python block that starts with `first_line`."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.DOTALL)
    [block] = [b for b in blocks if b.startswith(first_line + "\n")]
    return block


def test_the_pytest_example_passes_in_every_native_variant(pytester, plugin_args):
    pytester.makepyfile(test_ste=_example("# test_ste.py"))
    result = pytester.runpytest_inprocess(*plugin_args, "-v")
    result.assert_outcomes(passed=len(compat.NATIVE_VARIANTS) + 1)
    result.stdout.fnmatch_lines(["*test_ste.py::test_ste[[]custom_gradient@eager_tape[]] PASSED*"])


def test_the_absl_example_passes(pytester):
    pytester.makepyfile(test_ste=_example("# test_ste.py"), ste_test=_example("# ste_test.py"))
    pytester.syspathinsert()
    module = importlib.import_module("ste_test")
    suite = unittest.TestLoader().loadTestsFromTestCase(module.SteTest)
    assert suite.countTestCases() == len(compat.NATIVE_VARIANTS) + 1
    result = unittest.TextTestRunner(stream=open("/dev/null", "w"), verbosity=0).run(suite)  # noqa: SIM115
    assert result.wasSuccessful(), result.failures + result.errors


def test_the_api_example_raises_on_an_indexed_slices_upstream_as_the_readme_warns():
    [block] = [b for b in re.findall(r"```python\n(.*?)```", README.read_text(), re.DOTALL)
               if b.startswith("import numpy as np\nimport tensorflow as tf\nimport compat\n")]
    namespace: dict = {}
    exec(block.split("\nfor result in")[0], namespace)  # the spec, without the example's run of every variant
    import tensorflow as tf

    (result,) = compat.run(namespace["spec"], loss=lambda y: tf.reduce_sum(tf.gather(y, [0, 2])),
                           variants=["custom_gradient@eager_tape"])
    assert result.status == "error"
    assert "unsupported operand type(s) for *: 'float' and 'IndexedSlices'" in result.message


def test_the_gradient_matches_forward_example_passes_and_fails_for_a_wrong_gradient(pytester, plugin_args):
    example = _example("# test_softplus.py")
    pytester.makepyfile(test_softplus=example)
    pytester.runpytest_inprocess(*plugin_args).assert_outcomes(passed=1)
    wrong = example.replace("[tf.sigmoid(inputs[0])", "[1.1 * tf.sigmoid(inputs[0])")
    assert wrong != example
    pytester.makepyfile(test_softplus=wrong)
    result = pytester.runpytest_inprocess(*plugin_args)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*spec `stable_softplus`, scenario `sum`, dtype float32, variants *: "
                                 "finite_difference differs*", "*direction[[]*[]]: g.u is *abs error*"])
