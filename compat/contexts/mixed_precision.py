"""The mixed-precision context: the op inside a Keras layer under the `mixed_float16` policy, the loss scaled
by a `LossScaleOptimizer`, gradients by an eager tape and unscaled, as Keras mixed-precision training does.

The gradient function receives its upstream in float16, multiplied by the loss scale; the outcome reports the
scale, and the runner divides recorded upstreams by it so values compare with other contexts (the dtype stays
float16: what the function really saw). The scale is the one the optimizer's dynamic loss scaling settles on:
it starts at Keras' 2**15 and, as `LossScaleOptimizer` does after a step whose gradients are not finite (the
step is skipped), is halved and the step retried, so only the last, finite step's call is recorded.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from compat.contexts.base import Case, Context, Failed, Outcome, Ran, grads_outcome, tape_gradients
from compat.contexts.isolation import run_alone


class MixedPrecision(Context):
    name = "mixed_precision"
    summary = "Keras mixed_float16 layer + LossScaleOptimizer loss scaling, eager tape, gradients unscaled"
    # not native (compat/registry.py): a gradient that is not linear in its upstream (a clip) changes by design here
    requires = ("keras",)

    def run(self, cases: Sequence[Case]) -> list[Outcome]:
        import keras  # noqa: PLC0415 - an optional dependency, checked by `unavailable()` first

        initial = _initial_loss_scale(keras)
        outcomes = []
        for case in cases:
            scale = initial
            outcome = run_alone(case, functools.partial(self._run_one, scale, case))
            while scale > 1.0 and isinstance(outcome, Ran) and not _finite(outcome.input_grads):
                scale /= 2.0  # LossScaleOptimizer skips the step and halves the scale
                outcome = run_alone(case, functools.partial(self._run_one, scale, case))
            outcomes.append(outcome)
        return outcomes

    @staticmethod
    def _run_one(scale: float, case: Case) -> Outcome:
        num_inputs = len(case.inputs)
        try:
            op = case.build()

            def build():
                def call(*sources):
                    inputs, variables = sources[:num_inputs], sources[num_inputs:]
                    layer = _op_layer(lambda *xs: op(*xs, *variables), dtype="mixed_float16")
                    outputs = layer(*inputs)  # Keras casts the float inputs to float16
                    # Keras losses cast predictions to float32 before computing the loss.
                    return tuple(tf.cast(o, tf.float32) if o.dtype == tf.float16 else o for o in outputs)

                return call

            scaled = dataclasses.replace(case.downstream, loss=lambda *o: case.downstream.loss(*o) * scale)
            sources = [*(tf.constant(value) for value in case.inputs), *(tf.Variable(v) for v in case.variables)]
            computed = tape_gradients(dataclasses.replace(case, build=build, downstream=scaled), sources)
        except Exception as exc:  # noqa: BLE001 - eager builds and runs at once; the error's type tells which.
            return Failed(error=exc, phase="run" if isinstance(exc, tf.errors.OpError) else "build")
        unscaled = [None if g is None else _unscale(g, scale) for g in computed.grads]
        return dataclasses.replace(grads_outcome(unscaled, case.sources, computed.variables), upstream_scale=scale,
                                   compute_dtype="float16")


def _initial_loss_scale(keras: Any) -> float:
    """The dynamic loss scale a fresh `LossScaleOptimizer` starts with (Keras 3, or tf.keras 2 before it)."""
    if hasattr(keras.optimizers, "LossScaleOptimizer"):
        return float(keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD()).scale_loss(tf.constant(1.0)))
    optimizer = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.SGD())
    return float(optimizer.get_scaled_loss(tf.constant(1.0)))


def _finite(grads: Sequence[np.ndarray | None]) -> bool:
    return all(g is None or bool(np.all(np.isfinite(g))) for g in grads)


def _unscale(grad: Any, scale: float) -> Any:
    """What `LossScaleOptimizer` does to each gradient before applying it."""
    if isinstance(grad, tf.IndexedSlices):
        return tf.IndexedSlices(grad.values / tf.cast(scale, grad.dtype), grad.indices, grad.dense_shape)
    return grad / tf.cast(scale, grad.dtype)


@functools.cache
def _op_layer_class() -> type:
    import keras  # noqa: PLC0415

    class OpLayer(keras.layers.Layer):
        """A layer whose call is the built op: what a migrated model wraps its custom-gradient op in."""

        def __init__(self, op: Any, **kwargs: Any):
            super().__init__(**kwargs)
            self._op = op

        def call(self, *inputs: Any) -> Any:
            return tuple(self._op(*inputs))

    return OpLayer


def _op_layer(op: Any, dtype: str) -> Any:
    return _op_layer_class()(op, dtype=dtype)
