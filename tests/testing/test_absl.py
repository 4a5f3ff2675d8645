"""compat.testing.TestCase and named_variants, run by unittest the way an absl suite runs them."""

import unittest

import numpy as np
import tensorflow as tf

import compat
from compat.testing import TestCase, named_variants

STE = compat.GradientSpec("ste", lambda x: tf.sign(x), lambda i, o, u: [u[0]], [np.array([1.0, -2.0, 3.0], np.float32)])
BRANCH = compat.GradientSpec("shape_branch", tf.identity,
                             lambda i, o, u: [u[0] * (2.0 if u[0].shape.rank is None else 1.0)],
                             [np.ones((2, 2), np.float32)], op_type="Identity")


class _UserTest(TestCase):
    """A user's suite: one test unrolled over variants, and the assertions as methods."""

    __test__ = False  # run by _run() below, not collected by pytest

    @named_variants("custom_gradient@*_tape")
    def test_ste(self, variant):
        self.assertEqual(compat.testing.run_variant(STE, variant).status, "ok")

    def test_same_upstream(self):
        self.assertSameUpstream(STE, ["sum"], variants="*@eager_tape",
                                expected={"override_map@eager_tape": "not_called"})

    def test_same_gradients_fails(self):
        self.assertSameGradients(BRANCH, ["sum"], variants="custom_gradient@eager_tape")


def _run(*names: str) -> unittest.TestResult:
    suite = unittest.TestSuite(_UserTest(name) for name in names)
    return unittest.TextTestRunner(stream=open("/dev/null", "w"), verbosity=0).run(suite)  # noqa: SIM115


def test_named_variants_unroll_one_test_per_variant_with_readable_names():
    names = unittest.TestLoader().getTestCaseNames(_UserTest)
    assert [n for n in names if n.startswith("test_ste")] == [
        "test_ste_custom_gradient@eager_tape", "test_ste_custom_gradient@function_tape",
        "test_ste_custom_gradient@outer_tape", "test_ste_custom_gradient@v1_tape",
        "test_ste_custom_gradient@xla_tape"]
    result = _run("test_ste_custom_gradient@eager_tape", "test_ste_custom_gradient@v1_tape")
    assert result.wasSuccessful() and result.testsRun == 2


def test_assertion_methods_pass_and_fail_with_the_message():
    assert _run("test_same_upstream").wasSuccessful()
    result = _run("test_same_gradients_fails")
    [(_, traceback)] = result.failures
    assert "variant custom_gradient@eager_tape: values at input_grad[0]" in traceback
    assert "During handling" not in traceback


def test_named_variants_is_also_a_class_attribute():
    assert TestCase.named_variants is named_variants
