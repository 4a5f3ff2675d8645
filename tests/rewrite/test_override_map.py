"""Override maps the rewriter cannot prove apply in TF1 are left with a TODO; TensorFlow shows why.

A `gradient_override_map` only changes ops built, under it, in the graph it was entered on. TF1 ignores it when
the handle names another graph than the default one, or when the wrapped call creates no op of the overridden
type; a @tf.custom_gradient rewrite would always apply the gradient, so those maps must stay as they are.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from compat.rewrite import rewrite_source


def _rewrite(source: str):
    return rewrite_source(textwrap.dedent(source).lstrip())


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


def test_a_map_on_a_handle_taken_before_another_graph_became_the_default_is_a_todo(runner) -> None:
    reasons = runner.todo_reasons(textwrap.dedent(SWITCHED_GRAPH).lstrip())
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
def test_other_handles_that_may_name_another_graph_are_todos(runner, source: str, why: str) -> None:
    reasons = runner.todo_reasons(textwrap.dedent(source).lstrip())
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


SAME_DTYPE_CAST = """
    import tensorflow as tf

    @tf.RegisterGradient("TwentyTimes")
    def _twenty_times(op, grad):
        return grad * 20.0

    def as_float(x):
        with tf.get_default_graph().gradient_override_map({"Cast": "TwentyTimes"}):
            y = tf.cast(x, tf.float32)
        return 2.0 * y
    """


def test_a_map_around_a_wrapper_that_may_create_no_op_is_a_todo(runner) -> None:
    reasons = runner.todo_reasons(textwrap.dedent(SAME_DTYPE_CAST).lstrip())
    assert any(r.startswith("`tf.cast` creates no Cast op when it casts to the tensor's own dtype") for r in reasons)


def test_tf1_applies_no_override_to_a_same_dtype_cast(runner, tmp_path) -> None:
    """Why it is a TODO: the map changes nothing in TF1 (gradient 2), a custom_gradient would (gradient 40)."""
    pytest.importorskip("tensorflow")
    with_map = textwrap.dedent(SAME_DTYPE_CAST).lstrip()
    without_map = with_map.replace('tf.get_default_graph().gradient_override_map({"Cast": "TwentyTimes"})',
                                   'tf.name_scope("plain")').replace('"TwentyTimes"', '"TwentyTimesUnused"')
    legacy = runner.load_pair(tmp_path, "cast_map", with_map, "")[0]
    plain = runner.load_pair(tmp_path, "cast_plain", without_map, "")[0]
    values = runner.inputs_for([("float32", [3])], seed=0)
    assert runner.same(runner.run_session(legacy, "as_float", values, "weighted")[1],
                       runner.run_session(plain, "as_float", values, "weighted")[1])


@pytest.mark.parametrize("local", ["x", "y", "grad", "dy"])
def test_a_builtin_gradient_helper_never_shadows_a_name_its_op_call_reads(runner, tmp_path, local: str) -> None:
    """The helper's own locals (x, y, grad, dy) must not hide a module name passed to the op (here, its name)."""
    pytest.importorskip("tensorflow")
    source = textwrap.dedent(f"""
        import tensorflow as tf
        from json import __name__ as {local}

        def negated(t):
            with tf.get_default_graph().gradient_override_map({{"Identity": "Neg"}}):
                return tf.identity(t, name={local})
        """).lstrip()
    result = _rewrite(source)
    assert not result.todo, result.sites
    legacy, rewritten = runner.load_pair(tmp_path, f"shadowed_{local}", source, result.text)
    found = runner.differences(legacy, rewritten, {"negated": [("float32", [3])]})
    assert not found, "\n".join(found)


@pytest.mark.parametrize("local", ["x", "y"])
def test_a_registered_gradient_rewrite_never_shadows_a_name_its_op_call_reads(runner, tmp_path, local: str) -> None:
    pytest.importorskip("tensorflow")
    source = textwrap.dedent(f"""
        import tensorflow as tf
        from json import __name__ as {local}

        @tf.RegisterGradient("HalvedFor{local}")
        def _halved(op, grad):
            {local} = op.inputs[0]
            return grad * 0.5 + 0.0 * {local}

        def halved(t):
            with tf.get_default_graph().gradient_override_map({{"Identity": "HalvedFor{local}"}}):
                return tf.identity(t, name={local})
        """).lstrip()
    result = _rewrite(source)
    assert not result.todo, result.sites
    legacy, rewritten = runner.load_pair(tmp_path, f"registered_{local}", source, result.text)
    found = runner.differences(legacy, rewritten, {"halved": [("float32", [3])]})
    assert not found, "\n".join(found)


