"""Mechanism plumbing: unique registration names, output dtypes, the registry."""

import re

import numpy as np
import pytest
import tensorflow as tf

import compat
from compat.mechanisms import MECHANISMS, unique_name
from compat.mechanisms.base import output_dtypes
from compat.probe import Probe


def test_unique_names_are_valid_and_never_repeat():
    names = {unique_name("my spec/v2") for _ in range(50)}
    assert len(names) == 50
    assert all(name.startswith("gc_my_spec_v2_") for name in names)


def test_a_specs_names_are_numbered_by_its_own_builds_only():
    # Worker processes (`jobs=`) build other specs before this one, or none: its names must not depend on them.
    first = unique_name("numbered alone")
    others = [unique_name(f"another spec {i % 2}") for i in range(3)]
    second = unique_name("numbered alone")
    assert [first, second] == ["gc_numbered_alone_0", "gc_numbered_alone_1"]
    assert len(set(others)) == 3


@pytest.mark.parametrize("spec_name", ["_private_op", "градиент", "<op>", "a" * 300, "9lives", "..."])
def test_unique_names_from_any_spec_name_are_valid_tensorflow_names(spec_name):
    name = unique_name(spec_name)
    assert re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name) and len(name) < 80


def test_output_dtypes_from_a_scratch_graph():
    spec = compat.GradientSpec("dt", lambda x: (x, tf.cast(x, tf.int32)), lambda i, o, u: [u[0]],
                               [np.ones(2, np.float64)])
    assert output_dtypes(Probe(spec, "defun_grad_func@v1_session")) == [tf.float64, tf.int32]


def test_registry_names_and_docstrings_show_user_code():
    assert list(MECHANISMS) == ["defun_grad_func", "defun_python_grad_func", "override_map", "custom_gradient"]
    for name, mechanism in MECHANISMS.items():
        assert mechanism.name == name and mechanism.summary
        module_doc = __import__(type(mechanism).__module__, fromlist=["_"]).__doc__
        assert "def " in module_doc, f"{name}: the module docstring must show the hand-written user code"
