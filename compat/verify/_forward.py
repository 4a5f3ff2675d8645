"""An entry's forward outputs computed the way a context runs code, its output signature, and whether it is random."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from compat.signature import OutputSignature
from compat.verify._results import Attempt

Op = Callable[..., tuple[Any, ...]]


def compute_forward(context: str, op: Op, inputs: Sequence[np.ndarray], graph: tf.Graph | None = None,
                    path: str = "") -> Attempt:
    """The entry's outputs in a Session (in `graph`, else a fresh one), eagerly, or in a tf.function."""
    from compat.verify._unit import describe, is_refusal

    try:
        if context.startswith("v1_"):
            values = _in_session(op, inputs, tf.Graph() if graph is None else graph)
        elif context.startswith("function_"):  # traced once, as the gradient contexts do
            specs = [tf.TensorSpec(value.shape, tf.as_dtype(value.dtype)) for value in inputs]
            concrete = tf.function(op, autograph=False).get_concrete_function(*specs)
            values = [o.numpy() for o in tf.nest.flatten(concrete(*[tf.constant(v) for v in inputs]))]
        else:
            values = [tf.convert_to_tensor(o).numpy() for o in op(*[tf.constant(v) for v in inputs])]
    except BaseException as exc:  # noqa: BLE001 - SystemExit from user code is a result too
        return Attempt("error", f"computing the outputs raised {describe(exc, path)}", refused=is_refusal(exc))
    return Attempt("ok", values=tuple(np.asarray(value) for value in values))


def _in_session(op: Op, inputs: Sequence[np.ndarray], graph: tf.Graph) -> list[Any]:
    with graph.as_default():
        placeholders = [tf.compat.v1.placeholder(value.dtype, value.shape) for value in inputs]
        outputs = [tf.convert_to_tensor(output) for output in op(*placeholders)]
        initialize = [tf.compat.v1.global_variables_initializer(), tf.compat.v1.tables_initializer()]
    with tf.compat.v1.Session(graph=graph) as session:
        session.run(initialize)
        return session.run(outputs, feed_dict=dict(zip(placeholders, inputs, strict=True)))


def forward_is_random(context: str, op: Op, inputs: Sequence[np.ndarray], forward: Attempt,
                      reseed: Callable[[int], None]) -> str:
    """A note when the outputs change with the random seed (`reseed(offset)` shifts the seed `op` sets), else ""."""
    reseed(1)
    try:
        again = compute_forward(context, op, inputs)
    finally:
        reseed(0)
    if again.status != "ok" or len(again.values) != len(forward.values):
        return ""
    changed = [index for index, (a, b) in enumerate(zip(forward.values, again.values, strict=True))
               if a is not None and b is not None and a.shape == b.shape
               and not np.array_equal(a, b, equal_nan=a.dtype.kind == "f")]
    if not changed:
        return ""
    return (f"the original's forward is random: output(s) {changed} change with the random seed. Both sides set "
            f"the same global seed, so random ops with an op-level `seed=` draw the same numbers; any other random "
            f"op draws different ones on each side and its values cannot match: give each random op a `seed=`, or "
            f"pass the random values in as an input")


def signature_of(values: Sequence[np.ndarray | None]) -> OutputSignature:
    """The outputs' dtypes and shapes, from the values computed (a Defun's outputs have no static shape)."""
    present = [np.asarray(value) for value in values if value is not None]
    return OutputSignature(dtypes=tuple(tf.as_dtype(value.dtype) for value in present),
                           shapes=tuple(tuple(value.shape) for value in present))
