"""Result values: Upstream densifies IndexedSlices and prints; VariantResult prints everything it holds."""

import numpy as np

from compat.results import STATUSES, Upstream, VariantResult


def test_indexed_slices_upstream_densifies_with_duplicates_summed():
    upstream = Upstream("indexed_slices", "float32", (3,), value=np.array([1.0, 2.0, 5.0], np.float32),
                        indices=np.array([0, 0, 2]), dense_shape=(4,))
    np.testing.assert_array_equal(upstream.to_dense(), [3.0, 0.0, 5.0, 0.0])
    assert "IndexedSlices float32" in str(upstream) and "dense_shape=[4]" in str(upstream)


def test_none_and_dense_upstreams():
    assert Upstream("none").to_dense() is None
    assert str(Upstream("none")) == "None"
    dense = Upstream("dense", "float64", (None, 2), value=np.zeros((1, 2)))
    assert dense.to_dense() is dense.value
    assert "Tensor float64[None, 2]" in str(dense)


def test_variant_result_str_shows_status_calls_upstreams_and_grads():
    result = VariantResult(spec="s", variant="custom_gradient@eager_tape", mechanism="custom_gradient",
                           context="eager_tape", status="ok", input_grads=(np.ones(2, np.float32), None),
                           upstreams=((Upstream("dense", "float32", (2,), value=np.ones(2)),),), calls=1)
    text = str(result)
    assert "custom_gradient@eager_tape [ok]" in text
    assert "call 0 upstream[0]: Tensor float32[2]" in text
    assert "input_grad[1]: None" in text
    assert result.upstream is result.upstreams[0]
    assert set(STATUSES) == {"ok", "not_called", "unsupported", "error", "not_observable"}


def test_equal_large_arrays_are_shared_and_read_only():
    from compat.results import intern_array

    first = intern_array(np.arange(5000, dtype=np.float32))
    second = intern_array(np.arange(5000, dtype=np.float32))
    assert second is first and not first.flags.writeable
    different = intern_array(np.arange(5000, dtype=np.float64))
    assert different is not first
    small = intern_array(np.ones(3, np.float32))
    assert not small.flags.writeable
    scalar = intern_array(np.float32(3.0))
    assert scalar.shape == () and scalar == 3.0
    bf16 = __import__("ml_dtypes").bfloat16
    assert intern_array(np.ones(3000, bf16)) is intern_array(np.ones(3000, bf16))


def test_scattering_float16_slices_that_overflow_gives_inf_without_a_numpy_warning():
    import warnings

    slices = Upstream("indexed_slices", "float16", (2,), np.array([60000.0, 60000.0], np.float16),
                      indices=np.array([1, 1]), dense_shape=(3,))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dense = slices.to_dense()
    assert dense.dtype == np.float16 and dense.tolist() == [0.0, float("inf"), 0.0]
