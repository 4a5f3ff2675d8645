"""The built-in catalogue: real-world custom gradients, each as a GradientSpec."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from compat.composite import RaggedArray, SparseArray
from compat.spec import GradientSpec

# Away from 0 (sign, ReLU), from ±1 (clipping edges) and from .5 (rounding ties): every gradient is defined.
_X = np.array([[0.3, -1.7, 2.2], [-0.45, 0.8, -2.6], [1.3, -0.2, 0.65], [-3.1, 0.15, 1.9]], np.float32)
_Y = np.array([[1.1, -0.6, 0.35], [2.4, -1.2, 0.7], [-0.9, 1.6, -2.05], [0.55, -0.35, 1.45]], np.float32)
_W = np.array([0.5, -1.5, 2.0], np.float32)


def _tf() -> Any:
    import tensorflow as tf

    return tf


def _dense(upstream: Any) -> Any:
    """Upstreams may arrive as IndexedSlices; these gradients are elementwise, so densify first."""
    return _tf().convert_to_tensor(upstream)


def sign_ste() -> GradientSpec:
    return GradientSpec("sign_ste", _tf().sign, lambda i, o, u: [_dense(u[0])], [_X], op_type="Sign",
                        description="sign forward, straight-through (identity) gradient (binarized networks)")


def scaled_ste() -> GradientSpec:
    return GradientSpec("scaled_ste", _tf().sign, lambda i, o, u: [0.5 * _dense(u[0])], [_X], op_type="Sign",
                        description="sign forward, straight-through gradient x 0.5")


def gradient_reversal(strength: float = 0.7) -> GradientSpec:
    """Domain-adversarial training (Ganin & Lempitsky): identity forward, gradient times -lambda."""
    return GradientSpec("gradient_reversal", _tf().identity, lambda i, o, u: [-strength * _dense(u[0])], [_X],
                        op_type="Identity", description=f"identity forward, gradient x -{strength}")


def clip_by_value(limit: float = 1.2) -> GradientSpec:
    tf = _tf()
    return GradientSpec("clip_grad_by_value", tf.identity,
                        lambda i, o, u: [tf.clip_by_value(_dense(u[0]), -limit, limit)], [_X], op_type="Identity",
                        description=f"identity forward, upstream clipped elementwise to [-{limit}, {limit}]")


def clip_by_norm(max_norm: float = 1.0) -> GradientSpec:
    tf = _tf()
    return GradientSpec("clip_grad_by_norm", tf.identity,
                        lambda i, o, u: [tf.clip_by_norm(_dense(u[0]), max_norm)], [_X], op_type="Identity",
                        description=f"identity forward, upstream rescaled to L2 norm <= {max_norm}")


def guided_relu() -> GradientSpec:
    """Guided backpropagation: pass gradient only where both the input and the upstream are positive."""
    tf = _tf()

    def gradient(inputs, outputs, upstreams):
        upstream = _dense(upstreams[0])
        zeros = tf.zeros_like(upstream)
        return [tf.where(tf.logical_and(inputs[0] > 0, upstream > 0), upstream, zeros)]

    return GradientSpec("guided_relu", tf.nn.relu, gradient, [_X], op_type="Relu",
                        description="ReLU forward, guided-backprop gradient (input > 0 and upstream > 0)")


def dorefa_round(bits: int = 2) -> GradientSpec:
    """DoReFa-Net quantization: round to 2**bits - 1 levels in [0, 1], straight-through gradient."""
    tf = _tf()
    levels = float(2**bits - 1)

    def forward(x):
        clipped = tf.clip_by_value(x, 0.0, 1.0)
        return tf.round(clipped * levels) / levels

    inputs = np.array([[0.05, 0.4, 0.62], [0.9, 0.12, 0.27], [0.71, 0.95, 0.2], [0.44, 0.58, 0.08]], np.float32)
    return GradientSpec("dorefa_round", forward, lambda i, o, u: [_dense(u[0])], [inputs],
                        description=f"{bits}-bit DoReFa quantization, straight-through gradient")


def two_input_mul() -> GradientSpec:
    """A two-input op with a custom gradient for each input (a scaled product rule)."""
    return GradientSpec("two_input_mul", lambda a, b: a * b,
                        lambda i, o, u: [0.5 * _dense(u[0]) * i[1], 2.0 * _dense(u[0]) * i[0]], [_X, _Y],
                        description="a * b with gradients 0.5 * dy * b and 2 * dy * a")


def multi_output_int() -> GradientSpec:
    """Several outputs, one of them integer (like tf.unique or top_k indices): upstreams for each."""
    tf = _tf()

    def forward(x):
        return 2.0 * x, tf.cast(tf.round(x), tf.int32), tf.square(x)

    def gradient(inputs, outputs, upstreams):
        total = 2.0 * _dense(upstreams[0])
        if upstreams[2] is not None:
            total += 2.0 * inputs[0] * _dense(upstreams[2])
        return [total]

    return GradientSpec("multi_output_int", forward, gradient, [_X],
                        description="(2x, round(x) as int32, x^2): upstream None, zeros or values per output")


def variable_scale() -> GradientSpec:
    """A forward that reads a tf.Variable: the `variables=` path of tf.custom_gradient."""
    tf = _tf()

    def gradient(inputs, outputs, upstreams):
        x, w = inputs
        upstream = _dense(upstreams[0])
        return [upstream * w, tf.reduce_sum(upstream * x, axis=0) * 0.1]

    return GradientSpec("variable_scale", lambda x, w: x * w, gradient, [_X], variables=[_W],
                        description="x * w with w a tf.Variable; the variable's gradient scaled by 0.1")


_KERNEL = np.array([[0.4, -1.1], [1.6, 0.25], [-0.7, 0.9]], np.float32)


def layer_variables() -> GradientSpec:
    """A layer creating its weights inside the function (`get_variable`), whose gradient receives `variables=` and
    returns their gradients (TensorFlow's custom_gradient tests: a dense layer inside @custom_gradient)."""
    tf = _tf()

    def forward(x):
        kernel = tf.compat.v1.get_variable("kernel", shape=_KERNEL.shape, dtype=x.dtype,
                                           initializer=tf.compat.v1.constant_initializer(_KERNEL))
        return tf.matmul(x, kernel)

    def gradient(inputs, outputs, upstreams, variables):
        (x,), (kernel,) = inputs, variables
        upstream = _dense(upstreams[0])
        return [tf.matmul(upstream, kernel, transpose_b=True)], [0.1 * tf.matmul(x, upstream, transpose_a=True)]

    return GradientSpec("layer_variables", forward, gradient, [_X],
                        description="x @ kernel, the kernel made by get_variable in the forward; the gradient takes "
                                    "`variables` and scales the kernel's by 0.1")


def op_reused() -> GradientSpec:
    """The op used more than once: f(f(x)), then once per tf.while_loop iteration (a custom gradient per step, as
    per-timestep gradient clipping in an RNN cell does)."""
    tf = _tf()

    def model(op, x):
        y = op(op(x))
        step = lambda i, h: (i + 1, tf.tanh(1.5 * op(h)))  # noqa: E731
        _, y = tf.while_loop(lambda i, h: i < 2, step, (tf.constant(0), y), maximum_iterations=2)
        return y

    return GradientSpec("op_reused", tf.identity, lambda i, o, u: [tf.clip_by_value(_dense(u[0]), -0.5, 0.5)], [_X],
                        op_type="Identity", model=model,
                        description="identity forward, upstream clipped to [-0.5, 0.5]; used as f(f(x)), then in "
                                    "each of 2 tf.while_loop iterations (tanh(1.5 f(h)))")


def nested_autodiff() -> GradientSpec:
    """A custom gradient inside the forward (a straight-through round), and a gradient that calls autodiff on the
    forward (through the inner custom gradient), then cuts it outside |x| <= 1.5."""
    tf = _tf()

    @tf.custom_gradient
    def ste_round(x):
        return tf.round(x), lambda dy: dy

    def forward(x):
        return ste_round(x * 2.0) * 0.5

    def gradient(inputs, outputs, upstreams):
        with tf.GradientTape() as tape:
            tape.watch(inputs[0])
            again = forward(inputs[0])
        grad = tape.gradient(again, inputs[0], output_gradients=_dense(upstreams[0]))
        return [grad * tf.cast(tf.abs(inputs[0]) <= 1.5, grad.dtype)]

    return GradientSpec("nested_autodiff", forward, gradient, [_X],
                        description="round to halves through an inner custom-gradient STE; the gradient is autodiff "
                                    "of the forward (a GradientTape inside grad), zero outside |x| <= 1.5")


def ragged_sparse() -> GradientSpec:
    """A RaggedTensor and a SparseTensor input: row sums of each, with a gradient that averages each ragged row's
    upstream over its length and halves the sparse values' gradient."""
    tf = _tf()
    ragged = RaggedArray(np.array([0.3, -1.7, 2.2, -0.45, 0.8, 1.3, -0.2], np.float32), [0, 2, 3, 6, 7])
    sparse = SparseArray([[0, 0], [1, 2], [2, 1], [3, 0], [3, 2]], np.array([1.1, -0.6, 2.4, 0.7, -1.2], np.float32),
                         [4, 3])

    def forward(rows, features):
        sparse_rows = tf.math.unsorted_segment_sum(features.values, features.indices[:, 0], features.dense_shape[0])
        return tf.reduce_sum(rows, axis=1) + sparse_rows

    def gradient(inputs, outputs, upstreams):
        rows, features = inputs
        upstream = _dense(upstreams[0])
        per_value = upstream / tf.maximum(tf.cast(rows.row_lengths(), upstream.dtype), 1.0)
        return [rows.with_flat_values(tf.gather(per_value, rows.value_rowids())),
                tf.SparseTensor(features.indices, 0.5 * tf.gather(upstream, features.indices[:, 0]),
                                features.dense_shape)]

    return GradientSpec("ragged_sparse", forward, gradient, [ragged, sparse],
                        description="ragged row sums + sparse row sums; gradient: each ragged row's upstream averaged "
                                    "over its length, the sparse values' halved")


CATALOGUE: dict[str, Callable[[], GradientSpec]] = {
    "sign_ste": sign_ste,
    "scaled_ste": scaled_ste,
    "gradient_reversal": gradient_reversal,
    "clip_grad_by_value": clip_by_value,
    "clip_grad_by_norm": clip_by_norm,
    "guided_relu": guided_relu,
    "dorefa_round": dorefa_round,
    "two_input_mul": two_input_mul,
    "multi_output_int": multi_output_int,
    "variable_scale": variable_scale,
}
"""Catalogue name -> a function building the spec (TensorFlow is imported only when it is called): what the
default `compat-check` runs."""

FORMS: dict[str, Callable[[], GradientSpec]] = {
    "layer_variables": layer_variables,
    "op_reused": op_reused,
    "nested_autodiff": nested_autodiff,
    "ragged_sparse": ragged_sparse,
}
"""Opt-in catalogue specs, one per spec form real custom gradients need (variables the forward creates, the op
used more than once, nested custom gradients and autodiff inside the gradient, ragged and sparse inputs): each
costs the default run's time of several specs (loops, SavedModels, XLA), so they run only when named
(`--specs=layer_variables,...`, or `--specs=forms` for all four)."""

FORMS_GROUP = "forms"
"""The `--specs` name of every spec in FORMS."""

ALL_SPECS: dict[str, Callable[[], GradientSpec]] = {**CATALOGUE, **FORMS}
"""Every catalogue spec a `--specs` name can pick: the default ones and the opt-in forms."""


def catalogue_spec(name: str) -> GradientSpec:
    try:
        return ALL_SPECS[name]()
    except KeyError:
        raise KeyError(f"unknown catalogue spec {name!r}; choose from {sorted(ALL_SPECS)}") from None
