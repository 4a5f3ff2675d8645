"""Run a corpus module's entry points in a tf.compat.v1 Graph + Session or eagerly under a GradientTape.

Also the rewriter tests' shared checks: `differences` between a legacy module and its rewrite, `todo_reasons`.
"""

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


def run_function(module: ModuleType, entry: str, values: list[np.ndarray], kind: str) -> tuple[list, list]:
    """The same, under a tf.GradientTape inside a tf.function (the rewritten module only)."""
    import tensorflow as tf

    @tf.function
    def step(*xs: Any) -> tuple[list, list]:
        with tf.GradientTape() as tape:
            for x in xs:
                tape.watch(x)
            outputs = _flat(getattr(module, entry)(*xs))
            loss = _loss(tf, outputs, kind)
        return outputs, tape.gradient(loss, list(xs))

    outputs, grads = step(*[tf.constant(v) for v in values])
    return [o.numpy() for o in outputs], [None if g is None else g.numpy() for g in grads]


CONTEXTS = {"v1_session": run_session, "eager_tape": run_eager, "function_tape": run_function}


def differences(legacy: ModuleType, rewritten: ModuleType, entries: dict[str, list[tuple[str, list[int]]]],
                contexts: tuple[str, ...] = tuple(CONTEXTS), losses: tuple[str, ...] = LOSSES,
                seeds: tuple[int, ...] = (0, 1)) -> list[str]:
    """Where `rewritten` (TF2) computes other forward values or input gradients than `legacy` in a v1 Session."""
    found = []
    for entry, signature in entries.items():
        for seed in seeds:
            values = inputs_for(signature, seed)
            for kind in losses:
                want_y, want_dx = run_session(legacy, entry, values, kind)
                for context in contexts:
                    got_y, got_dx = CONTEXTS[context](rewritten, entry, values, kind)
                    where = f"{entry} (seed {seed}, loss {kind}, {context})"
                    if not same(want_y, got_y):
                        found.append(f"{where}: forward {want_y} in TF1, {got_y} rewritten")
                    if not same(want_dx, got_dx):
                        found.append(f"{where}: input gradients {want_dx} in TF1, {got_dx} rewritten")
    return found


def load_pair(folder: Path, name: str, legacy_source: str, rewritten_source: str) -> tuple[ModuleType, ModuleType]:
    """Write and import a legacy module (tensorflow as tf.compat.v1) and its rewrite (TF2), once per process."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = folder / f"{name}_legacy.py", folder / f"{name}_rewritten.py"
    for path, text in zip(paths, (legacy_source, rewritten_source), strict=True):
        path.write_text(text, encoding="utf-8")
    return load(paths[0], legacy=True), load(paths[1], legacy=False)


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


def todo_reasons(source: str) -> list[str]:
    """The TODO reasons the rewriter gives for `source`, asserting it changed nothing but add TODO comments.

    A leftover `tf.get_default_graph()` is spelled `tf.compat.v1.get_default_graph()` in any file with a site.
    """
    from compat.rewrite import rewrite_source
    from compat.rewrite.todo import PREFIX

    result = rewrite_source(source)
    kept = "".join(line for line in result.text.splitlines(keepends=True) if not line.lstrip().startswith(PREFIX))
    assert kept.replace("tf.compat.v1.get_default_graph()", "tf.get_default_graph()") == source, result.text
    return [site.reason for site in result.todo]
