"""A map whose block yields, awaits or creates no op the rewriter sees is never dropped as if it were rewritten.

Such a map overrides ops built outside what the rewriter reads (tensorpack's `guided_relu()` context manager
overrides every Relu its caller builds): dropping it silently turned guided backprop into plain backprop.
"""

from __future__ import annotations

import textwrap

import pytest

GUIDED_RELU = textwrap.dedent("""\
    from contextlib import contextmanager

    import tensorflow as tf


    @tf.RegisterGradient("GuidedReLUUnseen")
    def _guided_relu_grad(op, grad):
        return tf.where(0. < grad, grad * tf.cast(op.outputs[0] > 0., grad.dtype), tf.zeros_like(grad))


    @contextmanager
    def guided_relu():
        g = tf.get_default_graph()
        with g.gradient_override_map({"Relu": "GuidedReLUUnseen"}):
            yield


    def saliency(x):
        with guided_relu():
            return -tf.nn.relu(x)
    """)

AWAITS = textwrap.dedent("""\
    import tensorflow as tf


    async def build(x, helper):
        with tf.get_default_graph().gradient_override_map({"Sign": "Identity"}):
            y = tf.sign(x)
            await helper()
        return y
    """)

NOTHING_SEEN = textwrap.dedent("""\
    import tensorflow as tf


    def build(x):
        with tf.get_default_graph().gradient_override_map({"Relu": "Identity"}):
            y = x[1:]
        return y
    """)


def test_a_map_around_a_yield_is_a_todo_not_dropped(runner) -> None:
    reasons = runner.todo_reasons(GUIDED_RELU)
    assert any(r.startswith("the override block yields, so the map is also active in code outside it")
               and 'compat.override_gradients(fn_or_model, {"Relu": "GuidedReLUUnseen"})' in r
               for r in reasons), reasons


def test_a_map_around_an_await_is_a_todo_even_around_ops_it_could_rewrite(runner) -> None:
    reasons = runner.todo_reasons(AWAITS)
    assert any(r.startswith("the override block awaits") for r in reasons), reasons


def test_a_map_around_no_op_the_rewriter_sees_is_a_todo(runner) -> None:
    reasons = runner.todo_reasons(NOTHING_SEEN)
    assert any(r.startswith("the override block creates no op the rewriter can see") for r in reasons), reasons


def test_tf1_applies_a_map_around_a_yield_to_the_callers_ops(runner, tmp_path) -> None:
    """Why it must stay: in TF1 the caller's Relu gets the guided gradient (negative upstream dropped)."""
    pytest.importorskip("tensorflow")
    legacy = runner.load_pair(tmp_path, "guided_relu", GUIDED_RELU, "")[0]
    plain = runner.load_pair(tmp_path, "plain_relu", GUIDED_RELU.replace("with guided_relu():", "if True:")
                             .replace('"GuidedReLUUnseen"', '"GuidedReLUUnseenPlain"'), "")[0]
    values = runner.inputs_for([("float32", [4, 3])], seed=0)
    guided = runner.run_session(legacy, "saliency", values, "sum")[1]
    assert not runner.same(guided, runner.run_session(plain, "saliency", values, "sum")[1])


def test_the_gradient_a_todo_map_uses_points_at_that_map(runner) -> None:
    reasons = runner.todo_reasons(GUIDED_RELU)
    assert any(r.startswith('an override map using gradient "GuidedReLUUnseen" is not rewritten (see the TODO')
               for r in reasons), reasons
