"""Property tests: for random shapes, values, weights and dtypes, native variants agree on catalogue specs."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import compat
from compat.catalogue import CATALOGUE
from compat.checker import check
from compat.dtypes import cast_spec

ELEMENTWISE = ["sign_ste", "scaled_ste", "gradient_reversal", "clip_grad_by_value", "guided_relu"]


@st.composite
def cases(draw):
    name = draw(st.sampled_from(ELEMENTWISE))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    magnitudes = draw(st.lists(st.floats(0.1, 4.0), min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
    signs = draw(st.lists(st.sampled_from([-1.0, 1.0]), min_size=len(magnitudes), max_size=len(magnitudes)))
    values = (np.array(magnitudes) * np.array(signs)).reshape(shape).astype(np.float32)
    dtype = draw(st.sampled_from(["float32", "float64", "float16"]))
    scenario = draw(st.sampled_from(["weighted", "scaled", "square", "gather", "grad_ys"]))
    return name, values, dtype, scenario


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_native_variants_agree_for_random_inputs(case):
    name, values, dtype, scenario = case
    spec = cast_spec(CATALOGUE[name]().with_inputs([values]), dtype)
    report = check([spec], scenarios=[scenario], dtypes=[dtype], variants=list(compat.NATIVE_VARIANTS))
    assert report.exit_code == 0, [(c.variant, c.differences) for c in report.unexpected]
    assert all(cell.result.status == "ok" for cell in report.cells), [c.result.message for c in report.cells]
