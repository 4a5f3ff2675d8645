"""Tests for compat/application.py: a spec's op applied to composite inputs and through `spec.model`."""

import numpy as np
import tensorflow as tf

import compat
from compat.application import applied, as_outputs

X = np.array([1.0, -2.0, 3.0], np.float32)


def _grad(inputs, outputs, upstreams):
    return [upstreams[0]]


def test_outputs_are_always_a_tuple():
    assert as_outputs(1) == (1,) and as_outputs([1, 2]) == (1, 2) and as_outputs((1,)) == (1,)


def test_a_plain_spec_gets_the_op_itself():
    spec = compat.GradientSpec("plain", tf.identity, _grad, [X])

    def op(x):
        return (x,)

    assert applied(op, spec) is op


def test_a_model_uses_the_op_as_the_spec_says_and_modelled_false_does_not():
    spec = compat.GradientSpec("modelled", tf.identity, _grad, [X], model=lambda call, x: call(x) * 3.0)

    def op(x):
        return (x + 1.0,)

    (modelled,) = applied(op, spec)(tf.constant(X))
    (plain,) = applied(op, spec, modelled=False)(tf.constant(X))
    np.testing.assert_allclose(modelled.numpy(), (X + 1.0) * 3.0)
    np.testing.assert_allclose(plain.numpy(), X + 1.0)


def test_a_ragged_input_is_assembled_from_its_values():
    ragged = compat.RaggedArray(np.array([1.0, 2.0, 3.0], np.float32), [0, 2, 2, 3])
    spec = compat.GradientSpec("ragged", lambda r: r.values, _grad, [ragged])
    seen = []

    def op(x):
        seen.append(x)
        return (x.values,)

    applied(op, spec)(tf.constant(np.asarray(ragged)))
    assert isinstance(seen[0], tf.RaggedTensor) and seen[0].row_splits.numpy().tolist() == [0, 2, 2, 3]
