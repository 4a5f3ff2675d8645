"""A gradient registered for a real op type, used by no override map, is valid TF2: a note, not a warning."""

from __future__ import annotations

import textwrap

from compat.audit import audit_paths

CUSTOM_OP = textwrap.dedent('''
    import tensorflow as tf

    _ops = tf.load_op_library("./zero_out.so")

    @tf.RegisterGradient("ZeroOut")
    def _zero_out_grad(op, grad):
        return [tf.zeros_like(op.inputs[0])]
''')

MIXED = textwrap.dedent('''
    import tensorflow as tf

    @tf.RegisterGradient("Bincount")  # an op TensorFlow gives no gradient
    def _bincount_grad(op, grad):
        return [None, None, None]

    @tf.RegisterGradient("HalfGrad")
    def _half(op, grad):
        return [0.5 * grad]

    @tf.RegisterGradient("Unique")
    def _unique_grad(op, grad, _):
        return [grad]

    def ste(x):
        with tf.get_default_graph().gradient_override_map({"Sign": "HalfGrad", "Round": "Unique"}):
            return tf.sign(tf.round(x))
''')


def _registrations(report):
    return {f.message.split("(")[1].split(")")[0]: f.severity for f in report.findings if f.rule == "GC003"}


def test_registrations_for_real_op_types_no_map_uses_are_notes(tmp_path):
    (tmp_path / "custom_op.py").write_text(CUSTOM_OP)
    (tmp_path / "mixed.py").write_text(MIXED)
    report = audit_paths([str(tmp_path)], jobs=1)
    assert _registrations(report) == {"'ZeroOut'": "note", "'Bincount'": "note", "'HalfGrad'": "warning",
                                      "'Unique'": "warning"}  # Unique is a TF op, but a map uses it as a gradient
    (note,) = [f for f in report.findings if f.severity == "note" and "ZeroOut" in f.message]
    assert "tf.load_op_library" in note.message and "valid TF2 as it is" in note.message


def test_a_map_in_another_file_keeps_the_warning(tmp_path):
    (tmp_path / "custom_op.py").write_text(CUSTOM_OP)
    source = ("import tensorflow as tf\n\ndef f(x):\n"
              "    with tf.get_default_graph().gradient_override_map({'Identity': 'ZeroOut'}):\n"
              "        return tf.identity(x)\n")
    (tmp_path / "user.py").write_text(source)
    assert _registrations(audit_paths([str(tmp_path)], jobs=1)) == {"'ZeroOut'": "warning"}
