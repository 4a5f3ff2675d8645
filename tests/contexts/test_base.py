"""Every context: batched cases, failure isolation, grad_ys, second order and dynamic batch, for real."""

import numpy as np
import pytest
import tensorflow as tf

from compat.contexts import ALL_CONTEXTS, CONTEXTS, Case, Failed, Ran
from compat.downstream import SUM, Downstream
from tests.contexts.conftest import X, failing_at_run_time, failing_build, square_op

EXACT = [name for name in CONTEXTS if name not in ("mixed_precision", "saved_model_stripped")]
"""Contexts that compute these values exactly (mixed_precision overflows them in float16 under its 2**15 loss
scale, as training would: tests/contexts/test_mixed_precision.py; saved_model_stripped drops the custom
gradients these ops rely on: tests/contexts/test_saved_model.py)."""
WITH_GRAD_YS_AND_SECOND_ORDER = [name for name in EXACT if name != "keras_fit"]
"""Contexts that take grad_ys and second order (model.fit cannot: tests/contexts/test_keras_fit.py)."""
DROP_CUSTOM_GRADIENTS = ["vectorized_map"]
"""Contexts where TensorFlow differentiates a tf.custom_gradient's forward instead of calling its gradient (pfor
rewrites the op: tests/contexts/test_recompute.py), so a gradient that fails never runs."""


@pytest.mark.parametrize("context", EXACT)
def test_cases_run_together_and_failures_stay_in_their_case(context):
    cases = [Case(square_op, (X,), SUM), Case(failing_build, (X,), SUM), Case(failing_at_run_time, (X,), SUM),
             Case(square_op, (2 * X,), Downstream("times3", lambda y: 3.0 * tf.reduce_sum(y)))]
    outcomes = CONTEXTS[context].run(cases)
    np.testing.assert_array_equal(outcomes[0].input_grads[0], 2 * X)
    assert isinstance(outcomes[1], Failed)
    assert outcomes[1].phase == "build" and "cannot build this one" in str(outcomes[1].error)
    if getattr(CONTEXTS[context], "jit_compile", False) or context in DROP_CUSTOM_GRADIENTS:
        assert isinstance(outcomes[2], Ran)  # XLA compiles tf.debugging.Assert away; pfor never calls the gradient
    else:
        assert isinstance(outcomes[2], Failed) and isinstance(outcomes[2].error, tf.errors.InvalidArgumentError)
        assert outcomes[2].phase == "run"
    np.testing.assert_array_equal(outcomes[3].input_grads[0], 3 * 2 * (2 * X))


@pytest.mark.parametrize("context", WITH_GRAD_YS_AND_SECOND_ORDER)
def test_grad_ys_and_second_order(context):
    grad_ys = Downstream("grad_ys", lambda y: y, output_gradients=lambda t: tf.constant([1.0, 10.0, 100.0]))
    second = Downstream("second", lambda y: tf.reduce_sum(y), order=2)
    outcomes = CONTEXTS[context].run([Case(square_op, (X,), grad_ys), Case(square_op, (X,), second)])
    np.testing.assert_array_equal(outcomes[0].input_grads[0], 2 * X * [1.0, 10.0, 100.0])
    np.testing.assert_array_equal(outcomes[1].input_grads[0], [2.0, 2.0, 2.0])


@pytest.mark.parametrize("context", ["v1_session", "v1_tape", "function_tape", "function_gradients"])
def test_dynamic_batch_hides_the_leading_dimension_while_building(context):
    seen_shapes = []

    def build():
        def op(x):
            seen_shapes.append(x.shape.as_list())
            return (x * 2.0,)

        return op

    batch = np.ones((4, 2), np.float32)
    (outcome,) = CONTEXTS[context].run([Case(build, (batch,), Downstream("dyn", SUM.loss, dynamic_batch=True))])
    assert seen_shapes[0] == [None, 2]
    np.testing.assert_array_equal(outcome.input_grads[0], np.full((4, 2), 2.0))


def test_before_run_is_called_before_every_attempt():
    attempts = []
    case = Case(failing_at_run_time, (X,), SUM, before_run=lambda: attempts.append(1))
    CONTEXTS["v1_session"].run([case, Case(square_op, (X,), SUM)])
    assert len(attempts) == 2  # once in the batch, once alone to attribute the failure


def test_tape_contexts_declare_it():
    assert {name for name, context in CONTEXTS.items() if context.uses_tape} == {"v1_tape", "eager_tape",
                                                                                 "function_tape", "outer_tape",
                                                                                 "wrap_function", "xla_tape",
                                                                                 "mixed_precision", "keras_fit",
                                                                                 "saved_model", "saved_model_stripped",
                                                                                 "recompute_grad"}
    assert ALL_CONTEXTS["vectorized_map"].uses_tape and ALL_CONTEXTS["vectorized_map"].opt_in


def test_contexts_read_their_metadata_from_the_registry_only():
    """uses_tape / native / opt_in live in compat/registry.py; a context class holding a second copy could drift
    (the distributed contexts in compat/distribute/ included)."""
    import ast
    from pathlib import Path

    import compat.contexts
    import compat.distribute

    copies = {}
    packages = (Path(compat.contexts.__file__).parent, Path(compat.distribute.__file__).parent)
    for path in (path for package in packages for path in package.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                names = [target.id for statement in node.body if isinstance(statement, (ast.Assign, ast.AnnAssign))
                         for target in (statement.targets if isinstance(statement, ast.Assign) else [statement.target])
                         if isinstance(target, ast.Name) and target.id in ("uses_tape", "native", "opt_in")]
                if names:
                    copies[f"{path.name}:{node.name}"] = names
    assert copies == {}