GUIDED_HELPER = """
    import numpy as np
    import tensorflow as tf

    W = np.array([[1.0, -1.0, 0.5], [0.5, 1.0, -1.0], [-1.0, 0.5, 1.0]], np.float32)


    @tf.RegisterGradient("{grad}")
    def _guided_relu(op, grad):
        return grad * tf.cast(grad > 0.0, grad.dtype) * tf.cast(op.outputs[0] > 0.0, grad.dtype)


    def network(x, shift):
        hidden = tf.nn.relu(tf.matmul(x, tf.constant(W)))
        return tf.matmul(tf.nn.relu(hidden - shift), tf.constant(-W))


    def saliency_input(x):
        g = tf.get_default_graph()
        with g.gradient_override_map({"Relu": "{grad}"}):
            {statement}network(x, shift=0.5)
    """


def _guided_source(statement: str, grad: str) -> str:
    source = textwrap.dedent(GUIDED_HELPER).lstrip().replace("{statement}", statement).replace("{grad}", grad)
    return source + ("    return y\n" if statement == "y = " else "")


def _pasted(runner, source: str, statement: str) -> str:
    """`source` with its override block replaced by the line its TODO offers (a gradient name is registered once
    per process, so each module registers its own)."""
    [reason] = [r for r in runner.todo_reasons(source) if "compat.override_gradients(" in r]
    line = reason.split("replace the whole `with` block (`import compat`) by `")[1].split("` if `network`")[0]
    block = source[source.index("    g = tf.get_default_graph()"):]
    tail = "    return y\n" if statement == "y = " else ""
    return "import compat\n" + source.replace(block, f"    {line}\n{tail}")


@pytest.mark.parametrize("statement", ["return ", "y = "])
def test_the_line_a_todo_offers_for_code_the_rewriter_cannot_see_runs_like_tf1(runner, tmp_path,
                                                                               statement: str) -> None:
    """A map around a helper building a network: the TODO's `compat.override_gradients` line, pasted, is TF1."""
    pytest.importorskip("tensorflow")
    tag = "return" if statement == "return " else "assign"
    legacy_source = _guided_source(statement, f"GuidedLegacy_{tag}")
    legacy, rewritten = runner.load_pair(tmp_path, f"guided_{tag}", legacy_source,
                                         _pasted(runner, _guided_source(statement, f"GuidedTF2_{tag}"), statement))
    entries = {"saliency_input": [("float32", [4, 3])]}
    assert not runner.differences(legacy, rewritten, entries)
    plain = _guided_source(statement, f"GuidedPlain_{tag}").replace("g.gradient_override_map(", "tf.name_scope(")
    plain = plain.replace(f'{{"Relu": "GuidedPlain_{tag}"}}', '"plain"')
    plain = plain.replace("tf.get_default_graph", "tf.compat.v1.get_default_graph")
    (tmp_path / f"plain_{tag}.py").write_text(plain, encoding="utf-8")
    plain_module = runner.load(tmp_path / f"plain_{tag}.py", legacy=False)
    assert runner.differences(legacy, plain_module, entries, contexts=("eager_tape",)), "the override must matter"


def test_a_block_of_several_statements_around_unseen_code_names_the_runtime_helper(runner) -> None:
    [reason] = runner.todo_reasons(textwrap.dedent("""
        import tensorflow as tf

        def modify_backprop(model, name):
            with tf.get_default_graph().gradient_override_map({"Relu": name}):
                new_model = load_model("model.h5")
                return new_model
        """).lstrip())
    assert 'through `compat.override_gradients(fn_or_model, {"Relu": name})`' in reason


def test_a_tensorflow_call_the_rewriter_cannot_see_into_gets_the_function_form_only(runner) -> None:
    [reason] = runner.todo_reasons(textwrap.dedent("""
        import tensorflow as tf

        def py_func_with_grad(func, inp, name):
            with tf.get_default_graph().gradient_override_map({"PyFunc": name}):
                return tf.py_func(func, inp, tf.float32)
        """).lstrip())
    assert reason.endswith('by `return compat.override_gradients(tf.py_func, {"PyFunc": name})(func, inp, '
                           'tf.float32)`'), reason


_RUN = """
                dx = tf.compat.v1.gradients(tf.reduce_sum(y * tf.constant([1.0, -2.0, 3.0])), x)[0]
                with tf.compat.v1.Session() as session:
                    return session.run([y, dx])
    """  # inside the `with` of each module below
NEW_GRAPH_HANDLES = {
    "with_as": """
        import tensorflow as tf

        def build(value):
            with tf.Graph().as_default() as g:
                x = tf.constant(value)
                with g.gradient_override_map({"Sign": "Identity"}):
                    y = tf.sign(x)
    """ + _RUN,
    "entered_handle": """
        import tensorflow as tf

        def build(value):
            g = tf.Graph()
            with g.as_default(), tf.name_scope("quantize"):
                x = tf.constant(value)
                with g.gradient_override_map({"Sign": "Identity"}):
                    y = tf.sign(x)
    """ + _RUN,
}


