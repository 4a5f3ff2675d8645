"""GradientSpec validation: bad specs fail at construction with a message naming the spec and the fix."""

import numpy as np
import pytest

import compat


def _grad(inputs, outputs, upstreams):
    return [upstreams[0]]


X = np.ones(3, np.float32)


@pytest.mark.parametrize(
    "kwargs, expected",
    [
        (dict(name="", forward=abs, gradient=_grad, example_inputs=[X]), "non-empty string"),
        (dict(name="s", forward=3, gradient=_grad, example_inputs=[X]), "spec `s`: `forward` must be callable"),
        (dict(name="s", forward=abs, gradient=None, example_inputs=[X]), "spec `s`: `gradient` must be callable"),
        (dict(name="s", forward=abs, gradient=_grad, example_inputs=[]), "spec `s`: `example_inputs` is empty"),
        (dict(name="s", forward=abs, gradient=_grad, example_inputs=[[1.0, 2.0]]),
         "example_inputs[0] is a list, not a numpy array; wrap it with np.asarray"),
        (dict(name="s", forward=abs, gradient=_grad, example_inputs=X), "must be a list of numpy arrays"),
        (dict(name="s", forward=abs, gradient=_grad, example_inputs=[X], op_type="sign"), "not a TensorFlow op"),
    ],
)
def test_invalid_specs_name_the_spec_and_the_fix(kwargs, expected):
    with pytest.raises(compat.SpecError) as caught:
        compat.GradientSpec(**kwargs)
    assert expected in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_valid_spec_is_frozen_and_keeps_inputs_as_a_tuple():
    spec = compat.GradientSpec("ok", abs, _grad, [X, X], op_type="Abs")
    assert all(a is X for a in spec.example_inputs)
    assert isinstance(spec.example_inputs, tuple)
    assert spec.num_inputs == 2
    with pytest.raises(AttributeError):
        spec.name = "other"  # type: ignore[misc]
    assert "op_type='Abs'" in repr(spec) and "float32[3]" in repr(spec)


def test_with_inputs_returns_a_new_spec():
    spec = compat.GradientSpec("ok", abs, _grad, [X])
    other = spec.with_inputs([X.astype(np.float64)])
    assert other.example_inputs[0].dtype == np.float64
    assert spec.example_inputs[0].dtype == np.float32
