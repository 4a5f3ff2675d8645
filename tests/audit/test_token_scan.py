"""Files that do not parse (Python 2) still show their legacy gradient sites, found in the code text."""

from __future__ import annotations

import textwrap

from compat.audit import audit_paths
from compat.audit.token_scan import describe, legacy_sites

PYTHON2 = textwrap.dedent('''
    import tensorflow as tf
    from tensorflow.python.framework import function

    # RegisterGradient("InAComment") is not a site
    @function.Defun(tf.float32, tf.float32)
    def _grad(x, dy):
        return dy

    @function.Defun(tf.float32,
                    python_grad_func=lambda op, dy: dy)
    def ste(x):
        print "building", x
        return tf.sign(x)

    @function.Defun(tf.float32, grad_func=_grad)
    def clipped(x):
        return tf.sign(x)

    @tf.RegisterGradient("Py2Half")
    def _half(op, grad):
        return grad * 0.5

    def f(x):
        s = "gradient_override_map(in a string)"
        with tf.get_default_graph().gradient_override_map({"Sign": "Py2Half"}):
            return tf.sign(x)
''')


def test_sites_are_found_in_code_not_in_comments_or_strings_and_defuns_need_a_gradient():
    sites = [(s.rule, s.line, s.api) for s in legacy_sites(PYTHON2)]
    assert sites == [("GC002", 10, "python_grad_func"), ("GC001", 16, "grad_func"), ("GC003", 20, "RegisterGradient"),
                     ("GC004", 26, "gradient_override_map")]
    assert describe(legacy_sites(PYTHON2)).startswith("4 legacy gradient sites (line 10 python_grad_func, ")


def test_a_python2_file_is_gc000_saying_to_port_it_and_each_site_is_a_finding(tmp_path):
    (tmp_path / "legacy.py").write_text(PYTHON2)
    report = audit_paths([str(tmp_path)], jobs=1)
    assert report.counts["GC000"] == 1 and [report.counts[r] for r in ("GC001", "GC002", "GC003", "GC004")] == [1] * 4
    (gc000,) = [f for f in report.findings if f.rule == "GC000"]
    assert "(Python 2 code?); it holds 4 legacy gradient sites" in gc000.message
    assert "port it to Python 3 first" in gc000.message
