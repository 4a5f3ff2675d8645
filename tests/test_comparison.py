"""compat.comparison classifies every kind of difference between a variant and the reference."""

import dataclasses

import numpy as np
import pytest

from compat.comparison import Difference, Location, Part, cell_status, compare
from compat.results import Upstream, VariantResult


def result(status="ok", upstream=None, grads=None, calls=1, message=""):
    grads = (np.ones(3, np.float32),) if grads is None else grads
    upstreams = () if upstream is None else ((upstream,),) * calls
    return VariantResult(spec="s", variant="custom_gradient@eager_tape", mechanism="custom_gradient",
                         context="eager_tape", status=status, input_grads=grads, upstreams=upstreams,
                         calls=calls if upstream is not None else 0, message=message)


def dense(values, dtype=np.float32, shape=None):
    values = np.asarray(values, dtype)
    return Upstream("dense", np.dtype(dtype).name, shape if shape is not None else values.shape, value=values)


def kinds(differences):
    return [(d.kind, d.where) for d in differences]


def test_identical_results_have_no_difference():
    a = result(upstream=dense([1.0, 2.0, 3.0]))
    assert compare(a, result(upstream=dense([1.0, 2.0, 3.0]))) == ()
    assert cell_status(a, ()) == "same"


def test_none_vs_zeros_and_sparse_vs_dense_are_representation_differences():
    none = result(upstream=Upstream("none"))
    zeros = result(upstream=dense([0.0, 0.0, 0.0]))
    (difference,) = compare(none, zeros)
    assert (difference.kind, difference.where) == ("none_vs_zeros", "upstream[0]")
    assert not difference.breaking
    sparse = Upstream("indexed_slices", "float32", (2,), value=np.array([1.0, 2.0], np.float32),
                      indices=np.array([0, 2]), dense_shape=(3,))
    differences = compare(result(upstream=sparse), result(upstream=dense([1.0, 0.0, 2.0])))
    assert kinds(differences) == [("sparse_vs_dense", "upstream[0]")]


def test_values_difference_reports_errors_and_first_index():
    mine = result(upstream=dense([1.0, 2.0, 3.5]))
    (difference,) = compare(mine, result(upstream=dense([1.0, 2.0, 3.0])))
    assert difference.kind == "values" and difference.breaking
    assert difference.index == (2,)
    assert difference.max_abs == pytest.approx(0.5) and difference.max_rel == pytest.approx(0.5 / 3)
    assert "first at index [2]" in difference.detail


def test_tolerance_depends_on_dtype():
    close16 = compare(result(upstream=dense([1.0005], np.float16), grads=()),
                      result(upstream=dense([1.0], np.float16), grads=()))
    assert close16 == ()
    far32 = compare(result(upstream=dense([1.0005]), grads=()), result(upstream=dense([1.0]), grads=()))
    assert kinds(far32) == [("values", "upstream[0]")]


def test_dtype_shape_status_and_calls_differences():
    assert kinds(compare(result(upstream=dense([1.0], np.float64), grads=()),
                         result(upstream=dense([1.0]), grads=()))) == [("dtype", "upstream[0]")]
    assert kinds(compare(result(upstream=dense([1.0], shape=(1,)), grads=()),
                         result(upstream=dense([1.0], shape=(2,)), grads=()))) == [("shape", "upstream[0]")]
    unknown = Upstream("dense", "float32", None, value=np.ones(1, np.float32))
    (static,) = compare(result(upstream=unknown, grads=()), result(upstream=dense([1.0]), grads=()))
    assert (static.kind, static.where, static.breaking) == ("static_shape", "upstream[0]", False)
    assert "<unknown rank> here, [1] in the reference" in static.detail
    not_called = result(status="not_called", upstream=None, grads=(np.zeros(3, np.float32),), message="bypassed")
    differences = compare(not_called, result(upstream=dense([1.0])))
    assert kinds(differences) == [("not_called", "status"), ("values", "input_grad[0]")]
    assert cell_status(not_called, differences) == "not_called"
    twice = result(upstream=dense([1.0]), calls=2)
    assert ("calls", "calls") in kinds(compare(twice, result(upstream=dense([1.0]))))


def test_input_grad_none_vs_values():
    differences = compare(result(grads=(None,)), result(grads=(np.array([1.0], np.float32),)))
    assert kinds(differences) == [("values", "input_grad[0]")]
    differences = compare(result(grads=(None,)), result(grads=(np.zeros(1, np.float32),)))
    assert kinds(differences) == [("none_vs_zeros", "input_grad[0]")]


