"""Downstream scenarios: the computations after the op that set the upstream gradient it receives."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np
import tensorflow as tf

from compat.downstream import Downstream
from compat.registry import check_names
from compat.signature import OutputSignature, output_signature
from compat.spec import GradientSpec

_SEED = 20261202


def _weights(shape: tuple[int, ...], salt: int) -> np.ndarray:
    """Fixed pseudo-random weights (seeded), away from zero so every element carries signal."""
    rng = np.random.default_rng(_SEED + salt)
    magnitude = rng.uniform(0.5, 2.0, size=shape)
    return (magnitude * rng.choice([-1.0, 1.0], size=shape)).astype(np.float32)


def _cast(value: np.ndarray, like: tf.Tensor) -> tf.Tensor:
    return tf.cast(tf.constant(value), like.dtype)


@dataclasses.dataclass(frozen=True)
class Scenario:
    """A named downstream; `make(signature, rows=None)` builds it for a spec's outputs (for `rows` of the batch
    only: that shard's part of it), `skip` says when it cannot. `shardable`: whether `make` can split it."""

    name: str
    description: str
    make: Callable[..., Downstream]
    skip: Callable[[OutputSignature], str | None] = lambda signature: None
    shardable: bool = True

    def skip_reason(self, spec: GradientSpec) -> str | None:
        """Why this scenario does not apply to `spec`, or None when it does."""
        return self.skip_reason_for(output_signature(spec))

    def skip_reason_for(self, signature: OutputSignature) -> str | None:
        """Why this scenario does not apply to outputs with `signature`, or None when it does."""
        if not signature.dtypes[0].is_floating:
            return f"the first output is {signature.dtypes[0].name}: no gradient flows through it"
        if signature.shapes[0] is None or None in signature.shapes[0]:
            return "the first output's static shape is unknown"
        return self.skip(signature)

    def downstream(self, spec: GradientSpec) -> Downstream:
        return self.downstream_for(output_signature(spec))

    def downstream_for(self, signature: OutputSignature) -> Downstream:
        """The downstream for outputs with `signature` (one that `skip_reason_for` accepts)."""
        return self._named(self.make(signature), signature)

    def _named(self, downstream: Downstream, signature: OutputSignature) -> Downstream:
        def shard(rows: Any) -> Downstream:
            return dataclasses.replace(self.make(signature, rows), name=self.name, description=self.description)

        return dataclasses.replace(downstream, name=self.name, description=self.description,
                                   shard=shard if self.shardable else None)


def _shape(signature: OutputSignature) -> tuple[int, ...]:
    # skip_reason guarantees a full static shape before any scenario builds from it.
    return cast(tuple[int, ...], signature.shapes[0])


def _needs_rank(rank: int, why: str) -> Callable[[OutputSignature], str | None]:
    return lambda s: None if len(_shape(s)) >= rank else f"the first output has rank {len(_shape(s))}: {why}"


def _loss(fn: Callable[..., tf.Tensor]) -> Callable[..., Downstream]:
    """A downstream that is a sum over the batch's rows: a shard's part is the same loss on the shard."""
    return lambda signature, rows=None: Downstream("", fn)


def _of_rows(value: np.ndarray, rows: Any, like: tf.Tensor) -> tf.Tensor:
    """`value` (shaped like the whole batch's output) as a tensor like `like`, only `rows` of it if given."""
    tensor = _cast(value, like)
    return tensor if rows is None else tf.gather(tensor, rows)


def _local(indices: Sequence[int], rows: Any) -> Any:
    """Batch row `indices` as positions in the shard holding `rows` (those in other shards left out)."""
    if rows is None:
        return list(indices)
    rows = tf.cast(rows, tf.int64)
    return tf.concat([tf.reshape(tf.where(tf.equal(rows, index)), [-1]) for index in indices], axis=0)


def _weighted(signature: OutputSignature, rows: Any = None) -> Downstream:
    weights = _weights(_shape(signature), 1)
    return Downstream("", lambda y, *rest: tf.reduce_sum(y * _of_rows(weights, rows, y)))


def _mean(signature: OutputSignature, rows: Any = None) -> Downstream:
    if rows is None:
        return Downstream("", lambda y, *rest: tf.reduce_mean(y))
    size = int(np.prod(_shape(signature)))  # the whole batch's: the shards' parts add up to the mean
    return Downstream("", lambda y, *rest: tf.reduce_sum(y) / tf.cast(size, y.dtype))


def _broadcast(signature: OutputSignature, rows: Any = None) -> Downstream:
    row = _weights(_shape(signature)[-1:], 2)
    return Downstream("", lambda y, *rest: tf.reduce_sum(y * _cast(row, y)))


def _reduce_axis(signature: OutputSignature, rows: Any = None) -> Downstream:
    column = _weights(_shape(signature)[1:], 3)
    return Downstream("", lambda y, *rest: tf.reduce_sum(tf.reduce_sum(y, axis=0) * _cast(column, y)))


def _gather(signature: OutputSignature, rows: Any = None) -> Downstream:
    last = _shape(signature)[0] - 1
    return Downstream("", lambda y, *rest: tf.reduce_sum(tf.gather(y, _local([0, last, 0], rows))))


def _gather_twice(signature: OutputSignature, rows: Any = None) -> Downstream:
    last = _shape(signature)[0] - 1
    return Downstream("", lambda y, *rest: tf.reduce_sum(tf.gather(y, _local([0], rows))) + 3.0 * tf.reduce_sum(
        tf.gather(y, _local([last, last], rows))))


