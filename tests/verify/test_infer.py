"""Entries are inferred from the original's source without running it: Defun dtypes, functions holding sites."""

from __future__ import annotations

import textwrap

from compat.verify._infer import infer_entries

SOURCE = textwrap.dedent('''
    import tensorflow as tf
    from tensorflow.python.framework import function

    @function.Defun(tf.float32, tf.float32)
    def _clip_grad(x, dy):
        return dy

    @function.Defun(tf.float32, tf.float64, grad_func=_clip_grad)
    def clipped(x, y):
        return tf.sign(x)

    def ste(x, w, name=None):
        with tf.get_default_graph().gradient_override_map({"Sign": "Identity"}):
            return tf.sign(x) * w

    def no_inputs():
        with tf.get_default_graph().gradient_override_map({"Sign": "Identity"}):
            return tf.sign(tf.ones(3))

    class Net:
        def call(self, x):
            with tf.get_default_graph().gradient_override_map({"Relu": "GuidedRelu"}):
                return tf.nn.relu(x)

    with tf.get_default_graph().gradient_override_map({"Sign": "Identity"}):
        Y = tf.sign(tf.ones(3))
''')


def test_defun_dtypes_and_parameters_of_functions_holding_sites_are_entries():
    inferred = infer_entries(SOURCE, "ops.py")
    assert inferred.entries == {"clipped": [("float32", None), ("float64", None)],
                                "ste": [("float32", None), ("float32", None)]}
    assert inferred.origins["clipped"] == "inferred from the dtypes of its @Defun(float32, float64)"
    assert "line 14" in inferred.origins["ste"]


def test_what_cannot_be_an_entry_says_why_and_what_to_declare():
    not_inferred = infer_entries(SOURCE, "ops.py").not_inferred
    assert "takes no required positional parameters" in not_inferred["no_inputs"]
    assert "method" in not_inferred["class Net"] and "GRADCOMPAT_ENTRIES" in not_inferred["class Net"]
    assert any(place.startswith("line ") and "module-level code" in why for place, why in not_inferred.items())


def test_a_module_level_instance_of_a_class_whose_call_holds_the_site_is_an_entry():
    source = textwrap.dedent('''
        import tensorflow as tf

        class FlipGradientBuilder(object):
            def __call__(self, x, l=1.0):
                with tf.get_default_graph().gradient_override_map({"Identity": "Flip"}):
                    return tf.identity(x)

        flip_gradient = FlipGradientBuilder()
    ''')
    inferred = infer_entries(source, "flip.py")
    assert inferred.entries == {"flip_gradient": [("float32", None)]} and not inferred.not_inferred
    assert "FlipGradientBuilder.__call__" in inferred.origins["flip_gradient"]


def test_a_defun_applied_to_a_module_function_is_an_entry_by_the_name_it_is_bound_to(tmp_path):
    source = textwrap.dedent('''\
        import tensorflow as tf
        from tensorflow.python.framework import function


        @function.Defun(tf.float32, tf.float32)
        def _clip_grad(x, dy):
            return tf.clip_by_value(dy, -0.5, 0.5)


        def double(x):
            return x * 2.0


        clipped_double = function.Defun(tf.float32, grad_func=_clip_grad)(double)
        ''')
    inferred = infer_entries(source, "ops.py")
    assert inferred.entries == {"clipped_double": [("float32", None)]}
    assert "`clipped_double = Defun(float32, ...)(double)` at line 14" in inferred.origins["clipped_double"]
    assert not inferred.not_inferred  # its line is not "module-level code" any more
    from compat.rewrite import rewrite_source
    from compat.verify import verify_rewrite

    legacy = tmp_path / "ops.py"
    legacy.write_text(source, encoding="utf-8")
    report = verify_rewrite(str(legacy), rewrite_source(source).text, contexts=("eager_tape", "function_tape"))
    assert report.ok and "clipped_double" in report.entries, report.render_text()
