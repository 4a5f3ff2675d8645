"""Run a corpus module's entry points in a tf.compat.v1 Graph + Session or eagerly under a GradientTape."""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

DATA = Path(__file__).resolve().parent.parent / "data"
LEGACY = DATA / "legacy"
EXPECTED = DATA / "legacy_expected"
_SEED = 20240610


def corpus_names() -> list[str]:
    return sorted(p.stem for p in LEGACY.glob("*.py"))


@contextlib.contextmanager
def _tensorflow_as_v1() -> Iterator[None]:
    """`import tensorflow as tf` gives tf.compat.v1 while the module loads, as legacy code expects."""
    import tensorflow as tf

    saved = sys.modules["tensorflow"]
    sys.modules["tensorflow"] = tf.compat.v1
    try:
        yield
    finally:
        sys.modules["tensorflow"] = saved


_LOADED: dict[tuple[Path, bool], ModuleType] = {}


def load(path: Path, legacy: bool) -> ModuleType:
    """Import `path` once per process (a legacy module's RegisterGradient cannot run twice)."""
    key = (path.resolve(), legacy)
    if key not in _LOADED:
        _LOADED[key] = _import(path, "legacy" if legacy else "rewritten", legacy)
    return _LOADED[key]


def _import(path: Path, tag: str, legacy: bool) -> ModuleType:
    name = f"_gradcompat_corpus_{tag}_{path.parent.name}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    with _tensorflow_as_v1() if legacy else contextlib.nullcontext():
        spec.loader.exec_module(module)
    return module


def inputs_for(signature: list[tuple[str, list[int]]], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-2.0, 2.0, size=shape).astype(dtype) for dtype, shape in signature]


def _flat(outputs: Any) -> list[Any]:
    return list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]


LOSSES = ("sum", "weighted")


def _weight(tf: Any, output: Any, k: int) -> Any:
    """Fixed pseudo-random weights shaped like `output` (Defun outputs have no static shape)."""
    size = tf.cast(tf.range(tf.size(output)), output.dtype)
    return tf.reshape(tf.cos(size * 1.7 + float(k)), tf.shape(output))


def _loss(tf: Any, outputs: list[Any], kind: str) -> Any:
    if kind == "sum":
        return tf.add_n([tf.reduce_sum(o) for o in outputs])
    return tf.add_n([tf.reduce_sum(o * _weight(tf, o, k)) for k, o in enumerate(outputs)])


def run_session(module: ModuleType, entry: str, values: list[np.ndarray], kind: str) -> tuple[list, list]:
    """Forward outputs and input gradients of `entry` in a fresh tf.compat.v1 Graph + Session."""
    import tensorflow as tf

    v1 = tf.compat.v1
    with tf.Graph().as_default():
        xs = [v1.placeholder(v.dtype, v.shape) for v in values]
        outputs = _flat(getattr(module, entry)(*xs))
        loss = _loss(tf, outputs, kind)
        grads = v1.gradients(loss, xs)
        feed = dict(zip(xs, values, strict=True))
        with v1.Session() as session:
            forward = session.run(outputs, feed)
            backward = [None if g is None else session.run(g, feed) for g in grads]
    return forward, backward


def run_eager(module: ModuleType, entry: str, values: list[np.ndarray], kind: str) -> tuple[list, list]:
    """The same, eagerly under a tf.GradientTape (the rewritten module only)."""
    import tensorflow as tf

    xs = [tf.constant(v) for v in values]
    with tf.GradientTape() as tape:
        for x in xs:
            tape.watch(x)
        outputs = _flat(getattr(module, entry)(*xs))
        loss = _loss(tf, outputs, kind)
    grads = tape.gradient(loss, xs)
    return [o.numpy() for o in outputs], [None if g is None else g.numpy() for g in grads]


def same(a: list, b: list) -> bool:
    """Equal values; a None gradient equals zeros (TensorFlow reports unconnected inputs either way)."""
    if len(a) != len(b):
        return False
    for u, v in zip(a, b, strict=True):
        if u is None and v is None:
            continue
        u = np.zeros_like(v) if u is None else u
        v = np.zeros_like(u) if v is None else v
        if np.shape(u) != np.shape(v) or not np.allclose(u, v, rtol=1e-5, atol=1e-6):
            return False
    return True
