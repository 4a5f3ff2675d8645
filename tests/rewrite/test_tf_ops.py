"""The op registry tells the truth: each wrapper creates exactly the op types listed, in a tf.compat.v1 graph."""

from __future__ import annotations

import pytest

from compat.rewrite import builtin_gradients, tf_ops

tf = pytest.importorskip("tensorflow")


def _resolve(path: str):
    module = tf.compat.v1
    if path.startswith("python."):
        import importlib

        module_path, leaf = ("tensorflow." + path).rsplit(".", 1)
        return getattr(importlib.import_module(module_path), leaf)
    for part in path.split("."):
        module = getattr(module, part)
    return module


@pytest.mark.parametrize("path", sorted(tf_ops.WRAPPERS))
def test_wrapper_creates_the_listed_op_types(path: str) -> None:
    wrapper = tf_ops.WRAPPERS[path]
    function = _resolve(path)
    graph = tf.Graph()
    with graph.as_default():
        inputs = [tf.compat.v1.placeholder(tf.float32, [3]) for _ in wrapper.inputs]
        before = set(graph.get_operations())
        extra = {"clip_value_min": -1.0, "clip_value_max": 1.0} if path.endswith("clip_by_value") else {}
        extra.update({"dtype": tf.float64} if path.endswith("cast") else {})
        function(*inputs, **extra)
        created = {op.type for op in graph.get_operations() if op not in before}
    assert created <= wrapper.op_types and (wrapper.single_op is None or created == wrapper.op_types)


def test_builtin_gradients_match_tensorflow() -> None:
    x = tf.constant([1.5, -2.0, 0.25])
    dy = tf.constant([0.5, 2.0, -1.0])
    for name, gradient in builtin_gradients.BUILTIN_GRADIENTS.items():
        forward = {"Identity": tf.identity, "Neg": tf.negative}[name]
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = forward(x)
        want = tape.gradient(y, x, output_gradients=dy)
        got = eval(gradient.expression("dy"), {"dy": dy})  # noqa: S307 - our own registry's expression
        assert (want.numpy() == got.numpy()).all(), name
