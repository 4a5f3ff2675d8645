"""The loading process's cross-check: tf.gradients inside a tf.function against the eager tape."""

from __future__ import annotations

import numpy as np

from compat.contexts.base import Failed, Ran
from compat.contexts.saved_model_log import loader_notes
from compat.results import Upstream


def _ran(*grads: np.ndarray) -> Ran:
    return Ran(input_grads=grads, input_grad_kinds=("dense",) * len(grads))


def _dense(value: list[float], dtype: str = "float32") -> Upstream:
    array = np.asarray(value, dtype)
    return Upstream("dense", dtype, array.shape, array)


def test_agreement_within_the_dtypes_tolerance_is_no_note() -> None:
    grad = np.asarray([1.0, 2.0], np.float32)
    calls = [(None, (_dense([1.0, 1.0]),))]
    nearly = [(None, (_dense([1.0, 1.0 + 1e-7]),))]
    assert loader_notes(_ran(grad), _ran(grad + np.float32(1e-7)), calls, nearly) is None  # type: ignore[arg-type]


def test_different_gradients_and_upstreams_are_named() -> None:
    note = loader_notes(_ran(np.asarray([1.0, 2.0], np.float32)), _ran(np.asarray([1.0, 3.0], np.float32)),
                        [(None, (_dense([1.0, 1.0]),))], [(None, (_dense([0.5, 0.5]),))])  # type: ignore[list-item]
    assert note is not None
    assert "input_grad[0] values differ (tf.gradients [1. 3.], tape [1. 2.])" in note
    assert "upstream[0] differs (values) between tf.gradients and the tape" in note


def test_a_dtype_difference_is_not_hidden_by_equal_values() -> None:
    note = loader_notes(_ran(), _ran(), [(None, (_dense([1.0], "float32"),))],  # type: ignore[list-item]
                        [(None, (_dense([1.0], "float64"),))])
    assert note is not None and "upstream[0] differs (dtype)" in note


def test_one_side_failing_is_named_with_its_error() -> None:
    note = loader_notes(Failed(error=LookupError("no gradient defined"), phase="run"), _ran(), [], [])
    assert note is not None and "the tape failed (LookupError: no gradient defined) where tf.gradients" in note
