"""A cell is unsupported only when TensorFlow refuses the original; any other failure is a difference or error."""

from __future__ import annotations

import typing

import numpy as np

from compat.comparison import CellStatus
from compat.results import Upstream
from compat.verify import UpstreamStatus
from compat.verify._compare import compare_sides
from compat.verify._results import FORWARD, Attempt, SideResult

ONE = (np.ones(3, np.float32),)


def _cell(reference: Attempt, mine: Attempt, scenario: str = "sum", notes: dict[str, str] | None = None):
    original = SideResult("original", scenarios=("sum",), notes=notes or {},
                          attempts={("f", "v1_session", scenario): reference})
    rewritten = SideResult("rewritten", scenarios=("sum",), attempts={("f", "eager_tape", scenario): mine})
    cells = compare_sides(original, rewritten, ["f"], ["eager_tape"], [scenario])
    (cell,) = [c for c in cells if c.scenario == scenario]
    return cell


def test_tensorflow_refusing_the_original_is_unsupported():
    refused = Attempt("error", "while building: LookupError: No gradient defined for operation", refused=True)
    assert _cell(refused, Attempt("ok", values=ONE)).status == "unsupported"


def test_the_original_failing_and_the_rewrite_running_is_a_difference():
    failing = Attempt("error", "while building: ValueError: Incompatible shapes between op input and gradient")
    cell = _cell(failing, Attempt("ok", values=ONE))
    assert cell.status == "differs" and "runs where the original fails" in cell.message
    assert cell.differences[0].kind == "error"


def test_both_failing_alike_is_unsupported_and_differently_is_a_difference():
    failing = Attempt("error", "while building: TypeError: 'IndexedSlices' object is not subscriptable")
    assert _cell(failing, Attempt("error", "while building: TypeError: also")).status == "unsupported"
    assert _cell(failing, Attempt("error", "while running: ValueError: other")).status == "differs"


def test_a_process_that_died_is_never_a_pass():
    died = Attempt("error", "while taking this gradient, the process running it was killed by SIGABRT", died=True)
    assert _cell(died, Attempt("ok", values=ONE)).status == "error"
    assert _cell(died, died).status == "error"
    assert _cell(Attempt("ok", values=ONE), died).status == "differs"


def test_the_original_failing_its_forward_is_an_error():
    assert _cell(Attempt("error", "ValueError: no"), Attempt("ok", values=ONE), FORWARD).status == "error"


def test_variable_gradients_are_matched_by_name_then_by_shape():
    def grads(names: tuple[str, ...], *values: float) -> Attempt:
        arrays = (np.ones(3, np.float32), *(np.full(2, v, np.float32) for v in values))
        return Attempt("ok", values=arrays, variable_names=names)

    assert _cell(grads(("W:0", "b:0"), 1.0, 2.0), grads(("b:0", "W:0"), 2.0, 1.0)).status == "same"
    renamed = _cell(grads(("W:0",), 1.0), grads(("kernel:0",), 3.0))
    assert renamed.status == "differs" and renamed.differences[0].where == "variable_grad[kernel:0 ~ W:0]"
    missing = _cell(grads(("W:0",), 1.0), grads(()))
    assert [d.kind for d in missing.differences] == ["count"] and "W:0" in missing.differences[0].detail


def test_a_random_original_is_named_in_the_differing_cell():
    cell = _cell(Attempt("ok", values=ONE), Attempt("ok", values=(np.zeros(3, np.float32),)),
                 notes={"f": "the original's forward is random: ..."})
    assert cell.status == "differs" and "random" in cell.message


def _upstream(value: float, shape: tuple[int, ...] = (3,)) -> Upstream:
    array = np.full(shape, value, np.float32)
    return Upstream("dense", "float32", shape, array)


def test_upstreams_compare_to_a_status_in_the_checks_words():
    same, half = ((_upstream(1.0),),), ((_upstream(0.5),),)
    cases = {
        "same": (Attempt("ok", values=ONE, calls=same), Attempt("ok", values=ONE, calls=same)),
        "differs": (Attempt("ok", values=ONE, calls=same), Attempt("ok", values=ONE, calls=half)),
        "not_called": (Attempt("ok", values=ONE, calls=()), Attempt("ok", values=ONE, calls=())),
        "not_observable": (Attempt("ok", values=ONE), Attempt("ok", values=ONE, calls=same)),
    }
    for status, (reference, mine) in cases.items():
        cell = _cell(reference, mine)
        assert cell.upstream_status == status, (status, cell.upstream)
        assert cell.status == "same"  # informational: the upstreams never set the cell's status
    differing = _cell(*cases["differs"])
    assert differing.upstream == "differs" and differing.upstream_differences[0].where == "upstream[0]"
    one_side = _cell(Attempt("ok", values=ONE, calls=()), Attempt("ok", values=ONE, calls=same))
    assert one_side.upstream_status == "not_observable" and "observed on one side only" in one_side.upstream


def test_the_forward_row_has_no_upstream_and_a_failed_cell_none_observed():
    forward = _cell(Attempt("ok", values=ONE), Attempt("ok", values=ONE), FORWARD)
    assert (forward.upstream_status, forward.upstream) == (None, "")
    failed = _cell(Attempt("error", "ValueError: no"), Attempt("ok", values=ONE), FORWARD)
    assert failed.upstream_status == "not_observable"


def test_upstream_statuses_are_words_of_the_checks_cell_statuses():
    assert set(typing.get_args(UpstreamStatus)) <= set(typing.get_args(CellStatus))
