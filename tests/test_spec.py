"""GradientSpec validation: bad specs fail at construction with a message naming the spec and the fix."""

import numpy as np
import pytest

import compat


def _grad(inputs, outputs, upstreams):
    return [upstreams[0]]


X = np.ones(3, np.float32)


def _variables_grad(inputs, outputs, upstreams, variables):
    return [upstreams[0]], [None for _ in variables]


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
        (dict(name="s", forward=abs, gradient=_grad, example_inputs=[X], model=3), "`model` must be callable"),
        (dict(name="s", forward=abs, gradient=_variables_grad, example_inputs=[X], variables=[X]),
         "create them in the forward"),
        (dict(name="s", forward=abs, gradient=_variables_grad, example_inputs=[X], op_type="Abs"),
         "RegisterGradient has no `variables=`"),
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


def test_a_gradient_with_a_variables_parameter_takes_the_variables_the_forward_creates():
    assert compat.GradientSpec("v", abs, _variables_grad, [X]).takes_variables
    assert compat.GradientSpec("kw", abs, lambda i, o, u, *, variables: ([u[0]], []), [X]).takes_variables
    assert not compat.GradientSpec("plain", abs, _grad, [X]).takes_variables
    assert not compat.GradientSpec("any", abs, lambda *args, **kwargs: [args[2][0]], [X]).takes_variables
    only_variables = compat.GradientSpec("no_inputs", lambda: 0, _variables_grad, [])  # a forward of variables only
    assert only_variables.num_inputs == 0


def test_ragged_and_sparse_inputs_are_their_values_and_keep_their_structure_through_a_cast():
    ragged = compat.RaggedArray(np.array([1.0, 2.0, 3.0], np.float32), [0, 2, 2, 3])
    sparse = compat.SparseArray([[0, 1], [2, 0]], np.array([4.0, 5.0], np.float32), [3, 2])
    spec = compat.GradientSpec("composite", abs, _grad, [ragged, sparse])
    cast = spec.with_inputs([value.astype(np.float64) for value in spec.example_inputs])
    assert cast.example_inputs[0].row_splits.tolist() == [0, 2, 2, 3] and cast.example_inputs[0].dtype == np.float64
    assert cast.example_inputs[1].indices.tolist() == [[0, 1], [2, 0]]
    assert cast.example_inputs[1].dense_shape.tolist() == [3, 2]
    assert np.asarray(ragged).tolist() == [1.0, 2.0, 3.0] and type(np.asarray(ragged)) is np.ndarray
    with pytest.raises(ValueError, match="row_splits .* must start at 0"):
        compat.RaggedArray(np.ones(3, np.float32), [0, 2])
    with pytest.raises(ValueError, match="one row of 2 coordinates per value"):
        compat.SparseArray([[0, 1]], np.ones(2, np.float32), [3, 2])