def test_difference_as_dict():
    difference = Difference("values", Location("upstream", 0), "x")
    assert difference.as_dict() == {"kind": "values", "detail": "upstream[0]: x"}


def test_every_call_is_compared_not_only_the_first():
    same_first = VariantResult(spec="s", variant="v@c", mechanism="v", context="c", status="ok", calls=2,
                               upstreams=((dense([1.0]),), (dense([5.0]),)), input_grads=(np.ones(3, np.float32),))
    reference = VariantResult(spec="s", variant="r@c", mechanism="r", context="c", status="ok", calls=2,
                              upstreams=((dense([1.0]),), (dense([1.0]),)), input_grads=(np.ones(3, np.float32),))
    assert kinds(compare(same_first, reference)) == [("values", "call[1] upstream[0]")]


def test_a_different_number_of_calls_or_upstreams_is_a_difference():
    twice = result(upstream=dense([1.0]), calls=2)
    assert ("calls", "calls") in kinds(compare(twice, result(upstream=dense([1.0]))))
    two_outputs = VariantResult(spec="s", variant="v@c", mechanism="v", context="c", status="ok", calls=1,
                                upstreams=((dense([1.0]), dense([2.0])),), input_grads=(np.ones(3, np.float32),))
    assert ("count", "upstreams") in kinds(compare(two_outputs, result(upstream=dense([1.0]))))
    fewer_grads = result(upstream=dense([1.0]), grads=(np.ones(3, np.float32), np.ones(3, np.float32)))
    assert ("count", "input_grads") in kinds(compare(fewer_grads, result(upstream=dense([1.0]))))


def test_extra_calls_with_only_zero_upstreams_are_zero_calls_not_a_breaking_difference():
    def calls(*values, variant="v@c"):
        return VariantResult(spec="s", variant=variant, mechanism="v", context="c", status="ok", calls=len(values),
                             upstreams=tuple((dense(v),) for v in values), input_grads=(np.ones(3, np.float32),))

    second_order_rerun = calls([1.0, 2.0], [0.0, 0.0])
    (difference,) = compare(second_order_rerun, calls([1.0, 2.0], variant="r@c"))
    assert (difference.kind, difference.breaking) == ("zero_calls", False)
    assert "side effects" in difference.detail and "here" in difference.detail
    (difference,) = compare(calls([1.0, 2.0], variant="r@c"), second_order_rerun)
    assert (difference.kind, difference.breaking) == ("zero_calls", False)
    assert "in the reference" in difference.detail
    nonzero_extra = compare(calls([1.0, 2.0], [0.0, 3.0]), calls([1.0, 2.0], variant="r@c"))
    assert [(d.kind, d.breaking) for d in nonzero_extra] == [("calls", True)]


def test_zeros_of_another_shape_for_an_integer_output_are_representation_only():
    def int_zeros(shape):
        value = np.zeros(shape, np.int32)
        return Upstream("dense", "int32", (None, 3), value=value)

    (difference,) = compare(result(upstream=int_zeros((1, 3))), result(upstream=int_zeros((4, 3))))
    assert (difference.kind, difference.where, difference.breaking) == ("zeros_shape", "upstream[0]", False)
    float_zeros = Upstream("dense", "float32", (None, 3), value=np.zeros((1, 3), np.float32))
    wider = Upstream("dense", "float32", (None, 3), value=np.zeros((4, 3), np.float32))
    assert [d.kind for d in compare(result(upstream=float_zeros), result(upstream=wider))] == ["shape"]
    nonzero = Upstream("dense", "int32", (None, 3), value=np.ones((1, 3), np.int32))
    assert [d.kind for d in compare(result(upstream=nonzero), result(upstream=int_zeros((4, 3))))] == ["shape"]


def test_indexed_slices_without_dense_shape_compare_without_inventing_one():
    unknown = Upstream("indexed_slices", "float32", (2,), value=np.array([1.0, 2.0], np.float32),
                       indices=np.array([3, 1]), dense_shape=None)
    known = Upstream("indexed_slices", "float32", (2,), value=np.array([2.0, 1.0], np.float32),
                     indices=np.array([1, 3]), dense_shape=(5,))
    assert compare(result(upstream=unknown), result(upstream=known)) == ()
    # Scattered into the other side's dense shape; indices outside it are a shape difference, not a crash.
    as_dense = result(upstream=dense([0.0, 2.0, 0.0, 1.0, 0.0]))
    assert kinds(compare(result(upstream=unknown), as_dense)) == [("sparse_vs_dense", "upstream[0]")]
    too_small = result(upstream=dense([0.0, 2.0]))
    assert kinds(compare(result(upstream=unknown), too_small)) == [("shape", "upstream[0]")]
    both_unknown = Upstream("indexed_slices", "float32", (2,), value=np.array([2.0, 1.0], np.float32),
                            indices=np.array([1, 3]), dense_shape=None)
    assert compare(result(upstream=unknown), result(upstream=both_unknown)) == ()


