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


FLOATING = ("float16", "bfloat16", "float32", "float64")


def _created(path: str, dtype: str, target: str) -> frozenset[str]:
    """Op types a call of the wrapper at `path` creates on `dtype` placeholders (`target`: tf.cast's dtype)."""
    wrapper = tf_ops.WRAPPERS[path]
    graph = tf.Graph()
    with graph.as_default():
        inputs = [tf.compat.v1.placeholder(dtype, [3]) for _ in wrapper.inputs]
        extra = {"clip_value_min": tf.constant(-1.0, dtype), "clip_value_max": tf.constant(1.0, dtype)} if (
            path.endswith("clip_by_value")) else {}
        extra.update({"dtype": target} if path.endswith("cast") else {})
        before = set(graph.get_operations())
        _resolve(path)(*inputs, **extra)
        return frozenset(op.type for op in graph.get_operations() if op not in before)


@pytest.mark.parametrize("path", sorted(tf_ops.WRAPPERS))
def test_wrapper_creates_the_listed_op_types_for_every_floating_dtype(path: str) -> None:
    """Exactly its op types (a single-op wrapper: all of them), or nothing only where `no_op_when` says it can."""
    wrapper = tf_ops.WRAPPERS[path]
    created = {(dtype, target): _created(path, dtype, target) for dtype in FLOATING
               for target in (FLOATING if path.endswith("cast") else (dtype,))}
    some = {where: types for where, types in created.items() if types}
    assert all(types <= wrapper.op_types and (wrapper.single_op is None or types == wrapper.op_types)
               for types in some.values()), created
    none = sorted(where for where, types in created.items() if not types)
    assert bool(none) == (not wrapper.always_creates), (
        f"{path}: creates no op for {none}" if none else f"{path}: no_op_when is set but every call creates an op")


@pytest.mark.parametrize("path", sorted(p for p, w in tf_ops.WRAPPERS.items() if w.type_attrs))
def test_type_attributes_are_the_dtypes_of_the_listed_inputs(path: str) -> None:
    """What `op.get_attr("T")` in a gradient is rewritten to: the dtype of the listed input, for every dtype."""
    wrapper = tf_ops.WRAPPERS[path]
    for dtype in FLOATING:
        graph = tf.Graph()
        with graph.as_default():
            inputs = [tf.compat.v1.placeholder(dtype, [3]) for _ in wrapper.inputs]
            op = _resolve(path)(*inputs).op
            for attr, index in wrapper.type_attrs:
                assert op.get_attr(attr) == inputs[index].dtype, (path, dtype, attr)


def test_builtin_gradients_match_tensorflow() -> None:
    x = tf.constant([1.5, -2.0, 0.25])
    dy = tf.constant([0.5, 2.0, -1.0])
    for name, gradient in builtin_gradients.BUILTIN_GRADIENTS.items():
        if gradient.inputs != 1:
            continue
        forward = {"Identity": tf.identity, "Neg": tf.negative}[name]
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = forward(x)
        want = tape.gradient(y, x, output_gradients=dy)
        got = eval(gradient.expression("dy", ("x",), "tf"), {"dy": dy, "tf": tf})  # noqa: S307 - our registry's
        assert (want.numpy() == got.numpy()).all(), name


@pytest.mark.parametrize(("x_shape", "y_shape"), [((2, 3), (2, 3)), ((2, 3), (3,)), ((4, 1, 3), (2, 1)), ((), (2,))])
def test_the_two_input_builtin_gradient_is_tensorflows_add_gradient_under_broadcasting(x_shape, y_shape) -> None:
    gradient = builtin_gradients.BUILTIN_GRADIENTS["Add"]
    x, y = tf.ones(x_shape), tf.ones(y_shape)
    with tf.GradientTape() as tape:
        tape.watch([x, y])
        z = tf.add(x, y)
    dy = tf.reshape(tf.range(tf.size(z), dtype=tf.float32), tf.shape(z))
    want = tape.gradient(z, [x, y], output_gradients=dy)
    got = eval(gradient.expression("dy", ("x", "y"), "tf"), {"dy": dy, "x": x, "y": y, "tf": tf})  # noqa: S307
    for w, g in zip(want, got, strict=True):
        assert w.shape == g.shape and (w.numpy() == g.numpy()).all(), (x_shape, y_shape)


@pytest.mark.parametrize("operator", ["+", "-", "/", "//", "%", "**", "@", "<", ">=", "&", "|", "^"])
def test_no_python_operator_but_multiplication_creates_a_mul(operator: str) -> None:
    """What lets the rewriter take `*` as the only operator an override of Mul can reach."""
    for dtype in ("float32", "int32", "bool"):
        graph = tf.Graph()
        with graph.as_default():
            a, b = (tf.compat.v1.placeholder(dtype, [2, 2]) for _ in range(2))
            try:
                eval(f"a {operator} b")  # noqa: S307 - a fixed operator from the list above
            except (TypeError, ValueError):
                continue  # the operator does not apply to this dtype
            assert "Mul" not in {op.type for op in graph.get_operations()}, (operator, dtype)