def _new_graph_module(form: str) -> str:
    return textwrap.dedent(NEW_GRAPH_HANDLES[form]).lstrip()


@pytest.mark.parametrize("form", sorted(NEW_GRAPH_HANDLES))
def test_a_map_on_the_graph_its_block_made_default_is_rewritten_and_runs_like_tf1(form: str) -> None:
    """`with tf.Graph().as_default() as g:` / `with g.as_default():` around the map: `g` is the default graph."""
    tf = pytest.importorskip("tensorflow")
    source = _new_graph_module(form)
    result = rewrite_source(source)
    assert not result.todo and "_sign_with_identity_grad(x)" in result.text, result.sites
    assert rewrite_source(result.text).text == result.text
    value = [1.5, -2.0, 0.5]
    runs = {}
    for side, text, module in (("tf1", source, tf.compat.v1), ("tf2", result.text, tf),
                               ("plain", source.replace("g.gradient_override_map(", "tf.name_scope(").replace(
                                   '{"Sign": "Identity"}', '"plain"'), tf.compat.v1)):
        namespace: dict = {"tf": module}
        exec(compile(text.replace("import tensorflow as tf\n", ""), f"<{side}>", "exec"), namespace)  # noqa: S102
        runs[side] = namespace["build"](value)
    for got, want in zip(runs["tf2"], runs["tf1"], strict=True):
        np.testing.assert_allclose(got, want)
    assert not np.allclose(runs["plain"][1], runs["tf1"][1]), "the override must matter here"


@pytest.mark.parametrize("source, why", [
    ("""
     import tensorflow as tf
     def f(value, other):
         g = tf.Graph()
         with g.as_default():
             x = tf.constant(value)
             with other.as_default():
                 with g.gradient_override_map({"Sign": "Identity"}):
                     return tf.sign(x)
     """, "`g` may not be the default graph where the map is entered (`other.as_default()` changes it)"),
    ("""
     import tensorflow as tf
     def f(value, other):
         with tf.Graph().as_default() as g, other.as_default():
             x = tf.constant(value)
             with g.gradient_override_map({"Sign": "Identity"}):
                 return tf.sign(x)
     """, "`g` may not be the default graph where the map is entered (`other.as_default()` changes it)"),
    ("""
     import tensorflow as tf
     def f(x, other):
         g = tf.Graph()
         with g.as_default(), other.as_default():
             with g.gradient_override_map({"Sign": "Identity"}):
                 return tf.sign(x)
     """, "`g` may not be the default graph where the map is entered (`other.as_default()` changes it)"),
    ("""
     import tensorflow as tf
     with tf.Graph().as_default() as g:
         x = tf.constant([1.0])
         tf.Graph().as_default().__enter__()
         with g.gradient_override_map({"Sign": "Identity"}):
             y = tf.sign(x)
     """, "the map is entered on `g`, which the rewriter cannot prove"),
    ("""
     import tensorflow as tf
     def f(x):
         with tf.Graph().as_default() as g:
             pass
         with g.gradient_override_map({"Sign": "Identity"}):
             return tf.sign(x)
     """, "the map is entered on `g`, which the rewriter cannot prove"),
    ("""
     import tensorflow as tf
     def f(x):
         g = tf.Graph()
         with g.as_default():
             g = tf.Graph()
             with g.gradient_override_map({"Sign": "Identity"}):
                 return tf.sign(x)
     """, "the map is entered on `g`, which the rewriter cannot prove"),
    ("""
     import tensorflow as tf
     def f(x):
         with tf.Graph().as_default() as g:
             def inner(x):
                 with g.gradient_override_map({"Sign": "Identity"}):
                     return tf.sign(x)
         return inner(x)
     """, "the map is entered on `g`, which the rewriter cannot prove"),
])
def test_a_new_graph_that_may_not_be_the_default_where_the_map_is_entered_is_a_todo(runner, source: str,
                                                                                   why: str) -> None:
    reasons = runner.todo_reasons(textwrap.dedent(source).lstrip())
    assert any(r.startswith(why) for r in reasons), reasons


# TensorLayer's ternary_operation (layers/utils.py): the block calls a helper of the same module.
FOLLOWED = textwrap.dedent("""\
    import tensorflow as tf


    def ternary(x):
        g = tf.get_default_graph()
        with g.gradient_override_map({"Sign": "Identity"}):
            threshold = _threshold(x)
            x = tf.sign(tf.add(tf.sign(tf.add(x, threshold)), tf.sign(tf.add(x, -threshold))))
            return x * x


    def _threshold(x):
        x_sum = tf.reduce_sum(tf.abs(x))
        threshold = tf.div(x_sum, tf.cast(tf.size(x), tf.float32))
        return tf.multiply(0.7, threshold)
    """)


