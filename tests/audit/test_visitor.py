"""Per-rule positive and negative cases for the per-file rules (GC001–GC007)."""

from __future__ import annotations

import pytest


def rules_of(report) -> list[str]:
    return [f.rule for f in report.findings]

DEFUN_GRAD = """
from tensorflow.python.framework import function as tff
import tensorflow.compat.v1 as tf

@tff.Defun(tf.float32)
def g(x, dy):
    return dy

@tff.Defun(tf.float32, grad_func=g)
def f(x):
    return tf.sign(x)
"""


def test_gc001_defun_grad_func_through_module_alias(audit_source):
    report = audit_source(DEFUN_GRAD)
    gc001 = [f for f in report.findings if f.rule == "GC001"]
    assert len(gc001) == 1
    assert (gc001[0].line, gc001[0].col) == (9, 2)
    assert "'f'" in gc001[0].message
    assert "@tf.custom_gradient" in gc001[0].suggestion
    assert "zeros, not None" in gc001[0].suggestion and "compat-check" in gc001[0].suggestion


def test_gc002_python_grad_func_direct_import(audit_source):
    report = audit_source("""
        from tensorflow.python.framework.function import Defun
        def pg(op, dy):
            return dy
        f = Defun(python_grad_func=pg)(lambda x: x)
    """)
    assert rules_of(report) == ["GC002"]
    assert "op.inputs[0] -> x" in report.findings[0].suggestion


def test_defun_without_gradient_is_not_a_finding(audit_source):
    report = audit_source("""
        from tensorflow.python.framework.function import Defun
        f = Defun()(lambda x: x)
    """)
    assert rules_of(report) == []


@pytest.mark.parametrize("src", [
    "import tensorflow as tf\n@tf.RegisterGradient('AGrad')\ndef g(op, grad):\n    return grad\n",
    "import tensorflow.compat.v1 as tf\n@tf.RegisterGradient('AGrad')\ndef g(op, grad):\n    return grad\n",
    "import tensorflow as tf\n@tf.compat.v1.RegisterGradient('AGrad')\ndef g(op, grad):\n    return grad\n",
    "from tensorflow.python.framework import ops\n@ops.RegisterGradient('AGrad')\ndef g(op, grad):\n    return grad\n",
    "import tensorflow as tf\ndef g(op, grad):\n    return grad\ntf.RegisterGradient('AGrad')(g)\n",
    "from tensorflow.python.framework.ops import RegisterGradient as RG\n@RG('AGrad')\ndef g(op, grad):\n"
    "    return grad\n",
], ids=["tf", "compat_v1_alias", "tf_compat_v1", "ops", "call_form", "renamed_import"])
def test_gc003_register_gradient_alias_forms(audit_source, src):
    report = audit_source(src)
    assert rules_of(report) == ["GC003"]
    assert "'AGrad'" in report.findings[0].message and "'g'" in report.findings[0].message


@pytest.mark.parametrize("src", [
    "# tf.RegisterGradient('AGrad') and gradient_override_map and Defun(grad_func=g)\nx = 1\n",
    "s = \"tf.RegisterGradient('AGrad')(g); g.gradient_override_map({'Sign': 'A'})\"\n",
    "def RegisterGradient(name):\n    return lambda f: f\n@RegisterGradient('AGrad')\ndef g(op, grad):\n    pass\n",
    "import mylib as tf\n@tf.RegisterGradient('AGrad')\ndef g(op, grad):\n    pass\n",
], ids=["comment", "string", "local_function", "non_tf_module"])
def test_mentions_and_lookalikes_are_not_findings(audit_source, src):
    assert rules_of(audit_source(src)) == []


SIGN_OVERRIDE = """
import tensorflow as tf

@tf.RegisterGradient("SignSTE")
def _sign_ste(op, grad):
    return grad

def f(x):
    g = tf.compat.v1.get_default_graph()
    with g.gradient_override_map({"Sign": "SignSTE"}):
        return tf.sign(x)
"""


