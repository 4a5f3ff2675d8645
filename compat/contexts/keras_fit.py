"""The Keras training context: the op inside a Keras layer, one `model.fit` step (SGD, a batch of several).

Each case's sources (inputs, then variables) are trainable weights of the layer, initialised to their
values; the scenario's loss over the op's outputs is the *total* loss of a batch of `BATCH` samples, each
sample carrying an equal share of it (its data is the share 1 / BATCH), so the per-sample losses sum to the
scenario's loss, as a TF1 `reduce_sum` over examples does. The model outputs those per-sample losses and is
compiled with them as its loss, so Keras' own `sum_over_batch_size` reduction (its default) divides their sum
by the batch size. The context declares that documented factor, 1 / BATCH, as `upstream_scale`: the runner
divides recorded upstreams by it, so a Keras that reduced otherwise would show as a difference.

`model.fit` runs one step with `jit_compile=False` (Keras 3's "auto" compiles with XLA on a GPU, where the
probe's `tf.numpy_function` cannot run). The input gradients are those the optimizer is handed in that step
(an SGD whose `apply_gradients` stores them into side variables after applying them), divided by the same
declared factor. Cases run together in one model (one layer, the per-sample losses of all cases added: their
weights are distinct, so each case's gradients are its own); a fit that fails is retried in parts to find the
failing cases (`compat.contexts.isolation`). Second-order gradients and `grad_ys` cannot be expressed in a fit
step: `unsupported`.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from compat.contexts.base import Case, Context, Failed, Outcome, Phase, Ran, cannot_run
from compat.contexts.isolation import isolate_cases
from compat.contexts.wrapped import quiet_retracing
from compat.results import intern_array

BATCH = 4
"""Samples per batch: a power of two, so dividing by the declared 1 / BATCH is exact in every float dtype."""

UPSTREAM_SCALE = 1.0 / BATCH
"""What Keras' documented `sum_over_batch_size` reduction multiplies the summed per-sample losses by."""


class KerasFit(Context):
    name = "keras_fit"
    summary = "one Keras model.fit step (SGD, batch of 4), the sources as layer weights, loss mean over the batch"
    # not native (compat/registry.py): a gradient that is not linear in its upstream (a clip) sees it divided
    # by the batch size
    requires = ("keras",)

    def run(self, cases: Sequence[Case]) -> list[Outcome]:
        outcomes: dict[int, Outcome] = {}
        runnable = []
        for index, case in enumerate(cases):
            reason = _not_expressible(case)
            if reason is None:
                runnable.append(index)
            else:
                outcomes[index] = cannot_run(f"NotExpressible: {reason}")  # the words reports have always quoted
        with quiet_retracing():  # every fit traces a new train step, on purpose
            outcomes.update(isolate_cases(cases, runnable, functools.partial(_fit, cases)))
        return [outcomes[index] for index in range(len(cases))]


def _not_expressible(case: Case) -> str | None:
    if case.downstream.order == 2:
        return ("model.fit takes first-order gradients of its loss (one tape.gradient per step); a second-order "
                "gradient has no counterpart in a fit step")
    if case.downstream.output_gradients is not None:
        return ("model.fit differentiates its scalar loss; it has no grad_ys / output_gradients to pass "
                "(express the weighting in the loss instead)")
    return None