def _reuse(signature: OutputSignature, rows: Any = None) -> Downstream:
    weights = _weights(_shape(signature), 4)
    return Downstream("", lambda y, *rest: 2.0 * tf.reduce_sum(y) + tf.reduce_sum(y * _of_rows(weights, rows, y)))


def _grad_ys(signature: OutputSignature, rows: Any = None) -> Downstream:
    seed = _weights(_shape(signature), 5)
    return Downstream("", lambda y, *rest: y, output_gradients=lambda target: _of_rows(seed, rows, target))


def _second_order(signature: OutputSignature, rows: Any = None) -> Downstream:
    weights = _weights(_shape(signature), 6)
    return Downstream("", lambda y, *rest: tf.reduce_sum(y * _of_rows(weights, rows, y)), order=2)


def _dynamic_batch(signature: OutputSignature, rows: Any = None) -> Downstream:
    weights = _weights(_shape(signature), 7)
    return Downstream("", lambda y, *rest: tf.reduce_sum(y * _of_rows(weights, rows, y)), dynamic_batch=True)


def _gatherable(signature: OutputSignature) -> str | None:
    shape = _shape(signature)
    if not shape:
        return "the first output has rank 0: nothing to gather"
    if shape[0] == 0:
        return f"the first output is empty (shape {list(shape)}): there is no row to gather"
    return None


def _multi_output(signature: OutputSignature) -> str | None:
    return None if signature.num_outputs > 1 else "the spec has one output; nothing is left unused"


def _several_float_outputs(signature: OutputSignature) -> str | None:
    if signature.num_outputs == 1:
        return "the spec has one output; `sum` already uses it"
    return None


def _all_outputs(signature: OutputSignature, rows: Any = None) -> Downstream:
    floating = [i for i, dtype in enumerate(signature.dtypes) if dtype.is_floating]

    def loss(*outputs: tf.Tensor) -> tf.Tensor:
        # Weight i + 1 for output i: each output's upstream is its own constant, so none is None or zeros.
        return tf.add_n([float(i + 1) * tf.reduce_sum(outputs[i]) for i in floating])

    return Downstream("", loss)


_SCENARIOS = (
    Scenario("sum", "reduce_sum(y): the all-ones upstream everyone tests with",
             _loss(lambda y, *rest: tf.reduce_sum(y))),
    Scenario("scaled", "reduce_sum(3 * y): upstream all 3", _loss(lambda y, *rest: tf.reduce_sum(3.0 * y))),
    Scenario("weighted", "reduce_sum(y * w), fixed seeded weights: upstream w", _weighted),
    Scenario("mean", "reduce_mean(y): upstream 1/size", _mean),
    Scenario("square", "reduce_sum(y ** 2): upstream 2y, depends on the forward value",
             _loss(lambda y, *rest: tf.reduce_sum(tf.square(y)))),
    Scenario("broadcast", "reduce_sum(y * row), a row broadcast over the leading axes", _broadcast,
             _needs_rank(1, "nothing to broadcast over")),
    Scenario("reduce_axis", "reduce_sum(reduce_sum(y, axis=0) * c): upstream constant along axis 0",
             _reduce_axis, _needs_rank(1, "no axis to reduce")),
    Scenario("gather", "reduce_sum(gather(y, [0, last, 0])): an IndexedSlices upstream", _gather, _gatherable),
    Scenario("gather_twice", "two gathers of y added: IndexedSlices aggregated", _gather_twice, _gatherable),
    Scenario("reuse", "y used twice (2*sum(y) + sum(y*w)): upstreams aggregated before the call", _reuse),
    Scenario("unused_output", "only the first of several outputs is used: the others' upstreams are None or zeros",
             _loss(lambda y, *rest: tf.reduce_sum(y)), _multi_output),
    Scenario("all_outputs", "sum of every float output i times (i + 1): each output's upstream is i + 1, "
             "none None or zeros", _all_outputs, _several_float_outputs),
    Scenario("stop_gradient", "reduce_sum(stop_gradient(y)): no gradient flows",
             _loss(lambda y, *rest: tf.reduce_sum(tf.stop_gradient(y)))),
    Scenario("grad_ys", "y itself with explicit grad_ys / output_gradients (seeded)", _grad_ys),
    Scenario("second_order", "gradient of the sum of the input gradients of reduce_sum(y * w)", _second_order),
    Scenario("dynamic_batch", "reduce_sum(y * w) with the leading dimension unknown while building",
             _dynamic_batch, _needs_rank(1, "no batch dimension")),
)

SCENARIOS: dict[str, Scenario] = {scenario.name: scenario for scenario in _SCENARIOS}


def select_scenarios(names: list[str | Scenario] | tuple[str | Scenario, ...] | None) -> tuple[Scenario, ...]:
    """The scenarios named (registered names, or Scenario objects passed through), all by default."""
    if names is None:
        return _SCENARIOS
    check_names([name for name in names if not isinstance(name, Scenario)], SCENARIOS, "scenario", "scenarios")
    return tuple(name if isinstance(name, Scenario) else SCENARIOS[name] for name in names)


def loss_scenario(loss: Callable[..., tf.Tensor] | Downstream, name: str = "custom",
                  description: str = "your loss") -> Scenario:
    """A scenario from a user's `loss(*outputs) -> tensor` (or a whole Downstream), like `compat.run(loss=)`."""
    if isinstance(loss, Downstream):
        return Scenario(name, description or loss.description, lambda signature, rows=None: loss, shardable=False)
    return Scenario(name, description, _loss(loss), shardable=False)
