"""Gradient functions reading `op`: `op.type` and `op.get_attr("T")` are mapped, the rest is a TODO saying what
to pass in by hand (compat/rewrite/grad_body.py, register_gradient.op_reads)."""

from __future__ import annotations

import textwrap

import pytest

from compat.rewrite import rewrite_source

TYPED = textwrap.dedent("""\
    import tensorflow as tf


    @tf.RegisterGradient("TypedScale")
    def _typed_scale(op, grad):
        if op.type == "Identity":
            scale = tf.constant(2.0, dtype=op.get_attr("T"))
        else:
            scale = tf.constant(5.0, dtype=op.get_attr("T"))
        return grad * scale * op.inputs[0]


    def model(x):
        with tf.get_default_graph().gradient_override_map({"Identity": "TypedScale"}):
            y = tf.identity(x)
        return y * x


    def model_double(x):
        x = tf.cast(x, tf.float64)
        with tf.get_default_graph().gradient_override_map({"Identity": "TypedScale"}):
            return tf.identity(x)
    """)


def test_op_type_and_the_type_attribute_are_mapped_and_run_like_tf1(runner, tmp_path) -> None:
    pytest.importorskip("tensorflow")
    result = rewrite_source(TYPED)
    assert not result.todo, result.sites
    assert '"Identity" == "Identity"' in result.text and "dtype=x.dtype" in result.text, result.text
    assert rewrite_source(result.text).text == result.text
    legacy, rewritten = runner.load_pair(tmp_path, "typed_scale", TYPED, result.text)
    found = runner.differences(legacy, rewritten, {"model": [("float32", [4])], "model_double": [("float32", [3])]})
    assert not found, "\n".join(found)


@pytest.mark.parametrize(("read", "words"), [
    ('op.get_attr("scale")', "reads op.get_attr('scale'), an attribute of the TF1 op, which a tf.custom_gradient "
                             "has no op for: pass in the value the forward call sets it from by hand"),
    ("op.get_attr(op.name)", "reads op.get_attr(...) of an attribute named at run time"),
    ("op.name", "reads op.name, the name TF1 gave the op, which a tf.custom_gradient has no op for: use a fixed "
                "name, or pass in the forward call's `name=`, by hand"),
    ("op.device", "reads op.device, the device TF1 placed the op on, which a tf.custom_gradient has no op for: "
                  "pass in the device the gradient needs"),
    ("op.node_def", "reads op.node_def, the op's TF1 graph definition"),
])
def test_reads_of_op_with_no_tf2_value_say_what_to_pass_in_by_hand(runner, read: str, words: str) -> None:
    source = TYPED.replace("    return grad * scale", f"    print({read})\n    return grad * scale")
    assert read in source
    reasons = runner.todo_reasons(source)
    assert any(words in r for r in reasons), reasons