def test_a_helper_of_the_module_called_in_the_block_is_followed_and_the_rewrite_runs_like_tf1(
        runner, tmp_path) -> None:
    result = rewrite_source(FOLLOWED)
    [site] = result.sites
    assert site.outcome == "rewritten", site.reason
    assert "_threshold(x)" in result.text and "with g.gradient_override_map" not in result.text
    tf2 = result.text.replace("tf.div(", "tf.math.divide(")  # TF1's tf.div: not the rewriter's job (tf_upgrade_v2)
    legacy, rewritten = runner.load_pair(tmp_path, "followed", FOLLOWED, tf2)
    found = runner.differences(legacy, rewritten, {"ternary": [("float32", [5])]})
    assert not found, "\n".join(found)


@pytest.mark.parametrize(("helper", "words"), [
    ("def _threshold(x):\n    return tf.sign(x) * 0.1\n", "which creates Sign ops the map overrides"),
    ("def _threshold(x):\n    return _threshold(x)\n", "which calls itself"),
    ("def _threshold(x):\n    return unknown_helper(x)\n", "which calls `unknown_helper`, code the rewriter"),
    ("@tf.function\ndef _threshold(x):\n    return tf.abs(x)\n", "calls `_threshold`, code the rewriter cannot see"),
    ("def _threshold(x):\n    def inner():\n        return x\n    return inner()\n", "defines a function or class"),
    ("def _threshold(x):\n    return x\n_threshold = wrap(_threshold)\n", "`_threshold`, code the rewriter cannot"),
])
def test_a_helper_that_may_create_an_overridden_op_or_hides_its_ops_is_a_todo(runner, helper: str,
                                                                             words: str) -> None:
    source = FOLLOWED[:FOLLOWED.index("def _threshold")] + helper
    [site] = rewrite_source(source).sites
    assert site.outcome == "todo" and words in site.reason, site.reason


# Trained ternary quantization (TTQ), as tensorpack's DoReFa-Net example and its copies write it.
TERNARY = textwrap.dedent("""\
    import tensorflow as tf


    def ternarize(x, thresh=0.5):
        G = tf.get_default_graph()
        shape = x.get_shape()
        thre_x = tf.stop_gradient(tf.reduce_max(tf.abs(x)) * thresh)
        mask = tf.ones(shape)
        mask_z = tf.where((x < thre_x) & (x > - thre_x), tf.zeros(shape), mask)
        with G.gradient_override_map({"Sign": "Identity", "Mul": "Add"}):
            w = tf.sign(x) * tf.stop_gradient(mask_z)
        return w * x


    def scaled(x, w):
        with tf.get_default_graph().gradient_override_map({"Mul": "Add"}):
            return 2.0 * tf.identity(w) + tf.identity(x) * tf.sigmoid(w)
    """)


def test_a_product_of_tensors_under_mul_add_is_rewritten_and_runs_like_tf1(runner, tmp_path) -> None:
    result = rewrite_source(TERNARY)
    assert [s.outcome for s in result.sites] == ["rewritten", "rewritten"], result.sites
    assert "_mul_with_add_grad(_sign_with_identity_grad(x), tf.stop_gradient(mask_z))" in result.text
    assert rewrite_source(result.text).text == result.text
    legacy, rewritten = runner.load_pair(tmp_path, "ternary", TERNARY, result.text)
    found = runner.differences(legacy, rewritten, {"ternarize": [("float32", [4, 3])],
                                                   "scaled": [("float32", [2, 3]), ("float32", [3])]})
    assert not found, "\n".join(found)


@pytest.mark.parametrize("product", ["tf.sign(x) * mask_z", "tf.sign(x) * tf.stop_gradient(mask_z) * 2",
                                     "2 * 3 * tf.sign(x)"])
def test_a_product_that_may_not_be_one_mul_of_dense_tensors_is_a_todo(runner, product: str) -> None:
    source = TERNARY[:TERNARY.index("def scaled")].rstrip() + "\n"
    reasons = runner.todo_reasons(source.replace("w = tf.sign(x) * tf.stop_gradient(mask_z)", f"w = {product}"))
    assert any("overrides Mul, which the Python operator in" in r for r in reasons), reasons


def test_a_matrix_product_is_no_mul_so_the_map_over_it_is_rewritten() -> None:
    source = TERNARY.replace("w = tf.sign(x) * tf.stop_gradient(mask_z)", "w = tf.sign(x) @ tf.stop_gradient(mask_z)")
    assert [s.outcome for s in rewrite_source(source).sites] == ["rewritten", "rewritten"]