def _fit(cases: Sequence[Case], indices: list[int]) -> tuple[dict[int, Outcome], list[int]]:
    """One model holding `indices`, one `fit` step: outcomes, and the cases to retry apart if the fit failed."""
    batch = _Batch(cases, indices)
    model = _cases_model_class()(batch)
    recorder = _Recorder(batch)
    model.compile(optimizer=_recording_sgd_class()(recorder), loss=_per_sample_loss, jit_compile=False)
    shares = np.full((BATCH, 1), UPSTREAM_SCALE, np.float32)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Gradients do not exist for variables ...": reported as `none`
            model.fit(shares, np.zeros((BATCH,), np.float32), batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
    except Exception as exc:  # noqa: BLE001 - a failing case is a result; bisect to find it.
        still = [index for index in indices if index not in batch.failures]
        if len(still) > 1:
            return dict(batch.failures), still
        phase: Phase = "run" if isinstance(exc, tf.errors.OpError) else "build"
        return {**batch.failures, **{index: Failed(error=exc, phase=phase) for index in still}}, []
    # a case whose forward failed while Keras traced the step keeps its error
    return {index: batch.failures.get(index) or recorder.outcome(index) for index in indices}, []


def _per_sample_loss(y_true: Any, y_pred: Any) -> Any:
    """The model's output is each sample's loss; Keras reduces these values as it reduces any loss's."""
    return y_pred


class _Batch:
    """The cases one model holds, their weights (set by the layer) and the forward failures met while tracing.

    A plain object: Keras would replace a dict or list assigned to a layer attribute with a tracked copy.
    """

    def __init__(self, cases: Sequence[Case], indices: Sequence[int]):
        self.cases = cases
        self.indices = list(indices)
        self.weights: dict[int, list[Any]] = {}
        """Per case, per source: its trainable weight, or None for a non-float source (a constant)."""
        self.failures: dict[int, Outcome] = {}
        self.ops: dict[int, Any] = {}

    def sources(self, index: int) -> list[Any]:
        """What the case's op is called with: tensors read from its weights, then its variables themselves."""
        case = self.cases[index]
        return [tf.constant(value) if weight is None else
                _variable(weight) if position >= len(case.inputs) else tf.convert_to_tensor(_variable(weight))
                for position, (value, weight) in enumerate(zip(case.sources, self.weights[index], strict=True))]


def _variable(weight: Any) -> tf.Variable:
    """The tf.Variable under a Keras weight (Keras 3 wraps it; tf.keras 2 returns it as it is)."""
    return weight if isinstance(weight, tf.Variable) else weight.value


def _is_float(value: np.ndarray) -> bool:
    return tf.as_dtype(value.dtype).is_floating


class _Recorder:
    """The gradients the optimizer is handed, per case and source, stored into side variables."""

    def __init__(self, batch: _Batch):
        self._batch = batch
        self._keys = {id(weight): (index, position) for index in batch.indices
                      for position, weight in enumerate(batch.weights[index]) if weight is not None}
        self._sinks = {key: tf.Variable(np.zeros_like(batch.cases[key[0]].sources[key[1]]),
                                        shape=tf.TensorShape(None), trainable=False) for key in self._keys.values()}
        self._kinds: dict[tuple[int, int], str] = {}

    def record(self, grads_and_vars: Sequence[tuple[Any, Any]]) -> None:
        """Called while Keras traces its train step: store each handed gradient (dense) into its sink."""
        for grad, variable in grads_and_vars:
            key = self._keys.get(id(variable))
            if key is None or grad is None:
                continue
            self._kinds[key] = "indexed_slices" if isinstance(grad, tf.IndexedSlices) else "dense"
            sink = self._sinks[key]  # a gradient of another dtype (a violation the probe notes) is kept in the source's
            sink.assign(tf.cast(tf.convert_to_tensor(grad), sink.dtype))

    def outcome(self, index: int) -> Ran:
        """The case's gradients as the optimizer was handed them, divided by the declared 1 / BATCH."""
        grads: list[np.ndarray | None] = []
        kinds: list[str] = []
        for position in range(len(self._batch.cases[index].sources)):
            kinds.append(self._kinds.get((index, position), "none"))
            if kinds[-1] == "none":
                grads.append(None)
                continue
            value = self._sinks[index, position].numpy()
            grads.append(intern_array((value.astype(np.float64) / UPSTREAM_SCALE).astype(value.dtype)))
        return Ran(input_grads=tuple(grads), input_grad_kinds=tuple(kinds), upstream_scale=UPSTREAM_SCALE)


@functools.cache
def _cases_model_class() -> type:
    import keras  # noqa: PLC0415 - an optional dependency, checked by `unavailable()` first

    try:
        from keras.src.backend.common.symbolic_scope import in_symbolic_scope  # noqa: PLC0415
    except ImportError:  # tf.keras 2 calls a subclassed model in its train step only
        def in_symbolic_scope() -> bool:
            return False

    class CasesLayer(keras.layers.Layer):
        """Every case's op on its weights; per sample, the sum over cases of scenario loss x the sample's share."""

        def __init__(self, batch: _Batch):
            float_dtypes = [v.dtype for index in batch.indices for v in batch.cases[index].sources if _is_float(v)]
            super().__init__(dtype=tf.as_dtype(float_dtypes[0] if float_dtypes else np.float32).name)
            self._batch = batch
            for index in batch.indices:
                batch.weights[index] = [
                    self.add_weight(name=f"case{index}_source{position}", shape=value.shape, trainable=True,
                                    dtype=tf.as_dtype(value.dtype).name, initializer=keras.initializers.Constant(value))
                    if _is_float(value) else None
                    for position, value in enumerate(batch.cases[index].sources)]
            # Zero, added to every sample's loss: a weight the loss always reaches, as in any real model.
            # Without it Keras refuses a step whose loss reaches no weight ("No gradients provided for any
            # variable"), so a case whose loss reaches none of its weights would depend on its batch-mates.
            self.anchor = self.add_weight(name="anchor", shape=(), dtype="float32", trainable=True,
                                          initializer="zeros")
            self.built = True

        def call(self, shares: Any) -> Any:
            return self._per_sample_losses(shares)

        @tf.autograph.experimental.do_not_convert  # tf.keras 2 converts calls: user code runs as written
        def _per_sample_losses(self, shares: Any) -> Any:
            batch, total = self._batch, tf.convert_to_tensor(_variable(self.anchor))
            for index in batch.indices:
                if index in batch.failures:
                    continue
                try:
                    if index not in batch.ops:  # tf.keras 2 traces the step twice: one op, built once
                        batch.ops[index] = batch.cases[index].build()
                    target = batch.cases[index].downstream.loss(*batch.ops[index](*batch.sources(index)))
                    per_sample = tf.reduce_sum(target) * tf.cast(shares[:, 0], target.dtype)
                except Exception as exc:  # noqa: BLE001 - a case that cannot be built is a result.
                    batch.failures[index] = Failed(error=exc, phase="build")
                    continue
                total = total + tf.cast(per_sample, tf.float32)
            return total + tf.zeros_like(shares[:, 0], tf.float32)

    class CasesModel(keras.Model):
        """The layer as a model whose output is each sample's loss."""

        def __init__(self, batch: _Batch):
            super().__init__()
            self.cases = CasesLayer(batch)
            self.built = True

        def call(self, shares: Any) -> Any:
            if in_symbolic_scope():  # Keras 3 traces the model for its output spec: not the step, nothing to build
                return tf.zeros_like(shares[:, 0], tf.float32)
            return self.cases(shares)

    return CasesModel


@functools.cache
def _recording_sgd_class() -> type:
    import keras  # noqa: PLC0415

    class RecordingSGD(keras.optimizers.SGD):
        """SGD that, after applying the gradients it is handed, stores them for the report."""

        def __init__(self, recorder: _Recorder, **kwargs: Any):
            super().__init__(learning_rate=0.01, **kwargs)
            self._recorder = recorder

        def apply_gradients(self, grads_and_vars: Any, *args: Any, **kwargs: Any) -> Any:
            grads_and_vars = list(grads_and_vars)
            applied = super().apply_gradients(grads_and_vars, *args, **kwargs)
            self._recorder.record(grads_and_vars)
            return applied

    return RecordingSGD
