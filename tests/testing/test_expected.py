"""compat.testing._expected: declared pitfalls pass while they happen and are reported once they stop."""

import pytest

from compat.comparison import STATUS, Difference, Location
from compat.testing._expected import Expectation, Ledger, parse_expected

VARIANTS = ("override_map@eager_tape", "custom_gradient@eager_tape", "custom_gradient@v1_session")
SPARSE = Difference("sparse_vs_dense", Location("upstream", 0), "IndexedSlices here, Tensor in the reference")
VALUES = Difference("values", Location("input_grad", 0), "values differ")
NOT_CALLED = Difference("not_called", STATUS, "not_called here, ok in the reference")


def test_parse_takes_a_kind_or_a_list_per_glob():
    parsed = parse_expected({"custom_gradient@*": ["sparse_vs_dense", "values"],
                             "override_map@eager_tape": "not_called"}, VARIANTS)
    assert parsed == (Expectation("custom_gradient@*", "sparse_vs_dense"), Expectation("custom_gradient@*", "values"),
                      Expectation("override_map@eager_tape", "not_called"))


def test_parse_names_a_bad_glob_or_kind():
    with pytest.raises(ValueError, match=r"'\*@v1_tap': ...\} matches no variant; use a name or glob over"):
        parse_expected({"*@v1_tap": "values"}, VARIANTS)
    with pytest.raises(ValueError, match=r"'sparse' is not a difference kind; use one of .*'sparse_vs_dense'"):
        parse_expected({"custom_gradient@*": "sparse"}, VARIANTS)


def test_expectations_for_variants_not_run_are_left_out():
    assert parse_expected({"*@v1_tape": "values", "override_map@*": "not_called"}, VARIANTS) == (
        Expectation("override_map@*", "not_called"),)


def test_an_expected_kind_passes_and_any_other_still_fails():
    ledger = Ledger(parse_expected({"custom_gradient@*": "sparse_vs_dense"}, VARIANTS))
    assert ledger.accept("custom_gradient@eager_tape", "ok", [SPARSE, VALUES]) == [VALUES]
    assert ledger.accept("override_map@eager_tape", "ok", [SPARSE]) == [SPARSE]
    assert ledger.unmet() == []


def test_an_expected_status_covers_the_whole_cell():
    ledger = Ledger(parse_expected({"override_map@eager_tape": "not_called"}, VARIANTS))
    assert ledger.accept("override_map@eager_tape", "not_called", [NOT_CALLED, VALUES]) == []
    assert ledger.unmet() == []


def test_an_expectation_no_cell_shows_is_unmet_with_what_the_cells_show_now():
    ledger = Ledger(parse_expected({"custom_gradient@*": "sparse_vs_dense"}, VARIANTS))
    ledger.accept("custom_gradient@eager_tape", "ok", [])
    ledger.accept("custom_gradient@v1_session", "ok", [VALUES])
    assert ledger.unmet() == [Expectation("custom_gradient@*", "sparse_vs_dense")]
    assert ledger.found[Expectation("custom_gradient@*", "sparse_vs_dense")] == [
        "custom_gradient@eager_tape: ok, no difference", "custom_gradient@v1_session: values at input_grad[0]"]
