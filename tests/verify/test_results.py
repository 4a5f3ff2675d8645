"""A child's results reach the parent intact: arrays (bfloat16 too), upstreams, errors and skip reasons."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from compat.results import Upstream
from compat.verify._results import Attempt, SideResult, read_side, write_side


def test_side_results_round_trip(tmp_path):
    slices = Upstream("indexed_slices", "float32", (2,), value=np.array([1.0, 2.0], np.float32),
                      indices=np.array([0, 2]), dense_shape=(3,))
    written = SideResult("rewritten", tensorflow="2.x", scenarios=("sum", "gather"), entry_errors={"g": "boom"},
                         attempts={
                             ("f", "eager_tape", "forward"): Attempt("ok", values=(
                                 np.array([1.5], ml_dtypes.bfloat16), None)),
                             ("f", "eager_tape", "gather"): Attempt("ok", values=(np.ones(3, np.float32),),
                                                                    calls=((slices, Upstream("none")),)),
                             ("f", "eager_tape", "sum"): Attempt("skipped", "no gradient flows", calls=None)})
    write_side(written, str(tmp_path))
    read = read_side(str(tmp_path), "rewritten")
    assert read is not None and read.scenarios == ("sum", "gather") and read.entry_errors == {"g": "boom"}
    forward = read.attempts[("f", "eager_tape", "forward")]
    assert forward.values[0].dtype.name == "bfloat16" and forward.values[1] is None
    (call,) = read.attempts[("f", "eager_tape", "gather")].calls
    assert np.array_equal(call[0].to_dense(), [1.0, 0.0, 2.0]) and call[1].kind == "none"
    skipped = read.attempts[("f", "eager_tape", "sum")]
    assert (skipped.status, skipped.message, skipped.calls) == ("skipped", "no gradient flows", None)


def test_no_result_file_reads_as_none(tmp_path):
    assert read_side(str(tmp_path), "original") is None
