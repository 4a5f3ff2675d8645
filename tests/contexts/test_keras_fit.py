"""keras_fit: one model.fit step; upstreams carry Keras' 1 / batch mean, declared, and compare once divided by it."""

import numpy as np
import pytest
import tensorflow as tf

import compat
from compat.catalogue import CATALOGUE
from compat.contexts import CONTEXTS, Case, Refused
from compat.contexts.keras_fit import BATCH
from compat.downstream import Downstream

pytest.importorskip("keras")

X = np.array([1.0, -2.0, 3.0], np.float32)


def test_the_op_receives_the_upstream_divided_by_the_batch_size_as_declared():
    received = []

    def build():
        @tf.custom_gradient
        def identity(x):
            def grad(dy):
                record = tf.numpy_function(lambda value: received.append(value.copy()) or np.int64(0), [dy], tf.int64)
                with tf.control_dependencies([record]):
                    return tf.identity(dy)

            return tf.identity(x), grad

        return lambda x: (identity(x),)

    (outcome,) = CONTEXTS["keras_fit"].run([Case(build, (X,), Downstream("times3", lambda y: tf.reduce_sum(3 * y)))])
    assert BATCH == 4 and outcome.upstream_scale == 1 / BATCH  # declared from Keras' documented reduction
    (upstream,) = received  # one fit step: one call, as Keras handed it over, before any unscaling
    np.testing.assert_array_equal(upstream, [0.75, 0.75, 0.75])
    np.testing.assert_array_equal(outcome.input_grads[0], [3.0, 3.0, 3.0])  # what SGD was handed, times BATCH
    assert outcome.input_grad_kinds == ("dense",)


@pytest.fixture(scope="module")
def report():
    specs = [CATALOGUE["scaled_ste"](), CATALOGUE["variable_scale"](), CATALOGUE["clip_grad_by_value"]()]
    return compat.check(specs, scenarios=["square", "gather", "grad_ys", "second_order"],
                        variants=["custom_gradient@keras_fit"])


def cell(report, spec, scenario):
    return next(c for c in report.cells if (c.spec, c.scenario) == (spec, scenario))


@pytest.mark.parametrize("spec", ["scaled_ste", "variable_scale"])
@pytest.mark.parametrize("scenario", ["square", "gather"])
def test_a_nontrivial_loss_compares_with_the_reference_once_unscaled(report, spec, scenario):
    found = cell(report, spec, scenario)
    assert found.status == "differs" and found.result.calls == 1 and found.result.upstream_scale == 0.25
    assert not [d for d in found.differences if d.breaking], found.differences  # static shape / sparse form only
    assert len(found.result.input_grads) == len(CATALOGUE[spec]().sources)  # the variable's gradient compared too


def test_a_clip_applies_to_the_upstream_divided_by_the_batch_size_a_migration_pitfall(report):
    found = cell(report, "clip_grad_by_value", "square")
    two_y = found.result.upstream[0].value  # shown unscaled: 2y, up to 6.2, clipped at 1.2 in the reference
    assert np.abs(two_y).max() > BATCH * 1.2
    # the clip met 2y / 4: only what exceeds 4 * 1.2 once unscaled was clipped
    np.testing.assert_allclose(found.result.input_grads[0], np.clip(two_y, -BATCH * 1.2, BATCH * 1.2), rtol=1e-6)
    assert any(d.kind == "values" and d.where == "input_grad[0]" for d in found.differences)
    assert not found.native and not found.unexpected


@pytest.mark.parametrize(("scenario", "why"), [("grad_ys", "no grad_ys"), ("second_order", "first-order gradients")])
def test_what_model_fit_cannot_express_is_unsupported_saying_why(report, scenario, why):
    found = cell(report, "scaled_ste", scenario)
    assert found.status == "unsupported" and "model.fit" in found.result.message and why in found.result.message


def test_model_fit_refuses_a_second_order_case_as_a_value_without_building_it():
    def build():
        raise AssertionError("a case model.fit cannot express is never built")

    second = Downstream("second", lambda y: tf.reduce_sum(y * y), order=2)
    (outcome,) = CONTEXTS["keras_fit"].run([Case(build, (X,), second)])
    assert isinstance(outcome, Refused)  # the words reports quote, the tag class's name among them
    assert outcome.reason.startswith("TensorFlow cannot run this combination: NotExpressible: model.fit takes "
                                     "first-order gradients of its loss")
