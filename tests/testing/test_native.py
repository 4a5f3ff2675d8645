"""compat.testing.assert_native_variants_agree: the whole matrix must agree in every native variant."""

import numpy as np
import pytest
import tensorflow as tf

import compat
from compat.catalogue import CATALOGUE
from compat.testing import assert_native_variants_agree


def test_passes_for_a_clean_spec_and_returns_the_report():
    report = assert_native_variants_agree(CATALOGUE["gradient_reversal"](), scenarios=["weighted", "gather"])
    assert report.exit_code == 0
    assert {cell.variant for cell in report.cells} == set(compat.NATIVE_VARIANTS)


def test_fails_listing_each_disagreeing_cell():
    spec = compat.GradientSpec("shape_branch", tf.identity,
                               lambda i, o, u: [u[0] * (2.0 if u[0].shape.rank is None else 1.0)],
                               [np.ones((2, 2), np.float32)], op_type="Identity")
    with pytest.raises(AssertionError) as caught:
        assert_native_variants_agree(spec, scenarios=["sum"])
    text = str(caught.value)
    assert "disagree with defun_grad_func@v1_session" in text
    assert "shape_branch / sum / float32 / custom_gradient@eager_tape: differs" in text
    assert "values: input_grad[0]" in text


def test_fails_on_native_errors():
    spec = compat.GradientSpec("raises", tf.identity, lambda i, o, u: 1 / 0, [np.ones(2, np.float32)])
    with pytest.raises(AssertionError, match="gradient raised ZeroDivisionError"):
        assert_native_variants_agree(spec, scenarios=["sum"])
