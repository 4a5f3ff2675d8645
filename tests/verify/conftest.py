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


TRUST_LEGACY = textwrap.dedent('''
    import os

    import numpy as np
    import tensorflow as tf
    from tensorflow.python.framework import ops

    GRADCOMPAT_ENTRIES = {
        "scaled_by_w": [("float32", [3])],
        "register_inside": [("float32", [3])],
        "wrong_dw": [("float32", [3])],
        "bad_shape": [("float32", [4])],
        "aborts_on_negative": [("float32", [3])],
        "seeded_noise": [("float32", [3])],
        "unseeded_noise": [("float32", [3])],
        "uses_contrib": [("float32", [3])],
    }


    @ops.RegisterGradient("TrustHalf")
    def _half(op, grad):
        return 0.5 * grad


    def scaled_by_w(x):  # get_variable without reuse: it must run once per graph, as in the program
        w = tf.get_variable("W", shape=[3], initializer=tf.ones_initializer())
        with tf.get_default_graph().gradient_override_map({"Sign": "TrustHalf"}):
            return tf.sign(x) * w


    def register_inside(x):  # registering twice in one process raises KeyError
        @ops.RegisterGradient("TrustInside")
        def _inside(op, grad):
            return 3.0 * grad

        with tf.get_default_graph().gradient_override_map({"Sign": "TrustInside"}):
            return tf.sign(x)


    wrong_dw = scaled_by_w


    @ops.RegisterGradient("TrustBadShape")
    def _bad_shape(op, grad):
        return grad[:3]


    def bad_shape(x):  # TF1 refuses this gradient; TF2 tapes accept it
        with tf.get_default_graph().gradient_override_map({"Sign": "TrustBadShape"}):
            return tf.sign(x)


    def _die_on_negative(upstream):
        if np.any(upstream < 0):
            os.write(2, b"F1204 00:00:00.000000 1 trust.cc:1] Check failed: upstream >= 0 (-0.5 vs. 0)\\n")
            os.abort()
        return upstream


    @ops.RegisterGradient("TrustAbort")
    def _abort(op, grad):
        return tf.numpy_function(_die_on_negative, [grad], grad.dtype)


    def aborts_on_negative(x):
        with tf.get_default_graph().gradient_override_map({"Sign": "TrustAbort"}):
            return tf.sign(x)


    def seeded_noise(x):
        return x * tf.random.uniform([3], seed=7)


    def unseeded_noise(x):
        return x * tf.random.uniform([3])


    def uses_contrib(x):
        return tf.contrib.layers.flatten(x)
''')

TRUST_REWRITTEN = textwrap.dedent('''
    import tensorflow as tf


    @tf.custom_gradient
    def _half_sign(x):
        return tf.sign(x), lambda dy: 0.5 * dy


    @tf.custom_gradient
    def _triple_sign(x):
        return tf.sign(x), lambda dy: 3.0 * dy


    @tf.custom_gradient
    def _identity_sign(x):
        return tf.sign(x), lambda dy: dy


    @tf.custom_gradient
    def _first_three(x):
        return tf.sign(x), lambda dy: dy[:3]


    def scaled_by_w(x):
        w = tf.compat.v1.get_variable("W", shape=[3], initializer=tf.compat.v1.ones_initializer())
        return _half_sign(x) * w


    def register_inside(x):
        return _triple_sign(x)


    def wrong_dw(x):  # the input's gradient is right, the variable's is not
        w = tf.compat.v1.get_variable("W", shape=[3], initializer=tf.compat.v1.ones_initializer())
        return _half_sign(x) * tf.stop_gradient(w)


    def bad_shape(x):
        return _first_three(x)


    def aborts_on_negative(x):
        return _identity_sign(x)


    def seeded_noise(x):
        return x * tf.random.uniform([3], seed=7)


    def unseeded_noise(x):
        return x * tf.random.uniform([3])


    def uses_contrib(x):
        return tf.reshape(x, [3])
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


@pytest.fixture(name="trust_report", scope="session")
def trust_report_fixture(tmp_path_factory: pytest.TempPathFactory):
    """The trust pair verified in v1_session and eager_tape (tf.compat.v1.get_variable cannot run inside a
    tf.function): fresh state per scenario, variables, aborts, randomness, TF1-only symbols."""
    from compat.verify import verify_files

    legacy, rewritten = _write_pair(tmp_path_factory.mktemp("trust"), TRUST_LEGACY, TRUST_REWRITTEN)
    return verify_files(str(legacy), str(rewritten), contexts=("v1_session", "eager_tape"))
