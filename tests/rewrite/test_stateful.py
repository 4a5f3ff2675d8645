"""A forward is called again (to read op.outputs) only if TensorFlow's op registry says it is free of stateful ops.

compat/data/tf_stateful_apis.txt is generated from the installed TensorFlow by tools/gen_audit_data.py (its
`--check` is run by tests/audit/test_data.py); here: the rewriter's decisions, and the TensorFlow facts behind them.
"""

from __future__ import annotations

import textwrap

import pytest

from compat.rewrite import rewrite_source, tf_ops
from compat.rewrite.stateful import stateful_apis

DEFUN = """
    import numpy as np
    import tensorflow as tf
    from tensorflow.python.framework import function

    def noise(shape):
        return tf.random.uniform(shape)

    def _scaled_by_output(op, dy):
        return [dy * op.outputs[0]]

    @function.Defun(tf.float32, python_grad_func=_scaled_by_output)
    def scaled(x):
        return x * {factor}
    """

RANDOM_FACTORS = [
    ("tf.random.uniform(tf.shape(x))", "`tf.random.uniform` may create RandomUniform"),
    ("tf.random.normal(tf.shape(x))", "`tf.random.normal` may create RandomStandardNormal"),
    ("tf.random.gamma(tf.shape(x), 2.0)", "`tf.random.gamma` may create RandomGamma"),
    ("tf.random.poisson(tf.shape(x), 2.0)", "`tf.random.poisson` may create RandomPoisson"),
    ("tf.compat.v1.random_uniform(tf.shape(x))", "`tf.compat.v1.random_uniform` may create RandomUniform"),
    ("tf.nn.dropout(tf.ones_like(x), rate=0.5)", "`tf.nn.dropout` may create RandomUniform"),
    ('tf.compat.v1.get_variable("w", [])', "`tf.compat.v1.get_variable` may create"),
    ("noise(tf.shape(x))", "`noise` is not TensorFlow"),
    ("np.random.rand()", "`np.random.rand` is not TensorFlow"),
    ("tf.nest.map_structure(noise, tf.shape(x))", "`noise` is a function of this file"),
    ("tf.compat.v1.layers.dropout(x)", "`tf.compat.v1.layers.dropout` is not a TensorFlow function gradcompat knows"),
]


@pytest.mark.parametrize("factor, why", RANDOM_FACTORS)
def test_a_forward_that_may_be_random_is_not_called_again(runner, factor: str, why: str) -> None:
    reasons = runner.todo_reasons(textwrap.dedent(DEFUN.format(factor=factor)).lstrip())
    assert any("reads op.outputs" in r and f"but {why}" in r and "rewrite by hand" in r for r in reasons), reasons


def test_a_forward_of_stateless_ops_is_rewritten_and_computes_what_tf1_does(runner, tmp_path) -> None:
    """`stateless_uniform` has "random" in its name but creates no stateful op: TF1 and TF2 agree."""
    pytest.importorskip("tensorflow")
    source = textwrap.dedent(DEFUN.format(factor="tf.random.stateless_uniform(tf.shape(x), seed=[1, 2])")).lstrip()
    source += "\n\ndef model(x):\n    return scaled(x) * 3.0\n"
    result = rewrite_source(source)
    assert not result.todo and "dy * scaled(x)" in result.text, result.sites
    legacy, rewritten = runner.load_pair(tmp_path, "stateless_forward", source, result.text)
    found = runner.differences(legacy, rewritten, {"model": [("float32", [5])]})
    assert not found, "\n".join(found)


def test_calling_a_random_function_again_gives_another_value() -> None:
    """Why: the data's stateful functions really change between calls, so op.outputs cannot be recomputed."""
    tf = pytest.importorskip("tensorflow")
    for name in ("random.uniform", "random.normal"):
        assert stateful_apis()[name], name
        function = tf.random.uniform if name == "random.uniform" else tf.random.normal
        assert not (function([64]).numpy() == function([64]).numpy()).all(), name


def test_the_wrappers_and_operators_the_rewriter_allows_create_no_stateful_op() -> None:
    pytest.importorskip("tensorflow")
    from tensorflow.python.framework import op_def_registry

    types = set(tf_ops.OPERATOR_OP_TYPES).union(*(w.op_types for w in tf_ops.WRAPPERS.values()))
    stateful = sorted(t for t in types if op_def_registry.get(t) is not None and op_def_registry.get(t).is_stateful)
    assert not stateful, stateful