def test_input_gradient_forms_are_compared_apart_from_values():
    sparse = VariantResult(spec="s", variant="v@c", mechanism="v", context="c", status="ok", calls=1,
                           upstreams=((dense([1.0]),),), input_grads=(np.ones(3, np.float32),),
                           input_grad_kinds=("indexed_slices",))
    dense_ref = VariantResult(spec="s", variant="r@c", mechanism="r", context="c", status="ok", calls=1,
                              upstreams=((dense([1.0]),),), input_grads=(np.ones(3, np.float32),),
                              input_grad_kinds=("dense",))
    (difference,) = compare(sparse, dense_ref)
    assert (difference.kind, difference.where, difference.breaking) == ("sparse_vs_dense", "input_grad[0]", False)


def test_a_contract_violation_is_its_own_breaking_difference():
    accepted = VariantResult(spec="s", variant="v@c", mechanism="v", context="c", status="ok", calls=1,
                             upstreams=((dense([1.0]),),), input_grads=(np.ones(3, np.float32),),
                             violations=("gradient[0] has shape () but input 0 has shape (3,)",))
    (difference,) = compare(accepted, result(upstream=dense([1.0])))
    assert (difference.kind, difference.where, difference.breaking) == ("contract", "gradient", True)
    assert "TensorFlow accepted a gradient that breaks the contract" in difference.detail


def test_a_scaled_upstream_is_compared_at_its_own_precision_unless_computed_in_float16():
    reference = result(upstream=dense([1.0, 2.0, 3.0]), grads=(np.array([1.0, 2.0, 3.0], np.float32),))
    close = (np.array([1.0, 2.0, 3.0005], np.float32),)  # within float16's tolerance, not float32's
    keras_fit = dataclasses.replace(reference, input_grads=close, upstream_scale=0.25)
    assert kinds(compare(keras_fit, reference)) == [("values", "input_grad[0]")]
    mixed = dataclasses.replace(keras_fit, upstream_scale=2.0**15, compute_dtype="float16")
    assert compare(mixed, reference) == ()


@pytest.mark.parametrize("location", [
    Location("status"), Location("gradient"), Location("calls"), Location("input_grads"), Location("upstream"),
    Location("upstreams", call=2), Location("upstream", 0), Location("upstream", 3, call=1),
    Location("input_grad", 1), Location("variable_grad", "dense/kernel:0"), Location("variable_grad", "w:0 ~ v:0"),
    Location("input_grad", 0, part=Part(None)), Location("calls", part=Part(None, global_batch=True)),
    Location("upstream", 0, call=1, part=Part(1, (2, 3), global_batch=True)),
    Location("upstreams", part=Part(0, (0, 1))), Location("output", 0), Location("outputs"),
])
def test_a_location_reads_back_from_its_text(location):
    assert Location.parse(str(location)) == location


def test_a_location_reads_as_the_text_reports_have_always_written():
    assert str(Location("upstream", 0, call=1, part=Part(1, (2, 3), global_batch=True))) == \
        "replica[1] rows [2, 3] 1/global_batch call[1] upstream[0]"
    assert str(Location("input_grad", 0, part=Part(None, global_batch=True))) == "reduced 1/global_batch input_grad[0]"
    assert str(Location("upstreams", call=2)) == "call[2] upstreams"


@pytest.mark.parametrize("text", ["", "upstream[0", "loss[0]", "replica[x] rows [] upstream[0]", "call[] calls"])
def test_text_that_is_no_location_is_refused_with_an_example(text):
    with pytest.raises(ValueError, match="is not a difference's location"):
        Location.parse(text)


def test_differences_carry_their_location_not_text():
    reference = result(grads=(np.array([1.0], np.float32),))
    (difference,) = compare(result(grads=(np.array([2.0], np.float32),)), reference)
    assert difference.location == Location("input_grad", 0) and difference.where == "input_grad[0]"