def test_gc003_gc004_sign_suggests_custom_gradient_around_tf_sign(audit_source):
    report = audit_source(SIGN_OVERRIDE)
    assert rules_of(report) == ["GC003", "GC005", "GC004"]
    gc003, _, gc004 = report.findings
    for finding in (gc003, gc004):
        assert "@tf.custom_gradient" in finding.suggestion
        assert "y = tf.sign(x)" in finding.suggestion
        assert "_sign_ste(op, grad)" in finding.suggestion
        assert "silently ignored" in finding.suggestion
    assert gc004.message.startswith("gradient_override_map({'Sign': 'SignSTE'}): a graph-only override")
    assert "tf.GradientTape" in gc004.message and "ignores it" in gc004.message  # the reason, not only the fix


def test_a_misspelt_key_next_to_a_real_one_does_not_steer_the_suggestion(audit_source):
    source = SIGN_OVERRIDE.replace('{"Sign": "SignSTE"}', '{"Sign": "SignSTE", "Matmul": "SignSTE"}')
    report = audit_source(source)
    assert rules_of(report) == ["GC003", "GC005", "GC004", "GC007"]
    gc003, _, gc004, gc007 = report.findings
    for finding in (gc003, gc004):
        assert "y = tf.sign(x)" in finding.suggestion and "Matmul" not in finding.suggestion
    assert "did you mean 'MatMul'" in gc007.message


def test_gc004_mapping_built_elsewhere(audit_source):
    report = audit_source("""
        import tensorflow.compat.v1 as tf
        MAP = dict(Matmul="Identity")
        def f(g, overrides):
            with g.gradient_override_map(MAP):
                pass
            with g.gradient_override_map(overrides):
                pass
    """)
    # GC007 points at the key where the mapping is built (line 3), not at the call.
    assert [(f.rule, f.line) for f in report.findings] == [("GC007", 3), ("GC004", 5), ("GC004", 7)]
    assert "did you mean 'MatMul'" in report.findings[0].message
    assert "not all literal" in report.findings[2].message


def test_gc005_through_compat_v1_alias(audit_source):
    report = audit_source(SIGN_OVERRIDE.replace("import tensorflow as tf", "import tensorflow.compat.v1 as tf")
                          .replace("tf.compat.v1.get_default_graph", "tf.get_default_graph"))
    gc005 = [f for f in report.findings if f.rule == "GC005"]
    assert [f.message.split(" ")[0] for f in gc005] == ["tf.compat.v1.get_default_graph"]
    assert (gc005[0].line, gc005[0].col) == (9, 9)


def test_gc005_only_in_files_with_legacy_patterns(audit_source):
    plain = audit_source("import tensorflow as tf\nsess = tf.Session()\nx = tf.placeholder(tf.float32)\n")
    assert rules_of(plain) == []


MIGRATED = """
import tensorflow as tf
import tensorflow.compat.v1 as v1

@tf.custom_gradient
def noisy_identity(x):
    def grad(dy):
        return dy + tf.random_uniform(tf.shape(dy)) * v1.random_uniform([])
    return tf.identity(x), grad

sess = tf.Session()
"""


def test_gc005_in_a_file_with_custom_gradients_only_reports_the_names_tf2_lacks(audit_source):
    """compat-rewrite moves a RegisterGradient body into a tf.custom_gradient as it is: a `tf.random_uniform`
    there is an AttributeError when the gradient runs in TF2 (a real DoReFa file did that). `v1.random_uniform`
    runs, so a file without legacy patterns does not hear of it."""
    report = audit_source(MIGRATED)
    gc005 = [(f.line, f.message.split(" ")[0]) for f in report.findings if f.rule == "GC005"]
    assert gc005 == [(8, "tf.random_uniform"), (11, "tf.Session")], report.findings
    assert rules_of(audit_source(MIGRATED.replace("@tf.custom_gradient\n", ""))) == []


