"""saved_model and saved_model_stripped: saved, loaded in another process, differentiated there, never guessed."""

import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

import compat
from compat.contexts import CONTEXTS
from compat.downstream import Downstream
from compat.runner import run_matrix

X = np.array([1.0, -2.0, 3.0], np.float32)
W = np.array([0.5, -4.0, 2.0], np.float32)
SIDE_EFFECTS = Path(tempfile.mkdtemp(prefix="gradcompat-test-")) / "pids"
"""Each run of the gradient function's Python body appends its process id here (a side effect any process sees)."""


def _half_square_gradient(inputs, outputs, upstreams):
    with open(SIDE_EFFECTS, "a") as file:
        file.write(f"{os.getpid()}\n")
    return [0.5 * upstreams[0]]


SQUARE = compat.GradientSpec("half_square", lambda x: x * x, _half_square_gradient, [X])
"""x * x with the gradient 0.5 * dy: TensorFlow's own gradient of the forward (2x) is told apart from it."""

WEIGHTED = Downstream("weighted", lambda y: tf.reduce_sum(y * W))
STOPPED = Downstream("stopped", lambda y: tf.reduce_sum(tf.stop_gradient(y)))


@pytest.fixture(scope="module")
def results():
    """One batch per context: every mechanism under both downstreams, and the eager reference."""
    variants = ["*@saved_model", "*@saved_model_stripped", "custom_gradient@eager_tape"]
    found = run_matrix(SQUARE, [WEIGHTED, STOPPED], variants)
    return {(r.variant, r.downstream): r for r in found}


def test_the_gradient_runs_in_the_loading_process_not_in_python_here(results):
    saved = results["custom_gradient@saved_model", "weighted"]
    assert saved.status == "ok" and saved.calls == 1, saved.message
    # Its Python body ran here only (traced while saving, and eager_tape's call); the call was logged in the loader.
    assert set(SIDE_EFFECTS.read_text().split()) == {str(os.getpid())} and saved.traces >= 1
    assert CONTEXTS["saved_model"]._loader._process.pid != os.getpid()


def test_custom_gradient_upstream_is_captured_in_the_loader_and_equals_the_eager_one(results):
    saved, eager = results["custom_gradient@saved_model", "weighted"], results["custom_gradient@eager_tape", "weighted"]
    np.testing.assert_array_equal(saved.upstream[0].value, W)
    np.testing.assert_array_equal(saved.upstream[0].value, eager.upstream[0].value)
    np.testing.assert_array_equal(saved.input_grads[0], 0.5 * W)
    assert saved.message == ""  # tf.gradients in the loader agreed with the tape


def test_defun_gradients_do_not_survive_the_round_trip_tensorflow_differentiates_the_forward(results):
    for context in ("saved_model", "saved_model_stripped"):
        for mechanism in ("defun_grad_func", "defun_python_grad_func"):
            result = results[f"{mechanism}@{context}", "weighted"]
            assert result.status == "not_called" and result.calls == 0, result.message
            np.testing.assert_allclose(result.input_grads[0], 2 * X * W)  # d(x*x)/dx, not 0.5 * dy


def _op_spec(name: str, reads_op: bool) -> compat.GradientSpec:
    """sign(x) overridden with 0.5 * dy; with `reads_op`, the legacy gradient also reads `op.inputs[0]`."""
    if reads_op:
        def gradient(inputs, outputs, upstreams):
            return [0.5 * upstreams[0] * tf.ones_like(inputs[0])]
    else:
        def gradient(inputs, outputs, upstreams):
            return [0.5 * upstreams[0]]
    return compat.GradientSpec(name, tf.sign, gradient, [X], op_type="Sign")


def test_a_legacy_gradient_that_never_reads_op_is_saved_and_honoured_after_loading():
    """tf.saved_model.save traces registered gradients with op=None: one that ignores `op` saves, and the child
    process that loads the model (never importing this code) runs it; gradcompat must not read `op` for it."""
    from compat.checker import check

    report = check([_op_spec("ignores_op", reads_op=False)], scenarios=["weighted", "sum"],
                   variants=["override_map@saved_model", "override_map@v1_session"],
                   reference="override_map@v1_session")
    for cell in report.cells:
        assert cell.status == "same", (cell.variant, cell.result.message)
        assert cell.result.calls == 1, cell.result.message
    saved = next(c for c in report.cells if c.variant == "override_map@saved_model" and c.scenario == "sum")
    np.testing.assert_array_equal(saved.result.input_grads[0], np.full(3, 0.5, np.float32))  # 0.5 * dy, not 0


def test_a_legacy_gradient_that_reads_op_inputs_cannot_be_saved_with_tensorflows_reason():
    (result,) = compat.run(_op_spec("reads_op", reads_op=True), WEIGHTED, "override_map@saved_model")
    assert result.status == "unsupported" and result.calls == 0, result.message
    assert "AttributeError: 'NoneType' object has no attribute 'inputs'" in result.message
    assert "Error when tracing gradients for SavedModel" in result.message  # TensorFlow's own words


def test_stripped_custom_gradient_is_not_called_the_loader_has_no_gradient_for_its_op(results):
    result = results["custom_gradient@saved_model_stripped", "weighted"]
    assert result.status == "unsupported" and result.calls == 0
    assert "LookupError: No gradient defined for operation'IdentityN'" in result.message
    assert not compat.is_native("custom_gradient@saved_model_stripped")


def test_a_disagreement_between_the_tape_and_tf_gradients_in_the_loader_is_reported(results):
    # The tape differentiates the loaded forward even when the loss stops the gradient; tf.gradients does not.
    result = results["custom_gradient@saved_model_stripped", "stopped"]
    assert result.status == "unsupported"
    assert ("tf.gradients inside a tf.function disagreed with the eager tape: the tape failed (LookupError"
            in result.message)


def test_a_crashing_loader_becomes_error_cells_naming_it(monkeypatch):
    context = CONTEXTS["saved_model"]
    monkeypatch.setattr(context, "loader_command", lambda: [sys.executable, "-c", "import os; os.abort()"])
    results = compat.run(SQUARE, None, ["custom_gradient@saved_model", "defun_grad_func@saved_model"])
    for result in results:
        assert result.status == "error" and result.calls == 0
        assert "failed at run time: LoaderFailed: the SavedModel loading process exited with code" in result.message


def test_a_loader_writing_20_mb_to_stderr_fails_its_cells_with_a_bounded_message(monkeypatch):
    context = CONTEXTS["saved_model"]
    noisy = "import sys; sys.stderr.write('x' * 20_000_000 + '\\nthe last words\\n'); sys.exit(3)"
    monkeypatch.setattr(context, "loader_command", lambda: [sys.executable, "-c", noisy])
    (result,) = compat.run(SQUARE, None, "custom_gradient@saved_model")
    assert result.status == "error" and "exited with code 3: the last words" in result.message
    assert len(result.message) < 2_000


def test_a_hanging_loader_is_killed_after_its_timeout(monkeypatch):
    context = CONTEXTS["saved_model"]
    monkeypatch.setattr(context, "loader_command", lambda: [sys.executable, "-c", "import time; time.sleep(600)"])
    monkeypatch.setattr(context, "timeout_seconds", 1.0)
    (result,) = compat.run(SQUARE, None, "custom_gradient@saved_model")
    assert result.status == "error" and "did not finish within 1 s and was killed" in result.message
    assert context._loader._process is None  # killed and reaped, not left running
