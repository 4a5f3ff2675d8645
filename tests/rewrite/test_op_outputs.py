"""A gradient that reads op.outputs: in TF1 that is the op's own output, whose gradient is the custom one again.

So second-order gradients go through the custom gradient twice. The rewrite reads the output by calling the new
@tf.custom_gradient function again (a plain forward tensor would be differentiated by autodiff instead); reads
that carry no gradient (tf.ones_like(y), y.shape) keep the plain tensor; a random or stateful forward is a TODO.
"""

from __future__ import annotations

import ast
import textwrap

import numpy as np
import pytest

from compat.rewrite import rewrite_source

OVERRIDE = """
    import tensorflow as tf
    @tf.RegisterGradient("DampedSquare")
    def _damped_square(op, grad):
        x = op.inputs[0]
        sq = op.outputs[0]
        return [grad * 2.0 * x / (1.0 + sq)]
    def damped_square(x):
        with tf.get_default_graph().gradient_override_map({"Square": "DampedSquare"}):
            return tf.square(x)
    """

DEFUN = """
    import tensorflow as tf
    from tensorflow.python.framework import function
    def _pair_grad(op, g_prod, g_sum):
        damp = 1.0 / (1.0 + tf.abs(op.outputs[0]))
        return [g_prod * op.inputs[1] * damp + g_sum, g_prod * op.inputs[0] * damp + g_sum]
    @function.Defun(tf.float32, tf.float32, python_grad_func=_pair_grad)
    def prod_and_sum(a, b):
        return a * b, a + b
    """


def _rewrite(source: str) -> str:
    result = rewrite_source(textwrap.dedent(source).lstrip())
    assert not result.todo, [s.reason for s in result.todo]
    ast.parse(result.text)
    assert rewrite_source(result.text).text == result.text, "a second run must change nothing"
    return result.text


def test_override_map_output_read_calls_the_new_function_again() -> None:
    text = _rewrite(OVERRIDE)
    assert "sq = _square_with_damped_square(x)" in text
    assert "    y = tf.square(x)" in text


def test_defun_output_read_calls_the_function_again() -> None:
    text = _rewrite(DEFUN)
    assert "1.0 / (1.0 + tf.abs(prod_and_sum(a, b)[0]))" in text


def test_a_read_that_carries_no_gradient_keeps_the_forward_tensor() -> None:
    source = OVERRIDE.replace("/ (1.0 + sq)]", "* tf.ones_like(sq) * tf.cast(tf.shape(sq)[0], sq.dtype)]")
    text = _rewrite(source)
    inner = text.split("def _damped_square(grad):")[1].split("return sq, _damped_square")[0]
    assert "_square_with_damped_square" not in inner
    assert "    sq = tf.square(x)" in text


@pytest.mark.parametrize("source, stateful", [
    (DEFUN.replace("return a * b, a + b", "return tf.nn.dropout(a, 0.5) * b, a + b"), "tf.nn.dropout"),
])
def test_a_random_forward_whose_output_is_read_is_left_with_a_todo(source: str, stateful: str) -> None:
    result = rewrite_source(textwrap.dedent(source).lstrip())
    reasons = [s.reason for s in result.todo]
    assert any("op.outputs" in r and stateful in r and "by hand" in r for r in reasons), reasons


def test_second_order_goes_through_the_custom_gradient_like_tf1() -> None:
    tf = pytest.importorskip("tensorflow")
    namespace: dict = {}
    exec(compile(_rewrite(OVERRIDE), "<rewrite>", "exec"), namespace)  # noqa: S102 - our own test source
    x = tf.constant([-1.5, 0.3, 2.0])
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = 3.0 * namespace["damped_square"](x)
        dx = inner.gradient(y, x)
    d2x = outer.gradient(dx, x).numpy()
    # TF1: d/dx [6x / (1 + sq)] with d(sq)/dx the custom gradient 2x / (1 + sq), not autodiff's 2x.
    v = x.numpy()
    sq = v * v
    want = 6.0 / (1.0 + sq) - 6.0 * v * (2.0 * v / (1.0 + sq)) / (1.0 + sq) ** 2
    np.testing.assert_allclose(d2x, want, rtol=1e-5)