def test_an_audit_after_compat_rewrite_still_sees_tf1_apis_the_moved_gradient_calls(tmp_path_factory, audit_source):
    from compat.rewrite import rewrite_file

    legacy = tmp_path_factory.mktemp("original") / "legacy.py"  # audit_source audits its own tmp_path
    legacy.write_text(
        "import tensorflow as tf\n\n\n"
        "@tf.RegisterGradient('NoisyGrad')\n"
        "def _noisy_grad(op, grad):\n"
        "    return grad + tf.random_uniform(tf.shape(grad))\n\n\n"
        "def f(x):\n"
        "    with tf.get_default_graph().gradient_override_map({'Identity': 'NoisyGrad'}):\n"
        "        return tf.identity(x)\n")
    result = rewrite_file(str(legacy))
    assert [site.outcome for site in result.sites] == ["rewritten", "rewritten"], result.sites
    assert "RegisterGradient" not in result.rewritten and "tf.random_uniform" in result.rewritten
    report = audit_source(result.rewritten, name="rewritten.py")
    assert [f.message.split(" ")[0] for f in report.findings] == ["tf.random_uniform"], report.findings


def test_gc005_names_each_tf1_api(audit_source):
    report = audit_source(SIGN_OVERRIDE + "\nsess = tf.Session()\np = tf.placeholder(tf.float32)\n"
                          "opt = tf.train.AdamOptimizer()\ny = tf.py_func(abs, [p], tf.float32)\n"
                          "ok = tf.function(abs)\n")
    gc005 = [f.message.split(" ")[0] for f in report.findings if f.rule == "GC005"]
    assert gc005 == ["tf.compat.v1.get_default_graph", "tf.Session", "tf.placeholder",
                     "tf.train.AdamOptimizer", "tf.py_func"]
    py_func = next(f for f in report.findings if "py_func" in f.message)
    assert "tf.py_function" in py_func.suggestion


@pytest.mark.parametrize("src,expected", [
    ("import tensorflow as tf\n@tf.RegisterGradient('AGrad')\ndef g(op, grad):\n    s = grad.numpy()\n"
     "    return grad\n", ["GC003", "GC006"]),
    ("from tensorflow.python.framework import function\ndef pg(op, dy):\n    return dy.numpy()\n"
     "f = function.Defun(python_grad_func=pg)(abs)\n", ["GC002", "GC006"]),
    ("import tensorflow as tf\ndef g(op, grad):\n    return grad.numpy()\ntf.RegisterGradient('AGrad')(g)\n",
     ["GC006", "GC003"]),
], ids=["decorated", "python_grad_func", "call_form"])
def test_gc006_numpy_in_graph_gradient(audit_source, src, expected):
    assert sorted(rules_of(audit_source(src))) == sorted(expected)


def test_gc006_not_for_eager_code_or_py_function_callbacks(audit_source):
    report = audit_source("""
        import tensorflow as tf
        @tf.RegisterGradient("AGrad")
        def g(op, grad):
            return tf.py_function(lambda t: t.numpy() * 2, [grad], grad.dtype)
        def eager(x):
            return x.numpy()
        @tf.custom_gradient
        def f(x):
            def grad(dy):
                return dy.numpy()
            return x, grad
    """)
    assert rules_of(report) == ["GC003"]


def test_gc006_custom_gradient_used_in_tf_function(audit_source):
    report = audit_source("""
        import tensorflow as tf
        @tf.custom_gradient
        def f(x):
            def grad(dy):
                return dy * dy.numpy()
            return x, grad
        @tf.function
        def step(x):
            return f(x)
    """)
    assert rules_of(report) == ["GC006"]
    assert "custom_gradient 'f'" in report.findings[0].message


def test_gc007_exact_op_types_and_builtin_gradient_values_are_clean(audit_source):
    report = audit_source("""
        import tensorflow as tf
        def f(g):
            with g.gradient_override_map({"MatMul": "Identity", "Sign": "StopGradient"}):
                pass
    """)
    assert rules_of(report) == ["GC004"]


