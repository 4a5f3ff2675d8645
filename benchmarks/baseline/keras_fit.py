"""The baseline's keras_fit context: one Keras model holding every case, trained one step."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from baseline.contexts import BaselineCase, Grads
from compat.contexts.isolation import isolate

KERAS_BATCH = 4


def run_keras_fit(cases: Sequence[BaselineCase], out: Grads) -> None:
    """One Keras model holding every case's sources as trainable weights, one `model.fit` step (SGD, a batch of
    4, jit_compile=False): each sample's loss is 1/4 of every case's loss, so Keras' mean over the batch divides
    the gradients by 4; SGD records the gradients it is handed, multiplied back by 4. grad_ys and second order
    have no counterpart in fit (skipped, as the harness reports them unsupported); a failing fit's failing cases
    are found by the harness's own search (compat.contexts.isolation)."""
    cases = [case for case in cases if case.downstream.order == 1 and case.downstream.output_gradients is None]

    def attempt(indices: list[int]) -> tuple[dict[int, None], list[int]]:
        fitted = _fit([cases[index] for index in indices], out)
        return {}, [] if fitted or len(indices) == 1 else indices

    isolate(range(len(cases)), attempt, variant=lambda index: cases[index].key[3])


def _fit(cases: Sequence[BaselineCase], out: Grads) -> bool:
    """One model holding `cases`, one fit step, their gradients into `out`; False if the fit failed."""
    import keras  # noqa: PLC0415 - the harness's keras_fit context needs it too

    try:  # as the harness: Keras 3 traces the model once for its output spec; nothing to build there
        from keras.src.backend.common.symbolic_scope import in_symbolic_scope  # noqa: PLC0415
    except ImportError:
        in_symbolic_scope = bool
    def variable(weight):  # Keras 3 wraps the tf.Variable; tf.keras 2 returns it
        return weight if isinstance(weight, tf.Variable) else weight.value

    handed: set[tuple[int, int]] = set()

    class Model(keras.Model):
        def __init__(self):
            super().__init__()
            self.case_weights = [[self.add_weight(shape=v.shape, dtype=v.dtype.name,
                                                  initializer=keras.initializers.Constant(v))
                                  for v in (*case.inputs, *case.variables)] for case in cases]
            self.anchor = self.add_weight(shape=(), initializer="zeros")  # a weight the loss always reaches
            self.ops = [case.op() for case in cases]
            self.built = True

        @tf.autograph.experimental.do_not_convert
        def call(self, shares):
            total = tf.convert_to_tensor(variable(self.anchor)) + tf.zeros_like(shares[:, 0])
            if in_symbolic_scope():
                return total
            for case, weights, op in zip(cases, self.case_weights, self.ops, strict=True):
                n = len(case.inputs)
                with contextlib.suppress(Exception):  # TensorFlow refuses to build this combination.
                    loss = case.downstream.loss(*op(*[tf.convert_to_tensor(variable(w)) for w in weights[:n]],
                                                    *[variable(w) for w in weights[n:]]))
                    total += tf.cast(tf.reduce_sum(loss) * tf.cast(shares[:, 0], loss.dtype), tf.float32)
            return total

    model = Model()
    where = {id(w): (c, k) for c, weights in enumerate(model.case_weights) for k, w in enumerate(weights)}
    sinks = {key: tf.Variable(tf.zeros_like(variable(model.case_weights[key[0]][key[1]])), trainable=False)
             for key in where.values()}

    class RecordingSGD(keras.optimizers.SGD):
        def apply_gradients(self, grads_and_vars, *args, **kwargs):
            grads_and_vars = list(grads_and_vars)
            applied = super().apply_gradients(grads_and_vars, *args, **kwargs)
            for grad, var in grads_and_vars:
                if grad is not None and id(var) in where:
                    sinks[where[id(var)]].assign(tf.convert_to_tensor(grad))
                    handed.add(where[id(var)])
            return applied

    model.compile(optimizer=RecordingSGD(learning_rate=0.01), loss=lambda y_true, y_pred: y_pred, jit_compile=False)
    try:
        model.fit(np.full((KERAS_BATCH, 1), 1 / KERAS_BATCH, np.float32), np.zeros(KERAS_BATCH, np.float32),
                  batch_size=KERAS_BATCH, epochs=1, shuffle=False, verbose=0)
    except Exception:  # noqa: BLE001 - as the harness: find the failing cases.
        return False
    for c, case in enumerate(cases):
        out[case.key] = [sinks[c, k].numpy() * KERAS_BATCH if (c, k) in handed else None
                         for k in range(len(model.case_weights[c]))]
    return True
