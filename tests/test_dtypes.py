"""The dtype axis: float inputs and variables are cast, ints are kept, tolerances are per dtype."""

import ml_dtypes
import numpy as np
import pytest

import compat
from compat.dtypes import DTYPES, TOLERANCES, cast_spec, tolerance_for


def _spec():
    return compat.GradientSpec("mixed", lambda x, n: x, lambda i, o, u: [u[0], None],
                               [np.ones(2, np.float32), np.arange(2, dtype=np.int32)],
                               variables=[np.ones(3, np.float32)])


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_cast_spec_casts_floats_only(dtype):
    cast = cast_spec(_spec(), dtype)
    assert cast.example_inputs[0].dtype == DTYPES[dtype]
    assert cast.example_inputs[1].dtype == np.int32
    assert cast.variables[0].dtype == DTYPES[dtype]
    assert dtype in TOLERANCES


def test_float32_spec_is_returned_unchanged_and_unknown_dtypes_are_rejected():
    spec = _spec()
    assert cast_spec(spec, "float32") is spec
    with pytest.raises(ValueError, match="unknown dtype 'float8'.*bfloat16"):
        cast_spec(spec, "float8")


def test_tolerances_loosen_with_precision_and_ints_are_exact():
    order = ["float64", "float32", "float16", "bfloat16"]
    rtols = [tolerance_for(name).rtol for name in order]
    assert rtols == sorted(rtols)
    assert tolerance_for(np.dtype(ml_dtypes.bfloat16)) == TOLERANCES["bfloat16"]
    assert tolerance_for(np.dtype(np.int32)).atol == 0.0
