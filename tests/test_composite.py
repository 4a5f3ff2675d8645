"""compat.composite: ragged and sparse example inputs keep their structure through numpy, pickling and assembly."""

import pickle

import numpy as np
import pytest
import tensorflow as tf

from compat.composite import RaggedArray, SparseArray, assembled, component, rebuild


def test_a_dtype_cast_and_a_pickle_round_trip_keep_the_structure():
    ragged = RaggedArray(np.array([1.0, 2.0, 3.0]), [0, 2, 2, 3]).astype(np.float16)
    sparse = pickle.loads(pickle.dumps(SparseArray([[0, 1], [2, 0]], np.array([4.0, 5.0], np.float32), [3, 2])))
    assert isinstance(ragged, RaggedArray) and ragged.dtype == np.float16
    assert ragged.row_splits.tolist() == [0, 2, 2, 3] and ragged.structure() == "ragged rows [2, 0, 1]"
    assert sparse.indices.tolist() == [[0, 1], [2, 0]] and sparse.structure() == "sparse [3, 2] with 2 values"


@pytest.mark.parametrize("splits", [[1, 3], [0, 2, 1, 3], [0, 2]])
def test_row_splits_that_do_not_cover_the_values_in_order_are_refused(splits):
    with pytest.raises(ValueError, match="row_splits"):
        RaggedArray(np.ones(3), splits)


def test_assembly_gives_tensorflow_the_composite_and_its_differentiated_component_back():
    ragged = RaggedArray(np.array([1.0, 2.0, 3.0], np.float32), [0, 2, 3])
    sparse = SparseArray([[0, 1], [2, 0]], np.array([4.0, 5.0], np.float32), [3, 2])
    extra = tf.constant(7.0)
    built_ragged, built_sparse, passed = assembled([ragged, sparse], [tf.constant(ragged), tf.constant(sparse), extra])
    assert built_ragged.to_list() == [[1.0, 2.0], [3.0]] and passed is extra
    assert tf.sparse.to_dense(built_sparse).numpy().tolist() == [[0.0, 4.0], [0.0, 0.0], [5.0, 0.0]]
    assert component(built_ragged).numpy().tolist() == [1.0, 2.0, 3.0]
    assert component(built_sparse).numpy().tolist() == [4.0, 5.0]
    doubled = rebuild(built_sparse, component(built_sparse) * 2)
    assert doubled.indices.numpy().tolist() == [[0, 1], [2, 0]] and doubled.values.numpy().tolist() == [8.0, 10.0]
