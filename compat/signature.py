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
    """Outputs of the spec's model (the forward, unless `spec.model` uses it otherwise) on placeholders shaped like
    the example inputs, in a scratch graph: what scenarios apply to.

    Raises SpecError naming the spec when forward fails or returns something other than tensors.
    """
    return _signature(spec, modelled=True)


@functools.lru_cache(maxsize=256)
def forward_signature(spec: GradientSpec) -> OutputSignature:
    """Outputs of one call of `spec.forward` (what a gradient function receives upstreams for)."""
    return _signature(spec, modelled=False)


def _signature(spec: GradientSpec, modelled: bool) -> OutputSignature:
    from compat.application import applied
    from compat.probe import Probe

    probe = Probe(spec, "signature")
    with tf.Graph().as_default():
        placeholders = [tf.compat.v1.placeholder(value.dtype, value.shape) for value in spec.sources]
        found = applied(lambda *xs: probe.forward(*xs), spec, modelled)(*placeholders)
        outputs = [tf.convert_to_tensor(output) for output in found]
    return OutputSignature(
        dtypes=tuple(output.dtype for output in outputs),
        shapes=tuple(None if output.shape.rank is None else tuple(output.shape.as_list()) for output in outputs),
    )
