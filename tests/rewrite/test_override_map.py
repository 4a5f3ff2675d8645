"""Override maps the rewriter cannot prove apply in TF1 are left with a TODO; TensorFlow shows why.

A `gradient_override_map` only changes ops built, under it, in the graph it was entered on. TF1 ignores it when
the handle names another graph than the default one, or when the wrapped call creates no op of the overridden
type; a @tf.custom_gradient rewrite would always apply the gradient, so those maps must stay as they are.
"""

from __future__ import annotations

import textwrap

import pytest

from compat.rewrite import rewrite_source
from compat.rewrite.todo import PREFIX


def _rewrite(source: str):
    return rewrite_source(textwrap.dedent(source).lstrip())


def _todo_reasons(source: str) -> list[str]:
    result = _rewrite(source)
    kept = "".join(line for line in result.text.splitlines(keepends=True) if not line.lstrip().startswith(PREFIX))
    # A leftover tf.get_default_graph() is spelled tf.compat.v1.get_default_graph() in any rewritten file.
    kept = kept.replace("tf.compat.v1.get_default_graph()", "tf.get_default_graph()")
    assert kept == textwrap.dedent(source).lstrip(), "a TODO site changes nothing"
    return [s.reason for s in result.todo]


SWITCHED_GRAPH = """
    import tensorflow as tf

    def build(x_value):
        G = tf.get_default_graph()
        with tf.Graph().as_default() as inner:
            x = tf.constant(x_value)
            with G.gradient_override_map({"Sign": "Identity"}):
                y = tf.sign(x)
            grads = tf.gradients(y, x)
            with tf.Session(graph=inner) as session:
                return session.run(grads)[0]
    """


def test_a_map_on_a_handle_taken_before_another_graph_became_the_default_is_a_todo() -> None:
    reasons = _todo_reasons(SWITCHED_GRAPH)
    assert any(r.startswith("`G` may not be the default graph") and "tf.Graph().as_default()" in r
               for r in reasons), reasons


def test_tf1_ignores_that_map() -> None:
    """Why it is a TODO: in a v1 graph the map changes nothing (a custom_gradient would apply Identity)."""
    tf = pytest.importorskip("tensorflow")
    namespace: dict = {"tf": tf.compat.v1}
    with_map = textwrap.dedent(SWITCHED_GRAPH).replace("import tensorflow as tf\n", "")
    without_map = with_map.replace('G.gradient_override_map({"Sign": "Identity"})', "tf.name_scope('plain')")
    results = []
    for source in (with_map, without_map):
        exec(compile(source, "<legacy>", "exec"), namespace)  # noqa: S102 - our own test source
        with tf.Graph().as_default():
            results.append(namespace["build"]([1.5, -2.0]))
    assert (results[0] == results[1]).all(), results


@pytest.mark.parametrize("source, why", [
    ("""
     import tensorflow as tf
     def f(x, other):
         G = tf.get_default_graph()
         def inner(x):
             with other.as_default():
                 with G.gradient_override_map({"Sign": "Identity"}):
                     return tf.sign(x)
         return inner(x)
     """, "`G` may not be the default graph where the map is entered (`other.as_default()` changes it)"),
    ("""
     import tensorflow as tf
     def f(x, other):
         with other.as_default():
             G = tf.get_default_graph()
         with G.gradient_override_map({"Sign": "Identity"}):
             return tf.sign(x)
     """, "`G` may not be the default graph where the map is entered (`other.as_default()` changes it)"),
    ("""
     import tensorflow as tf
     def f(x, other):
         G = tf.get_default_graph()
         other.as_default().__enter__()
         with G.gradient_override_map({"Sign": "Identity"}):
             return tf.sign(x)
     """, "`G` may not be the default graph where the map is entered (`other.as_default().__enter__()` changes"),
])
def test_other_handles_that_may_name_another_graph_are_todos(source: str, why: str) -> None:
    reasons = _todo_reasons(source)
    assert any(r.startswith(why) for r in reasons), reasons


def test_a_handle_and_map_in_the_same_new_graph_are_rewritten() -> None:
    result = _rewrite("""
        import tensorflow as tf
        def f(value):
            with tf.Graph().as_default():
                G = tf.get_default_graph()
                x = tf.constant(value)
                with G.gradient_override_map({"Sign": "Identity"}):
                    return tf.sign(x)
        """)
    assert not result.todo and "return _sign_with_identity_grad(x)" in result.text, result.sites
