"""A spec's output signature (dtypes and static shapes), found by building its forward once."""

from __future__ import annotations

import dataclasses
import functools

import tensorflow as tf

from compat.spec import GradientSpec


@dataclasses.dataclass(frozen=True)
class OutputSignature:
    dtypes: tuple[tf.DType, ...]
    shapes: tuple[tuple[int | None, ...] | None, ...]

    @property
    def num_outputs(self) -> int:
        return len(self.dtypes)


@functools.lru_cache(maxsize=256)
def output_signature(spec: GradientSpec) -> OutputSignature:
    """Outputs of `spec.forward` on placeholders shaped like the example inputs, in a scratch graph.

    Raises SpecError naming the spec when forward fails or returns something other than tensors.
    """
    from compat.probe import Probe

    probe = Probe(spec, "signature")
    with tf.Graph().as_default():
        placeholders = [tf.compat.v1.placeholder(value.dtype, value.shape) for value in spec.sources]
        outputs = [tf.convert_to_tensor(output) for output in probe.forward(*placeholders)]
    return OutputSignature(
        dtypes=tuple(output.dtype for output in outputs),
        shapes=tuple(None if output.shape.rank is None else tuple(output.shape.as_list()) for output in outputs),
    )
