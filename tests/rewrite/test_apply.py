"""Module-level helpers (built-in gradients, an added import) go where every name they read is already bound."""

from __future__ import annotations

import textwrap

import pytest

from compat.rewrite import rewrite_source

MAP = """
    def sign_ste(x):
        with tf.get_default_graph().gradient_override_map({"Sign": "Identity"}):
            return tf.sign(x)
    """

BINDINGS = {
    "try_except_import_error": """
        try:
            import tensorflow as tf
        except ImportError:
            tf = None
        """,
    "import_after_a_call": """
        import os

        def _quiet():
            os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

        _quiet()
        import tensorflow as tf
        """,
    "assigned_from_a_call": """
        import importlib

        tf = importlib.import_module("tensorflow")
        """,
    "import_under_if": """
        import sys

        if "tensorflow" not in sys.modules or True:
            import tensorflow as tf
        """,
}


@pytest.mark.parametrize("name", sorted(BINDINGS))
def test_the_helper_follows_the_binding_of_tf_and_the_rewrite_runs_like_tf1(runner, tmp_path, name: str) -> None:
    pytest.importorskip("tensorflow")
    source = textwrap.dedent(BINDINGS[name]).lstrip() + textwrap.dedent(MAP)
    result = rewrite_source(source)
    assert not result.todo and "_sign_with_identity_grad" in result.text, result.sites
    assert rewrite_source(result.text).text == result.text, "a second run must change nothing"
    legacy, rewritten = runner.load_pair(tmp_path, name, source, result.text)
    found = runner.differences(legacy, rewritten, {"sign_ste": [("float32", [5])]})
    assert not found, "\n".join(found)


def test_the_helper_stays_above_the_first_function_when_tf_is_imported_at_the_top() -> None:
    text = rewrite_source("import tensorflow as tf\n" + textwrap.dedent(MAP)).text
    assert text.index("def _sign_with_identity_grad") < text.index("def sign_ste")


def test_a_helper_reading_a_name_imported_late_follows_that_import_too() -> None:
    source = textwrap.dedent("""
        import tensorflow as tf

        def util():
            pass

        from layers.names import NEGATED

        def negated(x):
            with tf.get_default_graph().gradient_override_map({"Identity": "Neg"}):
                return tf.identity(x, name=NEGATED)
        """).lstrip()
    text = rewrite_source(source).text
    assert "    y = tf.identity(x, name=NEGATED)" in text
    assert text.index("from layers.names import NEGATED") < text.index("def _identity_with_neg_grad")
