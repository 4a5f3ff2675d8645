"""cleanup.tidy on the rewritten tree: unchanged statements are answered by the original's analysis, changed ones
analysed again, as a re-parse of the rewritten code would."""

from __future__ import annotations

import textwrap

from compat.rewrite import rewrite_source

# `function` serves only rewritten code, `ops` only code the rewrite leaves alone; `G` is a graph handle of a
# rewritten map, and also a live handle in untouched code and a global that another function reads.
BEFORE = textwrap.dedent('''\
    \"\"\"Legacy module whose imports serve rewritten and untouched code alike.\"\"\"

    import tensorflow as tf
    from tensorflow.python.framework import function
    from tensorflow.python.framework import ops


    @function.Defun(tf.float32, tf.float32)
    def _half_bprop(x, dy):
        return dy * 0.5


    @function.Defun(tf.float32, grad_func=_half_bprop)
    def half_grad_identity(x):
        return tf.identity(x)


    def sign_ste(x):
        G = tf.get_default_graph()
        with G.gradient_override_map({"Sign": "Identity"}):
            return tf.sign(x)


    def untouched(x):
        G = tf.get_default_graph()
        return G.get_tensor_by_name(ops.convert_to_tensor(x).name)


    def setup():
        global G
        G = tf.get_default_graph()


    def reader():
        return G.get_operations()
''')

AFTER = textwrap.dedent('''\
    \"\"\"Legacy module whose imports serve rewritten and untouched code alike.\"\"\"

    import tensorflow as tf
    from tensorflow.python.framework import ops


    # Rewritten by gradcompat from gradient_override_map({"Sign": "Identity"}).
    @tf.custom_gradient
    def _sign_with_identity_grad(x):
        y = tf.sign(x)

        def grad(dy):
            return dy

        return y, grad


    def _half_bprop(x, dy):
        return dy * 0.5


    @tf.custom_gradient
    def half_grad_identity(x):
        y = tf.identity(x)

        def grad(dy):
            return _half_bprop(x, tf.convert_to_tensor(dy))

        return y, grad


    def sign_ste(x):
        return _sign_with_identity_grad(x)


    def untouched(x):
        G = tf.compat.v1.get_default_graph()
        return G.get_tensor_by_name(ops.convert_to_tensor(x).name)


    def setup():
        global G
        G = tf.compat.v1.get_default_graph()


    def reader():
        return G.get_operations()
''')


def test_imports_and_handles_read_only_by_untouched_code_are_kept() -> None:
    result = rewrite_source(BEFORE)
    assert result.text == AFTER
    assert "from tensorflow.python.framework import function" not in result.text


def test_the_tidied_code_is_a_fixed_point() -> None:
    assert rewrite_source(AFTER).text == AFTER


def test_a_dead_handle_named_like_a_rewritten_one_goes_even_in_untouched_code() -> None:
    """As when tidy parsed the rewritten code again: the names of the rewritten maps' graph handles are dropped
    wherever they are bound to the default graph and read nowhere, in a function the rewrite left alone too."""
    before = textwrap.dedent('''\
        import tensorflow as tf


        def sign_ste(x):
            G = tf.get_default_graph()
            with G.gradient_override_map({"Sign": "Identity"}):
                return tf.sign(x)


        def setup():
            global G
            G = tf.get_default_graph()
        ''')
    text = rewrite_source(before).text
    assert text.endswith("def setup():\n    global G\n") and "get_default_graph" not in text
