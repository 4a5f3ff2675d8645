"""recompute_grad and vectorized_map on real TensorFlow: the op wrapped by a transformation, a tape outside."""

import numpy as np
import pytest
import tensorflow as tf

import compat
from compat.contexts import CONTEXTS, Case
from compat.contexts.recompute import VECTORIZED_BATCH
from compat.downstream import SUM
from compat.scenarios import SCENARIOS

X = np.array([1.0, -2.0, 3.0], np.float32)
STE = compat.GradientSpec("half_ste", lambda x: tf.sign(x), lambda inputs, outputs, upstreams: [0.5 * upstreams[0]],
                          [X], op_type="Sign")


def _by_mechanism(context, scenario="weighted"):
    return {r.mechanism: r for r in compat.run(STE, SCENARIOS[scenario].downstream(STE), f"*@{context}")}


def test_recompute_grad_hands_the_custom_gradient_the_tapes_upstream_once():
    results, tape = _by_mechanism("recompute_grad"), _by_mechanism("eager_tape")
    custom = results["custom_gradient"]
    assert custom.status == "ok" and custom.calls == 1
    np.testing.assert_array_equal(custom.upstreams[0][0].value, tape["custom_gradient"].upstreams[0][0].value)
    np.testing.assert_array_equal(custom.input_grads[0], tape["custom_gradient"].input_grads[0])
    for mechanism in ("override_map", "defun_grad_func", "defun_python_grad_func"):  # as eagerly
        assert results[mechanism].status == tape[mechanism].status


def test_recompute_grad_refuses_second_order_through_an_op_reading_a_variable():
    from compat.catalogue import CATALOGUE

    spec = CATALOGUE["variable_scale"]()
    downstream = SCENARIOS["second_order"].downstream(spec)
    (checkpointed,) = compat.run(spec, downstream, "custom_gradient@recompute_grad")
    (tape,) = compat.run(spec, downstream, "custom_gradient@eager_tape")
    assert tape.status == "ok"
    assert checkpointed.status == "unsupported" and "recompute_grad" in checkpointed.message
    assert not compat.is_native("custom_gradient@recompute_grad")  # a limit of checkpointing: reported, not failing


def test_vectorized_map_drops_a_custom_gradient_and_differentiates_the_forward():
    custom = _by_mechanism("vectorized_map")["custom_gradient"]
    assert custom.status == "not_called" and custom.calls == 0
    np.testing.assert_array_equal(custom.input_grads[0], np.zeros_like(X))  # sign's own gradient


def test_vectorized_map_hands_a_gradient_override_map_the_whole_batchs_upstream():
    results, tape = _by_mechanism("vectorized_map"), _by_mechanism("eager_tape")
    override = results["override_map"]
    assert override.status == "ok" and override.calls == 1
    upstream = override.upstreams[0][0].value
    assert upstream.shape == (VECTORIZED_BATCH, *X.shape)  # vectorized: one row per mapped element
    np.testing.assert_array_equal(upstream[0], tape["custom_gradient"].upstreams[0][0].value)
    np.testing.assert_array_equal(upstream[1:], 0.0)  # the other copies' outputs are not differentiated
    np.testing.assert_array_equal(override.input_grads[0], tape["custom_gradient"].input_grads[0])


def test_vectorized_map_cannot_vectorize_a_defun():
    results = _by_mechanism("vectorized_map", "sum")
    for mechanism in ("defun_grad_func", "defun_python_grad_func"):
        assert results[mechanism].status == "unsupported" and "Op type not registered" in results[mechanism].message


def test_vectorized_map_says_nothing_on_the_log_when_pfor_cannot_convert(caplog):
    with caplog.at_level("WARNING"):  # pfor's "Using a while_loop for converting ...", then its conversion error
        compat.run(STE, None, "defun_grad_func@vectorized_map")
    assert not [record for record in caplog.records if "parallel_for" in record.pathname]


@pytest.mark.parametrize("context", ["recompute_grad", "vectorized_map"])
def test_variables_read_by_the_op_get_gradients(context):
    def build():
        return lambda x, w: (x * w,)

    (outcome,) = CONTEXTS[context].run([Case(build, (X,), SUM, variables=(np.float32(3.0),))])
    np.testing.assert_array_equal(outcome.input_grads[0], [3.0, 3.0, 3.0])
    assert outcome.input_grads[1] == pytest.approx(X.sum())
