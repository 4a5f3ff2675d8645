"""Alias resolution: every import form users write for TensorFlow's gradient APIs."""

from __future__ import annotations

import ast

import pytest

from compat.audit.imports import ImportMap, tf_leaf, tf_public_name


def _qualname(src: str, expr: str) -> str | None:
    return ImportMap.from_tree(ast.parse(src)).qualname(ast.parse(expr, mode="eval").body)


@pytest.mark.parametrize("src,expr,expected", [
    ("import tensorflow as tf", "tf.RegisterGradient", "tensorflow.RegisterGradient"),
    ("import tensorflow.compat.v1 as tf", "tf.get_default_graph", "tensorflow.compat.v1.get_default_graph"),
    ("import tensorflow.compat.v1", "tensorflow.compat.v1.Session", "tensorflow.compat.v1.Session"),
    ("from tensorflow.python.framework import function as tff", "tff.Defun",
     "tensorflow.python.framework.function.Defun"),
    ("from tensorflow.python.framework.function import Defun", "Defun",
     "tensorflow.python.framework.function.Defun"),
    ("from tensorflow.python.framework import ops", "ops.RegisterGradient",
     "tensorflow.python.framework.ops.RegisterGradient"),
    ("from tensorflow.python.framework.ops import *", "RegisterGradient",
     "tensorflow.python.framework.ops.RegisterGradient"),
    ("def f():\n    import tensorflow as tf", "tf.Session", "tensorflow.Session"),
    ("import numpy as np", "np.sign", "numpy.sign"),
    ("", "tf.RegisterGradient", None),
    ("import tensorflow as tf", "tf.get_default_graph().gradient_override_map", None),
])
def test_qualname(src, expr, expected):
    assert _qualname(src, expr) == expected


def test_leaf_and_public_name():
    assert tf_leaf("tensorflow.python.framework.ops.RegisterGradient") == "RegisterGradient"
    assert tf_leaf("numpy.RegisterGradient") is None
    assert tf_public_name("tensorflow.Session") == ("Session", False)
    assert tf_public_name("tensorflow.compat.v1.train.Saver") == ("train.Saver", True)
    assert tf_public_name("tensorflow.python.framework.ops.get_default_graph") is None
