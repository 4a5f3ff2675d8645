"""A map whose block yields, awaits or creates no op the rewriter sees is never dropped as if it were rewritten.

Such a map overrides ops built outside what the rewriter reads (tensorpack's `guided_relu()` context manager
overrides every Relu its caller builds): dropping it silently turned guided backprop into plain backprop. Around a
`yield` the map stays, entered with `compat.gradient_override_map`, which TF2 honours while a graph is built.
"""

from __future__ import annotations

import textwrap

import pytest

import compat

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


def test_a_map_around_a_yield_is_kept_as_compat_gradient_override_map_and_runs_like_tf1(runner, tmp_path) -> None:
    """The caller builds the ops: the map stays, entered with compat.gradient_override_map, its gradient kept."""
    from compat.rewrite import rewrite_source

    result = rewrite_source(GUIDED_RELU)
    assert [(s.pattern, s.outcome) for s in result.sites] == [("register_gradient", "kept"),
                                                              ("override_map", "rewritten")], result.sites
    assert "with compat.gradient_override_map({\"Relu\": \"GuidedReLUUnseen\"}):\n        yield" in result.text
    assert "import compat\n" in result.text and "get_default_graph" not in result.text
    assert rewrite_source(result.text).text == result.text
    legacy, rewritten = runner.load_pair(tmp_path, "guided_relu_cm", GUIDED_RELU.replace(
        "GuidedReLUUnseen", "GuidedReLUUnseenCM1"), result.text.replace("GuidedReLUUnseen", "GuidedReLUUnseenCM2"))
    entries = {"saliency": [("float32", [4, 3])]}
    found = runner.differences(legacy, rewritten, entries, contexts=("function_tape",))
    assert not found, "\n".join(found)
    with pytest.raises(compat.GradientOverrideError, match="entered eagerly"):
        runner.differences(legacy, rewritten, entries, contexts=("eager_tape",))


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
    source = GUIDED_RELU.replace('"GuidedReLUUnseen"}):', '"GuidedReLUUnseen"}) as entered:')  # refused: `as`
    reasons = runner.todo_reasons(source)
    assert any(r.startswith("the override map is bound with `as`") for r in reasons), reasons
    assert any(r.startswith('an override map using gradient "GuidedReLUUnseen" is not rewritten (see the TODO')
               for r in reasons), reasons


def test_a_map_around_a_yield_on_a_graph_that_may_not_be_the_default_stays_a_todo(runner) -> None:
    source = GUIDED_RELU.replace("g = tf.get_default_graph()", "g = tf.Graph()")
    reasons = runner.todo_reasons(source)
    assert any("the map is entered on `g`" in r for r in reasons), reasons
