"""Downstream: what happens to an op's outputs after it, which is what sets the upstream gradient."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any


@dataclasses.dataclass(frozen=True, eq=False)
class Downstream:
    """The computation after the op, and how its gradient is requested.

    Attributes:
      name: shown in reports.
      loss: `loss(*outputs) -> target`. With no `output_gradients`, gradients of the target's sum are
        taken (TensorFlow's default for a non-scalar target).
      output_gradients: `output_gradients(target) -> tensor` given to TensorFlow as `grad_ys` /
        `output_gradients` for the target, or None.
      order: 1 for d(target)/d(inputs); 2 for the gradient of the sum of those gradients (second order).
      dynamic_batch: in graph contexts, feed the inputs through a leading dimension of unknown size.
      shard: `shard(rows) -> Downstream`, this downstream's part for the rows `rows` (an int tensor or array)
        of the batch, so the parts of every shard add up to the whole; None when it cannot be split (a
        distributed context then reports the cell `unsupported`).
    """

    name: str
    loss: Callable[..., Any]
    output_gradients: Callable[[Any], Any] | None = None
    order: int = 1
    dynamic_batch: bool = False
    description: str = ""
    shard: Callable[[Any], Downstream] | None = None

    def __post_init__(self) -> None:
        if self.order not in (1, 2):
            raise ValueError(f"downstream `{self.name}`: order must be 1 or 2, got {self.order}")
        if not callable(self.loss):
            raise ValueError(f"downstream `{self.name}`: loss must be callable as loss(*outputs) -> tensor")


def scaled(downstream: Downstream, factor: float) -> Downstream:
    """`downstream` with its target multiplied by `factor` (its `grad_ys` instead, when it has them)."""
    import tensorflow as tf

    if downstream.output_gradients is not None:
        seed = downstream.output_gradients
        return dataclasses.replace(downstream,
                                   output_gradients=lambda target: seed(target) * tf.cast(factor, target.dtype))
    loss = downstream.loss

    def scaled_loss(*outputs: Any) -> Any:
        target = loss(*outputs)
        return target * tf.cast(factor, target.dtype)

    return dataclasses.replace(downstream, loss=scaled_loss)


def _sum_first_output(*outputs: Any) -> Any:
    import tensorflow as tf

    return tf.reduce_sum(outputs[0])


SUM = Downstream("sum", _sum_first_output, description="reduce_sum of the first output: all-ones upstream")


def as_downstream(loss: Downstream | Callable[..., Any] | None) -> Downstream:
    """A Downstream from what `compat.run` accepts: None (sum of the first output), a callable or one."""
    if loss is None:
        return SUM
    if isinstance(loss, Downstream):
        return loss
    if callable(loss):
        return Downstream(getattr(loss, "__name__", "loss"), loss)
    raise TypeError(f"loss must be None, a callable loss(*outputs) -> tensor, or a Downstream; got {loss!r}")
