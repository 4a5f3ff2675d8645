"""The built-in catalogue: real-world custom gradients, each as a GradientSpec."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from compat.spec import GradientSpec

# Away from 0 (sign), from ±1 (clipping edges) and from .5 (rounding ties), so every gradient is well defined.
_X = np.array([[0.3, -1.7, 2.2], [-0.45, 0.8, -2.6], [1.3, -0.2, 0.65], [-3.1, 0.15, 1.9]], np.float32)
_Y = np.array([[1.1, -0.6, 0.35], [2.4, -1.2, 0.7], [-0.9, 1.6, -2.05], [0.55, -0.35, 1.45]], np.float32)


def _tf():
    import tensorflow as tf

    return tf


def _dense(upstream):
    """Upstreams may arrive as IndexedSlices; these gradients are elementwise, so densify first."""
    return _tf().convert_to_tensor(upstream)


def sign_ste() -> GradientSpec:
    tf = _tf()
    return GradientSpec("sign_ste", tf.sign, lambda i, o, u: [_dense(u[0])], [_X], op_type="Sign",
                        description="sign forward, straight-through (identity) gradient")


def scaled_ste() -> GradientSpec:
    tf = _tf()
    return GradientSpec("scaled_ste", tf.sign, lambda i, o, u: [0.5 * _dense(u[0])], [_X], op_type="Sign",
                        description="the seed question's op: sign forward, straight-through gradient x 0.5")


CATALOGUE: dict[str, Callable[[], GradientSpec]] = {
    "sign_ste": sign_ste,
    "scaled_ste": scaled_ste,
}
"""Catalogue name -> a function building the spec (TensorFlow is imported only when it is called)."""


def catalogue_spec(name: str) -> GradientSpec:
    try:
        return CATALOGUE[name]()
    except KeyError:
        raise KeyError(f"unknown catalogue spec {name!r}; choose from {sorted(CATALOGUE)}") from None
