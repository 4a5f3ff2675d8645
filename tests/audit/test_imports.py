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
    ("def f():\n    import tensorflow as tf", "tf.Session", None),  # bound in f only, not at module level
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



def _qualnames_in(src: str) -> dict[int, str | None]:
    """Line -> qualname of the function called first on that line."""
    tree = ast.parse(src)
    names = ImportMap.from_tree(tree)
    out: dict[int, str | None] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.lineno not in out:
            out[node.lineno] = names.qualname(node.func)
    return out


def test_names_resolve_in_their_own_scope():
    src = ("import tensorflow as tf\n"
           "def f():\n"
           "    import numpy as tf\n"
           "    tf.sign(1)\n"
           "tf.RegisterGradient('A')\n"
           "def g():\n"
           "    tf.RegisterGradient('B')\n"
           "class C:\n"
           "    tf = None\n"
           "    def m(self):\n"
           "        tf.RegisterGradient('C')\n")
    found = _qualnames_in(src)
    assert found[4] == "numpy.sign"
    assert found[5] == found[7] == found[11] == "tensorflow.RegisterGradient"  # class bodies do not enclose


def test_global_and_try_except_fallback():
    src = ("try:\n    import tensorflow as tf\nexcept ImportError:\n    tf = None\n"
           "def f():\n    global tf\n    tf = 1\n    tf.RegisterGradient('A')\n")
    assert _qualnames_in(src)[8] == "tensorflow.RegisterGradient"


@pytest.mark.parametrize("src", [
    "import tensorflow as tf\nRG = tf.RegisterGradient\nRG('A')\n",
    "from tensorflow.python.framework import ops\nreg = ops.RegisterGradient\nreg('A')\n",
    "import tensorflow as tf\nRG: object = getattr(tf, 'RegisterGradient')\nRG('A')\n",
    "x = 1\nx = 2\n__import__('tensorflow').RegisterGradient('A')\n",
    "import importlib\nx = 2\nimportlib.import_module('tensorflow.compat.v1').RegisterGradient('A')\n",
    "import tensorflow as tf\nA, B = tf.RegisterGradient, tf.sign\nA('A')\n",
], ids=["assigned", "assigned_ops", "getattr", "dunder_import", "import_module", "tuple"])
def test_aliases_made_at_run_time(src):
    assert tf_leaf(_qualnames_in(src)[3]) == "RegisterGradient"


def test_alias_cycles_and_shadowed_builtins_resolve_to_nothing():
    assert _qualnames_in("a = b\nb = a\na.RegisterGradient('A')\n")[3] is None
    assert _qualnames_in("import tensorflow as tf\ngetattr = dict\ngetattr(tf, 'x')('A')\n")[3] is None


def test_module_level_aliases_for_tools_that_rewrite_imports():
    import ast

    from compat.audit.imports import ImportMap

    tree = ast.parse("import tensorflow.compat.v1 as tf\nfrom tensorflow.python.framework import ops\n"
                     "RG = ops.RegisterGradient\ndef f():\n    import numpy as np\n")
    assert ImportMap.from_tree(tree).aliases == {
        "tf": "tensorflow.compat.v1", "ops": "tensorflow.python.framework.ops",
        "RG": "tensorflow.python.framework.ops.RegisterGradient"}
