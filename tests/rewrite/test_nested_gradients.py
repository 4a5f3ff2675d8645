"""Gradient functions registered inside functions, `with` blocks, `try` bodies and closures are rewritten where they
are; where the definition may run never or more than once, the TODO says so in words, never syntax-tree names."""

from __future__ import annotations

import re
import textwrap

import pytest

from compat.rewrite import rewrite_source

IN_WITH = textwrap.dedent("""\
    import tensorflow as tf


    def quantize(x):
        scale = 0.5
        with tf.name_scope("quant"):
            try:
                @tf.RegisterGradient("ScaledSTEInWith")
                def _scaled_ste(op, grad):
                    return grad * scale * tf.sign(op.inputs[0])
            except KeyError:
                pass
        with tf.get_default_graph().gradient_override_map({"Sign": "ScaledSTEInWith"}):
            return tf.sign(x)
    """)

IN_TRY = textwrap.dedent("""\
    import tensorflow as tf

    try:
        @tf.RegisterGradient("HalfIdentityInTry")
        def _half_identity(op, grad):
            return 0.5 * grad
    except KeyError:
        pass


    def half(x):
        with tf.compat.v1.get_default_graph().gradient_override_map({"Identity": "HalfIdentityInTry"}):
            y = tf.identity(x)
        return y * y
    """)


@pytest.mark.parametrize("name", ["IN_WITH", "IN_TRY"])
def test_a_gradient_defined_in_a_with_or_try_block_is_rewritten_and_runs_like_tf1(runner, tmp_path, name) -> None:
    pytest.importorskip("tensorflow")
    source = {"IN_WITH": IN_WITH, "IN_TRY": IN_TRY}[name]
    result = rewrite_source(source)
    assert not result.todo, result.sites
    assert "RegisterGradient" not in result.text and rewrite_source(result.text).text == result.text
    legacy, rewritten = runner.load_pair(tmp_path, name.lower(), source, result.text)
    entry = "quantize" if name == "IN_WITH" else "half"
    found = runner.differences(legacy, rewritten, {entry: [("float32", [5])]})
    assert not found, "\n".join(found)


NOT_ONCE = {
    "for": ("for _ in range(1):\n", "a `for` loop"),
    "while": ("while False:\n", "a `while` loop"),
    "if_else": ("if FLAG:\n", "an `if` statement with an `else`"),
    "except": ("try:\n    pass\nexcept KeyError:\n", "an `except` clause"),
}


@pytest.mark.parametrize("kind", sorted(NOT_ONCE))
def test_a_gradient_defined_where_it_may_run_never_or_twice_is_a_todo_in_words(runner, kind: str) -> None:
    head, words = NOT_ONCE[kind]
    body = textwrap.indent('@tf.RegisterGradient("Twice")\ndef _twice(op, grad):\n    return grad\n', "    ")
    tail = "else:\n    pass\n" if kind == "if_else" else ""
    source = (f"import tensorflow as tf\n\nFLAG = True\n{head}{body}{tail}\n\ndef f(x):\n"
              '    with tf.get_default_graph().gradient_override_map({"Sign": "Twice"}):\n'
              "        return tf.sign(x)\n")
    reasons = runner.todo_reasons(source)
    assert any(f"`_twice` is defined inside {words}" in r for r in reasons), reasons
    assert not any(re.search(r"`[A-Z][A-Za-z]*` block", r) for r in reasons), reasons