def test_gc007_matmul_typo_suggests_matmul(audit_source):
    report = audit_source("""
        import tensorflow as tf
        def f(g):
            with g.gradient_override_map({"Matmul": "Identity"}):
                pass
    """)
    gc007 = [f for f in report.findings if f.rule == "GC007"]
    assert len(gc007) == 1
    assert gc007[0].severity == "error"
    assert "'MatMul'" in gc007[0].suggestion
    assert (gc007[0].line, gc007[0].col) == (4, 35)


def test_async_def_and_match_statements_are_audited(audit_source):
    report = audit_source("""
        import tensorflow as tf
        async def h(x):
            match x:
                case {"op": name}:
                    tf.RegisterGradient(name)(lambda op, g: g.numpy())
                case _:
                    pass
    """)
    assert sorted(rules_of(report)) == ["GC003", "GC006"]
    assert "<non-literal name>" in next(f for f in report.findings if f.rule == "GC003").message


@pytest.mark.parametrize("src", [
    "import tensorflow as tf\nRG = tf.RegisterGradient\n@RG('AGrad')\ndef g(op, grad):\n    return grad.numpy()\n",
    "from tensorflow.python.framework import ops\nreg = ops.RegisterGradient\n@reg('AGrad')\ndef g(op, grad):\n"
    "    return grad.numpy()\n",
    "import tensorflow as tf\n@getattr(tf, 'RegisterGradient')('AGrad')\ndef g(op, grad):\n    return grad.numpy()\n",
    "def g(op, grad):\n    return grad.numpy()\n__import__('tensorflow').RegisterGradient('AGrad')(g)\n",
], ids=["assigned_alias", "assigned_ops_alias", "getattr", "dunder_import"])
def test_gc003_and_gc006_through_run_time_aliases(audit_source, src):
    report = audit_source(src)
    assert sorted(rules_of(report)) == ["GC003", "GC006"]
    assert "'AGrad'" in next(f for f in report.findings if f.rule == "GC003").message


@pytest.mark.parametrize("call", [
    "getattr(g, 'gradient_override_map')({'Matmul': 'Identity'})",
    "gom({'Matmul': 'Identity'})",
    "g.gradient_override_map(op_type_map={'Matmul': 'Identity'})",
], ids=["getattr", "assigned_method", "keyword"])
def test_gc004_and_gc007_through_getattr_aliases_and_keywords(audit_source, call):
    report = audit_source(f"""
        def f(g):
            gom = g.gradient_override_map
            with {call}:
                pass
    """)
    assert rules_of(report) == ["GC004", "GC007"]
    assert "did you mean 'MatMul'" in report.findings[1].message


def test_a_function_local_import_does_not_hide_module_level_tensorflow(audit_source):
    report = audit_source("""
        import tensorflow as tf

        @tf.RegisterGradient("AGrad")
        def g(op, grad):
            return grad

        def helper():
            import numpy as tf
            return tf.sign(1.0)
    """)
    assert rules_of(report) == ["GC003"]


def test_gc003_names_the_function_of_each_branch_in_source_order(if_else_report):
    messages = [(f.line, f.message) for f in if_else_report.findings if f.rule == "GC003"]
    assert [line for line, _ in messages] == [4, 8]
    assert "on 'first'" in messages[0][1] and "on 'second'" in messages[1][1]


def test_gc005_says_what_is_really_wrong(audit_source):
    report = audit_source(SIGN_OVERRIDE + "\nsess = tf.compat.v1.Session()\nold = tf.Session()\n")
    gc005 = {f.message.split(" ")[0]: f.message for f in report.findings if f.rule == "GC005"}
    graph = gc005["tf.compat.v1.get_default_graph"]
    assert "absent" not in graph and "graph-only API" in graph and "tf.GradientTape" in graph
    assert "absent" not in gc005["tf.compat.v1.Session"] and "graph-only" in gc005["tf.compat.v1.Session"]
    assert "does not exist in TF2" in gc005["tf.Session"] and "tf.compat.v1.Session" in gc005["tf.Session"]
