"""Ragged and sparse example inputs: numpy arrays of the values gradients flow to, with their structure."""

from __future__ import annotations

from typing import Any

import numpy as np


class RaggedArray(np.ndarray):
    """A `tf.RaggedTensor` input given as its flat values (this array) and `row_splits`.

    Gradients are taken with respect to the flat values, the component TensorFlow differentiates a RaggedTensor
    by; the forward receives the RaggedTensor `tf.RaggedTensor.from_row_splits(values, row_splits)`. Everything
    numpy does to it (a dtype cast for the dtype axis) keeps `row_splits`.
    """

    row_splits: np.ndarray

    def __new__(cls, values: Any, row_splits: Any) -> RaggedArray:
        array = np.asarray(values).view(cls)
        array.row_splits = np.asarray(row_splits, np.int64)
        if array.ndim < 1 or array.row_splits.ndim != 1 or not array.row_splits.size:
            raise ValueError("compat.RaggedArray(values, row_splits): values need a leading axis and row_splits "
                             "a non-empty 1-D list of offsets, e.g. RaggedArray([1., 2., 3.], [0, 2, 3])")
        if array.row_splits[0] != 0 or array.row_splits[-1] != len(array) or np.any(np.diff(array.row_splits) < 0):
            raise ValueError(f"compat.RaggedArray: row_splits {array.row_splits.tolist()} must start at 0, never "
                             f"decrease and end at the number of values ({len(array)})")
        return array

    def __array_finalize__(self, obj: Any) -> None:
        if obj is not None:
            self.row_splits = getattr(obj, "row_splits", np.zeros(1, np.int64))

    def __reduce__(self) -> Any:
        return (RaggedArray, (np.asarray(self), self.row_splits))

    def structure(self) -> str:
        return f"ragged rows {np.diff(self.row_splits).tolist()}"

    def assemble(self, values: Any) -> Any:
        """The RaggedTensor made of `values` (a tensor of this array's shape) and these row splits."""
        import tensorflow as tf

        return tf.RaggedTensor.from_row_splits(values, tf.constant(self.row_splits), validate=False)


class SparseArray(np.ndarray):
    """A `tf.SparseTensor` input given as its values (this array), `indices` and `dense_shape`.

    TensorFlow differentiates a SparseTensor by its values (it refuses the SparseTensor itself as a gradient
    source): gradients are taken with respect to them; the forward receives `tf.SparseTensor(indices, values,
    dense_shape)`.
    """

    indices: np.ndarray
    dense_shape: np.ndarray

    def __new__(cls, indices: Any, values: Any, dense_shape: Any) -> SparseArray:
        array = np.asarray(values).view(cls)
        array.indices = np.asarray(indices, np.int64)
        array.dense_shape = np.asarray(dense_shape, np.int64)
        if array.ndim != 1 or array.indices.shape != (len(array), len(array.dense_shape)):
            raise ValueError(f"compat.SparseArray(indices, values, dense_shape): indices must have one row of "
                             f"{len(array.dense_shape)} coordinates per value ({len(array)} values), got shape "
                             f"{array.indices.shape}")
        return array

    def __array_finalize__(self, obj: Any) -> None:
        if obj is not None:
            self.indices = getattr(obj, "indices", np.zeros((0, 0), np.int64))
            self.dense_shape = getattr(obj, "dense_shape", np.zeros(0, np.int64))

    def __reduce__(self) -> Any:
        return (SparseArray, (self.indices, np.asarray(self), self.dense_shape))

    def structure(self) -> str:
        return f"sparse {self.dense_shape.tolist()} with {len(self)} values"

    def assemble(self, values: Any) -> Any:
        """The SparseTensor made of `values` and these indices and dense shape."""
        import tensorflow as tf

        return tf.SparseTensor(tf.constant(self.indices), values, tf.constant(self.dense_shape))


COMPOSITES = (RaggedArray, SparseArray)


def is_composite(value: Any) -> bool:
    return isinstance(value, COMPOSITES)


def component(value: Any) -> Any:
    """The tensor TensorFlow differentiates a composite by: a RaggedTensor's flat values, a SparseTensor's values;
    anything else as it is."""
    if hasattr(value, "flat_values"):
        return value.flat_values
    if is_sparse_tensor(value):
        return value.values
    return value


def is_sparse_tensor(value: Any) -> bool:
    return type(value).__name__ == "SparseTensor" and hasattr(value, "dense_shape")


def rebuild(like: Any, values: Any) -> Any:
    """`like` (a RaggedTensor or SparseTensor) with `values` as the component gradients flow to; else `values`."""
    import tensorflow as tf

    if hasattr(like, "with_flat_values"):
        return like.with_flat_values(values)
    if is_sparse_tensor(like):
        return tf.SparseTensor(like.indices, values, like.dense_shape)
    return values


def assembled(examples: Any, tensors: Any) -> list[Any]:
    """`tensors` (the values of `examples`, then anything after them) with each ragged or sparse example's
    structure put back around its values: what a Defun, which takes only tensors, rebuilds inside."""
    tensors = list(tensors)
    return [example.assemble(tensor) if is_composite(example) else tensor
            for example, tensor in zip(examples, tensors, strict=False)] + tensors[len(examples):]
