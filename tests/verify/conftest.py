"""Pairs of tiny legacy modules and their TF2 rewrites, right and wrong, for the compat.verify tests."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

LEGACY = textwrap.dedent('''
    import tensorflow as tf
    from tensorflow.python.framework import function, ops

    GRADCOMPAT_ENTRIES = {
        "ste": [("float32", [4])],
        "half_ste": [("float32", [2, 3])],
        "defun_ste": [("float32", [3])],
        "python_grad_ste": [("float32", [3])],
        "two_outputs": [("float32", [3]), ("float32", [3])],
        "wrong_scale": [("float32", [3])],
        "wrong_forward": [("float32", [3])],
        "numpy_in_grad": [("float32", [3])],
        "missing": [("float32", [3])],
    }


    @ops.RegisterGradient("VerifyTestHalf")
    def _half_grad(op, grad):
        return 0.5 * grad


    @function.Defun(tf.float32, tf.float32)
    def clipped_grad(x, dy):
        return dy * tf.cast(tf.abs(x) <= 1.0, dy.dtype)


    @function.Defun(tf.float32, grad_func=clipped_grad)
    def clipped_sign(x):  # a Defun's name may not start with "_": it names graph nodes
        return tf.sign(x)


    @function.Defun(tf.float32, python_grad_func=lambda op, dy: 0.5 * dy)
    def half_sign(x):
        return tf.sign(x)


    def python_grad_ste(x):
        return half_sign(x)


    def ste(x):
        with tf.get_default_graph().gradient_override_map({"Sign": "Identity"}):
            return tf.sign(x)


    def half_ste(x):
        with tf.get_default_graph().gradient_override_map({"Sign": "VerifyTestHalf"}):
            return tf.sign(x) * 2.0


    def defun_ste(x):
        return clipped_sign(x)


    def two_outputs(x, w):
        with tf.get_default_graph().gradient_override_map({"Round": "Identity"}):
            return x * w, tf.round(x)


    wrong_scale = ste
    wrong_forward = ste
    numpy_in_grad = ste


    def missing(x):
        return x
''')

REWRITTEN = textwrap.dedent('''
    import tensorflow as tf


    @tf.custom_gradient
    def _identity_sign(x):
        return tf.sign(x), lambda dy: dy


    @tf.custom_gradient
    def _half_sign(x):
        return tf.sign(x), lambda dy: 0.5 * dy


    @tf.custom_gradient
    def _clipped_sign(x):
        def grad(dy):
            return dy * tf.cast(tf.abs(x) <= 1.0, dy.dtype)
        return tf.sign(x), grad


    @tf.custom_gradient
    def _round(x):
        return tf.round(x), lambda dy: dy


    @tf.custom_gradient
    def _double_sign(x):
        return tf.sign(x), lambda dy: 2.0 * dy


    @tf.custom_gradient
    def _numpy_sign(x):
        return tf.sign(x), lambda dy: tf.constant(dy.numpy())  # works eagerly only


    def ste(x):
        return _identity_sign(x)


    def half_ste(x):
        return _half_sign(x) * 2.0


    def defun_ste(x):
        return _clipped_sign(x)


    def python_grad_ste(x):
        return _half_sign(x)


    def two_outputs(x, w):
        return x * w, _round(x)


    def wrong_scale(x):
        return _double_sign(x)


    def wrong_forward(x):
        return _identity_sign(x) + 0.25


    def numpy_in_grad(x):
        return _numpy_sign(x)
''')


def _write_pair(directory: Path, legacy: str, rewritten: str, name: str = "ops") -> tuple[Path, Path]:
    paths = []
    for side, source in (("legacy", legacy), ("rewritten", rewritten)):
        (directory / side).mkdir(parents=True, exist_ok=True)
        path = directory / side / f"{name}.py"
        path.write_text(textwrap.dedent(source))
        paths.append(path)
    return paths[0], paths[1]


@pytest.fixture(name="write_pair", scope="session")
def write_pair_fixture():
    """`write_pair(directory, legacy, rewritten)` writes directory/legacy/ops.py and directory/rewritten/ops.py."""
    return _write_pair


@pytest.fixture(name="sources", scope="session")
def sources_fixture() -> tuple[str, str]:
    """The legacy module with many entries and its rewrite, right for some entries and wrong for others."""
    return LEGACY, REWRITTEN


@pytest.fixture(name="pair", scope="module")
def pair_fixture(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return _write_pair(tmp_path_factory.mktemp("pair"), LEGACY, REWRITTEN)
