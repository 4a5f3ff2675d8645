"""xla_tape and xla_gradients: compiled by XLA, the upstream returned by the compiled function, never guessed."""

import numpy as np
import pytest
import tensorflow as tf

import compat
from compat.contexts import CONTEXTS, Case
from compat.downstream import SUM

X = np.array([1.0, -2.0, 3.0], np.float32)
STE = compat.GradientSpec("half_ste", lambda x: tf.sign(x), lambda inputs, outputs, upstreams: [0.5 * upstreams[0]],
                          [X], op_type="Sign")
XLA = ["xla_tape", "xla_gradients"]


@pytest.mark.parametrize("context", XLA)
def test_custom_gradient_is_compiled_and_its_upstream_is_returned_by_the_compiled_function(context):
    (result,) = compat.run(STE, lambda y: tf.reduce_sum(3.0 * y), f"custom_gradient@{context}")
    assert result.status == "ok" and result.calls == 1, result.message
    np.testing.assert_array_equal(result.upstream[0].value, [3.0, 3.0, 3.0])
    np.testing.assert_array_equal(result.input_grads[0], [1.5, 1.5, 1.5])


@pytest.mark.parametrize("context", XLA)
def test_a_gradient_built_in_a_defun_body_is_not_observable_never_guessed(context):
    (result,) = compat.run(STE, None, f"defun_grad_func@{context}")
    assert result.status == "not_observable" and result.calls == 0 and result.upstreams == ()
    assert "upstream not observable" in result.message


def test_override_map_is_honoured_by_tf_gradients_but_not_by_a_tape_under_xla():
    results = {r.context: r for r in compat.run(STE, None, "override_map@xla_*".replace("xla_*", "*"))
               if r.context in XLA}
    assert results["xla_gradients"].status == "ok" and results["xla_gradients"].calls == 1
    assert results["xla_tape"].status == "not_called"


@pytest.mark.parametrize("context", XLA)
def test_what_xla_cannot_compile_is_refused_at_build_not_a_run_failure(context):
    def build():
        return lambda x: (tf.numpy_function(lambda v: v * 2.0, [x], tf.float32, stateful=False) * x,)

    (outcome,) = CONTEXTS[context].run([Case(build, (X,), SUM)])
    assert outcome.phase == "build" and isinstance(outcome.error, tf.errors.OpError)
