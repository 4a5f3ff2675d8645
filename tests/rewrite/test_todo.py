"""Where a rewrite is not provably safe, nothing changes there: a TODO comment says why, and the site is reported."""

from __future__ import annotations

import ast
import textwrap

import pytest

from compat.rewrite import rewrite_source
from compat.rewrite.todo import PREFIX

CASES = {
    "map_from_a_variable": ("""
        import tensorflow as tf
        OVERRIDES = {"Sign": "Identity"}
        def f(x):
            with tf.get_default_graph().gradient_override_map(OVERRIDES):
                return tf.sign(x)
        """, "not a literal dict"),
    "get_attr": ("""
        import tensorflow as tf
        @tf.RegisterGradient("ScaledGrad")
        def _scaled(op, grad):
            return grad * op.get_attr("scale")
        def f(x):
            with tf.get_default_graph().gradient_override_map({"Identity": "ScaledGrad"}):
                return tf.identity(x)
        """, "op.get_attr"),
    "unknown_builtin_gradient": ("""
        import tensorflow as tf
        def f(x):
            with tf.get_default_graph().gradient_override_map({"Relu": "Relu6"}):
                return tf.nn.relu(x)
        """, "neither registered in this file nor a built-in"),
    "code_the_rewriter_cannot_see": ("""
        import tensorflow as tf
        def f(x):
            g = tf.get_default_graph()
            with g.gradient_override_map({"Sign": "Identity"}):
                return my_quantizer(x)
        """, "cannot see into"),
    "name_shared_by_maps_over_other_ops": ("""
        import tensorflow as tf
        @tf.RegisterGradient("Straight")
        def _straight(op, grad):
            return grad
        def f(x):
            with tf.get_default_graph().gradient_override_map({"Sign": "Straight"}):
                a = tf.sign(x)
            with tf.get_default_graph().gradient_override_map({"Round": "Straight"}):
                b = tf.round(x)
            return a + b
        """, "overrides different ops"),
    "operator_of_the_overridden_type": ("""
        import tensorflow as tf
        def f(x, y):
            with tf.get_default_graph().gradient_override_map({"Mul": "Identity"}):
                return tf.multiply(x, y) * y
        """, "Python operator"),
    "graph_taken_at_import": ("""
        import tensorflow as tf
        G = tf.get_default_graph()
        def f(x):
            with G.gradient_override_map({"Sign": "Identity"}):
                return tf.sign(x)
        """, "at import time"),
    "map_not_in_a_with": ("""
        import tensorflow as tf
        def f(x):
            ctx = tf.get_default_graph().gradient_override_map({"Sign": "Identity"})
            ctx.__enter__()
            return tf.sign(x)
        """, "not entered with a `with`"),
    "registered_but_never_used": ("""
        import tensorflow as tf
        @tf.RegisterGradient("Orphan")
        def _orphan(op, grad):
            return grad
        """, "used by no override map"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_unsafe_site_is_left_with_a_todo(name: str) -> None:
    source, why = CASES[name]
    source = textwrap.dedent(source).lstrip()
    result = rewrite_source(source)
    assert result.todo, f"{name}: expected a TODO site"
    assert any(why in s.reason for s in result.todo), [s.reason for s in result.todo]
    todo_lines = [line.strip() for line in result.text.splitlines() if PREFIX.strip() in line]
    assert todo_lines and any(why in line for line in todo_lines)
    # Nothing else changed: removing the TODO lines gives back the original (TF1 graph access aside).
    kept = "\n".join(line for line in result.text.splitlines() if PREFIX.strip() not in line) + "\n"
    assert kept.replace("tf.compat.v1.get_default_graph", "tf.get_default_graph") == source
    ast.parse(result.text)
    assert rewrite_source(result.text).text == result.text, "a second run must change nothing"


def test_todo_explains_what_to_do_by_hand() -> None:
    result = rewrite_source(textwrap.dedent(CASES["get_attr"][0]).lstrip())
    assert all("by hand" in s.reason for s in result.todo)
    assert {s.pattern for s in result.todo} == {"register_gradient", "override_map"}


def test_leftover_get_default_graph_becomes_compat_v1() -> None:
    source = textwrap.dedent(CASES["code_the_rewriter_cannot_see"][0]).lstrip()
    assert "g = tf.compat.v1.get_default_graph()" in rewrite_source(source).text


def test_compat_v1_alias_keeps_get_default_graph() -> None:
    source = CASES["code_the_rewriter_cannot_see"][0].replace("import tensorflow as tf",
                                                              "import tensorflow.compat.v1 as tf")
    assert "g = tf.get_default_graph()" in rewrite_source(textwrap.dedent(source)).text


def test_file_without_legacy_patterns_is_untouched() -> None:
    source = "import tensorflow as tf\n\ndef f(x):\n    return tf.get_default_graph()\n"
    result = rewrite_source(source)
    assert result.text == source and result.sites == ()
