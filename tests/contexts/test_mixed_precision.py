"""mixed_precision: float16 upstreams multiplied by the loss scale, reported, compared after unscaling."""

import numpy as np
import pytest
import tensorflow as tf

import compat
from compat.contexts import CONTEXTS

pytest.importorskip("keras")

X = np.array([1.0, -2.0, 3.0], np.float32)
STE = compat.GradientSpec("half_ste", lambda x: tf.sign(x), lambda inputs, outputs, upstreams: [0.5 * upstreams[0]],
                          [X], op_type="Sign")


def test_custom_gradient_receives_float16_scaled_by_the_loss_scale_reported_and_unscaled():
    (result,) = compat.run(STE, lambda y: tf.reduce_sum(0.25 * y), "custom_gradient@mixed_precision")
    assert result.status == "ok" and result.calls == 1
    assert result.upstream_scale == 2.0**15
    upstream = result.upstream[0]
    assert upstream.dtype == "float16" and upstream.value.dtype == np.float16
    np.testing.assert_array_equal(upstream.value, [0.25, 0.25, 0.25])  # received 8192 each, divided by 2**15
    np.testing.assert_array_equal(result.input_grads[0], [0.125, 0.125, 0.125])
    assert "loss scale 32768" in str(result)


def test_an_overflowing_step_halves_the_scale_as_the_loss_scale_optimizer_does():
    (result,) = compat.run(STE, lambda y: tf.reduce_sum(2.0 * y), "custom_gradient@mixed_precision")
    assert result.upstream_scale == 2.0**14  # 2 * 2**15 > 65504, the float16 maximum: that step was skipped
    assert result.calls == 1  # only the step that was applied
    np.testing.assert_array_equal(result.upstream[0].value, [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(result.input_grads[0], [1.0, 1.0, 1.0])


def test_legacy_mechanisms_run_as_keras_runs_them_eagerly():
    results = {r.mechanism: r for r in compat.run(STE, None, "*@mixed_precision")}
    assert results["defun_grad_func"].status == "unsupported"
    assert results["override_map"].status == "not_called"


def test_a_missing_requirement_makes_every_cell_unsupported_saying_what_to_install(monkeypatch):
    monkeypatch.setattr(CONTEXTS["mixed_precision"], "requires", ("not_a_real_package_gc",))
    (result,) = compat.run(STE, None, "custom_gradient@mixed_precision")
    assert result.status == "unsupported" and result.message.endswith(
        ": TensorFlow cannot run this combination: ContextUnavailable: context `mixed_precision` needs "
        "not_a_real_package_gc: pip install not_a_real_package_gc")


def test_a_gradient_that_clips_its_upstream_clips_the_loss_scaled_value_a_migration_pitfall():
    from compat.catalogue import CATALOGUE

    (result,) = compat.run(CATALOGUE["clip_grad_by_value"](), None, "custom_gradient@mixed_precision")
    (reference,) = compat.run(CATALOGUE["clip_grad_by_value"](), None, "custom_gradient@eager_tape")
    assert result.status == "ok"
    np.testing.assert_array_equal(result.upstream[0].value, reference.upstream[0].value.astype(np.float16))
    # the clip bound applies to the scaled upstream, so once unscaled the gradient is the bound / the scale
    assert np.abs(result.input_grads[0]).max() < 1e-3 < np.abs(reference.input_grads[0]).max()


def test_a_float32_tf_variable_read_by_a_float16_layer_is_a_named_error():
    from compat.catalogue import CATALOGUE

    (result,) = compat.run(CATALOGUE["variable_scale"](), None, "custom_gradient@mixed_precision")
    assert result.status == "error" and "half tensor but is a float tensor" in result.message
